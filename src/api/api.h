/* The entry points (the top layer): allocation, reallocation, free,
   reservations, the malloc and operator new/delete override. Defined in api/. */
#ifndef MI_API_H
#define MI_API_H

#include "../heap/heap.h"
#include "observe.h" /* the observers' dispatch */

/* free.c */
void _mi_free_generic(mi_segment_t* segment, mi_page_t* page, void* p) mi_decl_hidden;
void _mi_free_unobserved(void* p) mi_decl_hidden;
/* secure builds: operator delete's free, the block's kind expected to be `kind` (free-fast.h) */
void _mi_free_kind(void* p, mi_alloc_kind_t kind) mi_decl_hidden;

/* alloc.c */
/* secure builds: an allocation of operator new's or mi_new's, the block of
   that kind (alignment 0: none asked); observed as mi_malloc's */
void* _mi_heap_malloc_kind(mi_heap_t* heap, size_t size, size_t alignment, mi_alloc_kind_t kind) mi_decl_hidden;
void* _mi_heap_malloc_zero(mi_heap_t* heap, size_t size, bool zero) mi_decl_hidden;
void* _mi_heap_realloc_zero(mi_heap_t* heap, void* p, size_t newsize, bool zero) mi_decl_hidden;
/* alloc-aligned.c: the zeroing aligned reallocation of the recalloc family */
void* _mi_heap_recalloc_aligned_at(mi_heap_t* heap, void* p, size_t newcount, size_t size, size_t alignment,
                                   size_t offset) mi_decl_hidden;
size_t _mi_usable_size(const void* p) mi_decl_hidden;
void* _mi_realloc_move(void* p, size_t size, void* newp, size_t newsize, bool zero) mi_decl_hidden;

/* new.c: the C++ run-time as operator new and mi_new need it. Run the
   installed new_handler if there is one (false: none); throw std::bad_alloc
   (abort with a report when no C++ run-time is linked). */
bool _mi_new_handler_run(void) mi_decl_hidden;
mi_decl_noreturn void _mi_throw_bad_alloc(void) mi_decl_hidden;

/* count * size for the calls that reallocate an array. On overflow, without
   a block: false, errno ENOMEM. With one: a size no allocation can have, so
   that the call fails with ENOMEM only after it has validated the pointer
   (secure builds report a bad one whatever the size). */
static inline bool _mi_realloc_total(const void* p, size_t count, size_t size, size_t* total) {
  if (!mi_mul_overflow(count, size, total)) return true;
  if (p == NULL) {
    errno = ENOMEM;
    return false;
  }
  *total = SIZE_MAX;
  return true;
}

#endif
