/* The optional features compiled in, each handing its listener to the rare
   events (base/listeners.h) at process start-up. The one call from the
   floors up (heap/init.c, before the first event): this floor, the entry
   points', is the one that knows the features; the floors below raise
   their events and know no feature. The order given is the order each
   event is told in: the secure keys before the memory events' locks, the
   stack cache before the profilers it serves, the profilers before the
   memory events (the program's handler last). */
#include "api.h"
#include "../base/listeners.h"

void _mi_wings_listen(void) {
#if MI_SECURE
  _mi_listen(&_mi_secure_listener);
#endif
#if MI_DHAT || MI_PPROF
  _mi_listen(&_mi_stack_cache_listener);
#endif
#if MI_PPROF
  _mi_listen(&_mi_prof_listener);
#endif
#if MI_DHAT
  _mi_listen(&_mi_dhat_listener);
#endif
#if MI_MEMORY_EVENTS
  _mi_listen(&_mi_events_listener);
#endif
  _mi_listen(&_mi_unwrapped_listener); /* (mi_unwrapped_*, in every build) */
#if MI_STAT >= 2
  _mi_listen(&_mi_stat_requested_listener);
#endif
}
