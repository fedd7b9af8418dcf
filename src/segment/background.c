/* The background thread: when something is due, it runs a purge pass
   (purge.c: freed memory back to the OS after the purge delay) and then the
   cleanup of the segments exited threads abandoned (page/abandon.c, which
   registers it here: the page layer's work, started from this layer), whose
   freed pages are purged in turn at the next due time. It also writes the
   profiler's dumps asked by a signal, by the bytes allocated or at the
   in-use bytes' highs (mi_hook_background_tick). Started lazily, with
   option purge_thread; without it (or when it cannot start) allocating
   threads do the same work on their slow path when it is due. */
#include "segment.h"

static _Atomic(int64_t) mi_background_next_due = INT64_MAX;
static _Atomic(mi_background_cleanup_fun*) mi_background_cleanup;

static mi_prim_event_t mi_background_event;
/* 0: not started, 1: starting/running, 2: stopping, 3: none (could not
   start, or in a fork child until its handler is done): the work happens on
   the allocation path */
static _Atomic(int) mi_background_state;
static void* mi_background_handle;

/* With nothing due for this long, the thread ends (and starts again when
   something is due). A process whose last thread of its own ends with
   pthread_exit ends when its last thread does: a thread of ours asleep for
   good kept such a process alive forever. */
#define MI_BACKGROUND_IDLE_END_MS 1000

void _mi_background_init(mi_background_cleanup_fun* cleanup) {
  mi_prim_event_init(&mi_background_event);
  atomic_store_explicit(&mi_background_cleanup, cleanup, memory_order_release);
}

/* A pass starts: nothing is due until it says otherwise. */
void _mi_background_due_reset(void) {
  atomic_store_explicit(&mi_background_next_due, INT64_MAX, memory_order_relaxed);
}

