/* The statistics counters: kept with atomics on the slow paths of every
   layer (OS memory, segments, pages); printed by api/stats.c. */
#include "base.h"

mi_process_stats_t _mi_stats;

void _mi_stat_increase(mi_stat_atomic_t* stat, int64_t amount) {
  int64_t cur = atomic_fetch_add_explicit(&stat->current, amount, memory_order_relaxed) + amount;
  atomic_fetch_add_explicit(&stat->total, amount, memory_order_relaxed);
  int64_t peak = atomic_load_explicit(&stat->peak, memory_order_relaxed);
  while (cur > peak &&
         !atomic_compare_exchange_weak_explicit(&stat->peak, &peak, cur, memory_order_relaxed, memory_order_relaxed)) {
  }
}

void _mi_stat_decrease(mi_stat_atomic_t* stat, int64_t amount) {
  atomic_fetch_sub_explicit(&stat->current, amount, memory_order_relaxed);
}

/* Upstream's bins (include/mimalloc-stats.h): a word per bin up to 8 words,
   then 4 bins per doubling, each holding the sizes up to its largest. */
#define MI_STAT_BIN_WSIZE_MAX ((size_t)512 * 1024 / 8) /* bin 60; above it, the huge bin */

size_t _mi_stat_bin_of(size_t size) {
  size_t wsize = (size + 7) / 8;
  if (wsize <= 8) return (wsize == 0 ? 1 : wsize);
  if (wsize > MI_STAT_BIN_WSIZE_MAX) return MI_STAT_BIN_HUGE;
  size_t w = wsize - 1;
  size_t b = mi_bsr64(w);
  return (b << 2) + ((w >> (b - 2)) & 3) - 3;
}

size_t _mi_stat_bin_size(size_t bin) {
  if (bin > MI_STAT_BIN_HUGE) return 0;
  if (bin == MI_STAT_BIN_HUGE) return (MI_STAT_BIN_WSIZE_MAX + 1) * 8;
  if (bin <= 8) return (bin == 0 ? 1 : bin) * 8;
  size_t k = bin + 3; /* the largest size of the bin, from the inverse of _mi_stat_bin_of */
  return ((5 + (k & 3)) << ((k >> 2) - 2)) * 8;
}
