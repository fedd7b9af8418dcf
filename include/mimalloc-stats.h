/* The allocator's statistics as data: a versioned struct and its JSON.

   The struct follows mimalloc 3's layout (MI_STAT_VERSION 5): the size and
   the version first, then every counter in upstream's order, with
   upstream's names, then the size-class histograms in upstream's bin
   numbering (mi_stats_get_bin_size). Version 5 is a superset of mimalloc
   2's version 4 (the same fields plus `heaps`, `theaps`,
   `heaps_delete_wait` and `chunk_bins`), so a tool written for either
   compiles against this header and reads the same names; the fields this
   allocator does not keep read 0 (docs/statistics.md lists which are kept,
   and at which MI_STAT level).

   A call given a struct of another size or version returns false and
   writes nothing: set both with mi_stats_t_decl or mi_stats_init. */
#ifndef MIMALLOC_STATS_H
#define MIMALLOC_STATS_H

#include "mimalloc.h"

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MI_STAT_VERSION 5

#if defined(_MSC_VER)
#define mi_decl_align(a) __declspec(align(a))
#elif defined(__GNUC__)
#define mi_decl_align(a) __attribute__((aligned(a)))
#else
#define mi_decl_align(a)
#endif

/* A quantity that goes up and down (bytes, pages, threads): its running
   total of increases, the highest value it reached, and its value now. */
typedef struct mi_stat_count_s {
  int64_t total;
  int64_t peak;
  int64_t current;
} mi_stat_count_t;

/* An event count or a byte sum that only grows. */
typedef struct mi_stat_counter_s {
  int64_t total;
} mi_stat_counter_t;

/* Every field, in the struct's (and the JSON's) order. */
#define MI_STAT_FIELDS() \
  MI_STAT_COUNT(pages) \
  MI_STAT_COUNT(reserved) \
  MI_STAT_COUNT(committed) \
  MI_STAT_COUNTER(reset) \
  MI_STAT_COUNTER(purged) \
  MI_STAT_COUNT(page_committed) \
  MI_STAT_COUNT(pages_abandoned) \
  MI_STAT_COUNT(threads) \
  MI_STAT_COUNT(malloc_normal) \
  MI_STAT_COUNT(malloc_huge) \
  MI_STAT_COUNT(malloc_requested) \
  MI_STAT_COUNTER(mmap_calls) \
  MI_STAT_COUNTER(commit_calls) \
  MI_STAT_COUNTER(reset_calls) \
  MI_STAT_COUNTER(purge_calls) \
  MI_STAT_COUNTER(arena_count) \
  MI_STAT_COUNTER(malloc_normal_count) \
  MI_STAT_COUNTER(malloc_huge_count) \
  MI_STAT_COUNTER(malloc_guarded_count) \
  MI_STAT_COUNTER(arena_rollback_count) \
  MI_STAT_COUNTER(arena_purges) \
  MI_STAT_COUNTER(pages_extended) \
  MI_STAT_COUNTER(pages_retire) \
  MI_STAT_COUNTER(page_searches) \
  MI_STAT_COUNTER(page_searches_count) \
  MI_STAT_COUNT(segments) \
  MI_STAT_COUNT(segments_abandoned) \
  MI_STAT_COUNT(segments_cache) \
  MI_STAT_COUNT(_segments_reserved) \
  MI_STAT_COUNT(heaps) \
  MI_STAT_COUNT(theaps) \
  MI_STAT_COUNTER(pages_reclaim_on_alloc) \
  MI_STAT_COUNTER(pages_reclaim_on_free) \
  MI_STAT_COUNTER(pages_reabandon_full) \
  MI_STAT_COUNTER(pages_unabandon_busy_wait) \
  MI_STAT_COUNTER(heaps_delete_wait)

/* Upstream's size-class numbering: bin 0 unused, 1..72 the block sizes
   mi_stats_get_bin_size gives, 73 everything larger ("huge"). */
#define MI_BIN_HUGE 73
/* upstream's page kinds: small, other, medium, large, huge, none */
#define MI_CBIN_COUNT 6

