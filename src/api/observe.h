/* The observers' dispatch: the entry points report each allocation, free
   and resize to what observes them (DHAT, the pprof sampler, the memory
   events, MI_STAT=2's requested bytes). Idle, one relaxed load of the word
   they set (base/observers.h) and a predictable branch; compiled out, a
   constant. For api/ and the secure front only: the floors below know no
   observer (their rare events are base/listeners.h's). */
#ifndef MI_OBSERVE_H
#define MI_OBSERVE_H

#include "../heap/heap.h"
#include "../dhat/hooks.h"
#include "../prof/hooks.h"
#include "../events/hooks.h"
#include "../stats/hooks.h"
#include "../secure/stacks.h" /* the secure build's per-block stacks */

/* Whether frees must be reported one by one, `armed` the observers' word
   as the caller read it. The pprof sampler needs only the frees of its
   sampled blocks, and leaves the free fast path alone: their pages are
   flagged, which sends their frees to the generic path
   (mi_hook_sampled_page_free); in the secure build, a small or medium
   page's check word is marked too, which the secure free's check finds on
   its rare path (secure/free.c). */
static inline bool mi_observing_frees_of(uint8_t armed) {
#if MI_OBSERVERS
  const uint8_t mask =
      (MI_SECURE ? MI_OBSERVER_DHAT | MI_OBSERVER_STACKS : MI_OBSERVER_DHAT) | MI_OBSERVER_EVENTS | MI_OBSERVER_STATS;
  return ((armed & mask) != 0);
#else
  (void)armed;
  return false;
#endif
}
/* The secure build's free of a large block or a zero-size slot while the
   sampler alone runs, its segment validated, before the block goes
   anywhere: a block of a flagged page may be a sample (a zero-size slot has
   no page to flag: always looked up). */
static inline void mi_hook_secure_sampled_free(mi_segment_t* segment, void* p) {
#if MI_PPROF
  if (mi_unlikely(segment->kind == MI_SEGMENT_ZERO)) {
    if (mi_prof_is_on()) _mi_prof_record_free(p);
    return;
  }
  mi_hook_sampled_page_free(segment, _mi_segment_page_of(segment, p), p);
#endif
  (void)segment, (void)p;
}

/* Whether a reallocation's block may be a sample: its page is flagged (the
   secure build's pointer is not validated yet: the filter, which reads
   nothing of it). */
static inline bool mi_prof_realloc_maybe_sampled(const void* p) {
#if MI_PPROF
  if (MI_SECURE) return mi_prof_maybe_sampled(p);
  mi_segment_t* segment = _mi_block_segment(p);
  return mi_prof_page_may_hold(_mi_segment_page_of(segment, p), p);
#else
  (void)p;
  return false;
#endif
}

/* One call out of line each (observe.c), so that the entry points' exits
   stay tail calls and their fast paths need no frame. */
void* _mi_observe_alloc(void* p, size_t size) mi_decl_hidden; /* returns p */
void _mi_observe_free(void* p) mi_decl_hidden;

void* _mi_observe_countdown_end(mi_heap_t* heap, void* p, size_t size) mi_decl_hidden; /* returns p */
#if MI_PPROF
void* _mi_observe_counted(mi_heap_t* heap, void* p, size_t size) mi_decl_hidden;
#endif

static inline void* mi_observe_fast(mi_heap_t* heap, void* p, size_t size) {
#if MI_OBSERVERS
  /* (written so that it compiles to a subtraction in memory and a sign test) */
  heap->observe_until -= (int64_t)size;
  if (mi_unlikely(heap->observe_until < 0)) return _mi_observe_countdown_end(heap, p, size);
#endif
  (void)heap, (void)size;
  return p;
}

/* A refill of an observed entry point's page: a heap set for an earlier
   epoch ends its count (a thread that allocates only from its pages' free
   lists hears of a start within a page's worth of blocks). */
static inline void mi_observe_refill(mi_heap_t* heap) {
#if MI_OBSERVERS
  if (mi_heap_is_initialized(heap) &&
      heap->observe_epoch != atomic_load_explicit(&_mi_observe_epoch, memory_order_relaxed)) {
    heap->observe_until = -1;
  }
#endif
  (void)heap;
}

/* After an allocation, with `armed` as the entry point read it. */
static inline void* mi_observe_alloc(uint8_t armed, void* p, size_t size) {
#if MI_PPROF
  /* the sampler alone, and this allocation short of its sample point: the
     common case while it runs, a subtraction without a call */
  if (armed == MI_OBSERVER_PROF && p != NULL && !mi_prof_countdown(size)) return p;
#endif
  (void)armed;
#if MI_OBSERVERS
  return _mi_observe_alloc(p, size);
#else
  (void)size;
  return p;
#endif
}

/* Before the block is freed: once free, another thread may get it. */
static inline void mi_observe_free(void* p) {
#if MI_OBSERVERS
  _mi_observe_free(p);
#else
  (void)p;
#endif
}

/* The memory events of a free the observers see (api/free.c): the block's
   size and record taken before the free (the secure build validates the
   pointer first: a double free is reported before anything is told), the
   event after it. */
typedef struct mi_observe_free_held_s {
  int none;
#if MI_MEMORY_EVENTS
  mi_events_held_t events;
#endif
#if MI_STAT >= 2
  size_t requested; /* detailed statistics: the block's request */
#endif
} mi_observe_free_held_t;

