/* mimalloc-pprof public API.
   Names, argument order, option numbers and semantics follow mimalloc v2 so
   that a program built against mimalloc relinks (or preloads) against this
   library unchanged. */
#ifndef MIMALLOC_H
#define MIMALLOC_H

#define MI_MALLOC_VERSION 20401 /* the mimalloc API this follows (2.4.1): major*10000 + minor*100 + patch */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define mi_attr_noexcept noexcept
extern "C" {
#else
#define mi_attr_noexcept
#endif

/* Windows: the DLL exports the API (built with MI_SHARED_LIB_EXPORT), its
   users import it (MI_SHARED_LIB); the static library needs neither. */
#if defined(_WIN32) && defined(MI_SHARED_LIB_EXPORT)
#define mi_decl_export __declspec(dllexport)
#elif defined(_WIN32) && defined(MI_SHARED_LIB)
#define mi_decl_export __declspec(dllimport)
#elif defined(_WIN32)
#define mi_decl_export
#elif defined(__GNUC__) || defined(__clang__)
#define mi_decl_export __attribute__((visibility("default")))
#else
#define mi_decl_export
#endif

#if defined(__GNUC__) || defined(__clang__)
#define mi_decl_nodiscard __attribute__((warn_unused_result))
#define mi_attr_malloc __attribute__((malloc))
#define mi_attr_alloc_size(s) __attribute__((alloc_size(s)))
#define mi_attr_alloc_size2(a, b) __attribute__((alloc_size(a, b)))
#define mi_attr_alloc_align(p) __attribute__((alloc_align(p)))
#define mi_cdecl
#elif defined(_MSC_VER)
#define mi_decl_nodiscard _Check_return_
#define mi_attr_malloc
#define mi_attr_alloc_size(s)
#define mi_attr_alloc_size2(a, b)
#define mi_attr_alloc_align(p)
#define mi_cdecl __cdecl
#else
#define mi_decl_nodiscard
#define mi_attr_malloc
#define mi_attr_alloc_size(s)
#define mi_attr_alloc_size2(a, b)
#define mi_attr_alloc_align(p)
#define mi_cdecl
#endif
#define mi_decl_restrict

/* ---- Standard allocation ---------------------------------------------- */
mi_decl_nodiscard mi_decl_export void* mi_malloc(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_calloc(size_t count, size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size2(1, 2);
mi_decl_nodiscard mi_decl_export void* mi_realloc(void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(2);
mi_decl_export void* mi_expand(void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(2);
mi_decl_export void mi_free(void* p) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export char* mi_strdup(const char* s) mi_attr_noexcept mi_attr_malloc;
mi_decl_nodiscard mi_decl_export char* mi_strndup(const char* s, size_t n) mi_attr_noexcept mi_attr_malloc;
mi_decl_nodiscard mi_decl_export char* mi_realpath(const char* fname,
                                                   char* resolved_name) mi_attr_noexcept mi_attr_malloc;

#define MI_SMALL_SIZE_MAX (128 * sizeof(void*))
mi_decl_nodiscard mi_decl_export void* mi_malloc_small(size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_zalloc_small(size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_zalloc(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_mallocn(size_t count, size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size2(1, 2);
mi_decl_nodiscard mi_decl_export void* mi_reallocn(void* p, size_t count, size_t size) mi_attr_noexcept
    mi_attr_alloc_size2(2, 3);
mi_decl_nodiscard mi_decl_export void* mi_reallocf(void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export size_t mi_usable_size(const void* p) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export size_t mi_good_size(size_t size) mi_attr_noexcept;
mi_decl_export void mi_free_small(void* p) mi_attr_noexcept; /* mimalloc v3's name: any block is accepted */

/* ---- Allocation that also says how large the block is ---------------------
   `block_size` (may be NULL) receives the block's usable size, as
   mi_usable_size would give it; mi_ufree the size of the block it frees. */
mi_decl_nodiscard mi_decl_export void* mi_umalloc(size_t size, size_t* block_size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_ucalloc(size_t count, size_t size,
                                                  size_t* block_size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size2(1, 2);
mi_decl_nodiscard mi_decl_export void* mi_urealloc(void* p, size_t newsize, size_t* block_size_pre,
                                                   size_t* block_size_post) mi_attr_noexcept mi_attr_alloc_size(2);
mi_decl_export void mi_ufree(void* p, size_t* block_size) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export void* mi_umalloc_aligned(size_t size, size_t alignment,
                                                          size_t* block_size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1) mi_attr_alloc_align(2);
mi_decl_nodiscard mi_decl_export void* mi_uzalloc_aligned(size_t size, size_t alignment,
                                                          size_t* block_size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1) mi_attr_alloc_align(2);
mi_decl_nodiscard mi_decl_export void* mi_umalloc_small(size_t size, size_t* block_size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_uzalloc_small(size_t size, size_t* block_size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1);

/* ---- Runtime hooks, statistics, process -------------------------------- */
typedef void(mi_cdecl mi_deferred_free_fun)(bool force, unsigned long long heartbeat, void* arg);
mi_decl_export void mi_register_deferred_free(mi_deferred_free_fun* deferred_free, void* arg) mi_attr_noexcept;
typedef void(mi_cdecl mi_output_fun)(const char* msg, void* arg);
mi_decl_export void mi_register_output(mi_output_fun* out, void* arg) mi_attr_noexcept;
typedef void(mi_cdecl mi_error_fun)(int err, void* arg);
mi_decl_export void mi_register_error(mi_error_fun* fun, void* arg);

mi_decl_export void mi_collect(bool force) mi_attr_noexcept;
/* mimalloc also hands the calling thread's segments over to other threads
   down to a target; here it is mi_collect(true) (docs/api-compatibility.md) */
mi_decl_export void mi_collect_reduce(size_t target_thread_owned) mi_attr_noexcept;

/* Memory back to the OS from pages still in use (docs/memory-return.md):
   at an idle point, the OS pages inside the calling thread's pages whose
   blocks are all free are discarded ("holes"), and given back to their page
   when it needs them. mi_on_thread_idle also collects the thread's pending
   frees and purges its free pages now. */
mi_decl_export void mi_on_thread_idle(void) mi_attr_noexcept;
/* A thread about to block hands its heaps over: another thread (the
   background thread, mi_purge_all) may sweep their holes until it takes
   them back. It must not call the allocator in between. False: nothing was
   handed over (and _end need not be called). */
mi_decl_export bool mi_on_thread_idle_start(void) mi_attr_noexcept;
mi_decl_export void mi_on_thread_idle_end(void) mi_attr_noexcept;

/* From any thread: free pages and cached segments purged now, the holes of
   the caller's pages and of every parked thread's swept; what could not be
   reached is said. The report's `size` is set by the caller (it may grow).
   MI_PURGE_RECLAIM then also gives back every reservation that holds no
   live segment: the cached segments, and the empty arenas of ours whose id
   no caller holds (not exclusive, not pinned, not the caller's memory). */
typedef enum mi_purge_flags_e { MI_PURGE_FORCE = 1, MI_PURGE_RECLAIM = 2 } mi_purge_flags_t;
typedef struct mi_purge_all_report_s {
  size_t size;            /* sizeof(mi_purge_all_report_t), set by the caller */
  size_t arena_bytes;     /* returned by purging free pages and cached segments */
  size_t hole_bytes;      /* returned by hole purge (the purged_bytes_total it added) */
  size_t theaps_swept;    /* threads whose pages were swept, the caller's included */
  size_t theaps_pending;  /* threads running in the allocator, not reached within wait_ms */
  size_t theaps_orphaned; /* threads a fork child does not have: never touched (0 here) */
  bool gated;             /* built with an owner gate (not in this build) */
  bool complete;          /* theaps_pending == 0 && theaps_orphaned == 0 */
  /* MI_PURGE_RECLAIM (all 0 without it) */
  bool reclaimed;             /* the pass ran */
  size_t arena_reclaim_bytes; /* unmapped: what `reserved` fell by (arenas and cached segments) */
  size_t arenas_reclaimed;    /* empty arenas given back */
  size_t arenas_kept;         /* empty arenas not ours to give back (an id held, exclusive, ...) */
  size_t segments_reclaimed;  /* cached segments unmapped (or given back to their arena) */
  size_t unformed_bytes;      /* returned by discarding never-carved page tails (unformed_bytes_total's change) */
} mi_purge_all_report_t;
#define MI_PURGE_OK 0 /* every registered thread reached */
#define MI_PURGE_PARTIAL \
  1 /* some were not (running) when wait_ms ran out, or the OS refused a reclaim; everything reachable was */
#define MI_PURGE_BUSY 2 /* another purge in flight, or called from inside one: nothing done */
mi_decl_export int mi_purge_all_ex(mi_purge_flags_t flags, size_t wait_ms,
                                   mi_purge_all_report_t* report) mi_attr_noexcept;
mi_decl_export void mi_purge_all(bool force) mi_attr_noexcept; /* mi_purge_all_ex(force ? FORCE : 0, 100, NULL) */
typedef struct mi_purge_holes_stats_s {
  size_t purged_bytes, purged_blocks; /* discarded now */
  size_t purged_bytes_total, discard_calls, reuse_calls, pages_freed;
  size_t ineligible_pages, ineligible_bytes, ineligible_free_bytes; /* over the last sweep */
  size_t unformed_bytes, unformed_bytes_total, unformed_discard_calls, unformed_reuse_calls;
  size_t pages_skipped, blocks_visited, full_sweeps;
} mi_purge_holes_stats_t;
mi_decl_export void mi_purge_holes_stats_get(mi_purge_holes_stats_t* stats) mi_attr_noexcept; /* NULL: ignored */
/* Read-only: per size class, the calling thread's free bytes that live
   blocks pin (they share an OS page with one), to the output function. */
mi_decl_export void mi_purge_holes_report(void) mi_attr_noexcept;

/* Arenas: memory reserved up front, from which segments are taken before
   the OS is asked. 0 on success, else ENOMEM (or EINVAL). */
mi_decl_export int mi_reserve_os_memory(size_t size, bool commit, bool allow_large) mi_attr_noexcept;
mi_decl_export int mi_reserve_huge_os_pages_at(size_t pages, int numa_node, size_t timeout_msecs) mi_attr_noexcept;
mi_decl_export int mi_reserve_huge_os_pages_interleave(size_t pages, size_t numa_nodes,
                                                       size_t timeout_msecs) mi_attr_noexcept;
mi_decl_export int mi_reserve_huge_os_pages(size_t pages, double max_secs, size_t* pages_reserved) mi_attr_noexcept;
/* Arenas by id (0: none). Memory handed over with mi_manage_os_memory stays
   the caller's: it is never unmapped here. An exclusive arena serves only the
   heaps created in it (mi_heap_new_in_arena), and those heaps only from it. */
typedef int mi_arena_id_t;
mi_decl_export bool mi_manage_os_memory(void* start, size_t size, bool is_committed, bool is_large, bool is_zero,
                                        int numa_node) mi_attr_noexcept;
mi_decl_export bool mi_manage_os_memory_ex(void* start, size_t size, bool is_committed, bool is_large, bool is_zero,
                                           int numa_node, bool exclusive, mi_arena_id_t* arena_id) mi_attr_noexcept;
mi_decl_export int mi_reserve_os_memory_ex(size_t size, bool commit, bool allow_large, bool exclusive,
                                           mi_arena_id_t* arena_id) mi_attr_noexcept;
mi_decl_export int mi_reserve_huge_os_pages_at_ex(size_t pages, int numa_node, size_t timeout_msecs, bool exclusive,
                                                  mi_arena_id_t* arena_id) mi_attr_noexcept;
mi_decl_export void* mi_arena_area(mi_arena_id_t arena_id, size_t* size);
mi_decl_export void mi_arenas_print(void) mi_attr_noexcept;
mi_decl_export void mi_debug_show_arenas(void) mi_attr_noexcept; /* the same as mi_arenas_print */
mi_decl_export int mi_version(void) mi_attr_noexcept;
mi_decl_export void mi_stats_reset(void) mi_attr_noexcept;
mi_decl_export void mi_stats_merge(void) mi_attr_noexcept;
mi_decl_export void mi_stats_print(void* out) mi_attr_noexcept; /* `out`: an mi_output_fun*, called with arg NULL */
mi_decl_export void mi_stats_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept;
mi_decl_export void mi_process_init(void) mi_attr_noexcept;
/* what the process does at exit (statistics, background thread stopped);
   once: a later call and the exit itself do nothing more */
mi_decl_export void mi_cdecl mi_process_done(void) mi_attr_noexcept;
mi_decl_export void mi_thread_init(void) mi_attr_noexcept;
mi_decl_export void mi_thread_done(void) mi_attr_noexcept;
mi_decl_export void mi_thread_stats_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept;
mi_decl_export void mi_process_info(size_t* elapsed_msecs, size_t* user_msecs, size_t* system_msecs,
                                    size_t* current_rss, size_t* peak_rss, size_t* current_commit, size_t* peak_commit,
                                    size_t* page_faults) mi_attr_noexcept;

/* ---- Aligned allocation ------------------------------------------------- */
/* Alignments are any power of two the address space allows (tested up to
   1 GiB); an alignment above half a segment (2 MiB) costs address space
   only: the block's memory is committed from its aligned start on. */
mi_decl_nodiscard mi_decl_export void* mi_malloc_aligned(size_t size, size_t alignment) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1) mi_attr_alloc_align(2);
mi_decl_nodiscard mi_decl_export void* mi_malloc_aligned_at(size_t size, size_t alignment,
                                                            size_t offset) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_zalloc_aligned(size_t size, size_t alignment) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1) mi_attr_alloc_align(2);
mi_decl_nodiscard mi_decl_export void* mi_zalloc_aligned_at(size_t size, size_t alignment,
                                                            size_t offset) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_calloc_aligned(size_t count, size_t size,
                                                         size_t alignment) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size2(1, 2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export void* mi_calloc_aligned_at(size_t count, size_t size, size_t alignment,
                                                            size_t offset) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size2(1, 2);
mi_decl_nodiscard mi_decl_export void* mi_realloc_aligned(void* p, size_t newsize, size_t alignment) mi_attr_noexcept
    mi_attr_alloc_size(2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export void* mi_realloc_aligned_at(void* p, size_t newsize, size_t alignment,
                                                             size_t offset) mi_attr_noexcept mi_attr_alloc_size(2);

/* ---- First-class heaps -------------------------------------------------- */
/* A heap belongs to the thread that created it: only that thread allocates
   from it, any thread may free its blocks. */
typedef struct mi_heap_s mi_heap_t;
mi_decl_nodiscard mi_decl_export mi_heap_t* mi_heap_new(void);
mi_decl_nodiscard mi_decl_export mi_heap_t* mi_heap_new_in_arena(mi_arena_id_t arena_id); /* NULL: EINVAL */
/* heap_tag: reported in mi_heap_area_t; allow_destroy: accepted (any heap may be destroyed here) */
mi_decl_nodiscard mi_decl_export mi_heap_t* mi_heap_new_ex(int heap_tag, bool allow_destroy, mi_arena_id_t arena_id);
mi_decl_export void mi_heap_delete(mi_heap_t* heap);  /* live blocks move to the backing heap */
mi_decl_export void mi_heap_destroy(mi_heap_t* heap); /* frees every block of the heap at once */
mi_decl_export mi_heap_t* mi_heap_set_default(mi_heap_t* heap);
mi_decl_export mi_heap_t* mi_heap_get_default(void);
mi_decl_export mi_heap_t* mi_heap_get_backing(void);
mi_decl_export void mi_heap_collect(mi_heap_t* heap, bool force) mi_attr_noexcept;

mi_decl_nodiscard mi_decl_export void* mi_heap_malloc(mi_heap_t* heap, size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_heap_zalloc(mi_heap_t* heap, size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_heap_calloc(mi_heap_t* heap, size_t count,
                                                      size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size2(2, 3);
mi_decl_nodiscard mi_decl_export void* mi_heap_mallocn(mi_heap_t* heap, size_t count,
                                                       size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size2(2, 3);
mi_decl_nodiscard mi_decl_export void* mi_heap_malloc_small(mi_heap_t* heap,
                                                            size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_heap_zalloc_small(mi_heap_t* heap,
                                                            size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_heap_realloc(mi_heap_t* heap, void* p, size_t newsize) mi_attr_noexcept
    mi_attr_alloc_size(3);
mi_decl_nodiscard mi_decl_export void* mi_heap_reallocn(mi_heap_t* heap, void* p, size_t count,
                                                        size_t size) mi_attr_noexcept mi_attr_alloc_size2(3, 4);
mi_decl_nodiscard mi_decl_export void* mi_heap_reallocf(mi_heap_t* heap, void* p, size_t newsize) mi_attr_noexcept
    mi_attr_alloc_size(3);
mi_decl_nodiscard mi_decl_export char* mi_heap_strdup(mi_heap_t* heap, const char* s) mi_attr_noexcept mi_attr_malloc;
mi_decl_nodiscard mi_decl_export char* mi_heap_strndup(mi_heap_t* heap, const char* s,
                                                       size_t n) mi_attr_noexcept mi_attr_malloc;
mi_decl_nodiscard mi_decl_export char* mi_heap_realpath(mi_heap_t* heap, const char* fname,
                                                        char* resolved_name) mi_attr_noexcept mi_attr_malloc;
mi_decl_nodiscard mi_decl_export void* mi_heap_malloc_aligned(mi_heap_t* heap, size_t size,
                                                              size_t alignment) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export void* mi_heap_malloc_aligned_at(mi_heap_t* heap, size_t size, size_t alignment,
                                                                 size_t offset) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_heap_zalloc_aligned(mi_heap_t* heap, size_t size,
                                                              size_t alignment) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export void* mi_heap_zalloc_aligned_at(mi_heap_t* heap, size_t size, size_t alignment,
                                                                 size_t offset) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_heap_calloc_aligned(mi_heap_t* heap, size_t count, size_t size,
                                                              size_t alignment) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size2(2, 3) mi_attr_alloc_align(4);
mi_decl_nodiscard mi_decl_export void* mi_heap_calloc_aligned_at(mi_heap_t* heap, size_t count, size_t size,
                                                                 size_t alignment,
                                                                 size_t offset) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size2(2, 3);
mi_decl_nodiscard mi_decl_export void* mi_heap_realloc_aligned(mi_heap_t* heap, void* p, size_t newsize,
                                                               size_t alignment) mi_attr_noexcept mi_attr_alloc_size(3)
    mi_attr_alloc_align(4);
mi_decl_nodiscard mi_decl_export void* mi_heap_realloc_aligned_at(mi_heap_t* heap, void* p, size_t newsize,
                                                                  size_t alignment, size_t offset) mi_attr_noexcept
    mi_attr_alloc_size(3);

/* ---- Zeroing reallocation ----------------------------------------------- */
mi_decl_nodiscard mi_decl_export void* mi_rezalloc(void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_recalloc(void* p, size_t newcount, size_t size) mi_attr_noexcept
    mi_attr_alloc_size2(2, 3);
mi_decl_nodiscard mi_decl_export void* mi_heap_rezalloc(mi_heap_t* heap, void* p, size_t newsize) mi_attr_noexcept
    mi_attr_alloc_size(3);
mi_decl_nodiscard mi_decl_export void* mi_heap_recalloc(mi_heap_t* heap, void* p, size_t newcount,
                                                        size_t size) mi_attr_noexcept mi_attr_alloc_size2(3, 4);
mi_decl_nodiscard mi_decl_export void* mi_rezalloc_aligned(void* p, size_t newsize, size_t alignment) mi_attr_noexcept
    mi_attr_alloc_size(2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export void* mi_rezalloc_aligned_at(void* p, size_t newsize, size_t alignment,
                                                              size_t offset) mi_attr_noexcept mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_recalloc_aligned(void* p, size_t newcount, size_t size,
                                                           size_t alignment) mi_attr_noexcept mi_attr_alloc_size2(2, 3)
    mi_attr_alloc_align(4);
mi_decl_nodiscard mi_decl_export void* mi_recalloc_aligned_at(void* p, size_t newcount, size_t size, size_t alignment,
                                                              size_t offset) mi_attr_noexcept mi_attr_alloc_size2(2, 3);
mi_decl_nodiscard mi_decl_export void* mi_heap_rezalloc_aligned(mi_heap_t* heap, void* p, size_t newsize,
                                                                size_t alignment) mi_attr_noexcept mi_attr_alloc_size(3)
    mi_attr_alloc_align(4);
mi_decl_nodiscard mi_decl_export void* mi_heap_rezalloc_aligned_at(mi_heap_t* heap, void* p, size_t newsize,
                                                                   size_t alignment, size_t offset) mi_attr_noexcept
    mi_attr_alloc_size(3);
mi_decl_nodiscard mi_decl_export void* mi_heap_recalloc_aligned(mi_heap_t* heap, void* p, size_t newcount, size_t size,
                                                                size_t alignment) mi_attr_noexcept
    mi_attr_alloc_size2(3, 4) mi_attr_alloc_align(5);
mi_decl_nodiscard mi_decl_export void* mi_heap_recalloc_aligned_at(mi_heap_t* heap, void* p, size_t newcount,
                                                                   size_t size, size_t alignment,
                                                                   size_t offset) mi_attr_noexcept
    mi_attr_alloc_size2(3, 4);

/* ---- Heap inspection ------------------------------------------------------ */
mi_decl_export bool mi_heap_contains_block(mi_heap_t* heap, const void* p);
mi_decl_export bool mi_heap_check_owned(mi_heap_t* heap, const void* p);
mi_decl_export bool mi_check_owned(const void* p);

typedef struct mi_heap_area_s {
  void* blocks;           /* start of the area holding the blocks */
  size_t reserved;        /* bytes of address space for the area */
  size_t committed;       /* bytes of the area that are usable now */
  size_t used;            /* number of blocks in use */
  size_t block_size;      /* usable size of each block */
  size_t full_block_size; /* size of each block including allocator overhead */
  int heap_tag;
} mi_heap_area_t;

typedef bool(mi_cdecl mi_block_visit_fun)(const mi_heap_t* heap, const mi_heap_area_t* area, void* block,
                                          size_t block_size, void* arg);
mi_decl_export bool mi_heap_visit_blocks(const mi_heap_t* heap, bool visit_all_blocks, mi_block_visit_fun* visitor,
                                         void* arg);
mi_decl_nodiscard mi_decl_export bool mi_is_in_heap_region(const void* p) mi_attr_noexcept;
/* A snapshot of the whole heap in the binary format "MIHS" v1
   (docs/heap-snapshot.md; tools/mi-heapview reads it): 0, or -1 for a
   negative fd or a failed write. It allocates nothing and stops no thread.
   MI_SNAPSHOT_BLOCKS adds free maps of the calling thread's pages. */
#define MI_SNAPSHOT_BLOCKS 0x01
mi_decl_export int mi_heap_snapshot(int fd, unsigned flags) mi_attr_noexcept;
mi_decl_export int mi_heap_snapshot_to_file(const char* path, unsigned flags) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export bool mi_is_redirected(void) mi_attr_noexcept;

/* Sub-processes: this library keeps one pool of memory for the whole
   process. The main sub-process is NULL; mi_subproc_new gives it too, so
   threads added to a "new" one share everything (docs/api-compatibility.md). */
typedef void* mi_subproc_id_t;
mi_decl_export mi_subproc_id_t mi_subproc_main(void);
mi_decl_export mi_subproc_id_t mi_subproc_new(void);
mi_decl_export void mi_subproc_delete(mi_subproc_id_t subproc);
mi_decl_export void mi_subproc_add_current_thread(mi_subproc_id_t subproc);
/* The blocks of segments left by exited threads and not yet claimed by
   another; areas come with a NULL heap. Always available (mimalloc needs
   mi_option_visit_abandoned). */
mi_decl_export bool mi_abandoned_visit_blocks(mi_subproc_id_t subproc_id, int heap_tag, bool visit_blocks,
                                              mi_block_visit_fun* visitor, void* arg);
/* Sampled guard pages for one heap (secure builds with MI_GUARDED; accepted
   and ignored otherwise): a rate of 0 samples nothing, 1 everything in the
   size bound; a seed of 0 picks one at random. */
mi_decl_export void mi_heap_guarded_set_sample_rate(mi_heap_t* heap, size_t sample_rate, size_t seed);
mi_decl_export void mi_heap_guarded_set_size_bound(mi_heap_t* heap, size_t min, size_t max);
mi_decl_export void mi_thread_set_in_threadpool(void) mi_attr_noexcept; /* a hint; changes nothing here */
/* Whether the page holding `p` (a block of `heap`, the calling thread's,
   or of any heap for NULL) has at most `perc_threshold` percent of its
   blocks in use; never the page its queue allocates from. */
mi_decl_nodiscard mi_decl_export bool mi_unsafe_heap_page_is_under_utilized(mi_heap_t* heap, void* p,
                                                                            size_t perc_threshold) mi_attr_noexcept;

/* ---- Options ---------------------------------------------------------------
   Numbered as in mimalloc v2 (deprecated slots kept) so that option values
   passed by programs built against mimalloc keep their meaning. Each is also
   read from the environment as MIMALLOC_<NAME> (e.g. MIMALLOC_PURGE_DELAY). */
typedef enum mi_option_e {
  mi_option_show_errors,
  mi_option_show_stats,
  mi_option_verbose,
  mi_option_eager_commit,
  mi_option_arena_eager_commit,
  mi_option_purge_decommits,
  mi_option_allow_large_os_pages,
  mi_option_reserve_huge_os_pages,
  mi_option_reserve_huge_os_pages_at,
  mi_option_reserve_os_memory,
  mi_option_deprecated_segment_cache,
  mi_option_deprecated_page_reset,
  mi_option_abandoned_page_purge,
  mi_option_deprecated_segment_reset,
  mi_option_eager_commit_delay,
  mi_option_purge_delay, /* ms before freed memory is returned to the OS; <0: never */
  mi_option_use_numa_nodes,
  mi_option_disallow_os_alloc,
  mi_option_os_tag,
  mi_option_max_errors,
  mi_option_max_warnings,
  mi_option_max_segment_reclaim,
  mi_option_destroy_on_exit,
  mi_option_arena_reserve,
  mi_option_arena_purge_mult,
  mi_option_purge_extend_delay,
  mi_option_abandoned_reclaim_on_free,
  mi_option_disallow_arena_alloc,
  mi_option_retry_on_oom, /* ms budget for retrying an OS allocation that failed for lack of memory */
  mi_option_visit_abandoned,
  mi_option_guarded_min,                /* sampled guard-page allocations: smallest size sampled */
  mi_option_guarded_max,                /* ... largest size sampled */
  mi_option_guarded_precise,            /* end the block exactly at the guard page (gives up 16-byte alignment) */
  mi_option_guarded_sample_rate,        /* 1 in N allocations gets guard pages (1: all, 0: none) */
  mi_option_guarded_sample_seed,        /* seed of the sampling (0: random) */
  mi_option_target_segments_per_thread, /* accepted for mimalloc's sake; no effect */
  mi_option_generic_collect,            /* accepted for mimalloc's sake; no effect */
  mi_option_allow_thp,                  /* huge pages for large blocks, while they are used densely (=1) */
  /* options of mimalloc-pprof, appended only */
  mi_option_purge_thread = 64, /* purge freed memory from a background thread while the program is idle */
  mi_option_zero_on_free,
  mi_option_segment_cache, /* free segments kept for reuse (purged) instead of unmapped */
  mi_option_dhat,          /* start the heap profiler at process start; dump at exit (mimalloc/dhat.h) */
  mi_option_dhat_backtrace, /* profiler stacks: 0 frame pointers, unwinder where they break; 1 unwinder; -1 frame pointers */
  mi_option_lockorder,      /* MI_LOCKORDER builds: 0/off, 1/abort (default), 2/warn on a lock-order violation */
  mi_option_large_quarantine, /* secure builds: freed large blocks held fenced off (at most 64; 0: cached at once) */
  mi_option_prof,             /* start the pprof sampler at process start (mimalloc/profile.h) */
  mi_option_prof_sample_rate, /* mean bytes between samples (MIMALLOC_PROF_SAMPLE_INTERVAL wins) */
  mi_option_prof_bt_max,      /* frames kept per sample (at most 128) */
  mi_option_prof_accum,       /* keep cumulative counts (alloc_objects, alloc_space) */
  mi_option_prof_seed,        /* the sampler's seed (0: random) */
  mi_option_prof_max_bytes,   /* budget of the sampler's own memory (0: none) */
  mi_option_snapshot_on_exit, /* 1: a heap snapshot at exit (docs/heap-snapshot.md); 2: with free maps */
  mi_option_memory_events,    /* count the live heap, call the memory-events handlers (mimalloc/memory-events.h) */
  mi_option_purge_holes,      /* discard the free OS pages inside used pages at an idle point (mi_on_thread_idle) */
  mi_option_purge_holes_min_interval, /* ms from one sweep's start to the next's, per thread */
  mi_option_purge_holes_full_every,   /* every N-th sweep also looks at pages unchanged since the last */
  mi_option_purge_holes_eager_zero,   /* test knob: zero a hole before it is discarded */
  mi_option_dealloc_kind_check,       /* secure builds: report new/delete/free of another allocation's kind */
  mi_option_secure_stacks,            /* secure builds: record every block's allocation and free stacks for reports */
  mi_option_secure_level,             /* secure builds: 2/full (default), 1/light (docs/secure-mode.md, "Levels") */
  mi_option_secure_quarantine,        /* secure builds: freed small blocks wait in their thread's quarantine */
  _mi_option_last,
  /* legacy names (their MIMALLOC_<NAME> is read too, docs/options.md) */
  mi_option_large_os_pages = mi_option_allow_large_os_pages,
  mi_option_eager_region_commit = mi_option_arena_eager_commit,
  mi_option_reset_decommits = mi_option_purge_decommits,
  mi_option_reset_delay = mi_option_purge_delay,
  mi_option_abandoned_page_reset = mi_option_abandoned_page_purge,
  mi_option_limit_os_alloc = mi_option_disallow_os_alloc,
  mi_option_decommit_delay = mi_option_purge_delay
} mi_option_t;

mi_decl_nodiscard mi_decl_export bool mi_option_is_enabled(mi_option_t option);
mi_decl_export void mi_option_enable(mi_option_t option);
mi_decl_export void mi_option_disable(mi_option_t option);
mi_decl_export void mi_option_set_enabled(mi_option_t option, bool enable);
mi_decl_export void mi_option_set_enabled_default(mi_option_t option, bool enable);
mi_decl_nodiscard mi_decl_export long mi_option_get(mi_option_t option);
mi_decl_nodiscard mi_decl_export long mi_option_get_clamp(mi_option_t option, long min, long max);
mi_decl_nodiscard mi_decl_export size_t mi_option_get_size(mi_option_t option);
mi_decl_export void mi_option_set(mi_option_t option, long value);
mi_decl_export void mi_option_set_default(mi_option_t option, long value);
mi_decl_export void mi_options_print(void) mi_attr_noexcept; /* the version and each option, as verbose shows them */

/* ---- POSIX and platform-compatible entry points --------------------------- */
mi_decl_export void mi_cfree(void* p) mi_attr_noexcept;
mi_decl_export void* mi__expand(void* p, size_t newsize) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export size_t mi_malloc_size(const void* p) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export size_t mi_malloc_good_size(size_t size) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export size_t mi_malloc_usable_size(const void* p) mi_attr_noexcept;
mi_decl_export int mi_posix_memalign(void** p, size_t alignment, size_t size) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export void* mi_memalign(size_t alignment, size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(2) mi_attr_alloc_align(1);
mi_decl_nodiscard mi_decl_export void* mi_valloc(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_pvalloc(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_aligned_alloc(size_t alignment, size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(2) mi_attr_alloc_align(1);
mi_decl_nodiscard mi_decl_export void* mi_reallocarray(void* p, size_t count, size_t size) mi_attr_noexcept
    mi_attr_alloc_size2(2, 3);
mi_decl_nodiscard mi_decl_export int mi_reallocarr(void* p, size_t count, size_t size) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export void* mi_aligned_recalloc(void* p, size_t newcount, size_t size,
                                                           size_t alignment) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export void* mi_aligned_offset_recalloc(void* p, size_t newcount, size_t size,
                                                                  size_t alignment, size_t offset) mi_attr_noexcept;

/* ---- Sized and aligned deallocation (C++ delete, C23 free_sized) ----------
   `size` is the size the block was asked with (count * size for a calloc),
   `alignment` one the pointer has. The default build only frees; the secure
   build aborts with a report when either does not hold. */
mi_decl_export void mi_free_size(void* p, size_t size) mi_attr_noexcept;
mi_decl_export void mi_free_size_aligned(void* p, size_t size, size_t alignment) mi_attr_noexcept;
mi_decl_export void mi_free_aligned(void* p, size_t alignment) mi_attr_noexcept;

/* ---- Environment and wide strings (the Windows C run-time's calls) ---------
   mi_dupenv_s: *buf a copy of the variable's value (NULL if unset), *size
   its length with the terminator (0 if unset); 0, or EINVAL / ENOMEM. */
mi_decl_export int mi_dupenv_s(char** buf, size_t* size, const char* name) mi_attr_noexcept;
mi_decl_export int mi_wdupenv_s(wchar_t** buf, size_t* size, const wchar_t* name) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export wchar_t* mi_wcsdup(const wchar_t* s) mi_attr_noexcept mi_attr_malloc;
mi_decl_nodiscard mi_decl_export unsigned char* mi_mbsdup(const unsigned char* s) mi_attr_noexcept mi_attr_malloc;

/* ---- C++ allocation semantics from C ------------------------------------------
   As operator new: when the allocation fails, the installed new_handler is
   called and the allocation retried while there is one; then std::bad_alloc
   is thrown (a program without a C++ run-time aborts with a report). The
   _nothrow forms return NULL instead of throwing. */
mi_decl_nodiscard mi_decl_export void* mi_new(size_t size) mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_new_aligned(size_t size, size_t alignment) mi_attr_malloc
    mi_attr_alloc_size(1) mi_attr_alloc_align(2);
mi_decl_nodiscard mi_decl_export void* mi_new_nothrow(size_t size) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export void* mi_new_aligned_nothrow(size_t size,
                                                              size_t alignment) mi_attr_noexcept mi_attr_malloc
    mi_attr_alloc_size(1) mi_attr_alloc_align(2);
mi_decl_nodiscard mi_decl_export void* mi_new_n(size_t count, size_t size) mi_attr_malloc mi_attr_alloc_size2(1, 2);
mi_decl_nodiscard mi_decl_export void* mi_new_realloc(void* p, size_t newsize) mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_new_reallocn(void* p, size_t newcount, size_t size) mi_attr_alloc_size2(2, 3);
mi_decl_nodiscard mi_decl_export void* mi_heap_alloc_new(mi_heap_t* heap, size_t size) mi_attr_malloc
    mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_heap_alloc_new_n(mi_heap_t* heap, size_t count, size_t size) mi_attr_malloc
    mi_attr_alloc_size2(2, 3);

/* ---- Typed shorthands ----------------------------------------------------- */
#define mi_malloc_tp(tp) ((tp*)mi_malloc(sizeof(tp)))
#define mi_zalloc_tp(tp) ((tp*)mi_zalloc(sizeof(tp)))
#define mi_calloc_tp(tp, n) ((tp*)mi_calloc(n, sizeof(tp)))
#define mi_mallocn_tp(tp, n) ((tp*)mi_mallocn(n, sizeof(tp)))
#define mi_reallocn_tp(p, tp, n) ((tp*)mi_reallocn(p, n, sizeof(tp)))
#define mi_recalloc_tp(p, tp, n) ((tp*)mi_recalloc(p, n, sizeof(tp)))
#define mi_heap_malloc_tp(hp, tp) ((tp*)mi_heap_malloc(hp, sizeof(tp)))
#define mi_heap_zalloc_tp(hp, tp) ((tp*)mi_heap_zalloc(hp, sizeof(tp)))
#define mi_heap_calloc_tp(hp, tp, n) ((tp*)mi_heap_calloc(hp, n, sizeof(tp)))
#define mi_heap_mallocn_tp(hp, tp, n) ((tp*)mi_heap_mallocn(hp, n, sizeof(tp)))
#define mi_heap_reallocn_tp(hp, p, tp, n) ((tp*)mi_heap_reallocn(hp, p, n, sizeof(tp)))
#define mi_heap_recalloc_tp(hp, p, tp, n) ((tp*)mi_heap_recalloc(hp, p, n, sizeof(tp)))

/* mimalloc v3 calls a thread's heap a theap: the same calls under its names */
typedef mi_heap_t mi_theap_t;
#define mi_theap_get_default() mi_heap_get_default()
#define mi_theap_set_default(hp) mi_heap_set_default(hp)
#define mi_theap_collect(hp, force) mi_heap_collect(hp, force)
#define mi_theap_malloc(hp, sz) mi_heap_malloc(hp, sz)
#define mi_theap_zalloc(hp, sz) mi_heap_zalloc(hp, sz)
#define mi_theap_calloc(hp, cnt, sz) mi_heap_calloc(hp, cnt, sz)
#define mi_theap_malloc_small(hp, sz) mi_heap_malloc_small(hp, sz)
#define mi_theap_malloc_aligned(hp, sz, a) mi_heap_malloc_aligned(hp, sz, a)
#define mi_theap_realloc(hp, p, newsz) mi_heap_realloc(hp, p, newsz)

#ifdef __cplusplus
}
#include "mimalloc/stl-allocator.h"
#endif
/* the sampled heap profiler's calls (mi_prof_*) */
#include "mimalloc/profile.h"
#endif /* MIMALLOC_H */
