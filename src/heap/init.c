/* Process and thread life cycle: lazy initialisation (safe before our own
   constructor runs, from dlsym and from TLS set-up), thread exit, fork and
   process exit. */
#include "heap.h"
#include "../prim/fault.h"

typedef struct mi_thread_data_s {
  mi_heap_t heap;
  mi_tld_t tld;
} mi_thread_data_t;

bool _mi_process_is_initialized = false;
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
   the threads it does not have; and in a table by thread id, so a thread
   that sets up its data finds data left with its id (orphaned, below). */
#define MI_THREADS_ID_BUCKETS 256
static mi_lock_t mi_threads_lock;
static mi_tld_t* mi_threads_first;                        /* under mi_threads_lock */
static mi_tld_t* mi_threads_by_id[MI_THREADS_ID_BUCKETS]; /* under mi_threads_lock */

static mi_tld_t** mi_threads_bucket(uintptr_t thread_id) {
  /* ids are addresses, alike in their low bits: the high bits of a product spread them */
  return &mi_threads_by_id[((uint64_t)thread_id * 0x9E3779B97F4A7C15ULL) >> 56];
}

static void mi_threads_link(mi_tld_t* tld) {
  _mi_lock_acquire(&mi_threads_lock);
  tld->thread_prev = NULL;
  tld->thread_next = mi_threads_first;
  if (mi_threads_first != NULL) mi_threads_first->thread_prev = tld;
  mi_threads_first = tld;
  mi_tld_t** bucket = mi_threads_bucket(tld->thread_id);
  tld->same_id_next = *bucket;
  *bucket = tld;
  _mi_lock_release(&mi_threads_lock);
}

/* Under mi_threads_lock. */
static void mi_threads_unlink_locked(mi_tld_t* tld) {
  mi_lock_assert_held(&mi_threads_lock);
  if (tld->thread_prev != NULL) tld->thread_prev->thread_next = tld->thread_next;
  else mi_threads_first = tld->thread_next;
  if (tld->thread_next != NULL) tld->thread_next->thread_prev = tld->thread_prev;
  tld->thread_next = tld->thread_prev = NULL;
  mi_tld_t** link = mi_threads_bucket(tld->thread_id);
  while (*link != tld) link = &(*link)->same_id_next;
  *link = tld->same_id_next;
  tld->same_id_next = NULL;
}

/* The parked threads' pages swept by the caller (heap/idle.c: the
   background thread, mi_purge_all), each at most once per `gen`, under the
   threads lock: a parked thread cannot go before it takes its heaps back,
   which waits for the sweep (so does its exit). Counts the threads swept
   and those running (an exiting one is running until it is off the list). */
void _mi_threads_sweep_parked(const mi_tld_t* self, uint64_t gen, bool force, size_t* swept, size_t* running) {
  _mi_lock_acquire(&mi_threads_lock);
  for (mi_tld_t* tld = mi_threads_first; tld != NULL; tld = tld->thread_next) {
    if (tld == self || tld->purge_gen == gen) continue;
    int expected = MI_PARK_PARKED;
    if (atomic_compare_exchange_strong_explicit(&tld->park, &expected, MI_PARK_SWEEPING, memory_order_acquire,
                                                memory_order_relaxed)) {
      if (_mi_tld_holes_sweep(tld, force)) (*swept)++;
      tld->purge_gen = gen;
      /* its owner waits while SWEEPING (it takes its heaps back only from PARKED) */
      mi_assert_internal(atomic_load_explicit(&tld->park, memory_order_relaxed) == MI_PARK_SWEEPING);
      atomic_store_explicit(&tld->park, MI_PARK_PARKED, memory_order_release);
    } else if (expected == MI_PARK_RUNNING) {
      (*running)++;
    } else {
      mi_assert_internal(expected != MI_PARK_SWEEPING); /* set only here, under the lock */
    }
  }
  _mi_lock_release(&mi_threads_lock);
}

