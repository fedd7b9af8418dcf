/* The deferred-free hook a program registers (mi_register_deferred_free),
   called from the page layer's slow path and from mi_collect. */
#include "page.h"

/* The program's own deferred-free hook (e.g. a reference-counting runtime
   freeing in bulk): called from the slow path now and then, and with
   force=true from mi_collect(true). */
static mi_deferred_free_fun* _Atomic mi_deferred_fun;
static void* _Atomic mi_deferred_arg;
static _Atomic(unsigned long long) mi_deferred_heartbeat;

void mi_register_deferred_free(mi_deferred_free_fun* deferred_free, void* arg) {
  atomic_store(&mi_deferred_arg, arg);
  atomic_store(&mi_deferred_fun, deferred_free);
}

void _mi_deferred_free(mi_heap_t* heap, bool force) {
  mi_deferred_free_fun* fun = atomic_load_explicit(&mi_deferred_fun, memory_order_relaxed);
  if (fun == NULL || heap->tld->recurse) return;
  heap->tld->recurse = true; /* the hook may allocate */
  unsigned long long beat = atomic_fetch_add_explicit(&mi_deferred_heartbeat, 1, memory_order_relaxed);
  mi_lock_assert_none_held("the deferred-free function");
  fun(force, beat, atomic_load(&mi_deferred_arg));
  heap->tld->recurse = false;
}
