/* Heaps and threads (layer above pages): heap set-up, collection and
   destruction, thread and process set-up and teardown, the statistics
   printed from them. Defined in heap/. */
#ifndef MI_HEAP_H
#define MI_HEAP_H

#include "../page/page.h"
#include "../../include/mimalloc-stats.h"

/* init.c */
mi_heap_t* _mi_heap_init_thread(void) mi_decl_hidden;
void _mi_process_init_once(void) mi_decl_hidden;
/* the exits of late threads that ended without their hook, finished for them */
void _mi_threads_finish_ended(void) mi_decl_hidden;

/* heap.c */
void* _mi_malloc_generic(mi_heap_t* heap, size_t size, bool zero) mi_decl_hidden;
void _mi_heap_init(mi_heap_t* heap, mi_tld_t* tld, bool is_backing) mi_decl_hidden;
/* a heap gone: its slot back to the meta pool (secure builds: retired first) */
void _mi_heap_slot_free(mi_heap_t* heap) mi_decl_hidden;
void _mi_heap_destroy_all_at_exit(void) mi_decl_hidden; /* destroy_on_exit */
void _mi_heap_free_all_of_thread(mi_tld_t* tld) mi_decl_hidden;
/* idle.c and init.c: hole purge of a thread's pages, by itself or, parked, by another */
bool _mi_tld_holes_sweep(mi_tld_t* tld, bool force) mi_decl_hidden;
void _mi_threads_sweep_parked(const mi_tld_t* self, uint64_t gen, bool force, size_t* swept,
                              size_t* running) mi_decl_hidden;
void _mi_idle_background_work(void) mi_decl_hidden;
void _mi_tld_unpark(mi_tld_t* tld) mi_decl_hidden;
void _mi_heap_orphan_in_fork_child(mi_tld_t* tld) mi_decl_hidden;
/* one of the calling thread's pages: bit i of `map` set when block i is free */
bool _mi_page_free_map(mi_page_t* page, uint8_t* map, size_t nbytes) mi_decl_hidden;

/* stats.c */
void _mi_stats_print_at_exit(void) mi_decl_hidden;
/* stats-fill.c: the statistics as data (mimalloc-stats.h's struct) */
bool _mi_stats_valid(const mi_stats_t* stats) mi_decl_hidden;
void _mi_stats_clear(mi_stats_t* stats) mi_decl_hidden; /* zero, with its size and version */
void _mi_stats_fill(mi_stats_t* stats) mi_decl_hidden;  /* the process's figures */

/* snapshot.c */
void _mi_snapshot_at_exit(void) mi_decl_hidden;
void _mi_heap_foreign_pages(size_t* pages, size_t* owners) mi_decl_hidden; /* not the caller's: counted */
void _mi_stats_merge_heap(mi_heap_t* heap) mi_decl_hidden;

/* heap-check.c */
void _mi_heap_check(const mi_heap_t* heap) mi_decl_hidden;

/* The page a request of `size` takes its block from: up to
   MI_BIN_WSIZE_BYTES_MAX one load from the heap's direct table; past it
   (and up to MI_MEDIUM_BLOCK_MAX, which the caller checks) its bin's queue. */
static inline mi_page_t* _mi_heap_page_for(mi_heap_t* heap, size_t size) {
  if (mi_likely(size <= MI_BIN_WSIZE_BYTES_MAX)) return heap->pages_direct[(size + 7) >> 3];
  return heap->pages[_mi_bin(size)].first;
}

#endif