#define MI_STAT_COUNT(name) mi_stat_count_t name;
#define MI_STAT_COUNTER(name) mi_stat_counter_t name;
typedef struct mi_stats_s {
  size_t size;    /* sizeof(mi_stats_t), set by the caller */
  size_t version; /* MI_STAT_VERSION, set by the caller */
  mi_decl_align(8) MI_STAT_FIELDS() mi_stat_count_t _stat_reserved[4];
  mi_stat_counter_t _stat_counter_reserved[4];
  mi_stat_count_t malloc_bins[MI_BIN_HUGE + 1]; /* blocks handed out, by the bin of their block size */
  mi_stat_count_t page_bins[MI_BIN_HUGE + 1];   /* pages in use, by the bin of their block size */
  mi_stat_count_t chunk_bins[MI_CBIN_COUNT];    /* read 0 here: upstream's chunks are not this allocator's */
} mi_stats_t;
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER

static inline void mi_stats_init(mi_stats_t* stats) {
  memset(stats, 0, sizeof(*stats));
  stats->size = sizeof(mi_stats_t);
  stats->version = MI_STAT_VERSION;
}
/* (a declaration: the name cannot be parenthesized) */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define mi_stats_t_decl(name) \
  mi_stats_t name; \
  mi_stats_init(&name)
/* NOLINTEND(bugprone-macro-parentheses) */

/* The process's figures, every thread's included (false: wrong size or version). */
mi_decl_export bool mi_stats_get(mi_stats_t* stats) mi_attr_noexcept;
/* The same as JSON. With a buffer: `buf`, zeroed first, or NULL when the
   text does not fit (never cut short). Without (buf NULL): memory the
   caller frees with mi_free, or NULL if none could be had. */
mi_decl_export char* mi_stats_get_json(size_t buf_size, char* buf) mi_attr_noexcept;
/* Any filled struct as JSON (NULL: a wrong size or version, or no room). */
mi_decl_export char* mi_stats_as_json(mi_stats_t* stats, size_t buf_size, char* buf) mi_attr_noexcept;
/* The block size of upstream's bin `bin`; 0 past MI_BIN_HUGE. */
mi_decl_export size_t mi_stats_get_bin_size(size_t bin) mi_attr_noexcept;

/* One heap's share: what its pages hold now, walked; only the heap's own
   thread may ask (another thread's heap, or NULL from a thread with no
   heap: false). The process-wide fields (reserved, committed, OS calls)
   are left 0. */
mi_decl_export bool mi_heap_stats_get(mi_heap_t* heap, mi_stats_t* stats) mi_attr_noexcept;
mi_decl_export char* mi_heap_stats_get_json(mi_heap_t* heap, size_t buf_size, char* buf) mi_attr_noexcept;
mi_decl_export void mi_heap_stats_print_out(mi_heap_t* heap, mi_output_fun* out, void* arg) mi_attr_noexcept;

/* This allocator has one set of figures for the process: the main
   sub-process (mi_subproc_main()) gets them; another id gets false or NULL. */
mi_decl_export bool mi_subproc_stats_get(mi_subproc_id_t subproc, mi_stats_t* stats) mi_attr_noexcept;
mi_decl_export char* mi_subproc_stats_get_json(mi_subproc_id_t subproc, size_t buf_size, char* buf) mi_attr_noexcept;

/* The live heaps as JSON: every thread's pages (a page whose owner is busy
   is left out and counted, never read while it changes: "complete" says
   whether anything was), and with `include_blocks` every live block;
   `hash_addresses` replaces addresses by a keyed hash, the same within one
   dump. mi_free the result; NULL: no memory. */
mi_decl_export char* mi_heap_dump_json(bool include_blocks, bool hash_addresses) mi_attr_noexcept;
mi_decl_export char* mi_heap_dump_json_ex(bool include_blocks, bool hash_addresses, size_t wait_ms) mi_attr_noexcept;

#ifdef __cplusplus
}
#endif

#endif
