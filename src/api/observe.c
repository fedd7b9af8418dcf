/* The observers' dispatch (observe.h: mi_observe_alloc, mi_observe_fast,
   mi_observe_free): the entry points hand each allocation and free to the
   observers compiled in and armed (DHAT, the pprof sampler, the memory
   events, MI_STAT=2's requested bytes). In api/, above the observers it
   calls; the word they arm is base/observers.c. */
#include "api.h"

#if MI_OBSERVERS
#if MI_PPROF
/* The sampler's next gap g >= 1 (0 at interval 1: every allocation): the
   allocation that takes the count below 0 holds the g-th byte from here,
   the sample point. */
static void mi_observe_heap_gap(mi_heap_t* heap) {
  int64_t gap = _mi_prof_heap_gap();
  heap->observe_until = gap - 1;
  heap->observe_gap = (uint64_t)gap;
}

/* A sample's block on a page of the heap's samples (page.c), so that the
   page's flag alone tells a free or a resize of it that it is a sample, and
   the other pages' frees and resizes keep their fast paths; the block the
   fast path took goes back to its page. Small blocks only: a page of them
   holds up to thousands, whose frees a sample among them would send off
   the fast path; a medium page holds 4 to 64, and a sample page of medium
   blocks held on to the memory its samples had touched (randsizes' peak
   RSS +31%). Left where it is too: a block the sampler will not record (its
   own allocations, a muted thread's), one no sample page had room for, and
   the secure build's (placed before it is allocated:
   _mi_secure_malloc_counted; a block taken and freed again would be zeroed
   for nothing). */
static void* mi_observe_sample_place(mi_heap_t* heap, void* p, size_t size) {
  if (MI_SECURE || size == 0 || size > MI_SMALL_BLOCK_MAX || !_mi_prof_records_here()) return p;
  void* q = _mi_page_malloc_sample(heap, size);
  if (q == NULL) return p;
  _mi_free_unobserved(p);
  return q;
}
#endif

/* A heap's countdown for the observers armed now (observe.h). */
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

/* The fast path's count went below 0 (observe.h: mi_observe_fast). */
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
    p = mi_observe_sample_place(heap, p, size);
    _mi_prof_record_heap_sample(p, size, gap);
    return p;
  }
#endif
  heap->observe_until = -1;
  return _mi_observe_alloc(p, size);
}

#if MI_PPROF
/* The sampler alone, a block `p` the fast path did not count: the heap's
   countdown takes it (a heap not set up before this allocation is the
   thread's; a thread without one counts on its own countdown). */
void* _mi_observe_counted(mi_heap_t* heap, void* p, size_t size) {
  if (p == NULL) return NULL;
  if (!mi_heap_is_initialized(heap)) heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) {
    if (mi_prof_is_on() && mi_prof_countdown(size)) _mi_prof_record_alloc(p, size);
    return p;
  }
  heap->observe_until -= (int64_t)(size < (size_t)MI_OBSERVE_IDLE_UNTIL ? size : (size_t)MI_OBSERVE_IDLE_UNTIL);
  if (heap->observe_until < 0) return _mi_observe_countdown_end(heap, p, size);
  return p;
}
#endif

#if MI_SECURE && MI_PPROF
/* Secure builds, the sampler alone (alloc-fast.h: _mi_secure_malloc_observed):
   an allocation at or past its heap's sample point, of a size beyond the
   medium blocks or 0, or on a thread whose heap is not set up yet. */
void* _mi_secure_malloc_counted(mi_heap_t* heap, size_t size) {
  if (mi_heap_is_initialized(heap) && size - 1 < MI_SMALL_BLOCK_MAX - MI_SECURE_TRAILER) {
    /* a heap set for an earlier epoch is set anew first, as the count's end would */
    uint64_t epoch = atomic_load_explicit(&_mi_observe_epoch, memory_order_acquire);
    if (heap->observe_epoch != epoch) {
      mi_observe_heap_set(heap, atomic_load_explicit(&_mi_observers, memory_order_relaxed), epoch);
    }
    /* the allocation that reaches the sample point, of a small size:
       placed on a sample page at once, laid out as a malloc's */
    if (heap->observe_until < (int64_t)size && _mi_prof_records_here()) {
      mi_block_t* block = (mi_block_t*)_mi_page_malloc_sample(heap, size + MI_SECURE_TRAILER);
      if (block != NULL) {
        void* p = _mi_secure_block_prepare(_mi_segment_page_of(_mi_block_segment(block), block), block, size);
        return _mi_observe_counted(heap, p, size);
      }
    }
  }
  return _mi_observe_counted(heap, _mi_secure_malloc(heap, size, false), size);
}
#endif

void* _mi_observe_alloc(void* p, size_t size) {
  if (p == NULL) return p;
#if MI_DHAT
  if (mi_dhat_is_on()) (void)_mi_dhat_record_alloc(p, size);
#endif
#if MI_PPROF || MI_MEMORY_EVENTS || MI_SECURE_STACKS
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
#if MI_SECURE_STACKS
  if (armed & MI_OBSERVER_STACKS) _mi_secure_stacks_allocated(p, __builtin_frame_address(0));
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