/* Lower the time at which the next pass is due; true if it was lowered. */
bool _mi_background_due_at(int64_t at) {
  int64_t cur = atomic_load_explicit(&mi_background_next_due, memory_order_relaxed);
  while (at < cur) {
    if (atomic_compare_exchange_weak_explicit(&mi_background_next_due, &cur, at, memory_order_relaxed,
                                              memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

/* Something becomes purgeable `ms` from now. */
void _mi_background_due_in(long ms) {
  if (_mi_background_due_at(mi_prim_clock_now() + ms)) _mi_background_wake();
}

/* Something becomes purgeable after the purge delay from now. */
void _mi_background_due_after_delay(void) {
  long delay = _mi_option_get_fast(mi_option_purge_delay);
  if (delay >= 0) _mi_background_due_in(delay);
}

/* What is due: the pages' purges, then the abandoned segments' cleanup
   (whose freed pages are purged in turn, at the next due time). */
static void mi_background_due_work(void) {
  _mi_purge_run(false);
  mi_background_cleanup_fun* cleanup = atomic_load_explicit(&mi_background_cleanup, memory_order_acquire);
  if (cleanup != NULL) cleanup();
}

/* From an allocating thread's slow path, when there is no background thread. */
void _mi_background_maybe(void) {
  if (_mi_option_get_fast(mi_option_purge_thread) != 0 &&
      atomic_load_explicit(&mi_background_state, memory_order_relaxed) == 1) {
    return;
  }
  int64_t due = atomic_load_explicit(&mi_background_next_due, memory_order_relaxed);
  if (due == INT64_MAX || due > mi_prim_clock_now()) return;
  mi_background_due_work();
}

/* ---- The thread ------------------------------------------------------------- */

/* Idle for MI_BACKGROUND_IDLE_END_MS with nothing due: true if the thread
   ends (running -> not started), detached, so that nobody joins it.
   Something made due meanwhile is seen either by its waker (which finds the
   state 0 and starts a new thread) or here, after the move (the thread then
   runs on, unless a new one has started). Where a thread cannot detach
   itself (Windows, where no program waits for our thread to end) it never
   ends when idle. */
static bool mi_background_idle_end(void) {
  if (!mi_prim_thread_can_detach_self()) return false;
  int expected = 1;
  if (!atomic_compare_exchange_strong_explicit(&mi_background_state, &expected, 0, memory_order_acq_rel,
                                               memory_order_relaxed)) {
    return false; /* stopping: the loop ends, and the stop joins it */
  }
  if (atomic_load_explicit(&mi_background_next_due, memory_order_acquire) != INT64_MAX) {
    expected = 0;
    if (atomic_compare_exchange_strong_explicit(&mi_background_state, &expected, 1, memory_order_acq_rel,
                                                memory_order_relaxed)) {
      return false; /* runs on */
    }
  }
  mi_prim_thread_detach_self();
  return true;
}

static void mi_background_main(void) {
  int64_t idle_since = mi_prim_clock_now();
  while (atomic_load_explicit(&mi_background_state, memory_order_acquire) == 1) {
    _mi_raise_background_tick();
    int64_t due = atomic_load_explicit(&mi_background_next_due, memory_order_relaxed);
    int64_t now = mi_prim_clock_now();
    if (due <= now) {
      mi_background_due_work();
      idle_since = mi_prim_clock_now();
      continue;
    }
    int64_t poll = _mi_raise_background_poll_ms();
    if (due == INT64_MAX && poll < 0 && now - idle_since >= MI_BACKGROUND_IDLE_END_MS) {
      if (mi_background_idle_end()) return;
      idle_since = now;
      continue;
    }
    /* sleep until the next page is due, or until woken for a new one, or
       until it has been idle long enough to end */
    int64_t wait = (due == INT64_MAX ? MI_BACKGROUND_IDLE_END_MS - (now - idle_since) : due - now);
    if (poll >= 0 && wait > poll) wait = poll;
    mi_prim_event_wait(&mi_background_event, wait);
  }
}

static void mi_background_start(void) {
  /* Not from a thread's exit hook: the start allocates (the new thread's
     TLS, through the C library's calloc, which a preloaded or linked
     library serves) from the exiting thread's heap, whose segments may be
     abandoned already: the allocation took one back, with the thread's id,
     into data about to be freed, and the thread's late data later found it
     there as its own (docs/teardown-protocol.md, "Late thread data").
     The next thread that makes something due starts it. */
  const mi_heap_t* heap = mi_get_default_heap();
  if (mi_heap_is_initialized(heap) && heap->tld->exiting) return;
  int expected = 0;
  if (!atomic_compare_exchange_strong_explicit(&mi_background_state, &expected, 1, memory_order_acq_rel,
                                               memory_order_relaxed)) {
    return;
  }
  mi_hook_internal_begin(); /* the thread's stack and TLS are not the program's allocations */
  bool started = mi_prim_thread_start(&mi_background_main, &mi_background_handle);
  mi_hook_internal_end();
  if (!started) {
    /* without a thread, allocating threads do its work on their slow path */
    atomic_store_explicit(&mi_background_state, 3, memory_order_release);
    _mi_verbose_message("unable to start the purge thread; purging on the allocation path only\n");
  }
}

void _mi_background_wake(void) {
  if (_mi_option_get_fast(mi_option_purge_thread) == 0) return;
  int state = atomic_load_explicit(&mi_background_state, memory_order_relaxed);
  if (state == 0) {
    mi_background_start();
    return;
  }
  if (state == 1) mi_prim_event_signal(&mi_background_event);
}

void _mi_background_stop(void) {
  int expected = 1;
  if (!atomic_compare_exchange_strong_explicit(&mi_background_state, &expected, 2, memory_order_acq_rel,
                                               memory_order_relaxed)) {
    return;
  }
  mi_prim_event_signal(&mi_background_event);
  mi_prim_thread_join(mi_background_handle);
  atomic_store_explicit(&mi_background_state, 0, memory_order_release);
}

/* Fork child, first thing: the background thread does not exist here. Until the
   handler is done nothing may start one (state 3). */
void _mi_background_fork_child_begin(void) {
  atomic_store_explicit(&mi_background_state, 3, memory_order_relaxed);
  mi_prim_event_init(&mi_background_event);
}

/* Fork child, last thing: a new background thread starts when one is needed. */
void _mi_background_fork_child_end(void) {
  atomic_store_explicit(&mi_background_state, 0, memory_order_relaxed);
}
