/* The word that says which observers of the program's allocations run
   (DHAT, the pprof sampler, the memory events, MI_STAT=2's requested
   bytes), set by their start and stop, and the fast path's countdown epoch
   (observers.c). The entry points read them; the dispatch to the observers
   is api/observe.h's. */
#ifndef MI_OBSERVERS_H
#define MI_OBSERVERS_H

#include "types.h"

/* The allocator itself allocates through the C library (a thread of its
   own started, whose stack and TLS the C library allocates with malloc):
   no observer counts that as the program's. Per thread, nesting. */
extern mi_decl_thread int _mi_observers_muted mi_decl_hidden;
static inline void mi_hook_internal_begin(void) {
  _mi_observers_muted++;
}
static inline void mi_hook_internal_end(void) {
  _mi_observers_muted--;
}

/* Which observers run (MI_OBSERVER_*); set and cleared by their start and stop. */
extern _Atomic(uint8_t) _mi_observers mi_decl_hidden;
#define MI_OBSERVER_DHAT 0x01
#define MI_OBSERVER_PROF 0x02
#define MI_OBSERVER_EVENTS 0x04 /* memory tracking on, or an ETW session listening */
#define MI_OBSERVER_STATS 0x08  /* detailed statistics (MI_STAT >= 2): set from the start, never cleared */
#define MI_OBSERVER_STACKS 0x10 /* secure builds: every block's stacks (MIMALLOC_SECURE_STACKS, secure/stacks.c) */

/* The observers armed now (MI_OBSERVER_*): one relaxed load, which the
   entry points take once and pass on. */
static inline uint8_t mi_observers_armed(void) {
#if MI_OBSERVERS
  return atomic_load_explicit(&_mi_observers, memory_order_relaxed);
#else
  return 0;
#endif
}

static inline bool mi_observing(void) {
  return (mi_observers_armed() != 0);
}

/* The fast path's countdown (mi_heap_t.observe_until). Each heap counts
   down the bytes it hands out; the observers hear of an allocation only
   when the count goes below 0: the sampler sets it to its gap to the next
   sample point less one, DHAT to -1 (every allocation), and idle it is set
   beyond what a process allocates. So the fast path pays one subtraction and one
   branch whether the observers are idle or sampling (tcmalloc's sampler
   works so). A start or a stop begins a new epoch: a heap set for an
   earlier one is set anew when its count ends, at its next page refill
   (mi_observe_refill), or at once for the thread that started. */
#define MI_OBSERVE_IDLE_UNTIL ((int64_t)1 << 62)
extern _Atomic(uint64_t) _mi_observe_epoch mi_decl_hidden;
/* After the observers word changed (a start, a stop): a new epoch, and the
   calling thread's heaps set anew. */
void _mi_observers_changed(void) mi_decl_hidden;

#endif
