/* The statistics as data (include/mimalloc-stats.h), the public calls:
   the process's figures (filled by heap/stats-fill.c), a heap's share
   walked from its pages. What each field holds here, and at which MI_STAT
   level: docs/statistics.md. */
#include "api.h"

bool mi_stats_get(mi_stats_t* stats) {
  if (!_mi_stats_valid(stats)) return false;
  _mi_stats_fill(stats);
  return true;
}

size_t mi_stats_get_bin_size(size_t bin) {
  return _mi_stat_bin_size(bin);
}

/* ---- One heap's share ------------------------------------------------------ */

static bool mi_heap_stats_area(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size,
                               void* arg) {
  (void)heap, (void)block, (void)block_size;
  mi_stats_t* stats = (mi_stats_t*)arg;
  size_t bin = _mi_stat_bin_of(area->block_size);
  int64_t used = (int64_t)area->used;
  int64_t bytes = used * (int64_t)area->block_size;
  mi_stat_count_t* page_bin = &stats->page_bins[bin];
  page_bin->current++;
  page_bin->total = page_bin->peak = page_bin->current;
  mi_stat_count_t* malloc_bin = &stats->malloc_bins[bin];
  malloc_bin->current += used;
  malloc_bin->total = malloc_bin->peak = malloc_bin->current;
  /* blocks of small and medium sizes are "normal", larger ones "huge" (a
     guarded sample of a small size, alone in its segment, counts as normal) */
  bool huge = (area->block_size > MI_MEDIUM_BLOCK_MAX);
  mi_stat_count_t* sum = (huge ? &stats->malloc_huge : &stats->malloc_normal);
  sum->current += bytes;
  sum->total = sum->peak = sum->current;
  stats->pages.current++;
  stats->pages.total = stats->pages.peak = stats->pages.current;
  stats->page_committed.current += (int64_t)area->committed;
  stats->page_committed.total = stats->page_committed.peak = stats->page_committed.current;
  return true;
}

/* What the heap's pages hold now (its thread's only: it alone may walk
   them): peaks and totals are the current values, the process's counters
   left 0; with MI_STAT, its allocations per size class not merged yet. */
bool mi_heap_stats_get(mi_heap_t* heap, mi_stats_t* stats) {
  if (!_mi_stats_valid(stats)) return false;
  if (heap == NULL) heap = mi_get_default_heap();
  mi_heap_handle_check(heap);
  if (!mi_heap_is_initialized(heap) || heap->thread_id != _mi_thread_id()) return false;
  _mi_stats_clear(stats);
  if (!mi_heap_visit_blocks(heap, false, &mi_heap_stats_area, stats)) return false;
#if MI_STAT
  for (size_t bin = 1; bin <= MI_BIN_MEDIUM_MAX; bin++) {
    stats->malloc_normal_count.total += (int64_t)heap->stat_malloc[bin];
  }
#endif
  return true;
}

/* ---- Sub-processes: the process has one set of figures ---------------------- */

/* cppcheck-suppress constParameter */
bool mi_subproc_stats_get(mi_subproc_id_t subproc, mi_stats_t* stats) {
  if (subproc != mi_subproc_main()) return false;
  return mi_stats_get(stats);
}
