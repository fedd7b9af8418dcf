/* Where the profiler keeps the record of each live block: beside the heap,
   not in a table. A free then finds its block's record in O(1) from the
   address, without hashing, without a lock, and with the locality of the
   block itself (the allocator hands freed blocks out again soon).

   Every segment that ever held a recorded block gets a side array of
   records (os/side-map.h): one per 16 bytes of its first 4 MiB,
   indexed by the block's offset in the segment. A block's key is its start,
   so an aligned pointer inside a block finds the block's record; a large or
   huge block (a segment of its own, whose pointer may lie anywhere in its
   first 4 MiB) is keyed by its segment. A side array lives as long as its
   segment's address range is mapped: it goes when the segment is unmapped,
   when the segment holds no block any more. A segment kept in the segment
   cache keeps its side array.

   The record of a block is written by the thread that allocated the block
   and read and cleared by the thread that frees it: the program hands the
   pointer from one to the other, and the allocator hands a freed block back
   to its owner through its atomics, so every access to a record is ordered
   after the previous one. Only the map itself is shared: it is filled in
   with compare-and-swap. */
#include "dhat.h"

#if MI_DHAT

mi_side_map_t _mi_dhat_side;

mi_noinline mi_dhat_rec_t* _mi_dhat_rec_make(uintptr_t key) {
  return (mi_dhat_rec_t*)_mi_side_make(&_mi_dhat_side, key, sizeof(mi_dhat_rec_t));
}

size_t _mi_dhat_page_recs(const mi_page_t* page, mi_dhat_rec_t** recs, size_t* stride) {
  const mi_segment_t* segment = _mi_page_segment(page);
  if (segment->kind == MI_SEGMENT_SINGLE) {
    *recs = _mi_dhat_rec_at((uintptr_t)segment);
    *stride = 1;
    return (*recs == NULL ? 0 : 1);
  }
  if (page->capacity == 0) return 0;
  *recs = _mi_dhat_rec_at((uintptr_t)page->start);
  *stride = page->block_size / MI_MAX_ALIGN_SIZE;
  return (*recs == NULL ? 0 : page->capacity);
}

/* The segment's address range goes back to the OS: so does its side array.
   No block of it is live, and the records of blocks freed unseen (none while
   the profiler runs: frees, reallocations and heap destroys are all seen)
   would only count as live at the end. */
void _mi_dhat_segment_unmapped(const void* segment) {
  _mi_side_free(_mi_side_detach(&_mi_dhat_side, segment), sizeof(mi_dhat_rec_t));
}

#endif
