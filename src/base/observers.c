/* The word the entry points test to know whether anything observes the
   program's allocations (src/hooks.h: mi_observing). One byte for every
   observer (DHAT, the pprof sampler, the memory events), so that idle ones
   cost the other entry points one load together; and the allocation fast path's countdown, which its changes
   reset (src/hooks.h: mi_observe_fast). */
#include "../hooks.h"

_Atomic(uint8_t) _mi_observers = (MI_STAT >= 2 ? MI_OBSERVER_STATS : 0);
mi_decl_thread int _mi_observers_muted;

#if MI_OBSERVERS
/* 1 at first, so that a heap set up (epoch 0) is set at its first count */
_Atomic(uint64_t) _mi_observe_epoch = 1;

#if MI_PPROF
/* The sampler's next gap g >= 1 (0 at interval 1: every allocation): the
   allocation that takes the count below 0 holds the g-th byte from here,
   the sample point. */
static void mi_observe_heap_gap(mi_heap_t* heap) {
  int64_t gap = _mi_prof_heap_gap();
  heap->observe_until = gap - 1;
  heap->observe_gap = (uint64_t)gap;
}
#endif

/* A heap's countdown for the observers armed now (hooks.h). */
static void mi_observe_heap_set(mi_heap_t* heap, uint8_t armed, uint64_t epoch) {
  heap->observe_epoch = epoch;
  if (armed == 0) {
    heap->observe_until = MI_OBSERVE_IDLE_UNTIL;
  } else if (armed == MI_OBSERVER_PROF) {
#if MI_PPROF
    mi_observe_heap_gap(heap);
#endif
  } else {
    heap->observe_until = -1; /* DHAT: every allocation (and the sampler's by its own count) */
  }
}

void _mi_observers_changed(void) {
  /* after the word: a heap that reads the new epoch reads the new word */
  uint64_t epoch = atomic_fetch_add_explicit(&_mi_observe_epoch, 1, memory_order_acq_rel) + 1;
  /* the calling thread's heaps (its own to write) at once */
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap) || heap->tld == NULL) return;
  for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) {
    if (h->observe_epoch != epoch) h->observe_until = -1;
  }
}

/* The fast path's count went below 0 (hooks.h: mi_observe_fast). */
void* _mi_observe_countdown_end(mi_heap_t* heap, void* p, size_t size) {
  uint64_t epoch = atomic_load_explicit(&_mi_observe_epoch, memory_order_acquire);
  uint8_t armed = atomic_load_explicit(&_mi_observers, memory_order_relaxed);
  if (heap->observe_epoch != epoch) {
    /* set for an earlier epoch: set anew, and this allocation counted under it */
    mi_observe_heap_set(heap, armed, epoch);
    heap->observe_until -= (int64_t)size;
    if (heap->observe_until >= 0) return p;
  }
  if (armed == 0) { /* (a count of 2^62 bytes, run out) */
    heap->observe_until = MI_OBSERVE_IDLE_UNTIL;
    return p;
  }
#if MI_PPROF
  if (armed == MI_OBSERVER_PROF) {
    /* the sample point: a fresh gap starts after this allocation */
    uint64_t gap = heap->observe_gap;
    mi_observe_heap_gap(heap);
    _mi_prof_record_heap_sample(p, size, gap);
    return p;
  }
#endif
  heap->observe_until = -1;
  return _mi_observe_alloc(p, size);
}

void* _mi_observe_alloc(void* p, size_t size) {
  if (p == NULL) return p;
#if MI_DHAT
  if (mi_dhat_is_on()) (void)_mi_dhat_record_alloc(p, size);
#endif
#if MI_PPROF || MI_MEMORY_EVENTS
  uint8_t armed = atomic_load_explicit(&_mi_observers, memory_order_relaxed);
#endif
#if MI_STAT >= 2
  _mi_stat_requested_alloc(p, size); /* (the internal allocations too: their frees are seen) */
#endif
#if MI_PPROF
  /* (the sampler alone: the caller counted down already, mi_observe_alloc) */
  if (mi_prof_is_on() && (armed == MI_OBSERVER_PROF || mi_prof_countdown(size))) {
    _mi_prof_record_alloc(p, size);
  }
#endif
#if MI_MEMORY_EVENTS
  if (armed & MI_OBSERVER_EVENTS) _mi_events_alloc(p, size); /* after the profilers: the program's handler last */
#endif
  return p;
}

void _mi_observe_free(void* p) {
  if (p == NULL) return;
#if MI_DHAT
  if (mi_dhat_is_on()) _mi_dhat_record_free(p);
#endif
#if MI_PPROF
  if (mi_prof_is_on()) _mi_prof_record_free(p);
#endif
}
#endif
