/* The pprof sampler at its limits: a profiler budget too small for the
   samples (each one dropped and counted, the program's allocations all
   served), its clean twin with no budget, and a thread already running
   when the profiler starts (it joins within a page's worth of blocks, as
   docs/pprof.md says). */
#define _GNU_SOURCE
#include "prof-test.h"

enum { N = 60000 };
static void* blocks[N];

static void allocate_all_free_all_check(size_t budget, bool expect_drops) {
  start_exact_with_budget(budget);
  for (int i = 0; i < N; i++) {
    blocks[i] = mi_malloc(24);
    assert_non_null(blocks[i]); /* a sample that cannot be recorded never fails the allocation */
  }
  mi_prof_stats_t st = stats_now();
  /* each allocation is a sample: recorded, or dropped and counted */
  assert_int_equal(st.live_samples + st.dropped_samples, N);
  if (expect_drops) {
    assert_true(st.dropped_samples > 0);
    assert_true(st.live_samples > 0);
    /* the budget holds (the filter of 2^18 counters is outside it) */
    assert_true(st.arena_committed <= budget + ((size_t)2 << 18));
  } else {
    assert_int_equal(st.dropped_samples, 0);
    assert_int_equal(st.live_samples, N);
    assert_int_equal(st.live_bytes, (size_t)N * 24);
  }
  for (int i = 0; i < N; i++) mi_free(blocks[i]);
  st = stats_now();
  assert_int_equal(st.live_samples, 0);
  assert_int_equal(st.live_bytes, 0);
  mi_prof_stop();
}

static void test_prof_budget_exhausted_samples_dropped_allocations_succeed(void** state) {
  (void)state;
  allocate_all_free_all_check(256 * 1024, true);
}

static void test_prof_no_budget_every_sample_recorded(void** state) {
  (void)state;
  allocate_all_free_all_check(0, false);
}

/* A thread that allocated before the start and waits; after the start it
   allocates T blocks of 64 bytes, which it keeps until told. */
enum { T = 5000, BLOCK = 64 };
static void* kept[T];

static void* early_thread(void* arg) {
  (void)arg;
  void* warm[100];
  for (int i = 0; i < 100; i++) warm[i] = mi_malloc(BLOCK); /* its heap and page set up, idle */
  for (int i = 0; i < 100; i++) mi_free(warm[i]);
  set_phase(1);
  wait_phase(2); /* the profiler started */
  for (int i = 0; i < T; i++) kept[i] = mi_malloc(BLOCK);
  set_phase(3);
  wait_phase(4);
  for (int i = 0; i < T; i++) mi_free(kept[i]);
  set_phase(5);
  return NULL;
}

static void test_prof_thread_running_at_start_joins_within_a_page(void** state) {
  (void)state;
  mi_prof_stop();
  phase = 0;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, &early_thread, NULL), 0);
  wait_phase(1);
  start_exact_with_budget(0);
  set_phase(2);
  wait_phase(3);
  mi_prof_stats_t st = stats_now();
  /* its countdown was set idle before the start: it is set anew at its
     next page refill, at most a small page (64 KiB) of blocks later */
  size_t page_blocks = (64 * 1024) / BLOCK;
  assert_true(st.live_samples <= T);
  assert_true(st.live_samples >= T - page_blocks);
  set_phase(4);
  wait_phase(5);
  assert_int_equal(pthread_join(t, NULL), 0);
  st = stats_now();
  assert_int_equal(st.live_samples, 0);
  mi_prof_stop();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prof_budget_exhausted_samples_dropped_allocations_succeed),
      cmocka_unit_test(test_prof_no_budget_every_sample_recorded),
      cmocka_unit_test(test_prof_thread_running_at_start_joins_within_a_page),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
