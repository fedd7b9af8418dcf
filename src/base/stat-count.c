/* The statistics counters: kept with atomics on the slow paths of every
   layer (OS memory, segments, pages); printed by api/stats.c. */
#include "base.h"

mi_stats_t _mi_stats;

void _mi_stat_increase(mi_stat_count_t* stat, int64_t amount) {
  int64_t cur = atomic_fetch_add_explicit(&stat->current, amount, memory_order_relaxed) + amount;
  atomic_fetch_add_explicit(&stat->total, amount, memory_order_relaxed);
  int64_t peak = atomic_load_explicit(&stat->peak, memory_order_relaxed);
  while (cur > peak &&
         !atomic_compare_exchange_weak_explicit(&stat->peak, &peak, cur, memory_order_relaxed, memory_order_relaxed)) {
  }
}

void _mi_stat_decrease(mi_stat_count_t* stat, int64_t amount) {
  atomic_fetch_sub_explicit(&stat->current, amount, memory_order_relaxed);
}
