/* The allocator's lock type and the order of its global locks.

   Documented order (a thread holding a lock may only take locks further
   down this list; today no code path nests two of them, and the fork
   handlers take them all in this order):
     1. segment-abandoned  list of segments of exited threads
     2. single             large and huge blocks of every heap
     3. segment-cache      free segments kept for reuse
     4. purge              segments with memory waiting to be purged
     5. meta               slots for thread data and heaps
     6. arena              chunk maps of the reserved arenas
     7. dhat               the heap profiler's block and site tables (last:
                           taken inside allocation calls, and while held it
                           takes no other lock of ours; its own allocations
                           come from the OS) */
#include "internal.h"

/* Each lock class has exactly one global lock; it registers itself here when
   initialised, so the fork handlers can take them all in class order. */
static mi_lock_t* mi_global_locks[MI_LOCK_CLASS_COUNT];

void _mi_lock_init(mi_lock_t* lock, mi_lock_class_t lock_class) {
  mi_prim_lock_init(&lock->lock);
  lock->lock_class = lock_class;
  mi_global_locks[lock_class] = lock;
}

void _mi_lock_acquire(mi_lock_t* lock) {
  mi_prim_lock_acquire(&lock->lock);
}

bool _mi_lock_try_acquire(mi_lock_t* lock) {
  return mi_prim_lock_try_acquire(&lock->lock);
}

void _mi_lock_release(mi_lock_t* lock) {
  mi_prim_lock_release(&lock->lock);
}

void _mi_locks_acquire_all(void) {
  for (int c = 0; c < MI_LOCK_CLASS_COUNT; c++) {
    if (mi_global_locks[c] != NULL) _mi_lock_acquire(mi_global_locks[c]);
  }
}

void _mi_locks_release_all(void) {
  for (int c = MI_LOCK_CLASS_COUNT - 1; c >= 0; c--) {
    if (mi_global_locks[c] != NULL) _mi_lock_release(mi_global_locks[c]);
  }
}
