/* Zero-size allocations in secure builds (MI_SECURE): their segments, the
   lists they are on, and the check of a slot handed back (zero-size.h says
   how); the slots are handed out by the secure front (secure/secure-zero.c). */
#include "segment.h"
#include "secure-zero-size.h"

#if MI_SECURE

mi_lock_t _mi_zero_lock;
mi_zero_segment_t* _mi_zero_orphans; /* segments of no heap with slots live */
mi_zero_segment_t* _mi_zero_spare;   /* one empty segment of no heap, kept for the next heap */

void _mi_zero_init(void) {
  _mi_lock_init(&_mi_zero_lock, MI_LOCK_ZERO);
}

/* ---- Segments ------------------------------------------------------------- */

/* Reserved whole, inaccessible; only the header is committed. Outside the
   lock: the OS call may wait out an out-of-memory retry. */
mi_zero_segment_t* _mi_zero_segment_map(void) {
  bool is_pinned = false;
  size_t header = mi_zero_header_size();
  void* p = _mi_os_alloc_aligned(MI_SEGMENT_SIZE, MI_SEGMENT_SIZE, false, false, &is_pinned);
  if (p == NULL) return NULL;
  if (!_mi_os_commit(p, header)) {
    _mi_os_free(p, MI_SEGMENT_SIZE); /* fault path */
    return NULL;
  }
  mi_zero_segment_t* z = (mi_zero_segment_t*)p; /* reads as zero */
  mi_segment_t* segment = &z->segment;
  segment->cookie = (uintptr_t)segment ^ _mi_process_key;
  segment->segment_size = MI_SEGMENT_SIZE;
  segment->kind = MI_SEGMENT_ZERO;
  segment->page_shift = 63; /* every pointer's page is pages[0], as in a single-block segment */
  segment->page_count = 1;
  z->first = (header + _mi_os_page_size()) / MI_ZERO_SLOT;
  z->cursor = z->first;
  atomic_store_explicit(&z->high, z->first, memory_order_relaxed);
  segment->info_size = z->first * MI_ZERO_SLOT;
  /* pages[0] spans the slots, so mi_is_in_heap_region and
     mi_heap_contains_block see them; capacity 0: no block to visit */
  mi_page_t* page = &segment->pages[0];
  atomic_store_explicit(&page->state, MI_PAGE_IN_USE, memory_order_relaxed);
  page->start = (uint8_t*)z + segment->info_size;
  page->block_size = MI_ZERO_SLOT;
  page->reserved = (uint32_t)(MI_ZERO_POSITIONS - z->first);
  if (!_mi_segment_map_set(segment, MI_SEGMENT_SIZE, true)) {
    _mi_os_free(p, MI_SEGMENT_SIZE); /* fault path */
    return NULL;
  }
  _mi_stat_increase(&_mi_stats.committed, (int64_t)header);
  return z;
}

/* No slot of it is live (or its heap was destroyed); outside the lock. A
   later free of one of its pointers is a double free (validate.c keeps the
   last segments unmapped). */
void _mi_zero_segment_unmap(mi_zero_segment_t* z) {
  _mi_segment_map_set(&z->segment, MI_SEGMENT_SIZE, false);
  _mi_raise_segment_unmapped(z, MI_SEGMENT_SIZE); /* as any segment's: stale frees, the profiler's records */
  _mi_stat_decrease(&_mi_stats.committed, (int64_t)mi_zero_header_size());
  _mi_os_free(z, MI_SEGMENT_SIZE);
}

void _mi_zero_link(mi_zero_segment_t** head, mi_zero_segment_t* z) {
  z->prev = NULL;
  z->next = *head;
  if (*head != NULL) (*head)->prev = z;
  *head = z;
}

void _mi_zero_unlink(mi_zero_segment_t** head, mi_zero_segment_t* z) {
  if (z->prev != NULL) z->prev->next = z->next;
  else *head = z->next;
  if (z->next != NULL) z->next->prev = z->prev;
  z->next = z->prev = NULL;
}

mi_zero_segment_t** _mi_zero_list_of(mi_zero_segment_t* z) {
  mi_heap_t* heap = mi_zero_heap(z);
  return (heap != NULL ? &heap->zero_segments : &_mi_zero_orphans);
}

/* An empty segment of no heap (under the lock): the spare if there is none,
   else returned for the caller to unmap. */
mi_zero_segment_t* _mi_zero_retire(mi_zero_segment_t* z) {
  mi_zero_set_heap(z, NULL);
  if (_mi_zero_spare != NULL) return z;
  _mi_zero_spare = z;
  return NULL;
}

/* ---- Free and validation -------------------------------------------------- */

/* Empty, and neither its heap's first nor being visited: retired (under
   the lock); returns the segment to unmap, if any. */
mi_zero_segment_t* _mi_zero_maybe_retire(mi_zero_segment_t* z) {
  mi_heap_t* heap = mi_zero_heap(z);
  /* a heap keeps its first segment when it empties: it is where its next
     zero-size allocation goes */
  if (z->live != 0 || z->visits != 0 || (heap != NULL && heap->zero_segments == z)) return NULL;
  _mi_zero_unlink(_mi_zero_list_of(z), z);
  return _mi_zero_retire(z);
}

static mi_zero_state_t mi_zero_state(const mi_zero_segment_t* z, const void* p) {
  size_t offset = (size_t)((const uint8_t*)p - (const uint8_t*)z);
  size_t pos = offset / MI_ZERO_SLOT;
  if (offset % MI_ZERO_SLOT != 0 || pos < z->first || pos >= atomic_load_explicit(&z->high, memory_order_relaxed)) {
    return MI_ZERO_INVALID; /* inside a slot, in the header, or never handed out */
  }
  return (mi_zero_bit(z, pos) ? MI_ZERO_LIVE : MI_ZERO_FREED);
}

/* Without `release` no lock: a visitor of the heap may ask for a block's
   size (the visit does not hold the lock either, but its callers might). */
mi_zero_state_t _mi_zero_check(mi_segment_t* segment, const void* p, bool release) {
  mi_zero_segment_t* z = mi_zero_of(segment);
  if (!release) return mi_zero_state(z, p);
  mi_zero_segment_t* unmap = NULL;
  _mi_lock_acquire(&_mi_zero_lock);
  mi_zero_state_t state = mi_zero_state(z, p);
  if (state == MI_ZERO_LIVE) {
    mi_zero_bit_set(z, (size_t)((const uint8_t*)p - (uint8_t*)z) / MI_ZERO_SLOT, false);
    z->live--;
    unmap = _mi_zero_maybe_retire(z);
  }
  _mi_lock_release(&_mi_zero_lock);
  if (unmap != NULL) _mi_zero_segment_unmap(unmap);
  return state;
}

#endif
