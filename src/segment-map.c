/* A bitmap of the 4 MiB address chunks that start one of our segments. It
   answers "is this pointer ours?" for any address without touching the
   address itself: invalid-free detection and mi_is_in_heap_region use it. */
#include "internal.h"

#define MI_SEGMENT_MAP_WORDS (MI_SEGMENT_MAP_BITS / 64)

/* 8 MiB of address space, reserved lazily; only the words that are written
   ever get memory. Read inline by _mi_segment_map_contains (internal.h). */
_Atomic(uint64_t)* _Atomic _mi_segment_map;

static _Atomic(uint64_t)* mi_segment_map_get(bool create) {
  _Atomic(uint64_t)* map = atomic_load_explicit(&_mi_segment_map, memory_order_acquire);
  if (map != NULL || !create) return map;
  map = (_Atomic(uint64_t)*)_mi_os_alloc_meta(MI_SEGMENT_MAP_WORDS * sizeof(uint64_t));
  if (map == NULL) return NULL;
  _Atomic(uint64_t)* expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&_mi_segment_map, &expected, map, memory_order_acq_rel,
                                               memory_order_acquire)) {
    _mi_os_free_meta(map, MI_SEGMENT_MAP_WORDS * sizeof(uint64_t));
    map = expected;
  }
  return map;
}

/* Record a segment as ours (or no longer). False if the map itself could not
   be had: then the segment must not be used, since frees into it would not
   be recognised as ours. */
bool _mi_segment_map_set(const mi_segment_t* segment, bool present) {
  uintptr_t chunk = (uintptr_t)segment >> MI_SEGMENT_SHIFT;
  if (chunk >= MI_SEGMENT_MAP_BITS) return !present; /* beyond the map (the 48-bit address space) */
  _Atomic(uint64_t)* map = mi_segment_map_get(present);
  if (map == NULL) {
    return !present; /* fault path */
  }
  uint64_t bit = (uint64_t)1 << (chunk % 64);
  if (present) atomic_fetch_or_explicit(&map[chunk / 64], bit, memory_order_release);
  else atomic_fetch_and_explicit(&map[chunk / 64], ~bit, memory_order_release);
  return true;
}
