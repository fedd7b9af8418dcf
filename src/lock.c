/* The allocator's lock type and the order of its global locks.

   Documented order (a thread holding a lock may only take locks further
   down this list; today no code path nests two of them, and the fork
   handlers take them all in this order):
     1. segment-abandoned  list of segments of exited threads
     2. single             large and huge blocks of every heap
     3. segment-cache      free segments kept for reuse
     4. purge              segments with memory waiting to be purged
     5. meta               slots for thread data and heaps */
#include "internal.h"

void _mi_single_lock_acquire(void) mi_decl_hidden;
void _mi_single_lock_release(void) mi_decl_hidden;
void _mi_abandoned_lock_acquire(void) mi_decl_hidden;
void _mi_abandoned_lock_release(void) mi_decl_hidden;
void _mi_segment_cache_lock_acquire(void) mi_decl_hidden;
void _mi_segment_cache_lock_release(void) mi_decl_hidden;
void _mi_meta_lock_acquire(void) mi_decl_hidden;
void _mi_meta_lock_release(void) mi_decl_hidden;

void _mi_lock_init(mi_lock_t* lock, mi_lock_class_t lock_class) {
  mi_prim_lock_init(&lock->lock);
  lock->lock_class = lock_class;
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
  _mi_abandoned_lock_acquire();
  _mi_single_lock_acquire();
  _mi_segment_cache_lock_acquire();
  _mi_lock_acquire(&_mi_purge_lock);
  _mi_meta_lock_acquire();
}

void _mi_locks_release_all(void) {
  _mi_meta_lock_release();
  _mi_lock_release(&_mi_purge_lock);
  _mi_segment_cache_lock_release();
  _mi_single_lock_release();
  _mi_abandoned_lock_release();
}
