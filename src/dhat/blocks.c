/* Where the profiler keeps the record of each live block: beside the heap,
   not in a table. A free then finds its block's record in O(1) from the
   address, without hashing, without a lock, and with the locality of the
   block itself (the allocator hands freed blocks out again soon).

   Every segment that ever held a recorded block gets a side array: one
   record per 16 bytes (the smallest block) of the segment's first 4 MiB,
   indexed by the block's offset in the segment. A block's key is its start,
   so an aligned pointer inside a block finds the block's record; a large or
   huge block (a segment of its own, whose pointer may lie anywhere in its
   first 4 MiB) is keyed by its segment. The side arrays are found through a
   two-level map indexed by the segment's number; both are OS memory, mapped
   as needed (a side array is 4 MiB of address space, of which only the
   pages holding records become memory). A side array lives as long as its
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

#define MI_DHAT_SIDE_COUNT (MI_SEGMENT_SIZE / MI_MAX_ALIGN_SIZE)
#define MI_DHAT_SIDE_SIZE (MI_DHAT_SIDE_COUNT * sizeof(mi_dhat_rec_t))

_Atomic(mi_dhat_side_ref_t*) _mi_dhat_map[MI_DHAT_L1_COUNT];
static _Atomic(bool) mi_dhat_map_used; /* a side array was ever made */

static mi_dhat_side_ref_t* mi_dhat_l2_make(size_t i) {
  mi_dhat_side_ref_t* l2 = (mi_dhat_side_ref_t*)_mi_dhat_os_alloc(MI_DHAT_L2_COUNT * sizeof(mi_dhat_side_ref_t));
  if (l2 == NULL) return NULL;
  mi_dhat_side_ref_t* expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&_mi_dhat_map[i], &expected, l2, memory_order_acq_rel,
                                               memory_order_acquire)) {
    _mi_dhat_os_free(l2, MI_DHAT_L2_COUNT * sizeof(mi_dhat_side_ref_t));
    return expected; /* another thread's */
  }
  return l2;
}

static mi_dhat_rec_t* mi_dhat_side_make(mi_dhat_side_ref_t* ref) {
  mi_dhat_rec_t* side = (mi_dhat_rec_t*)_mi_dhat_os_alloc(MI_DHAT_SIDE_SIZE);
  if (side == NULL) return NULL;
  atomic_store_explicit(&mi_dhat_map_used, true, memory_order_relaxed);
  mi_dhat_rec_t* expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(ref, &expected, side, memory_order_acq_rel, memory_order_acquire)) {
    _mi_dhat_os_free(side, MI_DHAT_SIDE_SIZE);
    return expected;
  }
  return side;
}

mi_noinline mi_dhat_rec_t* _mi_dhat_rec_make(uintptr_t key) {
  uintptr_t seg = key >> MI_SEGMENT_SHIFT;
  if (seg >= ((uintptr_t)1 << MI_DHAT_SEG_BITS)) return NULL;
  size_t i = (size_t)(seg >> MI_DHAT_L2_BITS);
  mi_dhat_side_ref_t* l2 = atomic_load_explicit(&_mi_dhat_map[i], memory_order_acquire);
  if (l2 == NULL && (l2 = mi_dhat_l2_make(i)) == NULL) return NULL;
  mi_dhat_side_ref_t* ref = &l2[seg & (MI_DHAT_L2_COUNT - 1)];
  mi_dhat_rec_t* side = atomic_load_explicit(ref, memory_order_acquire);
  if (side == NULL && (side = mi_dhat_side_make(ref)) == NULL) return NULL;
  return &side[(key & MI_SEGMENT_MASK) / MI_MAX_ALIGN_SIZE];
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
  if (!atomic_load_explicit(&mi_dhat_map_used, memory_order_relaxed)) return;
  uintptr_t seg = (uintptr_t)segment >> MI_SEGMENT_SHIFT;
  if (seg >= ((uintptr_t)1 << MI_DHAT_SEG_BITS)) return;
  mi_dhat_side_ref_t* l2 = atomic_load_explicit(&_mi_dhat_map[seg >> MI_DHAT_L2_BITS], memory_order_acquire);
  if (l2 == NULL) return;
  mi_dhat_rec_t* side = atomic_exchange_explicit(&l2[seg & (MI_DHAT_L2_COUNT - 1)], NULL, memory_order_acq_rel);
  if (side != NULL) _mi_dhat_os_free(side, MI_DHAT_SIDE_SIZE);
}

#endif
