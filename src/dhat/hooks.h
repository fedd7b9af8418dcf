/* The heap profiler's hooks, called by the core (MI_DHAT). Only
   declarations of the base layer's types: any layer may include it. */
#ifndef MI_DHAT_HOOKS_H
#define MI_DHAT_HOOKS_H

#include "../base/base.h"

/* dhat/ (MI_DHAT): the heap profiler's hooks. The allocator's entry points
   call them after the flag test below, so a build with the profiler in but
   not started pays one relaxed load and a predictable branch. */
#if MI_DHAT
extern _Atomic(bool) _mi_dhat_on mi_decl_hidden;
static inline bool mi_dhat_is_on(void) {
  return atomic_load_explicit(&_mi_dhat_on, memory_order_relaxed);
}
typedef struct mi_dhat_held_s {
  void* p;    /* the block being reallocated (NULL: none) */
  bool found; /* its record was taken out while realloc runs */
  uint32_t site;
  uint64_t size;
  uint64_t time; /* the record's (1 + allocation time): tells its profile */
} mi_dhat_held_t;
void _mi_dhat_process_init(void) mi_decl_hidden;
void _mi_dhat_process_done(void) mi_decl_hidden;
void _mi_dhat_thread_done(void) mi_decl_hidden;
void _mi_dhat_after_fork_child(void) mi_decl_hidden;
void* _mi_dhat_record_alloc(void* p, size_t size) mi_decl_hidden; /* returns p */
void _mi_dhat_record_free(void* p) mi_decl_hidden;
void _mi_dhat_realloc_take(void* p, mi_dhat_held_t* held) mi_decl_hidden;
void _mi_dhat_realloc_done(mi_dhat_held_t* held, void* newp, size_t newsize) mi_decl_hidden;
/* mi_expand: a reallocation that stays in place */
void _mi_dhat_record_resize(void* p, size_t newsize) mi_decl_hidden;
/* a page (or a large block's segment) of a destroyed heap: its live blocks are freed */
void _mi_dhat_record_page_gone(const mi_page_t* page) mi_decl_hidden;
/* a segment's memory goes back to the OS: the records kept beside it go too */
void _mi_dhat_segment_unmapped(const void* segment) mi_decl_hidden;
#define mi_dhat_alloc(p, size) \
  do { \
    if (mi_unlikely(mi_dhat_is_on()) && (p) != NULL) (void)_mi_dhat_record_alloc((p), (size)); \
  } while (0)
#define mi_dhat_free(p) \
  do { \
    if (mi_unlikely(mi_dhat_is_on()) && (p) != NULL) _mi_dhat_record_free(p); \
  } while (0)
#else
#define mi_dhat_alloc(p, size) ((void)0)
#define mi_dhat_free(p) ((void)0)
#endif

#endif
