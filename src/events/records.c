/* Which blocks the memory events counted: a byte per block, beside the
   heap. A free is told only for a block whose allocation was counted, with
   the bytes that allocation counted, so the live counts stay the sum of the
   live counted blocks: a block allocated while counting was off, a second
   free of a block, a block a handler allocated (not counted) are not
   subtracted.

   Every segment that ever held a counted block gets a side array of these
   bytes (os/side-map.h): one per 16 bytes of its first 4 MiB, indexed
   by the block's offset in it (a single-block segment's block by its
   segment, index 0). The byte holds the mark of the switch-on under which
   the block was counted (events.c): a switch-on takes a new mark, so the
   records of before read as not counted without a pass over them. A side
   array is 256 KiB of address space, of which only the pages holding
   records become memory (one page per 64 KiB of the heap). It goes when its
   segment is unmapped.

   A record is written by the thread that allocated the block and read and
   cleared by the thread that frees it, which the program's hand-over of the
   pointer orders; neighbouring records are separate bytes (no word is
   shared, no read-modify-write). Only the map is shared: filled in by
   compare-and-swap, and emptied under the `memevt` lock, which a clearing
   pass also holds. */
#include "events.h"

#if MI_MEMORY_EVENTS

static mi_side_map_t mi_ev_side;
extern mi_lock_t _mi_events_lock; /* events.c */

_Atomic(uint8_t)* _mi_events_record(uintptr_t key, bool create) {
  uint8_t* rec = mi_side_at(&mi_ev_side, key, 1);
  if (rec == NULL && create) rec = _mi_side_make(&mi_ev_side, key, 1);
  return (_Atomic(uint8_t)*)rec;
}

/* (a plain memset: a record written meanwhile belongs to an operation that
   straddles the switch-on, counted on one side of it at most) */
void _mi_events_records_clear(void) {
  mi_lock_assert_held(&_mi_events_lock);
  _mi_side_clear(&mi_ev_side, 1);
}

/* No block of the segment is live, so no operation reads its records. */
void _mi_events_records_unmapped(const void* segment) {
  if (!mi_side_used(&mi_ev_side)) return;
  _mi_lock_acquire(&_mi_events_lock); /* not while a clearing pass writes it */
  uint8_t* side = _mi_side_detach(&mi_ev_side, segment);
  _mi_lock_release(&_mi_events_lock);
  _mi_side_free(side, 1);
}

#endif
