/* Threads that allocate again after the allocator's exit hook ran: the
   destructors of other thread-specific keys (POSIX runs them in rounds, up
   to PTHREAD_DESTRUCTOR_ITERATIONS, while a key is set again) allocate,
   realloc and free, free blocks made before the thread began to exit, hand
   blocks to other threads and set their key again. Such a program is
   correct: it must exit 0 with no report, its blocks intact, and once its
   threads have ended no thread data may be left (nothing leaked, no segment
   with two owners). Each case runs in a child (tests/child.h); the blocks
   are mi_malloc's, as a program linked against the library or preloaded
   gets them. */
#define _GNU_SOURCE
#include "testutil.h"

#include <limits.h>
#include <pthread.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "child.h"
#include "mimalloc-stats.h"

#define THREADS 64
#define AT_ONCE 8
#define EARLY 24
#define HANDOFF_MAX 60000

static pthread_key_t key;
static pthread_mutex_t handoff_lock = PTHREAD_MUTEX_INITIALIZER;
static void* handoff[HANDOFF_MAX]; /* late blocks, freed by the next threads (often on the same stack) */
static size_t handoff_count;
static int rounds_to_set; /* how often a destructor sets its key again */

typedef struct tsd_s {
  int round;
  void* early[EARLY]; /* made before the thread began to exit */
  uint8_t* grown;
  size_t grown_size;
} tsd_t;

static size_t handoff_size(size_t i) {
  return 16 + (i * 40) % 3000;
}

static void handoff_put(void* p, size_t size) {
  tu_fill(p, size, (uint8_t)size);
  pthread_mutex_lock(&handoff_lock);
  if (handoff_count < HANDOFF_MAX) {
    handoff[handoff_count++] = p;
    p = NULL;
  }
  pthread_mutex_unlock(&handoff_lock);
  mi_free(p);
}

/* every handed-off block checked and freed by the calling thread */
static void handoff_drain(void) {
  pthread_mutex_lock(&handoff_lock);
  for (size_t i = 0; i < handoff_count; i++) {
    size_t size = mi_usable_size(handoff[i]);
    TU_CHECK(size >= 16);
    mi_free(handoff[i]);
  }
  handoff_count = 0;
  pthread_mutex_unlock(&handoff_lock);
}

static void tsd_destructor(void* value) {
  tsd_t* t = (tsd_t*)value;
  for (size_t i = 0; i < EARLY; i++) {
    TU_CHECK(t->early[i] == NULL || tu_check(t->early[i], 24 + 100 * i, (uint8_t)i));
    mi_free(t->early[i]);
    t->early[i] = NULL;
  }
  for (size_t i = 0; i < 200; i++) {
    size_t size = handoff_size(i + (size_t)t->round * 7);
    handoff_put(mi_malloc(size), size);
  }
  size_t n = 100 + 9000 * (size_t)t->round;
  uint8_t* g = (uint8_t*)mi_realloc(t->grown, n);
  TU_CHECK(g != NULL);
  TU_CHECK(t->grown == NULL || tu_check(g, t->grown_size, 7));
  tu_fill(g, n, 7);
  t->grown = g;
  t->grown_size = n;
  t->round++;
  if (t->round <= rounds_to_set) {
    pthread_setspecific(key, t);
    return;
  }
  mi_free(t->grown);
  mi_free(t);
}

static void* worker(void* arg) {
  (void)arg;
  mi_free(mi_malloc(48)); /* set up before anything else */
  handoff_drain();
  tsd_t* t = (tsd_t*)mi_calloc(1, sizeof(*t));
  for (size_t i = 0; i < EARLY; i++) {
    t->early[i] = mi_malloc(24 + 100 * i);
    tu_fill(t->early[i], 24 + 100 * i, (uint8_t)i);
  }
  pthread_setspecific(key, t);
  return NULL;
}

static int64_t threads_now(void) {
  mi_stats_t_decl(stats);
  TU_CHECK(mi_stats_get(&stats));
  return stats.threads.current;
}

/* THREADS threads, AT_ONCE at a time, whose destructors set their key
   `rounds` times; then every late block freed by the main thread. */