/* ---- Late thread data ------------------------------------------------------------- */

/* A thread's exit hook runs among the thread's other thread-exit work: the
   destructors of other thread-specific keys (POSIX runs them in rounds, up
   to PTHREAD_DESTRUCTOR_ITERATIONS, while any key is set again), other DLLs'
   detach. Those may allocate again after the hook ran, and each time the
   thread is set up anew. Its new data is "late": the hook comes again only
   if another round comes, so when it does not, the thread ends owning
   segments nobody collects, with its thread id on them; and a thread that
   starts later on the same stack has that id and took them for its own (a
   free of one of their blocks went the owner's way into another thread's
   page, and the secure build reported a corrupted segment header).
   So late data gets an id no thread has (an odd address: ids are aligned),
   and every free into its segments goes the cross-thread way, its own
   included; and its thread holds a mark (prim.h) that tells another thread
   when it has ended. If the hook does run again, the thread finishes as any
   thread does and drops the mark; if not, the first thread that looks
   after that (a thread's set-up, mi_collect(true), the background thread)
   finishes its exit for it: its segments are abandoned for others to
   adopt, as its exit hook would have done. Nothing is leaked and no segment
   has two owners. (docs/teardown-protocol.md, "Late thread data".) */
static mi_decl_thread bool mi_thread_exited; /* this thread's exit hook has run */
static _Atomic(size_t) mi_late_marked;       /* late thread data holding a mark, not finished */

static void mi_thread_data_make_late(mi_tld_t* tld) {
  tld->late = true;
  tld->thread_id = (uintptr_t)tld | 1;
  tld->late_marked = mi_prim_thread_mark_take(&tld->late_mark);
  if (tld->late_marked) atomic_fetch_add_explicit(&mi_late_marked, 1, memory_order_relaxed);
}

static void mi_thread_data_late_done(mi_tld_t* tld) {
  if (!tld->late_marked) return;
  tld->late_marked = false;
  atomic_fetch_sub_explicit(&mi_late_marked, 1, memory_order_relaxed);
}

/* Finish the exit of a thread that has ended, for it (late data, or
   orphaned data, below): what its exit hook does but for the hooks of the
   profilers, whose per-thread state was the dead thread's own. Its pages are freed and its segments abandoned as
   their owner would, so the checks that a page's owner is the calling
   thread see its heap as the default one meanwhile. */
static void mi_thread_data_finish_for(mi_tld_t* tld) {
  mi_heap_t* self = _mi_heap_default;
  _mi_heap_default = tld->heap_backing;
  tld->exiting = true;
  _mi_tld_unpark(tld);
  _mi_heap_free_all_of_thread(tld);
  _mi_heap_default = self;
  mi_thread_data_late_done(tld);
  _mi_stat_decrease(&_mi_stats.threads, 1);
  _mi_heap_slot_free(tld->heap_backing); /* the thread data's slot starts with its backing heap */
}

/* Late thread data whose thread has ended, each finished for it. Cheap when
   there is none (one relaxed load). */
void _mi_threads_finish_ended(void) {
  while (atomic_load_explicit(&mi_late_marked, memory_order_relaxed) != 0) {
    mi_tld_t* ended = NULL;
    _mi_lock_acquire(&mi_threads_lock);
    for (mi_tld_t* tld = mi_threads_first; tld != NULL; tld = tld->thread_next) {
      if (tld->late_marked && mi_prim_thread_mark_ended(&tld->late_mark)) {
        mi_threads_unlink_locked(tld);
        ended = tld;
        break;
      }
    }
    _mi_lock_release(&mi_threads_lock);
    if (ended == NULL) return;
    mi_thread_data_finish_for(ended);
  }
}

