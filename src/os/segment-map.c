/* Two bitmaps over the 4 MiB address chunks: one marks the chunks that start
   one of our segments, the other the further chunks a segment longer than
   one chunk covers (a large or huge block). Together they answer "is this
   pointer ours, and in which segment?" for any address without touching the
   address itself: invalid-free detection, mi_heap_contains_block and
   mi_is_in_heap_region use them. */
#include "os.h"

#define MI_SEGMENT_MAP_WORDS (MI_SEGMENT_MAP_BITS / 64)

/* 2 x 8 MiB of address space, reserved lazily; only the words that are
   written ever get memory. The start map comes first, read inline by
   _mi_segment_map_contains (os/os.h); the continuation map follows it. */
_Atomic(uint64_t)* _Atomic _mi_segment_map;

static _Atomic(uint64_t)* mi_segment_map_get(bool create) {
  _Atomic(uint64_t)* map = atomic_load_explicit(&_mi_segment_map, memory_order_acquire);
  if (map != NULL || !create) return map;
  map = (_Atomic(uint64_t)*)_mi_os_alloc_meta(2 * MI_SEGMENT_MAP_WORDS * sizeof(uint64_t));
  if (map == NULL) return NULL;
  _Atomic(uint64_t)* expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&_mi_segment_map, &expected, map, memory_order_acq_rel,
                                               memory_order_acquire)) {
    _mi_os_free_meta(map, 2 * MI_SEGMENT_MAP_WORDS * sizeof(uint64_t));
    map = expected;
  }
  return map;
}

static void mi_map_bits_set(_Atomic(uint64_t)* words, size_t first, size_t count, bool present) {
  while (count > 0) {
    size_t shift = first % 64;
    size_t n = (count < 64 - shift ? count : 64 - shift);
    uint64_t bits = (n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1) << shift);
    if (present) atomic_fetch_or_explicit(&words[first / 64], bits, memory_order_release);
    else atomic_fetch_and_explicit(&words[first / 64], ~bits, memory_order_release);
    first += n;
    count -= n;
  }
}

/* Record a segment of `size` bytes as ours (or no longer). False if the map
   itself could not be had: then the segment must not be used, since frees
   into it would not be recognised as ours. */
bool _mi_segment_map_set(const mi_segment_t* segment, size_t size, bool present) {
  uintptr_t chunk = (uintptr_t)segment >> MI_SEGMENT_SHIFT;
  size_t chunks = (size + MI_SEGMENT_SIZE - 1) >> MI_SEGMENT_SHIFT;
  if (chunk + chunks > MI_SEGMENT_MAP_BITS) return !present; /* beyond the map (the 48-bit address space) */
  _Atomic(uint64_t)* map = mi_segment_map_get(present);
  if (map == NULL) {
    return !present; /* fault path */
  }
  /* continuation bits first on the way in and last on the way out, so a
     reader that finds them always finds the start bit below them too */
  if (present) mi_map_bits_set(map + MI_SEGMENT_MAP_WORDS, chunk + 1, chunks - 1, true);
  mi_map_bits_set(map, chunk, 1, present);
  if (!present) mi_map_bits_set(map + MI_SEGMENT_MAP_WORDS, chunk + 1, chunks - 1, false);
  return true;
}

/* The segment whose address range holds `p`, or NULL if none of ours does.
   A pointer in a continuation chunk walks down to the nearest start bit,
   crossing only chunks that are continuation chunks themselves, so it never
   strays into an unrelated segment. The caller still checks the segment's
   cookie and size: the answer can be stale if the segment is being unmapped. */
mi_segment_t* _mi_segment_containing(const void* p) {
  if (_mi_segment_map_contains(p)) return _mi_ptr_segment(p);
  uintptr_t chunk = (uintptr_t)p >> MI_SEGMENT_SHIFT;
  if (chunk >= MI_SEGMENT_MAP_BITS) return NULL;
  _Atomic(uint64_t)* map = atomic_load_explicit(&_mi_segment_map, memory_order_acquire);
  if (map == NULL) return NULL;
  _Atomic(uint64_t)* cont = map + MI_SEGMENT_MAP_WORDS;
  /* chunks [low, chunk] of word w must all be continuation chunks until a
     start bit is found among them */
  size_t w = chunk / 64;
  uint64_t span = (chunk % 64 == 63 ? ~(uint64_t)0 : ((uint64_t)1 << (chunk % 64 + 1)) - 1);
  for (;;) {
    uint64_t starts = atomic_load_explicit(&map[w], memory_order_acquire) & span;
    uint64_t conts = atomic_load_explicit(&cont[w], memory_order_acquire) & span;
    if (starts != 0) {
      size_t top = mi_bsr64(starts);
      uint64_t above = span & ~((((uint64_t)2) << top) - 1); /* chunks between the start and p's */
      if ((conts & above) != above) return NULL;
      return (mi_segment_t*)((w * 64 + top) << MI_SEGMENT_SHIFT);
    }
    if (conts != span || w == 0) return NULL;
    w--;
    span = ~(uint64_t)0;
  }
}

/* The first chunk at or above `from` that starts a segment (its address),
   or 0: the heap snapshot's walk. Words never written read as zero. */
uintptr_t _mi_segment_map_next(uintptr_t from) {
  _Atomic(uint64_t)* map = atomic_load_explicit(&_mi_segment_map, memory_order_acquire);
  if (map == NULL) return 0;
  size_t chunk = (size_t)((from + MI_SEGMENT_SIZE - 1) >> MI_SEGMENT_SHIFT);
  while (chunk < MI_SEGMENT_MAP_BITS) {
    uint64_t word = atomic_load_explicit(&map[chunk / 64], memory_order_acquire) >> (chunk % 64);
    if (word != 0) return (uintptr_t)(chunk + mi_bsf64(word)) << MI_SEGMENT_SHIFT;
    chunk = (chunk / 64 + 1) * 64;
  }
  return 0;
}
