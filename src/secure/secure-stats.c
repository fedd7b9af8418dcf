/* The secure build's own figures, gathered for the statistics' JSON
   (api/stats-json.c): what a fuzzing or hardening campaign reads without
   parsing reports. Process-wide counters, and the calling thread's
   quarantine (another thread's is its own to read). */
#include "secure.h"

void _mi_secure_stats_get(mi_secure_stats_t* stats) {
  memset(stats, 0, sizeof(*stats));
  stats->reports = atomic_load_explicit(&_mi_stats.secure_reports, memory_order_relaxed);
  stats->quarantine_capacity = MI_SECURE_QUARANTINE;
  mi_heap_t* heap = mi_get_default_heap();
  if (mi_heap_is_initialized(heap)) {
    stats->quarantine_blocks = (int64_t)_mi_secure_quarantine_count(heap->tld);
    stats->held_pages = (int64_t)heap->tld->held_count;
  }
  stats->large_quarantine_blocks = _mi_secure_large_quarantined();
  _mi_guard_stats_get(&stats->guarded_live, &stats->guarded_total, &stats->guarded_quarantine_blocks);
  stats->guard_pages_set = atomic_load_explicit(&_mi_stats.protect_calls, memory_order_relaxed);
}