/* Orphaned thread data: made by a thread's first allocation where no exit
   hook comes after it (in the last round of the key destructors, or in the
   C library's clean-up after them). It is not late (the hook had not run),
   so it has the thread's id, and nothing finishes it when its thread ends. A
   thread that starts later on the same stack has the same id: it would take
   the orphan's segments for its own (a free into them taking the owner's
   path into a page of another thread's data); and it may inherit the
   allocator's key set to the orphan (set after the key destructors ran),
   when its exit hook would tear the orphan down as its own, with no heap of
   its own (an allocation meanwhile set up late data, and the secure build
   reported a corrupted segment header in CPython's test runner, whose
   threads' C library clean-up freed NULL while every block's stacks were
   kept: that capture asked for the thread's stack, which allocates). So a
   thread that sets up its data, or whose exit hook is called with data not
   its own, first finishes any data that is not late and has its id (no
   live thread has it) for the ended thread. */
static void mi_thread_data_orphan_finish(void) {
  const uintptr_t id = _mi_thread_id();
  mi_tld_t* orphan = NULL;
  _mi_lock_acquire(&mi_threads_lock);
  for (mi_tld_t* tld = *mi_threads_bucket(id); tld != NULL; tld = tld->same_id_next) {
    if (tld->thread_id == id && !tld->late) {
      mi_threads_unlink_locked(tld);
      orphan = tld;
      break;
    }
  }
  _mi_lock_release(&mi_threads_lock);
  if (orphan != NULL) mi_thread_data_finish_for(orphan);
}

static void mi_thread_data_done(mi_thread_data_t* td) {
  mi_tld_t* tld = &td->tld;
  if (!tld->late && tld->thread_id != _mi_thread_id()) return;
  tld->exiting = true; /* a segment claimed on free from here on would stay with a dead thread */
  _mi_tld_unpark(tld); /* parked and never taken back: a sweep of its pages ends first */
  _mi_heap_free_all_of_thread(tld);
  _mi_raise_thread_done();
  /* off the list only now: a fork before this point orphans the rest of
     this thread's segments in the child */
  _mi_lock_acquire(&mi_threads_lock);
  mi_threads_unlink_locked(tld);
  _mi_lock_release(&mi_threads_lock);
  _mi_heap_default = (mi_heap_t*)&_mi_heap_empty;
  _mi_stat_decrease(&_mi_stats.threads, 1);
  if (tld->late_marked) mi_prim_thread_mark_drop(&tld->late_mark);
  mi_thread_data_late_done(tld);
  _mi_heap_slot_free(&td->heap); /* the slot of its thread data */
}

static void mi_thread_exit_hook(void* value) {
  mi_thread_exited = true; /* what it allocates from now on is late */
  if (value == NULL) return;
  if (mi_heap_is_initialized(_mi_heap_default)) {
    mi_thread_data_done((mi_thread_data_t*)value);
  } else {
    mi_thread_data_orphan_finish(); /* the value is not this thread's: an ended thread's, or dangling */
  }
}

mi_heap_t* _mi_heap_init_thread(void) {
  _mi_process_init_once();
  mi_heap_t* heap = _mi_heap_default;
  if (mi_heap_is_initialized(heap)) return heap;
  _mi_threads_finish_ended();     /* a new thread may start on the stack of one that ended late */
  mi_thread_data_orphan_finish(); /* or one that left orphaned data */
  mi_thread_data_t* td = (mi_thread_data_t*)_mi_meta_alloc();
  if (td == NULL) {
    return NULL; /* fault path */
  }
  mi_tld_t* tld = &td->tld;
  tld->thread_id = _mi_thread_id();
  if (mi_unlikely(mi_thread_exited)) mi_thread_data_make_late(tld);
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

/* The child has one thread, this one, the replica of the one that took
   every lock in prepare: it releases them, in the parent's order, as
   POSIX's pthread_atfork pattern has it. (They used to be initialised anew
   instead: initialising an initialised mutex is undefined, and
   ThreadSanitizer does not see it, so it took the child's next acquire of
   any of them for a double lock, in every forked case of tests/teardown.)
   The lock-order checker sees the releases, then forgets what else this
   thread held in the parent (untracked acquisitions). Every other
   thread's data goes: their heaps' large blocks become orphans, their
   segments are orphaned (frees into them take the cross-thread path; they
   are not adopted, their pages' state being a fuzzy copy, see segment.c).
   The background thread is started again when needed, not from inside the
   handler. */
static void mi_fork_child(void) {
  _mi_locks_release_all();
#if MI_LOCKORDER
  _mi_lockorder_fork_child(); /* its record of held locks cleared before any is taken */
#endif
  _mi_raise_fork_child();
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
      _mi_heap_slot_free(tld->heap_backing); /* the slot of its thread data */
    }
    tld = next;
  }
  _mi_lock_release(&mi_threads_lock);
  _mi_segments_abandoned_fork_child();
  _mi_background_fork_child_end();
}

