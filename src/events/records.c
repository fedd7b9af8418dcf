/* Which blocks the memory events counted: a byte per block, beside the
   heap. A free is told only for a block whose allocation was counted, with
   the bytes that allocation counted, so the live counts stay the sum of the
   live counted blocks: a block allocated while counting was off, a second
   free of a block, a block a handler allocated (not counted) are not
   subtracted.

   Every segment that ever held a counted block gets a side array: one byte
   per 16 bytes (the smallest block) of the segment's first 4 MiB, indexed by
   the block's offset in it (a single-block segment's block by its segment,
   index 0). The byte holds the mark of the switch-on under which the block
   was counted (events.c): a switch-on takes a new mark, so the records of
   before read as not counted without a pass over them. The side arrays are
   found through a two-level map by the segment's number, both OS memory;
   a side array is 256 KiB of address space, of which only the pages
   holding records become memory (one page per 64 KiB of the heap). It goes
   when its segment is unmapped.

   A record is written by the thread that allocated the block and read and
   cleared by the thread that frees it, which the program's hand-over of the
   pointer orders; neighbouring records are separate bytes (no word is
   shared, no read-modify-write). Only the map is shared: filled in by
   compare-and-swap, and emptied under the `memevt` lock, which a clearing
   pass also holds. */
#include "events.h"

#if MI_MEMORY_EVENTS

#define MI_EV_SIDE_COUNT (MI_SEGMENT_SIZE / MI_MAX_ALIGN_SIZE)
#define MI_EV_SIDE_SIZE (MI_EV_SIDE_COUNT * sizeof(_Atomic(uint8_t)))
#define MI_EV_SEG_BITS (MI_ADDRESS_BITS - MI_SEGMENT_SHIFT)
#define MI_EV_L2_BITS 13
#define MI_EV_L2_COUNT ((size_t)1 << MI_EV_L2_BITS)
#define MI_EV_L1_COUNT ((size_t)1 << (MI_EV_SEG_BITS - MI_EV_L2_BITS))

typedef _Atomic(_Atomic(uint8_t)*) mi_ev_side_ref_t;
static _Atomic(mi_ev_side_ref_t*) mi_ev_map[MI_EV_L1_COUNT];
static _Atomic(bool) mi_ev_map_used; /* a side array was ever made */
extern mi_lock_t _mi_events_lock;    /* events.c */

static mi_ev_side_ref_t* mi_ev_l2_make(size_t i) {
  mi_ev_side_ref_t* l2 = (mi_ev_side_ref_t*)_mi_os_alloc_meta(MI_EV_L2_COUNT * sizeof(mi_ev_side_ref_t));
  if (l2 == NULL) return NULL;
  mi_ev_side_ref_t* expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&mi_ev_map[i], &expected, l2, memory_order_acq_rel,
                                               memory_order_acquire)) {
    _mi_os_free_meta(l2, MI_EV_L2_COUNT * sizeof(mi_ev_side_ref_t));
    return expected; /* another thread's */
  }
  return l2;
}

static _Atomic(uint8_t)* mi_ev_side_make(mi_ev_side_ref_t* ref) {
  _Atomic(uint8_t)* side = (_Atomic(uint8_t)*)_mi_os_alloc_meta(MI_EV_SIDE_SIZE);
  if (side == NULL) return NULL;
  atomic_store_explicit(&mi_ev_map_used, true, memory_order_relaxed);
  _Atomic(uint8_t)* expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(ref, &expected, side, memory_order_acq_rel, memory_order_acquire)) {
    _mi_os_free_meta(side, MI_EV_SIDE_SIZE);
    return expected;
  }
  return side;
}

_Atomic(uint8_t)* _mi_events_record(uintptr_t key, bool create) {
  uintptr_t seg = key >> MI_SEGMENT_SHIFT;
  if (seg >= ((uintptr_t)1 << MI_EV_SEG_BITS)) return NULL;
  size_t i = (size_t)(seg >> MI_EV_L2_BITS);
  mi_ev_side_ref_t* l2 = atomic_load_explicit(&mi_ev_map[i], memory_order_acquire);
  if (l2 == NULL) {
    if (!create || (l2 = mi_ev_l2_make(i)) == NULL) return NULL;
  }
  mi_ev_side_ref_t* ref = &l2[seg & (MI_EV_L2_COUNT - 1)];
  _Atomic(uint8_t)* side = atomic_load_explicit(ref, memory_order_acquire);
  if (side == NULL) {
    if (!create || (side = mi_ev_side_make(ref)) == NULL) return NULL;
  }
  return &side[(key & MI_SEGMENT_MASK) / MI_MAX_ALIGN_SIZE];
}

void _mi_events_records_clear(void) {
  mi_lock_assert_held(&_mi_events_lock);
  if (!atomic_load_explicit(&mi_ev_map_used, memory_order_relaxed)) return;
  for (size_t i = 0; i < MI_EV_L1_COUNT; i++) {
    mi_ev_side_ref_t* l2 = atomic_load_explicit(&mi_ev_map[i], memory_order_acquire);
    if (l2 == NULL) continue;
    for (size_t j = 0; j < MI_EV_L2_COUNT; j++) {
      _Atomic(uint8_t)* side = atomic_load_explicit(&l2[j], memory_order_acquire);
      /* (a plain memset: a record written meanwhile belongs to an operation
         that straddles the switch-on, counted on one side of it at most) */
      if (side != NULL) memset((void*)side, 0, MI_EV_SIDE_SIZE);
    }
  }
}

/* No block of the segment is live, so no operation reads its records. */
void _mi_events_records_unmapped(const void* segment) {
  if (!atomic_load_explicit(&mi_ev_map_used, memory_order_relaxed)) return;
  uintptr_t seg = (uintptr_t)segment >> MI_SEGMENT_SHIFT;
  if (seg >= ((uintptr_t)1 << MI_EV_SEG_BITS)) return;
  mi_ev_side_ref_t* l2 = atomic_load_explicit(&mi_ev_map[seg >> MI_EV_L2_BITS], memory_order_acquire);
  if (l2 == NULL) return;
  _mi_lock_acquire(&_mi_events_lock); /* not while a clearing pass writes it */
  _Atomic(uint8_t)* side = atomic_exchange_explicit(&l2[seg & (MI_EV_L2_COUNT - 1)], NULL, memory_order_acq_rel);
  _mi_lock_release(&_mi_events_lock);
  if (side != NULL) _mi_os_free_meta((void*)side, MI_EV_SIDE_SIZE);
}

#endif
