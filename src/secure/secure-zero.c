/* Zero-size allocations in secure builds (MI_SECURE): slots handed out
   (zero-size.h says how; their segments: segment/secure-zero-segments.c). */
#include "../api/api.h"
#include "../segment/secure-zero-size.h"

#if MI_SECURE

/* ---- Allocation ----------------------------------------------------------- */

/* The first free position in [from, end) that is r modulo step. */
static size_t mi_zero_find_in(const mi_zero_segment_t* z, size_t from, size_t end, size_t step, size_t r) {
  if (step == 1) {
    for (size_t pos = from; pos < end; pos = (pos / 64 + 1) * 64) {
      uint64_t free_bits =
          ~atomic_load_explicit(&z->used[pos / 64], memory_order_relaxed) & (~(uint64_t)0 << (pos % 64));
      if (free_bits != 0) {
        size_t found = (pos / 64) * 64 + mi_bsf64(free_bits);
        return (found < end ? found : SIZE_MAX);
      }
    }
    return SIZE_MAX;
  }
  for (size_t pos = from + (r + step - from % step) % step; pos < end; pos += step) {
    if (!mi_zero_bit(z, pos)) return pos;
  }
  return SIZE_MAX;
}

/* A free slot from the cursor on, wrapping around: SIZE_MAX if none. */
static size_t mi_zero_find(const mi_zero_segment_t* z, size_t step, size_t r) {
  if (z->live >= MI_ZERO_POSITIONS - z->first) return SIZE_MAX;
  size_t pos = mi_zero_find_in(z, z->cursor, MI_ZERO_POSITIONS, step, r);
  if (pos == SIZE_MAX) pos = mi_zero_find_in(z, z->first, z->cursor, step, r);
  return pos;
}

static void* mi_zero_take(mi_zero_segment_t* z, size_t pos) {
  mi_zero_bit_set(z, pos, true);
  z->live++;
  z->cursor = pos + 1; /* at the end, the search wraps around */
  if (pos >= atomic_load_explicit(&z->high, memory_order_relaxed)) {
    atomic_store_explicit(&z->high, pos + 1, memory_order_relaxed);
  }
  return (uint8_t*)z + pos * MI_ZERO_SLOT;
}

/* A slot of one of the heap's segments (under the lock); the one it was
   found in becomes the heap's first, where the next search starts. */
static void* mi_zero_take_from_heap(mi_heap_t* heap, size_t step, size_t r) {
  for (mi_zero_segment_t* z = heap->zero_segments; z != NULL; z = z->next) {
    size_t pos = mi_zero_find(z, step, r);
    if (pos == SIZE_MAX) continue;
    if (z != heap->zero_segments) {
      _mi_zero_unlink(&heap->zero_segments, z);
      _mi_zero_link(&heap->zero_segments, z);
    }
    return mi_zero_take(z, pos);
  }
  return NULL;
}

/* A segment of no heap becomes the heap's, with a slot taken (under the
   lock): the spare, or one its exited thread left with slots live (they are
   the heap's now, as the blocks of an abandoned page are its reclaimer's),
   so that threads which leave a zero-size allocation behind do not keep a
   segment each. */
static void* mi_zero_adopt(mi_heap_t* heap, size_t step, size_t r) {
  mi_zero_segment_t* z = _mi_zero_spare;
  size_t pos = (z != NULL ? mi_zero_find(z, step, r) : SIZE_MAX);
  if (pos != SIZE_MAX) {
    _mi_zero_spare = NULL;
  } else {
    for (z = _mi_zero_orphans; z != NULL; z = z->next) {
      pos = mi_zero_find(z, step, r);
      if (pos != SIZE_MAX) break;
    }
    if (z == NULL) return NULL;
    _mi_zero_unlink(&_mi_zero_orphans, z);
  }
  mi_zero_set_heap(z, heap);
  _mi_zero_link(&heap->zero_segments, z);
  return mi_zero_take(z, pos);
}

void* _mi_zero_malloc(mi_heap_t* heap, size_t alignment, size_t offset) {
  mi_assert_internal(_mi_zero_can_align(alignment, offset));
  if (mi_unlikely(!mi_heap_is_initialized(heap))) {
    heap = _mi_heap_init_thread();
    if (heap == NULL) {
      errno = ENOMEM; /* fault path */
      return NULL;
    }
  }
  /* positions whose address plus offset is a multiple of the alignment
     (segments are aligned to more than any alignment asked here) */
  size_t step = (alignment > MI_ZERO_SLOT ? alignment / MI_ZERO_SLOT : 1);
  size_t r = (step == 1 ? 0 : ((alignment - offset % alignment) % alignment) / MI_ZERO_SLOT);
  _mi_lock_acquire(&_mi_zero_lock);
  void* p = mi_zero_take_from_heap(heap, step, r);
  if (p == NULL) p = mi_zero_adopt(heap, step, r);
  _mi_lock_release(&_mi_zero_lock);
  if (p != NULL) return p;
  mi_zero_segment_t* z = _mi_zero_segment_map();
  if (z == NULL) {
    errno = ENOMEM; /* nothing printed: a legal request that failed */
    return NULL;
  }
  _mi_lock_acquire(&_mi_zero_lock);
  mi_zero_set_heap(z, heap);
  _mi_zero_link(&heap->zero_segments, z);
  size_t pos = mi_zero_find(z, step, r);
  p = (pos != SIZE_MAX ? mi_zero_take(z, pos) : NULL);
  _mi_lock_release(&_mi_zero_lock);
  if (p == NULL) errno = ENOMEM; /* no position of that alignment (not asked of this file: see the assert) */
  return p;
}

#endif
