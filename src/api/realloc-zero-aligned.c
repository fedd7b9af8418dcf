/* Zeroing reallocation with alignment (mi_rezalloc_aligned and family): as
   mi_rezalloc, what the block gains past its old usable size reads as
   zero, and the result has the alignment asked for. Meant, as mimalloc
   says, for blocks that were allocated zeroed.

   The work is alloc-aligned.c's zeroing aligned reallocation, the one
   mi_aligned_recalloc and mi_aligned_offset_recalloc run on the thread's
   default heap, here on the heap given. */
#include "api.h"

void* mi_rezalloc_aligned_at(void* p, size_t newsize, size_t alignment, size_t offset) {
  return mi_aligned_offset_recalloc(p, newsize, 1, alignment, offset);
}

void* mi_rezalloc_aligned(void* p, size_t newsize, size_t alignment) {
  return mi_aligned_recalloc(p, newsize, 1, alignment);
}

void* mi_recalloc_aligned_at(void* p, size_t newcount, size_t size, size_t alignment, size_t offset) {
  return mi_aligned_offset_recalloc(p, newcount, size, alignment, offset);
}

void* mi_recalloc_aligned(void* p, size_t newcount, size_t size, size_t alignment) {
  return mi_aligned_recalloc(p, newcount, size, alignment);
}

void* mi_heap_recalloc_aligned_at(mi_heap_t* heap, void* p, size_t newcount, size_t size, size_t alignment,
                                  size_t offset) {
  return _mi_heap_recalloc_aligned_at(heap, p, newcount, size, alignment, offset);
}

void* mi_heap_recalloc_aligned(mi_heap_t* heap, void* p, size_t newcount, size_t size, size_t alignment) {
  return mi_heap_recalloc_aligned_at(heap, p, newcount, size, alignment, 0);
}

void* mi_heap_rezalloc_aligned_at(mi_heap_t* heap, void* p, size_t newsize, size_t alignment, size_t offset) {
  return mi_heap_recalloc_aligned_at(heap, p, newsize, 1, alignment, offset);
}

void* mi_heap_rezalloc_aligned(mi_heap_t* heap, void* p, size_t newsize, size_t alignment) {
  return mi_heap_recalloc_aligned_at(heap, p, newsize, 1, alignment, 0);
}
