/* The sampled heap profiler's entry points (MI_PPROF), called through the
   observers' dispatch (api/observe.h) and the rare events (base/listeners.h,
   its listener): the floors below api/ never include this header. Only declarations of the base layer's types. */
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
/* False when the allocation of `size` bytes is certainly not a sample: it
   ends short of the thread's next sample point, under the current start.
   (An allocation of 0 bytes moves no point: pprof's probability for it is
   1 - e^0 = 0; at interval 1 the point is always 0, so every allocation is
   decided by _mi_prof_record_alloc.) `size` is below 2^62. */
static inline bool mi_prof_countdown_small(size_t size) {
  mi_prof_sampler_t* s = &_mi_prof_sampler;
  int64_t left = s->until - (int64_t)size;
  if (mi_likely(left > 0 && s->generation == atomic_load_explicit(&_mi_prof_generation, memory_order_relaxed))) {
    s->until = left;
    return false;
  }
  return true;
}
static inline bool mi_prof_countdown(size_t size) {
  return mi_prof_countdown_small(size < ((size_t)1 << 62) ? size : ((size_t)1 << 62));
}

/* Which addresses may hold a sampled block: a counter per hash of the
   address, raised by each record (record.c). Read without a lock, so that a
   free or a reallocation of an unsampled block (nearly all) costs a load. */
#define MI_PROF_FILTER_BITS 18
extern _Atomic(uint16_t)* _Atomic _mi_prof_filter mi_decl_hidden;
static inline size_t mi_prof_key_hash(uintptr_t key, unsigned bits) {
  return (size_t)(((uint64_t)(key >> 4) * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}
/* The page's owner: a page flagged for samples that it no longer holds
   (freed by the owner or collected from other threads) goes back to the
   fast path. */
static inline void mi_prof_page_unflag_if_none(mi_page_t* page) {
  if (atomic_load_explicit(&page->prof_samples, memory_order_acquire) == 0) {
    mi_page_sampled_set(page, false);
  }
}

/* A block's bit in its page's prof_bits. */
static inline uint32_t mi_prof_page_bit(const void* p) {
  return (uint32_t)1 << (((uint64_t)((uintptr_t)p >> 3) * 0x9E3779B97F4A7C15ULL) >> 59);
}
static inline bool mi_prof_maybe_sampled(const void* p) {
  _Atomic(uint16_t)* filter = atomic_load_explicit(&_mi_prof_filter, memory_order_acquire);
  if (filter == NULL) return false;
  return atomic_load_explicit(&filter[mi_prof_key_hash((uintptr_t)p, MI_PROF_FILTER_BITS)], memory_order_acquire) != 0;
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
void _mi_prof_thread_done(void) mi_decl_hidden;
void _mi_prof_record_alloc(void* p, size_t size) mi_decl_hidden;
/* A heap's countdown (api/observe.h: mi_observe_fast): its next gap, and a
   sample at its end. */
int64_t _mi_prof_heap_gap(void) mi_decl_hidden;
void _mi_prof_record_heap_sample(void* p, size_t size, uint64_t gap) mi_decl_hidden;
/* Whether a sample of the calling thread's would be recorded now (the
   sampler runs; not its own allocation, nor a muted thread's). */
bool _mi_prof_records_here(void) mi_decl_hidden;
void _mi_prof_record_free(void* p) mi_decl_hidden;
void _mi_prof_realloc_take(void* p, mi_prof_held_t* held) mi_decl_hidden;
void _mi_prof_realloc_in_place(void* p, size_t newsize) mi_decl_hidden;
void _mi_prof_realloc_done(mi_prof_held_t* held, void* p, void* newp, size_t newsize) mi_decl_hidden;
void _mi_prof_record_page_gone(const mi_page_t* page) mi_decl_hidden;
/* The background thread's part (dump.c): the dumps asked by a signal, by
   the bytes allocated or at the in-use bytes' highs are written from it,
   never from a handler or an allocating thread. */
int64_t _mi_prof_background_poll_ms(void) mi_decl_hidden;
void _mi_prof_background_tick(void) mi_decl_hidden;
/* A free on the generic path in a page flagged MI_PAGE_FLAG_SAMPLED. */
void _mi_prof_sampled_page_free(mi_segment_t* segment, mi_page_t* page, void* p) mi_decl_hidden;
#endif

/* Whether the page's flag and its bits say that the block may be sampled. */
static inline bool mi_prof_page_may_hold(const mi_page_t* page, const void* p) {
#if MI_PPROF
  return ((mi_page_flags(page) & MI_PAGE_FLAG_SAMPLED) != 0 &&
          (atomic_load_explicit(&page->prof_bits, memory_order_relaxed) & mi_prof_page_bit(p)) != 0);
#else
  (void)page, (void)p;
  return false;
#endif
}

/* A free on the generic path of a block whose page holds a sampled one:
   the profiler is called when the page's bits say the block may be a
   sample, or when the page holds none any more (its owner takes the flag
   off); the other blocks of the page, most of its frees, go on at once. */
static inline void mi_hook_sampled_page_free(mi_segment_t* segment, mi_page_t* page, void* p) {
#if MI_PPROF
  if (mi_unlikely(mi_page_flags(page) & MI_PAGE_FLAG_SAMPLED) &&
      ((atomic_load_explicit(&page->prof_bits, memory_order_relaxed) & mi_prof_page_bit(p)) != 0 ||
       atomic_load_explicit(&page->prof_samples, memory_order_relaxed) == 0)) {
    _mi_prof_sampled_page_free(segment, page, p);
  }
#endif
  (void)segment, (void)page, (void)p;
}

#endif
