/* The process's counters copied into mimalloc's versioned statistics
   struct (include/mimalloc-stats.h), in upstream's field names and bin
   numbering: read by the public calls (api/stats-api.c), the JSON
   (api/stats-json.c) and the table printed at exit (stats-print.c). */
#include "heap.h"

static void mi_count_from(mi_stat_count_t* to, const mi_stat_atomic_t* from) {
  to->total = atomic_load_explicit(&from->total, memory_order_relaxed);
  to->peak = atomic_load_explicit(&from->peak, memory_order_relaxed);
  to->current = atomic_load_explicit(&from->current, memory_order_relaxed);
}

static int64_t mi_counter_of(const _Atomic(int64_t)* counter) {
  return atomic_load_explicit(counter, memory_order_relaxed);
}

bool _mi_stats_valid(const mi_stats_t* stats) {
  return (stats != NULL && stats->size == sizeof(mi_stats_t) && stats->version == MI_STAT_VERSION);
}

void _mi_stats_clear(mi_stats_t* stats) {
  memset(stats, 0, sizeof(*stats));
  stats->size = sizeof(mi_stats_t);
  stats->version = MI_STAT_VERSION;
}

/* Blocks handed out per size class (MI_STAT): the merged counts, and the
   calling thread's own not merged yet (a live thread's merge at its end, or
   when it calls mi_stats_merge). Our classes are finer than upstream's:
   each falls into the one upstream bin that holds its size. */
static void mi_stats_malloc_bins(mi_stats_t* stats) {
#if MI_STAT
  int64_t counts[MI_BIN_COUNT + 1];
  for (size_t bin = 0; bin <= MI_BIN_COUNT; bin++) counts[bin] = mi_counter_of(&_mi_stats.malloc_bins[bin]);
  mi_heap_t* heap = mi_get_default_heap();
  if (mi_heap_is_initialized(heap)) {
    for (const mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) {
      for (size_t bin = 0; bin <= MI_BIN_COUNT; bin++) counts[bin] += (int64_t)h->stat_malloc[bin];
    }
  }
  for (size_t bin = 1; bin <= MI_BIN_MEDIUM_MAX; bin++) {
    if (counts[bin] == 0) continue;
    stats->malloc_bins[_mi_stat_bin_of(_mi_bin_size(bin))].total += counts[bin];
    stats->malloc_normal_count.total += counts[bin];
  }
#else
  (void)stats;
#endif
}

void _mi_stats_fill(mi_stats_t* stats) {
  _mi_stats_clear(stats);
  mi_count_from(&stats->pages, &_mi_stats.pages);
  mi_count_from(&stats->reserved, &_mi_stats.reserved);
  mi_count_from(&stats->committed, &_mi_stats.committed);
  stats->purged.total = atomic_load_explicit(&_mi_stats.purged.total, memory_order_relaxed);
  mi_count_from(&stats->threads, &_mi_stats.threads);
  mi_count_from(&stats->malloc_huge, &_mi_stats.single_bytes);
#if MI_STAT >= 2
  mi_count_from(&stats->malloc_requested, &_mi_stats.malloc_requested);
#endif
  stats->mmap_calls.total = mi_counter_of(&_mi_stats.mmap_calls);
  stats->commit_calls.total = mi_counter_of(&_mi_stats.commit_calls);
  stats->purge_calls.total = mi_counter_of(&_mi_stats.purge_calls);
  stats->arena_count.total = (int64_t)_mi_arenas_count();
  stats->malloc_huge_count.total = atomic_load_explicit(&_mi_stats.large.total, memory_order_relaxed);
  mi_count_from(&stats->segments, &_mi_stats.segments);
  mi_count_from(&stats->segments_abandoned, &_mi_stats.abandoned);
  stats->pages_reclaim_on_alloc.total = mi_counter_of(&_mi_stats.reclaimed);
  stats->malloc_guarded_count.total = atomic_load_explicit(&_mi_stats.guarded_total, memory_order_relaxed);
  for (size_t bin = 0; bin < MI_STAT_BIN_COUNT; bin++) mi_count_from(&stats->page_bins[bin], &_mi_stats.page_bins[bin]);
  mi_stats_malloc_bins(stats);
}
