/* The sampled heap profiler's entry points (MI_PPROF), called through the
   events and observers of src/hooks.h: the core includes that header, never
   this one. Only declarations of the base layer's types. */
#ifndef MI_PROF_HOOKS_H
#define MI_PROF_HOOKS_H

#include "../base/base.h"

#if MI_PPROF
extern _Atomic(bool) _mi_prof_on mi_decl_hidden;
static inline bool mi_prof_is_on(void) {
  return atomic_load_explicit(&_mi_prof_on, memory_order_relaxed);
}
/* The calling thread's sampler (sampler.c): the bytes to its next sample
   point and the start its state was drawn for. The common case, not a
   sample, is a subtraction (mi_prof_countdown); everything else goes to
   _mi_prof_record_alloc. */
typedef struct mi_prof_sampler_s {
  int64_t until;       /* bytes left to the next sample point */
  uint64_t generation; /* the start this state was drawn for (0: none) */
  uint64_t rng;        /* the thread's stream (xorshift64*) */
  uint64_t ordinal;    /* 1 + the thread's ordinal under this start */
  uint64_t gap;        /* the gap `until` started from */
} mi_prof_sampler_t;
extern mi_decl_thread mi_prof_sampler_t _mi_prof_sampler mi_decl_hidden;
extern _Atomic(uint64_t) _mi_prof_generation mi_decl_hidden;
/* False when the allocation of `size` bytes is certainly not a sample. */
static inline bool mi_prof_countdown(size_t size) {
  mi_prof_sampler_t* s = &_mi_prof_sampler;
  int64_t n = (int64_t)(size == 0 ? 1 : (size > (size_t)INT64_MAX ? INT64_MAX : size));
  if (mi_likely(n < s->until && s->generation == atomic_load_explicit(&_mi_prof_generation, memory_order_relaxed))) {
    s->until -= n;
    return false;
  }
  return true;
}

/* A reallocation's sampled block, taken out of the records while realloc
   runs (once it frees the block, another thread may get the address). */
typedef struct mi_prof_held_s {
  bool found;
  uint32_t stack;
  uint64_t size;
  uint64_t generation;
} mi_prof_held_t;
void _mi_prof_process_init(void) mi_decl_hidden;
void _mi_prof_process_done(void) mi_decl_hidden;
void _mi_prof_after_fork_child(void) mi_decl_hidden;
void _mi_prof_record_alloc(void* p, size_t size) mi_decl_hidden;
void _mi_prof_record_free(void* p) mi_decl_hidden;
void _mi_prof_realloc_take(void* p, mi_prof_held_t* held) mi_decl_hidden;
void _mi_prof_realloc_done(mi_prof_held_t* held, void* p, void* newp, size_t newsize) mi_decl_hidden;
void _mi_prof_record_page_gone(const mi_page_t* page) mi_decl_hidden;
/* The background thread's part (dump.c): the dumps asked by a signal or by
   the bytes allocated are written from it, never from a handler. */
int64_t _mi_prof_background_poll_ms(void) mi_decl_hidden;
void _mi_prof_background_tick(void) mi_decl_hidden;
/* A free on the generic path in a page flagged MI_PAGE_FLAG_SAMPLED. */
void _mi_prof_sampled_page_free(mi_segment_t* segment, mi_page_t* page, void* p) mi_decl_hidden;
#endif

#endif
