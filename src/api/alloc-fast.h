/* The thread-local allocation fast path, shared by malloc's entry points
   (alloc.c) and operator new (new-delete.c), which inline it so that each
   is a size class lookup, one page and one free-list pop with no call and
   no frame. Not for secure builds, whose fast path is _mi_secure_malloc. */
#ifndef MI_ALLOC_FAST_H
#define MI_ALLOC_FAST_H

#include "api.h"

/* Everything but a pop from the page at the head of the size's queue. */
typedef void* mi_malloc_slow_fun(mi_heap_t* heap, size_t size);

/* the public entry points' slow path: the allocation, then the observers' hook */
void* _mi_malloc_generic_observed(mi_heap_t* heap, size_t size) mi_decl_hidden;

/* Secure builds: the sampler alone, an allocation the inline count could
   not decide (observe.c). */
void* _mi_secure_malloc_counted(mi_heap_t* heap, size_t size) mi_decl_hidden;

/* Secure builds, an observer armed (`armed`, the word as the entry point
   read it). While the sampler alone runs, the heap counts down the bytes to
   its next sample point as the default build's fast path does
   (observe.h: mi_observe_fast): an allocation short of it is the plain one,
   a tail call. (A size of 0 or past 2^63 is not positive as a count, and
   goes the counted way; the empty heap's count is 0, so it is never written
   here. The three outcomes that go that way, a count run out and those two
   sizes, are one sign test of `left | (size - 1)`: an instruction fewer a
   malloc than two tests.) The rest take _mi_malloc_generic_observed. */
static inline void* _mi_secure_malloc_observed(mi_heap_t* heap, size_t size, uint8_t armed) {
#if MI_PPROF
  if (armed == MI_OBSERVER_PROF) {
    const uint64_t left = (uint64_t)heap->observe_until - (uint64_t)size;
    if (mi_likely((int64_t)(left | (uint64_t)(size - 1)) >= 0)) {
      heap->observe_until = (int64_t)left;
      return _mi_secure_malloc(heap, size, false);
    }
    return _mi_secure_malloc_counted(heap, size);
  }
#endif
#if MI_SECURE_STACKS
  /* the blocks' stacks alone: recorded by the secure front itself */
  if (armed == MI_OBSERVER_STACKS) return _mi_secure_new_stacked(heap, size, MI_KIND_MALLOC);
#endif
  (void)armed;
  return _mi_malloc_generic_observed(heap, size);
}

/* No lock, no atomic read-modify-write. With `observed` (an entry point the
   program called) the heap's observers' countdown runs after the pop
   (observe.h: mi_observe_fast); both exits are tail calls, so the fast path
   needs no frame. `slow` is a constant at
   every call site: the call is direct. */
static inline void* _mi_heap_malloc_fast(mi_heap_t* heap, size_t size, bool observed, mi_malloc_slow_fun* slow) {
  /* the small sizes' compare first: one compare on their way */
  if (mi_likely(size <= MI_BIN_WSIZE_BYTES_MAX) || size <= MI_MEDIUM_BLOCK_MAX) {
    mi_page_t* page = _mi_heap_page_for(heap, size);
    mi_block_t* block = page->free;
    if (mi_likely(block != NULL)) {
      page->free = mi_block_next(page, block);
      page->used++;
#if MI_STAT
      heap->stat_malloc[page->bin]++;
#endif
      mi_track_malloc(block, size, page->block_size, false);
      if (observed) return mi_observe_fast(heap, block, size);
      return block;
    }
  }
  return slow(heap, size);
}

#endif