static void run_threads(int rounds) {
  rounds_to_set = rounds;
  assert_int_equal(pthread_key_create(&key, tsd_destructor), 0);
  for (int wave = 0; wave < THREADS / AT_ONCE; wave++) {
    pthread_t th[AT_ONCE];
    for (int i = 0; i < AT_ONCE; i++) assert_int_equal(pthread_create(&th[i], NULL, worker, NULL), 0);
    for (int i = 0; i < AT_ONCE; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  }
}

/* The destructors set their key again every time, so the rounds run out
   with late thread data the exit hook never sees again. */
static void case_rounds_exhausted(bool misuse) {
  (void)misuse;
  run_threads(1000);
  handoff_drain();
  mi_collect(true); /* finishes the exits the hook did not */
  if (threads_now() != 1) fprintf(stderr, "threads left: %lld\n", (long long)threads_now());
  TU_CHECK(threads_now() == 1);
  _exit(atomic_load(&tu_failures) == 0 ? 0 : 3);
}

/* The destructors set their key once: the exit hook comes again, and each
   late thread data finishes with its thread. */
static void case_hook_again(bool misuse) {
  (void)misuse;
  run_threads(1);
  if (threads_now() != 1) fprintf(stderr, "threads left: %lld\n", (long long)threads_now());
  TU_CHECK(threads_now() == 1); /* before any collect */
  handoff_drain();
  _exit(atomic_load(&tu_failures) == 0 ? 0 : 3);
}

/* One thread's last late blocks, freed by the next thread, which runs on
   the same stack and so had the same thread id. */
static void* late_keeper(void* arg) {
  (void)arg;
  mi_free(mi_malloc(10));
  pthread_setspecific(key, (void*)1);
  return NULL;
}
static void late_keeper_destructor(void* value) {
  for (size_t i = 0; i < 4096; i++) handoff_put(mi_malloc(48), 48);
  pthread_setspecific(key, value); /* every round */
}
static void* same_stack_freer(void* arg) {
  (void)arg;
  mi_free(mi_malloc(48));
  handoff_drain();
  mi_collect(true);
  return NULL;
}
static void case_same_stack(bool misuse) {
  (void)misuse;
  assert_int_equal(pthread_key_create(&key, late_keeper_destructor), 0);
  pthread_t th;
  for (int i = 0; i < 4; i++) {
    assert_int_equal(pthread_create(&th, NULL, late_keeper, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(pthread_create(&th, NULL, same_stack_freer, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
  }
  mi_collect(true);
  TU_CHECK(threads_now() == 1);
  _exit(atomic_load(&tu_failures) == 0 ? 0 : 3);
}

/* A thread whose first allocation comes in the last round of key
   destructors: no round follows, so the exit hook never sees its data
   (orphaned: not late, the thread's own id) and the thread ends with the
   allocator's key still set. The next thread on the same stack (the same
   id, the key inherited) either allocates, and frees the orphan's block, or
   never allocates and exits, its hook called with the orphan's data. A
   thread that never allocates at all comes last: the C library frees NULL
   at its end, where a secure build that keeps every block's stacks used to
   set a thread up (and orphaned it). */
static _Thread_local int destructor_round;
static void* orphan_block;
static void last_round_destructor(void* value) {
  if (++destructor_round < PTHREAD_DESTRUCTOR_ITERATIONS) {
    pthread_setspecific(key, value);
    return;
  }
  orphan_block = mi_malloc(48);
  tu_fill(orphan_block, 48, 0x5a);
}
static void* first_allocation_in_last_round(void* arg) {
  (void)arg;
  pthread_setspecific(key, (void*)1);
  return NULL;
}
static void* never_allocates(void* arg) {
  (void)arg;
  return NULL;
}
static void* frees_orphan_block(void* arg) {
  (void)arg;
  mi_free(mi_malloc(48));
  if (orphan_block != NULL) {
    TU_CHECK(tu_check(orphan_block, 48, 0x5a));
    mi_free(orphan_block);
    orphan_block = NULL;
  }
  mi_collect(true);
  return NULL;
}
static void run_joined(void* (*fn)(void*)) {
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, fn, NULL), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
}
static void case_orphaned(bool misuse) {
  (void)misuse;
  assert_int_equal(pthread_key_create(&key, last_round_destructor), 0);
  for (int i = 0; i < 4; i++) {
    run_joined(first_allocation_in_last_round);
    run_joined(frees_orphan_block);
    run_joined(first_allocation_in_last_round);
    run_joined(never_allocates);
    run_joined(frees_orphan_block);
    run_joined(never_allocates);
    run_joined(frees_orphan_block);
  }
  mi_collect(true);
  if (threads_now() != 1) fprintf(stderr, "threads left: %lld\n", (long long)threads_now());
  TU_CHECK(threads_now() == 1);
  _exit(atomic_load(&tu_failures) == 0 ? 0 : 3);
}

static void expect_clean(mi_case_fn fn) {
  char err[8192];
  int status = run_child(fn, false, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) print_error("status %d, stderr: %s\n", status, err);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_null(strstr(err, "mimalloc: error:"));
}

static void test_late_thread_rounds_exhausted_no_report_nothing_left(void** state) {
  (void)state;
  expect_clean(case_rounds_exhausted);
}

static void test_late_thread_hook_again_no_report_finished_by_itself(void** state) {
  (void)state;
  expect_clean(case_hook_again);
}

static void test_late_thread_blocks_freed_on_same_stack_no_report(void** state) {
  (void)state;
  expect_clean(case_same_stack);
}

static void test_late_thread_orphaned_data_on_same_stack_no_report_nothing_left(void** state) {
  (void)state;
  expect_clean(case_orphaned);
}

int main(void) {
  mi_child_save_signals();
  mi_process_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_late_thread_rounds_exhausted_no_report_nothing_left),
      cmocka_unit_test(test_late_thread_hook_again_no_report_finished_by_itself),
      cmocka_unit_test(test_late_thread_blocks_freed_on_same_stack_no_report),
      cmocka_unit_test(test_late_thread_orphaned_data_on_same_stack_no_report_nothing_left),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
