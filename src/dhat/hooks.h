/* The heap profiler's entry points (MI_DHAT), called through the observers'
   dispatch (api/observe.h) and the rare events (base/listeners.h, its
   listener): the floors below api/ never include this header. Only declarations of the base layer's types. */
#ifndef MI_DHAT_HOOKS_H
#define MI_DHAT_HOOKS_H

#include "../base/base.h"

/* The allocator's entry points call the recording functions after the flag
   test below (base/observers.h's mi_observing), so a build with the profiler in but
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
void _mi_dhat_after_fork_child(void) mi_decl_hidden;
void* _mi_dhat_record_alloc(void* p, size_t size) mi_decl_hidden; /* returns p */
void _mi_dhat_record_free(void* p) mi_decl_hidden;
void _mi_dhat_realloc_take(void* p, mi_dhat_held_t* held) mi_decl_hidden;
void _mi_dhat_realloc_done(mi_dhat_held_t* held, void* newp, size_t newsize) mi_decl_hidden;
/* a page (or a large block's segment) of a destroyed heap: its live blocks are freed */
void _mi_dhat_record_page_gone(const mi_page_t* page) mi_decl_hidden;
/* a segment's memory goes back to the OS: the records kept beside it go too */
void _mi_dhat_segment_unmapped(const void* segment) mi_decl_hidden;
#endif

#if MI_DHAT || MI_PPROF
/* The calling thread's stack cache (stack.c, shared by both profilers) goes back to the OS. */
void _mi_dhat_stack_thread_done(void) mi_decl_hidden;
#endif

#endif
