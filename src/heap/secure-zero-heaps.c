/* Zero-size allocations in secure builds (MI_SECURE): a heap's zero
   segments, passed on when it is deleted, freed when it is destroyed, and
   visited. */
#include "heap.h"
#include "../segment/secure-zero-size.h"

#if MI_SECURE

/* `from`'s segments go to `to` (a deleted heap's to its backing heap), or
   to no heap (its thread exits or is not in a fork child), where those with
   live slots wait for their frees; the empty ones are retired. */
void _mi_zero_heap_delete(mi_heap_t* from, mi_heap_t* to) {
  mi_zero_segment_t* unmap = NULL;
  _mi_lock_acquire(&_mi_zero_lock);
  while (from->zero_segments != NULL) {
    mi_zero_segment_t* z = from->zero_segments;
    _mi_zero_unlink(&from->zero_segments, z);
    mi_zero_set_heap(z, to);
    /* empty: kept only as `to`'s first */
    if (z->live == 0 && z->visits == 0 && (to == NULL || to->zero_segments != NULL)) {
      mi_zero_segment_t* surplus = _mi_zero_retire(z);
      if (surplus != NULL) {
        surplus->next = unmap;
        unmap = surplus;
      }
      continue;
    }
    /* behind `to`'s first, which stays where its next search starts */
    mi_zero_segment_t** head = _mi_zero_list_of(z);
    if (*head == NULL) {
      _mi_zero_link(head, z);
    } else {
      _mi_zero_link(&(*head)->next, z);
      z->prev = *head;
    }
  }
  _mi_lock_release(&_mi_zero_lock);
  while (unmap != NULL) {
    mi_zero_segment_t* next = unmap->next;
    _mi_zero_segment_unmap(unmap);
    unmap = next;
  }
}

/* mi_heap_destroy: the heap's zero-size allocations go with it, as its
   blocks do; their segments go back to the OS. */
void _mi_zero_heap_destroy(mi_heap_t* heap) {
  _mi_lock_acquire(&_mi_zero_lock);
  mi_zero_segment_t* z = heap->zero_segments;
  heap->zero_segments = NULL;
  for (mi_zero_segment_t* s = z; s != NULL; s = s->next) mi_zero_set_heap(s, NULL);
  _mi_lock_release(&_mi_zero_lock);
  while (z != NULL) {
    mi_zero_segment_t* next = z->next;
    _mi_zero_segment_unmap(z);
    z = next;
  }
}

/* The visitor runs without the lock (it may free what it visits, or ask
   its size); the segment it visits is held mapped meanwhile. */
bool _mi_zero_visit(const mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  bool ok = true;
  mi_zero_segment_t* unmap = NULL;
  _mi_lock_acquire(&_mi_zero_lock);
  mi_zero_segment_t* z = heap->zero_segments;
  while (z != NULL && ok) {
    z->visits++;
    _mi_lock_release(&_mi_zero_lock);
    mi_heap_area_t area;
    area.blocks = (uint8_t*)z + z->first * MI_ZERO_SLOT;
    area.reserved = (MI_ZERO_POSITIONS - z->first) * MI_ZERO_SLOT;
    area.committed = 0; /* never accessible */
    area.used = z->live;
    area.block_size = 0;
    area.full_block_size = MI_ZERO_SLOT;
    area.heap_tag = 0;
    ok = visitor(heap, &area, NULL, 0, arg);
    size_t high = atomic_load_explicit(&z->high, memory_order_relaxed);
    for (size_t pos = z->first; ok && visit_blocks && pos < high; pos++) {
      /* a word of the map at a time where it is empty: the high-water mark
         stays where a burst of zero-size blocks left it (the secure fuzz
         harness's visits spent 9% of its time testing free slots bit by bit) */
      if (pos % 64 == 0 && atomic_load_explicit(&z->used[pos / 64], memory_order_relaxed) == 0) {
        pos += 63;
        continue;
      }
      if (mi_zero_bit(z, pos)) ok = visitor(heap, &area, (uint8_t*)z + pos * MI_ZERO_SLOT, 0, arg);
    }
    _mi_lock_acquire(&_mi_zero_lock);
    z->visits--;
    mi_zero_segment_t* next = z->next;
    mi_zero_segment_t* surplus = _mi_zero_maybe_retire(z); /* its slots were freed in the visit */
    if (surplus != NULL) {
      surplus->next = unmap; /* off every list now */
      unmap = surplus;
    }
    z = next;
  }
  _mi_lock_release(&_mi_zero_lock);
  while (unmap != NULL) {
    mi_zero_segment_t* next = unmap->next;
    _mi_zero_segment_unmap(unmap);
    unmap = next;
  }
  return ok;
}

#endif
