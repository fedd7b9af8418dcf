/* The pprof sampler at its limits: a profiler budget too small for the
   samples (each one dropped and counted, the program's allocations all
   served), its clean twin with no budget, more samples in a page than its
   count holds, more distinct stacks than the
   stack table holds (each sample beyond it dropped and counted as an
   overflow, the dump still whole), a thread that takes over an ended
   thread's cache of stacks (its samples get its own), and a thread already running when the
   profiler starts (it joins within a page's worth of blocks, as
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

/* More samples in one page than its count holds (255): the count stays
   saturated, the page keeps its flag, and every sample's free is still
   seen, down to none. */
static void test_prof_page_count_saturated_every_free_seen(void** state) {
  (void)state;
  enum { M = 400 };
  static void* page_blocks[M];
  start_exact_with_budget(0);
  mi_prof_stats_t before = stats_now();
  for (int i = 0; i < M; i++) {
    page_blocks[i] = mi_malloc(32); /* a 64 KiB page holds 2048 of them */
    assert_non_null(page_blocks[i]);
  }
  assert_int_equal(stats_now().live_samples, before.live_samples + M);
  for (int i = 0; i < M / 2; i++) mi_free(page_blocks[i]);
  mi_prof_stats_t st = stats_now();
  assert_int_equal(st.live_samples, before.live_samples + M / 2);
  assert_int_equal(st.live_bytes, before.live_bytes + (size_t)(M / 2) * 32);
  for (int i = M / 2; i < M; i++) mi_free(page_blocks[i]);
  st = stats_now();
  assert_int_equal(st.live_samples, before.live_samples);
  assert_int_equal(st.live_bytes, before.live_bytes);
  mi_prof_stop();
}

/* Allocations at distinct stacks: the base-4 digits of `path`, one per
   level, choose which of four functions each level goes through (their
   calls to the next level are at four return addresses). Eight levels
   give 65536 stacks, the table's size (src/prof/prof.h); a ninth, more. */
enum { LEVELS = 9, STACKS = 70000 };
static void* stack_blocks[STACKS];
static volatile int stack_side; /* written after each call: no tail call, no two functions alike */

static __attribute__((noinline)) void* descend(unsigned path, int level);
#define MI_TEST_VIA(k) \
  static __attribute__((noinline)) void* via_##k(unsigned path, int level) { \
    void* p = descend(path, level); \
    stack_side = k; \
    return p; \
  }
MI_TEST_VIA(0)
MI_TEST_VIA(1)
MI_TEST_VIA(2)
MI_TEST_VIA(3)

static volatile size_t descend_size = 16;

static __attribute__((noinline)) void* descend(unsigned path, int level) {
  if (level == 0) return mi_malloc(descend_size);
  void* p;
  switch ((path >> (2 * (level - 1))) & 3) {
    case 0: p = via_0(path, level - 1); break;
    case 1: p = via_1(path, level - 1); break;
    case 2: p = via_2(path, level - 1); break;
    default: p = via_3(path, level - 1); break;
  }
  stack_side = -1;
  return p;
}

static void count_bytes(void* arg, const char* buf, size_t len) {
  (void)buf;
  *(size_t*)arg += len;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MI_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MI_TEST_SANITIZED 1
#endif
#endif

static void test_prof_more_stacks_than_table_overflows_counted_dump_whole(void** state) {
  (void)state;
#if defined(MI_TEST_SANITIZED)
  /* 70000 stacks of code without frame pointers, each unwound in full: minutes
     under a sanitizer's run-time; the default, secure and Windows jobs run it */
  printf(
      "[   SKIP   ] test_prof_more_stacks_than_table_overflows_counted_dump_whole: "
      "too slow under a sanitizer\n");
  return;
#endif
  start_exact_with_budget(0);
  mi_prof_stats_t before = stats_now();
  assert_true(before.unique_stacks < 65536);
  for (unsigned i = 0; i < STACKS; i++) {
    stack_blocks[i] = descend(i, LEVELS);
    assert_non_null(stack_blocks[i]); /* a sample without room never fails the allocation */
  }
  mi_prof_stats_t st = stats_now();
  size_t recorded = 65536 - before.unique_stacks;
  assert_int_equal(st.unique_stacks, 65536);
  assert_int_equal(st.stack_table_overflows, STACKS - recorded);
  assert_int_equal(st.dropped_samples, before.dropped_samples + (STACKS - recorded));
  assert_int_equal(st.live_samples, before.live_samples + recorded);
  size_t text = 0, proto = 0;
  assert_true(mi_prof_dump_writer(&count_bytes, &text));
  assert_true(mi_prof_dump_proto_writer(&count_bytes, &proto));
  assert_true(text > 65536 * 20); /* a line per stack at least */
  assert_true(proto > 65536 * 4);
  for (unsigned i = 0; i < STACKS; i++) mi_free(stack_blocks[i]);
  st = stats_now();
  assert_int_equal(st.live_samples, before.live_samples);
  assert_int_equal(st.live_bytes, before.live_bytes);
  mi_prof_stop();
}

/* A thread's cache of unwound stacks goes to the next thread
   (src/dhat/stack.c): a stack from there is used only if the new thread's
   return addresses match it. Two threads one after the other call malloc
   from the same place through different paths: each sample must have its
   own thread's stack. */
static void* path_thread(void* arg) {
  unsigned path = (unsigned)(uintptr_t)arg;
  descend_size = 1000 + path;
  stack_blocks[path] = descend(path, 2);
  return NULL;
}

typedef struct path_stacks_s {
  const void* stack[2][64];
  size_t depth[2];
  size_t seen;
} path_stacks_t;

static bool find_path_stacks(const mi_prof_sample_info_t* info, void* arg) {
  path_stacks_t* ps = (path_stacks_t*)arg;
  for (int k = 0; k < 2; k++) {
    if (info->live_bytes == (size_t)(1000 + 3 * k) && info->live_objects == 1 && info->depth <= 64) {
      memcpy(ps->stack[k], info->stack, info->depth * sizeof(void*));
      ps->depth[k] = info->depth;
      ps->seen++;
    }
  }
  return true;
}

static void test_prof_stack_cache_next_thread_other_path_own_stack(void** state) {
  (void)state;
  start_exact_with_budget(0);
  for (unsigned path = 0; path <= 3; path += 3) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, &path_thread, (void*)(uintptr_t)path), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_non_null(stack_blocks[path]);
  }
  path_stacks_t ps;
  memset(&ps, 0, sizeof(ps));
  assert_true(mi_prof_visit(&find_path_stacks, &ps));
  /* a stack each: the same stack for both would count 2003 bytes at one */
  assert_int_equal(ps.seen, 2);
  assert_true(ps.depth[0] == ps.depth[1]);
  assert_true(memcmp(ps.stack[0], ps.stack[1], ps.depth[0] * sizeof(void*)) != 0);
  mi_free(stack_blocks[0]);
  mi_free(stack_blocks[3]);
  mi_prof_stop();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prof_budget_exhausted_samples_dropped_allocations_succeed),
      cmocka_unit_test(test_prof_no_budget_every_sample_recorded),
      cmocka_unit_test(test_prof_page_count_saturated_every_free_seen),
      cmocka_unit_test(test_prof_more_stacks_than_table_overflows_counted_dump_whole),
      cmocka_unit_test(test_prof_stack_cache_next_thread_other_path_own_stack),
      cmocka_unit_test(test_prof_thread_running_at_start_joins_within_a_page),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
