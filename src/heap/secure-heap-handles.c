/* The heap handles the program passes (MI_SECURE).

   A heap's check word (mi_heap_handle_check, secure.h) is its address xor
   a process key while it lives. A handle that was never a heap (random
   bytes, a stack buffer, a copy of a heap) fails it, and so does one whose
   heap was destroyed or deleted, or went with its thread: the word is
   cleared then. But a pointer carries no generation: were the slot handed
   to the next heap, as the meta pool's free list would do at once, a stale
   handle would name that live heap again (a stale mi_heap_destroy would
   destroy it, and its owner's correct frees would be reported as double
   frees). So the slot of a heap that goes (a thread's data, whose first
   field is its backing heap, too) is retired first: it waits in a FIFO of
   MI_HEAP_SLOTS_RETIRED slots, still cleared, before the meta pool has it
   back. A stale handle is told apart from every live heap until that many
   heaps (or threads) have gone after it; after that its slot may hold a
   live heap again. The cost: that many slots of memory (3.8 KiB each,
   0.9 MiB in all) once as many heaps have gone; nothing on any path but a
   heap's end. */
#include "heap.h"
#include "../secure/secure.h"

#if MI_SECURE

#define MI_HEAP_SLOTS_RETIRED 256
static _Atomic(void*) mi_heap_slots_retired[MI_HEAP_SLOTS_RETIRED];
static _Atomic(size_t) mi_heap_slots_retired_next;

mi_noinline void _mi_secure_heap_invalid(const mi_heap_t* heap) {
  _mi_secure_fatal("invalid heap detected at", heap, sizeof(mi_heap_t));
}

/* `heap` has gone; its slot starts at it. Slots are taken by exchange: two
   threads retiring at once each evict a slot of their own. */
void _mi_secure_heap_retire(mi_heap_t* heap) {
  heap->handle_check = 0;
  size_t i = atomic_fetch_add_explicit(&mi_heap_slots_retired_next, 1, memory_order_relaxed) % MI_HEAP_SLOTS_RETIRED;
  void* evicted = atomic_exchange_explicit(&mi_heap_slots_retired[i], (void*)heap, memory_order_acq_rel);
  if (evicted != NULL) _mi_meta_free(evicted);
}

/* Every retired slot back to the meta pool, oldest first, so the last heap
   to go is the next one made: for white-box tests that need a slot reused
   at once (tests/teardown, heap-aba). */
void _mi_secure_heap_slots_release(void) {
  size_t next = atomic_load_explicit(&mi_heap_slots_retired_next, memory_order_relaxed);
  for (size_t k = 0; k < MI_HEAP_SLOTS_RETIRED; k++) {
    size_t i = (next + k) % MI_HEAP_SLOTS_RETIRED;
    void* evicted = atomic_exchange_explicit(&mi_heap_slots_retired[i], NULL, memory_order_acq_rel);
    if (evicted != NULL) _mi_meta_free(evicted);
  }
}

#endif