/* ---- Process ------------------------------------------------------------------------- */

#if MI_FAULT
/* prim/ calls nothing above it: its warning comes back through this */
static void mi_fault_env_warning(const char* name, const char* value) {
  _mi_warning_message("environment option %s has an invalid value: %s\n", name, value);
}
#endif

/* At exit, or earlier when the program calls it (mimalloc's API): once. */
void mi_process_done(void) {
  static _Atomic(bool) done;
  if (atomic_load_explicit(&mi_process_state, memory_order_acquire) != 2) return;
  if (atomic_exchange_explicit(&done, true, memory_order_acq_rel)) return;
  _mi_background_stop();
  _mi_raise_process_done();
  if (mi_option_is_enabled(mi_option_show_stats) || mi_option_is_enabled(mi_option_verbose)) {
    _mi_stats_print_at_exit();
  }
  _mi_snapshot_at_exit();
  if (mi_option_is_enabled(mi_option_destroy_on_exit)) _mi_heap_destroy_all_at_exit();
}

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
  _mi_fault_init_from_env(&mi_fault_env_warning); /* before any primitive fails on purpose */
#endif
  _mi_listeners_gather(); /* the features linked in, each its listener, before the first event */
  _mi_options_init();
  _mi_os_thp_init();
  _mi_process_key = mi_initial_key();
#if MI_SECURE
  _mi_secure_keys_init(); /* before the first block or link is encoded */
  _mi_zero_init();        /* the zero-size blocks' segments */
#endif
#if MI_LOCKORDER
  _mi_lockorder_init();
#endif
  _mi_raise_process_init();
  _mi_lock_init(&mi_threads_lock, MI_LOCK_THREADS);
  _mi_meta_init();
  _mi_segments_init();
  _mi_segments_abandoned_init();
  _mi_arenas_init();
  _mi_purge_init();
  _mi_background_init(&_mi_idle_background_work); /* the abandoned segments' cleanup, the parked threads' holes */
  mi_prim_thread_exit_hook_init(&mi_thread_exit_hook);
  _mi_process_is_initialized = true;
  atomic_store_explicit(&mi_process_state, 2, memory_order_release);
  /* these may allocate: the allocator is ready for it now */
  mi_prim_atfork(&mi_fork_prepare, &mi_fork_parent, &mi_fork_child);
  mi_prim_atexit(&mi_process_done);
  _mi_arenas_reserve_from_options();
#if MI_FAULT
  _mi_fault_register_report();
#endif
  _mi_raise_process_ready(); /* (these may allocate) */
  char version[32];
  _mi_version_string(version, sizeof(version));
  char listeners[128] = "";
  if (mi_option_is_enabled(mi_option_verbose)) _mi_listeners_names(listeners, sizeof(listeners));
  _mi_verbose_message("mimalloc-pprof %s initialised (secure: %d, debug: %d, lock-order checker: %d; listening: %s)\n",
                      version, MI_SECURE, MI_DEBUG, MI_LOCKORDER, listeners);
}

void mi_process_init(void) {
  _mi_process_init_once();
  (void)_mi_heap_init_thread();
}

mi_decl_constructor(mi_process_load) {
  mi_process_init();
}
