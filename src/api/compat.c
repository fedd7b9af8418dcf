/* mimalloc calls whose idea this library does not have, accepted and doing
   what mimalloc does with the feature off (docs/api-compatibility.md says
   which and why). */
#include "api.h"

/* One pool of memory for the whole process: the main sub-process is the
   only one, and its id is NULL as in mimalloc. A "new" one is that same
   pool, so threads added to it share everything (nothing is kept apart). */
mi_subproc_id_t mi_subproc_main(void) {
  return NULL;
}

mi_subproc_id_t mi_subproc_new(void) {
  return mi_subproc_main();
}

void mi_subproc_delete(mi_subproc_id_t subproc) {
  (void)subproc;
}

void mi_subproc_add_current_thread(mi_subproc_id_t subproc) {
  (void)subproc;
}

/* mimalloc has thread-pool threads skip reclaiming abandoned memory; here a
   thread claims abandoned segments the same way in or out of a pool. */
void mi_thread_set_in_threadpool(void) {}

/* mimalloc also abandons the calling thread's segments down to a target
   count so that other threads can take them; a live thread's segments stay
   its own here. What remains is the collection that gives back what the
   thread's heaps do not use. */
void mi_collect_reduce(size_t target_thread_owned) {
  (void)target_thread_owned;
  mi_collect(true);
}

#if !MI_GUARDED
/* No sampled guard pages in this build (secure builds with MI_GUARDED have
   them, secure/guard.c): nothing to set. */
void mi_heap_guarded_set_sample_rate(mi_heap_t* heap, size_t sample_rate, size_t seed) {
  (void)heap;
  (void)sample_rate;
  (void)seed;
}

void mi_heap_guarded_set_size_bound(mi_heap_t* heap, size_t min, size_t max) {
  (void)heap;
  (void)min;
  (void)max;
}
#endif
