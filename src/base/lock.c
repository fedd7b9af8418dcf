/* The allocator's lock type and the global locks taken by the fork
   handlers (the classes, their names and ranks: base/lock-classes.h,
   documented in docs/lock-order.md). With MI_LOCKORDER every acquire and
   release goes through the lock-order checker (src/base/lockorder.c); without it
   base/lock.h maps them to the primitives and this file only keeps the
   registry. */
#include "base.h"
#include "lockorder.h"

/* Each global class has exactly one lock; it registers itself here when
   initialised, so the fork handlers can take them all in class order (the
   classes are listed in rank order, which a test checks). */
static mi_lock_t* mi_global_locks[MI_LOCK_GLOBAL_COUNT];

void _mi_lock_init(mi_lock_t* lock, mi_lock_class_t lock_class) {
  mi_prim_lock_init(&lock->lock);
  lock->lock_class = lock_class;
  lock->spin = false;
  atomic_store_explicit(&lock->spin_word, 0, memory_order_relaxed);
  if (lock_class < MI_LOCK_GLOBAL_COUNT) mi_global_locks[lock_class] = lock;
}

void _mi_lock_init_spin(mi_lock_t* lock, mi_lock_class_t lock_class) {
  _mi_lock_init(lock, lock_class);
  lock->spin = true;
}

/* Taken by another thread: spin on a plain load (no cache-line ping-pong),
   and give the processor up while the holder may have been preempted (a
   loaded machine: spinning would only keep it from running). */
mi_noinline void _mi_lock_spin_wait(mi_lock_t* lock) {
  for (unsigned n = 0;; n++) {
    if (atomic_load_explicit(&lock->spin_word, memory_order_relaxed) == 0 &&
        atomic_exchange_explicit(&lock->spin_word, 1, memory_order_acquire) == 0) {
      return;
    }
    if (n >= 64) mi_prim_yield();
  }
}

#if MI_LOCKORDER
void _mi_lock_acquire_at(mi_lock_t* lock, const char* file, int line) {
  _mi_lockorder_before_acquire(lock, file, line);
  _mi_lock_prim_acquire(lock);
  _mi_lockorder_acquired(lock, file, line);
}

bool _mi_lock_try_acquire_at(mi_lock_t* lock, const char* file, int line) {
  if (!_mi_lock_prim_try_acquire(lock)) return false;
  _mi_lockorder_acquired(lock, file, line);
  return true;
}

void _mi_lock_release_at(mi_lock_t* lock, const char* file, int line) {
  _mi_lockorder_release(lock, file, line);
  _mi_lock_prim_release(lock);
}
#endif

void _mi_locks_acquire_all(void) {
  for (int c = 0; c < MI_LOCK_GLOBAL_COUNT; c++) {
    if (mi_global_locks[c] != NULL) _mi_lock_acquire(mi_global_locks[c]);
  }
}

void _mi_locks_release_all(void) {
  for (int c = MI_LOCK_GLOBAL_COUNT - 1; c >= 0; c--) {
    if (mi_global_locks[c] != NULL) _mi_lock_release(mi_global_locks[c]);
  }
}
