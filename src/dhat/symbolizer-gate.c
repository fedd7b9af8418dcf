/* One user of the symboliser at a time. Its caches (symbolize.c on ELF,
   symbolize-pe.c on Windows: the objects' mapped files and symbol tables)
   are shared by the DHAT dump and the pprof writer, and neither holds a
   lock while it symbolises (the loader takes its own): a flag lets one of
   them in at a time; the other waits (a dump takes well under a second). */
#include "dhat.h"

#if MI_DHAT || MI_PPROF

static _Atomic(bool) mi_dhat_symbolizer_busy;

void _mi_dhat_symbolizer_enter(void) {
  bool idle = false;
  while (!atomic_compare_exchange_weak_explicit(&mi_dhat_symbolizer_busy, &idle, true, memory_order_acquire,
                                                memory_order_relaxed)) {
    idle = false;
    mi_prim_yield();
  }
}

/* A secure report's: it may not wait (the thread that holds the symboliser
   may be the one reporting, or blocked on a lock the reporter holds). */
bool _mi_dhat_symbolizer_try_enter(void) {
  bool idle = false;
  return atomic_compare_exchange_strong_explicit(&mi_dhat_symbolizer_busy, &idle, true, memory_order_acquire,
                                                 memory_order_relaxed);
}

void _mi_dhat_symbolizer_leave(void) {
  atomic_store_explicit(&mi_dhat_symbolizer_busy, false, memory_order_release);
}

/* fork: the thread that held it is not in the child */
void _mi_dhat_symbolizer_after_fork_child(void) {
  atomic_store_explicit(&mi_dhat_symbolizer_busy, false, memory_order_relaxed);
}

#endif
