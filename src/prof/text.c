/* gperftools' heap_v2 text, as `pprof` (Go) and `google-pprof` (perl)
   read it:

     heap profile: <inuse objs>: <inuse bytes> [<alloc objs>: <alloc bytes>] @ heap_v2/<R>
     <inuse objs>: <inuse bytes> [<alloc objs>: <alloc bytes>] @ 0x<ret> 0x<ret> ...
     ...
     # comment lines: the allocator's exact counters
     MAPPED_LIBRARIES:
     <the process's memory map>

   The counts are the raw sampled ones: the clients unsample them with the
   period written after "heap_v2/" (always written: perl takes a missing one
   for 128 KiB, Go for no sampling at all). Addresses are return addresses in
   lowercase hex (Go's pattern stops at an uppercase digit); nothing follows
   them on a record's line (Go would count it). Without cumulative counts the
   alloc pair is 0: 0 everywhere, which Go reads as "in-use only". */
#include "prof.h"

#if MI_PPROF

/* A number right-aligned in 7 columns ("%7llu"). */
static void mi_prof_text_u64_7(mi_prof_buf_t* out, uint64_t v) {
  int digits = 1;
  for (uint64_t x = v; x >= 10; x /= 10) digits++;
  for (int i = digits; i < 7; i++) _mi_prof_buf_str(out, " ");
  _mi_prof_buf_u64(out, v);
}

/* "%7llu: %llu [%7llu: %llu] @": a space after each colon, none before ']' */
static void mi_prof_text_counts(mi_prof_buf_t* out, uint64_t inuse_objs, uint64_t inuse_bytes, uint64_t alloc_objs,
                                uint64_t alloc_bytes) {
  mi_prof_text_u64_7(out, inuse_objs);
  _mi_prof_buf_str(out, ": ");
  _mi_prof_buf_u64(out, inuse_bytes);
  _mi_prof_buf_str(out, " [");
  mi_prof_text_u64_7(out, alloc_objs);
  _mi_prof_buf_str(out, ": ");
  _mi_prof_buf_u64(out, alloc_bytes);
  _mi_prof_buf_str(out, "] @");
}

static void mi_prof_text_stat(mi_prof_buf_t* out, const char* name, uint64_t v) {
  _mi_prof_buf_str(out, "# ");
  _mi_prof_buf_str(out, name);
  _mi_prof_buf_str(out, " = ");
  _mi_prof_buf_u64(out, v);
  _mi_prof_buf_str(out, "\n");
}

static uint64_t mi_prof_stat_now(const mi_stat_atomic_t* stat) {
  int64_t v = atomic_load_explicit(&stat->current, memory_order_relaxed);
  return (v < 0 ? 0 : (uint64_t)v);
}

bool _mi_prof_text_build(const mi_prof_snapshot_t* snap, mi_prof_buf_t* out) {
  uint64_t io = 0, ib = 0, ao = 0, ab = 0;
  for (size_t i = 0; i < snap->count; i++) {
    const mi_prof_entry_t* e = &snap->entries[i];
    io += e->live_objs;
    ib += e->live_bytes;
    if (snap->accum) {
      ao += e->accum_objs;
      ab += e->accum_bytes;
    }
  }
  _mi_prof_buf_str(out, "heap profile: ");
  mi_prof_text_counts(out, io, ib, ao, ab);
  _mi_prof_buf_str(out, " heap_v2/");
  _mi_prof_buf_u64(out, snap->period == 0 ? 1 : snap->period);
  _mi_prof_buf_str(out, "\n");
  for (size_t i = 0; i < snap->count; i++) {
    const mi_prof_entry_t* e = &snap->entries[i];
    uint64_t a_objs = (snap->accum ? e->accum_objs : 0);
    uint64_t a_bytes = (snap->accum ? e->accum_bytes : 0);
    if (e->live_objs == 0 && a_objs == 0) continue; /* never "0: N", never an all-zero record */
    mi_prof_text_counts(out, e->live_objs, e->live_bytes, a_objs, a_bytes);
    for (uint32_t k = 0; k < e->depth; k++) {
      _mi_prof_buf_str(out, " ");
      _mi_prof_buf_hex(out, e->frames[k]);
    }
    _mi_prof_buf_str(out, "\n");
  }
  /* the allocator's exact figures, so a saved profile can state its own
     sampling error (both clients skip '#' lines) */
  _mi_prof_buf_str(out, "# mimalloc heap stats\n");
  mi_prof_text_stat(out, "committed", mi_prof_stat_now(&_mi_stats.committed));
  mi_prof_text_stat(out, "reserved", mi_prof_stat_now(&_mi_stats.reserved));
  /* kept with detailed statistics only (MI_STAT >= 2: docs/statistics.md) */
  mi_prof_text_stat(out, "malloc_requested", MI_STAT >= 2 ? mi_prof_stat_now(&_mi_stats.malloc_requested) : 0);
  mi_prof_text_stat(out, "pages", mi_prof_stat_now(&_mi_stats.pages));
  mi_prof_text_stat(out, "pages_abandoned", mi_prof_stat_now(&_mi_stats.abandoned));
  mi_prof_text_stat(out, "heaps", mi_prof_stat_now(&_mi_stats.threads));
  mi_prof_text_stat(out, "theaps", 0);
  mi_prof_text_stat(out, "purged", (uint64_t)atomic_load_explicit(&_mi_stats.purged.total, memory_order_relaxed));
  mi_prof_text_stat(out, "profiler_dropped_samples", snap->dropped_samples);
  mi_prof_text_stat(out, "detailed_stats", MI_STAT >= 2 ? 1 : 0);
  if (!_mi_prof_maps_text(out)) _mi_prof_buf_str(out, "MAPPED_LIBRARIES:\n");
  return !out->failed;
}

#endif
