/* Zero-size allocations in secure builds (MI_SECURE): what the two rooms
   share (secure-zero.c: segments, slots handed out and freed; zero-heaps.c:
   a heap's zero segments deleted, destroyed, visited).

   malloc(0) and its kin hand out a pointer that no access can go through: a
   16-byte slot of a "zero segment", a segment-aligned reservation whose
   header (with a bitmap of its slots) is read-write and whose slots are
   never made accessible, so any read or write through the pointer faults at
   once and the fault handler names it (secure/guard.c). The segment is in the
   segment map with a cookie like every segment, so free, realloc and
   mi_usable_size find it as they find any block, and a free checks the
   slot's bit: a second free is a double free, a pointer that is not a slot
   handed out is an invalid one.

   Slots are handed out in address order from a cursor that wraps around the
   segment, so the slot freed longest ago comes back first, and a stale
   pointer stays a freed one (its free a double free) for as long as can be.
   A heap's zero segments belong to it (mi_heap_contains_block sees them as
   its blocks; mi_heap_destroy frees them), pass to the backing heap with its
   pages when it is deleted, and lose their heap when its thread exits (they
   stay until their last slot is freed, or a heap in need of one adopts
   them). Everything here is a rare path: one lock over all of it. */
#ifndef MI_SECURE_ZERO_SIZE_H
#define MI_SECURE_ZERO_SIZE_H

#include "segment.h"
#include "../secure/secure.h"

#define MI_ZERO_SLOT MI_MAX_ALIGN_SIZE                     /* keeps malloc's alignment */
#define MI_ZERO_POSITIONS (MI_SEGMENT_SIZE / MI_ZERO_SLOT) /* slot-sized steps in a segment */
#define MI_ZERO_WORDS (MI_ZERO_POSITIONS / 64)

typedef struct mi_zero_segment_s {
  mi_segment_t segment;           /* what free and the fault handler read: cookie, kind; pages[0].heap */
  struct mi_zero_segment_s* next; /* in its heap's list or the orphans' */
  struct mi_zero_segment_s* prev;
  size_t live;          /* slots handed out and not freed */
  size_t visits;        /* heap visits under way: it stays mapped */
  size_t first;         /* the first slot's position, past the header and a guard page */
  size_t cursor;        /* where the search for a free slot starts */
  _Atomic(size_t) high; /* positions at and past this were never handed out */
  /* a bit per position: a slot handed out there. Written under the lock;
     read without it to validate a pointer (mi_usable_size, realloc: a live
     slot's segment stays mapped) and by the fault handler. */
  _Atomic(uint64_t) used[MI_ZERO_WORDS];
} mi_zero_segment_t;

static inline size_t mi_zero_header_size(void) {
  return _mi_align_up(sizeof(mi_zero_segment_t), _mi_os_page_size());
}

static inline mi_zero_segment_t* mi_zero_of(mi_segment_t* segment) {
  return (mi_zero_segment_t*)segment;
}

static inline mi_heap_t* mi_zero_heap(const mi_zero_segment_t* z) {
  return z->segment.pages[0].heap;
}

static inline void mi_zero_set_heap(mi_zero_segment_t* z, mi_heap_t* heap) {
  z->segment.pages[0].heap = heap;
}

static inline bool mi_zero_bit(const mi_zero_segment_t* z, size_t pos) {
  return mi_bitmap_get(z->used, pos);
}

/* under the lock */
static inline void mi_zero_bit_set(mi_zero_segment_t* z, size_t pos, bool on) {
  mi_bitmap_store(z->used, pos, on);
}

/* one lock over all of it (secure-zero.c) */
extern mi_lock_t _mi_zero_lock mi_decl_hidden;
extern mi_zero_segment_t* _mi_zero_orphans mi_decl_hidden; /* segments of no heap with slots live */
extern mi_zero_segment_t* _mi_zero_spare mi_decl_hidden;   /* one empty segment of no heap, kept for the next heap */

/* under the lock (secure-zero.c) */
void _mi_zero_link(mi_zero_segment_t** head, mi_zero_segment_t* z) mi_decl_hidden;
void _mi_zero_unlink(mi_zero_segment_t** head, mi_zero_segment_t* z) mi_decl_hidden;
mi_zero_segment_t** _mi_zero_list_of(mi_zero_segment_t* z) mi_decl_hidden;
mi_zero_segment_t* _mi_zero_maybe_retire(mi_zero_segment_t* z) mi_decl_hidden;
mi_zero_segment_t* _mi_zero_retire(mi_zero_segment_t* z) mi_decl_hidden;
void _mi_zero_segment_unmap(mi_zero_segment_t* z) mi_decl_hidden;
mi_zero_segment_t* _mi_zero_segment_map(void) mi_decl_hidden; /* outside the lock */

#endif
