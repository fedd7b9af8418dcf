/* Process and thread life cycle: lazy initialisation (safe before our own
   constructor runs, from dlsym and from TLS set-up), thread exit, fork and
   process exit. */
#include "heap.h"
#include "../dhat/hooks.h"
#include "../prim/fault.h"
#include "../lockorder/lockorder.h"

typedef struct mi_thread_data_s {
  mi_heap_t heap;
  mi_tld_t tld;
} mi_thread_data_t;

bool _mi_process_is_initialized = false;
uintptr_t _mi_process_key = 0;
static _Atomic(int) mi_process_state; /* 0: new, 1: initialising, 2: ready */

/* ---- Randomness ---------------------------------------------------------------- */

static uintptr_t mi_initial_key(void) {
  uintptr_t key = 0;
  if (!mi_prim_random_buf(&key, sizeof(key)) || key == 0) {
    uintptr_t state = (uintptr_t)mi_prim_clock_now() ^ (uintptr_t)&key ^ (uintptr_t)&_mi_heap_empty;
    key = _mi_random_next(&state);
  }
  return key | 1;
}

/* ---- Threads ------------------------------------------------------------------------ */

/* Every thread with thread data is on this list, so a fork child can find
   the threads it does not have. */
static mi_lock_t mi_threads_lock;
static mi_tld_t* mi_threads_first; /* under mi_threads_lock */

static void mi_threads_link(mi_tld_t* tld) {
  _mi_lock_acquire(&mi_threads_lock);
  tld->thread_prev = NULL;
  tld->thread_next = mi_threads_first;
  if (mi_threads_first != NULL) mi_threads_first->thread_prev = tld;
  mi_threads_first = tld;
  _mi_lock_release(&mi_threads_lock);
}

/* Under mi_threads_lock. */
static void mi_threads_unlink_locked(mi_tld_t* tld) {
  if (tld->thread_prev != NULL) tld->thread_prev->thread_next = tld->thread_next;
  else mi_threads_first = tld->thread_next;
  if (tld->thread_next != NULL) tld->thread_next->thread_prev = tld->thread_prev;
  tld->thread_next = tld->thread_prev = NULL;
}

static void mi_thread_data_done(mi_thread_data_t* td) {
  mi_tld_t* tld = &td->tld;
  if (tld->thread_id != _mi_thread_id()) return;
  tld->exiting = true; /* a segment claimed on free from here on would stay with a dead thread */
  _mi_heap_free_all_of_thread(tld);
#if MI_DHAT
  _mi_dhat_thread_done();
#endif
  /* off the list only now: a fork before this point orphans the rest of
     this thread's segments in the child */
  _mi_lock_acquire(&mi_threads_lock);
  mi_threads_unlink_locked(tld);
  _mi_lock_release(&mi_threads_lock);
  _mi_heap_default = (mi_heap_t*)&_mi_heap_empty;
  _mi_stat_decrease(&_mi_stats.threads, 1);
  _mi_meta_free(td);
}

static void mi_thread_exit_hook(void* value) {
  if (value != NULL) mi_thread_data_done((mi_thread_data_t*)value);
}

mi_heap_t* _mi_heap_init_thread(void) {
  _mi_process_init_once();
  mi_heap_t* heap = _mi_heap_default;
  if (mi_heap_is_initialized(heap)) return heap;
  mi_thread_data_t* td = (mi_thread_data_t*)_mi_meta_alloc();
  if (td == NULL) {
    return NULL; /* fault path */
  }
  mi_tld_t* tld = &td->tld;
  tld->thread_id = _mi_thread_id();
  tld->heap_backing = &td->heap;
  _mi_heap_init(&td->heap, tld, true);
  tld->heaps = &td->heap;
  _mi_heap_default = &td->heap;
  mi_threads_link(tld);
  _mi_stat_increase(&_mi_stats.threads, 1);
  /* may allocate (from the heap just set up) for thread-specific storage */
  mi_prim_thread_exit_hook_set(td);
  return &td->heap;
}

void mi_thread_init(void) {
  (void)_mi_heap_init_thread();
}

void mi_thread_done(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  mi_thread_data_t* td = (mi_thread_data_t*)heap->tld->heap_backing;
  mi_prim_thread_exit_hook_set(NULL);
  mi_thread_data_done(td);
}

/* ---- Fork ----------------------------------------------------------------------------- */

/* Prepare takes every allocator lock in the documented order (the checker,
   when compiled in, verifies it), so the child inherits no lock held by a
   thread it does not have and no list in mid-update. */
static void mi_fork_prepare(void) {
  _mi_locks_acquire_all();
}

