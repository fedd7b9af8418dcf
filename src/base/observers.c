/* The word the entry points test to know whether anything observes the
   program's allocations (src/hooks.h: mi_observing). One byte for every
   observer, so that idle profilers cost the fast paths one load together. */
#include "../hooks.h"

_Atomic(uint8_t) _mi_observers;
mi_decl_thread int _mi_observers_muted;

#if MI_DHAT || MI_PPROF
void* _mi_observe_alloc(void* p, size_t size) {
  if (p == NULL) return p;
#if MI_DHAT
  if (mi_dhat_is_on()) (void)_mi_dhat_record_alloc(p, size);
#endif
#if MI_PPROF
  /* (the sampler alone: the caller counted down already, mi_observe_alloc) */
  if (mi_prof_is_on() &&
      (atomic_load_explicit(&_mi_observers, memory_order_relaxed) == MI_OBSERVER_PROF || mi_prof_countdown(size))) {
    _mi_prof_record_alloc(p, size);
  }
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
