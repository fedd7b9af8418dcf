/* The word the entry points test to know whether anything observes the
   program's allocations (observers.h: mi_observing): one byte for every
   observer (DHAT, the pprof sampler, the memory events), so that idle ones
   cost the entry points one load together; and the epoch of the allocation
   fast path's countdown, which its changes reset (api/observe.h:
   mi_observe_fast). The dispatch to the observers is api/observe.c. */
#include "base.h"

_Atomic(uint8_t) _mi_observers = (MI_STAT >= 2 ? MI_OBSERVER_STATS : 0);
mi_decl_thread int _mi_observers_muted;

#if MI_OBSERVERS
/* 1 at first, so that a heap set up (epoch 0) is set at its first count */
_Atomic(uint64_t) _mi_observe_epoch = 1;

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

#endif