static inline void mi_observe_free_take(void* p, mi_observe_free_held_t* held) {
#if MI_MEMORY_EVENTS
  held->events.armed = false;
  if (mi_observers_armed() & MI_OBSERVER_EVENTS) _mi_events_take(p, false, &held->events);
#endif
#if MI_STAT >= 2
  held->requested = _mi_stat_requested_take(p, false);
#endif
  (void)p, (void)held;
}

static inline void mi_observe_free_done(mi_observe_free_held_t* held) {
#if MI_MEMORY_EVENTS
  if (held->events.armed) _mi_events_free_done(&held->events);
#endif
#if MI_STAT >= 2
  _mi_stat_requested_free_done(held->requested);
#endif
  (void)held;
}

/* A reallocation: the old block's record is taken out before realloc runs
   (once it frees the block, another thread may get the same address), then
   moved to the new block, or put back if realloc failed. */
typedef struct mi_observe_held_s {
  void* p;
  uint8_t armed; /* the observers armed when the reallocation began */
#if MI_DHAT
  mi_dhat_held_t dhat;
#endif
#if MI_PPROF
  mi_prof_held_t prof;
#endif
#if MI_MEMORY_EVENTS
  mi_events_held_t events;
#endif
#if MI_STAT >= 2
  size_t requested; /* detailed statistics: the old block's request */
#endif
} mi_observe_held_t;

/* Each observer armed at the start is told of the start and of the end,
   and only those: a reallocation of an unsampled block while the sampler
   alone runs costs a filter load, and the countdown if it moved. */
static inline void mi_observe_realloc_take(uint8_t armed, void* p, mi_observe_held_t* held) {
  held->p = p;
  held->armed = armed;
#if MI_DHAT
  if (armed & MI_OBSERVER_DHAT) _mi_dhat_realloc_take(p, &held->dhat);
#endif
#if MI_PPROF
  held->prof.found = false;
  if ((armed & MI_OBSERVER_PROF) && p != NULL && mi_prof_realloc_maybe_sampled(p)) {
    _mi_prof_realloc_take(p, &held->prof);
  }
#endif
#if MI_MEMORY_EVENTS
  held->events.armed = false;
  if (armed & MI_OBSERVER_EVENTS) _mi_events_take(p, true, &held->events);
#endif
#if MI_STAT >= 2
  held->requested = _mi_stat_requested_take(p, true);
#endif
}

static inline void mi_observe_realloc_done(mi_observe_held_t* held, void* newp, size_t newsize) {
#if MI_DHAT
  if (held->armed & MI_OBSERVER_DHAT) _mi_dhat_realloc_done(&held->dhat, newp, newsize);
#endif
#if MI_PPROF
  if (held->armed & MI_OBSERVER_PROF) {
    if (held->prof.found) {
      _mi_prof_realloc_done(&held->prof, held->p, newp, newsize);
    } else if (newp != NULL && newp != held->p && mi_prof_countdown(newsize) && mi_prof_is_on()) {
      /* a move (or realloc of NULL): an allocation of its own, decided anew
         (one that stays in place keeps its decision) */
      _mi_prof_record_alloc(newp, newsize);
    }
  }
#endif
#if MI_SECURE_STACKS
  /* a move (or realloc of NULL) allocated here; one in place keeps its stack */
  if ((held->armed & MI_OBSERVER_STACKS) && newp != held->p)
    _mi_secure_stacks_allocated(newp, __builtin_frame_address(0));
#endif
#if MI_MEMORY_EVENTS
  if (held->events.armed) _mi_events_realloc_done(&held->events, newp, newsize); /* after DHAT's */
#endif
#if MI_STAT >= 2
  _mi_stat_requested_realloc_done(held->p, held->requested, newp, newsize);
#endif
  (void)held, (void)newp, (void)newsize;
}

/* A block kept in place by a reallocation while the sampler alone runs
   (src/api/alloc.c), its page and the flags it read: a sampled block takes
   its new size. The flag first: the sampler places the samples of its
   heaps' countdowns on pages of their own (page.c: _mi_page_malloc_sample),
   so the flag is off on nearly every other page and the branch predictable;
   on a flagged page the bits tell. (No record is held around such a
   reallocation: a moved sampled block's free is told by its page's flag,
   mi_hook_sampled_page_free, and the new block is an allocation of its
   own.) */
static inline void mi_observe_resized_sampler(const mi_page_t* page, uint8_t flags, void* p, size_t newsize) {
#if MI_PPROF
  if (mi_unlikely(flags & MI_PAGE_FLAG_SAMPLED) &&
      (atomic_load_explicit(&page->prof_bits, memory_order_relaxed) & mi_prof_page_bit(p)) != 0) {
    _mi_prof_realloc_in_place(p, newsize);
  }
#else
  (void)page, (void)flags, (void)p, (void)newsize;
#endif
}

/* The same in the secure build, the block validated and its page known
   (src/secure/free.c). */
static inline void mi_hook_secure_resized(const mi_page_t* page, void* p, size_t newsize) {
  mi_observe_resized_sampler(page, mi_page_flags(page), p, newsize);
}

/* A reallocation in place (mi_expand). */
static inline void mi_observe_resize(uint8_t armed, void* p, size_t newsize) {
  mi_observe_held_t held;
  mi_observe_realloc_take(armed, p, &held);
  mi_observe_realloc_done(&held, p, newsize);
}

#endif
