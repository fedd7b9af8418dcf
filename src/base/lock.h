/* The allocator's lock (layer: base). */
#ifndef MI_BASE_LOCK_H
#define MI_BASE_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include "../compiler.h"
#include "../prim/prim.h"

/* The allocator's one lock type. Every lock has a class; the classes and the
   order in which they may nest are the table in base/lock-classes.h. With
   MI_LOCKORDER the acquire/release calls pass their source location to the
   lock-order checker (src/base/lockorder.c); without it they are the plain
   primitives. */
#include "lock-classes.h"
#include "lockorder.h"

typedef struct mi_lock_s {
  mi_prim_lock_t lock;
  mi_lock_class_t lock_class;
  /* A spin lock instead (`spin_word`, not `lock`): for a lock held a few
     dozen instructions at a time and taken on every allocation (the
     profiler's), where the mutex's two calls and two atomic operations are
     most of the cost. Its release is a plain store. */
  bool spin;
  _Atomic(int) spin_word;
} mi_lock_t;

void _mi_lock_init(mi_lock_t* lock, mi_lock_class_t lock_class) mi_decl_hidden;
void _mi_lock_init_spin(mi_lock_t* lock, mi_lock_class_t lock_class) mi_decl_hidden;
void _mi_lock_spin_wait(mi_lock_t* lock) mi_decl_hidden;
static inline void _mi_lock_prim_acquire(mi_lock_t* lock) {
  if (lock->spin) {
    if (mi_likely(atomic_exchange_explicit(&lock->spin_word, 1, memory_order_acquire) == 0)) return;
    _mi_lock_spin_wait(lock);
  } else {
    mi_prim_lock_acquire(&lock->lock);
  }
}
static inline bool _mi_lock_prim_try_acquire(mi_lock_t* lock) {
  if (lock->spin) return (atomic_exchange_explicit(&lock->spin_word, 1, memory_order_acquire) == 0);
  return mi_prim_lock_try_acquire(&lock->lock);
}
static inline void _mi_lock_prim_release(mi_lock_t* lock) {
  if (lock->spin) atomic_store_explicit(&lock->spin_word, 0, memory_order_release);
  else mi_prim_lock_release(&lock->lock);
}
#if MI_LOCKORDER
void _mi_lock_acquire_at(mi_lock_t* lock, const char* file, int line) mi_decl_hidden;
bool _mi_lock_try_acquire_at(mi_lock_t* lock, const char* file, int line) mi_decl_hidden;
void _mi_lock_release_at(mi_lock_t* lock, const char* file, int line) mi_decl_hidden;
#define _mi_lock_acquire(lock) _mi_lock_acquire_at((lock), __FILE__, __LINE__)
#define _mi_lock_try_acquire(lock) _mi_lock_try_acquire_at((lock), __FILE__, __LINE__)
#define _mi_lock_release(lock) _mi_lock_release_at((lock), __FILE__, __LINE__)
#else
static inline void _mi_lock_acquire(mi_lock_t* lock) {
  _mi_lock_prim_acquire(lock);
}
static inline bool _mi_lock_try_acquire(mi_lock_t* lock) {
  return _mi_lock_prim_try_acquire(lock);
}
static inline void _mi_lock_release(mi_lock_t* lock) {
  _mi_lock_prim_release(lock);
}
#endif
/* Lock assertions (checked by the lock-order checker, nothing otherwise):
   a `_locked` function asserts at its entry that its lock is held; a call
   into the program (deferred free, error and output callbacks, the
   unwinder the profiler calls) asserts that no lock of ours is. */
#if MI_LOCKORDER
#define mi_lock_assert_held(lock) _mi_lockorder_assert_held((lock), __FILE__, __LINE__)
#define mi_lock_assert_none_held(callback) _mi_lockorder_assert_none_held((callback), __FILE__, __LINE__)
#else
#define mi_lock_assert_held(lock) ((void)(lock))
#define mi_lock_assert_none_held(callback) ((void)0)
#endif
/* all global locks, in order; for the fork handlers */
void _mi_locks_acquire_all(void) mi_decl_hidden;
void _mi_locks_release_all(void) mi_decl_hidden;

#endif