static void mi_fork_parent(void) {
  _mi_locks_release_all();
}

/* The child has one thread, this one. It releases the locks prepare took
   (see lock.c for why not initialise them anew); every other
   thread's data goes: their heaps' large blocks become orphans, their
   segments are orphaned (frees into them take the cross-thread path; they
   are not adopted, their pages' state being a fuzzy copy, see segment.c).
   The background thread is started again when needed, not from inside the
   handler. */
static void mi_fork_child(void) {
  _mi_locks_release_in_fork_child();
  _mi_background_fork_child_begin();
  mi_heap_t* heap = mi_get_default_heap();
  mi_tld_t* self = (mi_heap_is_initialized(heap) ? heap->tld : NULL);
  _mi_lock_acquire(&mi_threads_lock);
  mi_tld_t* tld = mi_threads_first;
  while (tld != NULL) {
    mi_tld_t* next = tld->thread_next;
    if (tld != self) {
      mi_threads_unlink_locked(tld);
      _mi_heap_orphan_in_fork_child(tld);
      _mi_stat_decrease(&_mi_stats.threads, 1);
      _mi_meta_free(tld->heap_backing); /* the slot of its thread data */
    }
    tld = next;
  }
  _mi_lock_release(&mi_threads_lock);
  _mi_segments_abandoned_fork_child();
  _mi_background_fork_child_end();
#if MI_DHAT
  _mi_dhat_after_fork_child();
#endif
}

/* ---- Process ------------------------------------------------------------------------- */

static void mi_process_done(void) {
  if (atomic_load_explicit(&mi_process_state, memory_order_acquire) != 2) return;
  _mi_background_stop();
#if MI_DHAT
  _mi_dhat_process_done();
#endif
  if (mi_option_is_enabled(mi_option_show_stats) || mi_option_is_enabled(mi_option_verbose)) {
    _mi_stats_print_at_exit();
  }
}

#if MI_FAULT
static void mi_fault_env_warning(const char* name, const char* value) {
  _mi_warning_message("environment option %s has an invalid value: %s\n", name, value);
}
#endif

void _mi_process_init_once(void) {
  if (mi_likely(atomic_load_explicit(&mi_process_state, memory_order_acquire) == 2)) return;
  int expected = 0;
  if (!atomic_compare_exchange_strong_explicit(&mi_process_state, &expected, 1, memory_order_acq_rel,
                                               memory_order_acquire)) {
    /* another thread is setting up; nothing in that set-up allocates, so wait */
    while (atomic_load_explicit(&mi_process_state, memory_order_acquire) != 2) mi_prim_yield();
    return;
  }
  mi_prim_init(&_mi_os_config);
#if MI_FAULT
  _mi_fault_init_from_env(mi_fault_env_warning);
#endif
  _mi_options_init();
#if MI_LOCKORDER
  _mi_lockorder_init();
#endif
  _mi_process_key = mi_initial_key();
#if MI_SECURE
  _mi_secure_keys_init();
  _mi_zero_init();
#endif
  _mi_lock_init(&mi_threads_lock, MI_LOCK_THREADS);
  _mi_meta_init();
  _mi_segments_init();
  _mi_segments_abandoned_init();
  _mi_arenas_init();
  _mi_purge_init();
  _mi_background_init(&_mi_segments_abandoned_cleanup);
  mi_prim_thread_exit_hook_init(&mi_thread_exit_hook);
  _mi_process_is_initialized = true;
  atomic_store_explicit(&mi_process_state, 2, memory_order_release);
  /* these may allocate: the allocator is ready for it now */
  mi_prim_atfork(&mi_fork_prepare, &mi_fork_parent, &mi_fork_child);
  mi_prim_atexit(&mi_process_done);
#if MI_FAULT
  _mi_fault_register_report();
#endif
  _mi_arenas_reserve_from_options();
#if MI_DHAT
  /* MIMALLOC_DHAT=1: the profiler starts now (it may allocate while it sets up) */
  _mi_dhat_process_init();
#endif
#if MI_SECURE
  /* a fault on one of our guard pages says what it hit before the process dies */
  mi_prim_fault_handler_install(&_mi_guard_fault_report);
#endif
  _mi_verbose_message("mimalloc-pprof %d.%d initialised (secure: %d, debug: %d, lock-order checker: %d)\n",
                      mi_version() / 100, mi_version() % 100, MI_SECURE, MI_DEBUG, MI_LOCKORDER);
}

void mi_process_init(void) {
  _mi_process_init_once();
  (void)_mi_heap_init_thread();
}

mi_decl_constructor(mi_process_load) {
  mi_process_init();
}
