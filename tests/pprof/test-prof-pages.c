/* The pprof sampler's sample pages (src/page/page.c: _mi_page_malloc_sample):
   a sample of a small or medium malloc is placed on a page of its heap's
   samples, so that the other pages' frees keep the fast path. The pages
   live the heap's life: visited with its blocks, absorbed by the backing
   heap when their heap is deleted, given up when their thread exits and
   their blocks are freed by another. In both builds (the secure front lays
   a placed sample out as it lays out any malloc's block); samples are
   placed while the sampler alone observes the allocations. */
#define _GNU_SOURCE
#include "prof-test.h"

#include <stdint.h>

enum { N = 200 };

/* The 64 KiB region a small block lies in: a small page, or part of the
   segment's first one. */
static uintptr_t region_of(const void* p) {
  return (uintptr_t)p >> 16;
}

static void test_prof_pages_samples_apart_from_unsampled_blocks(void** state) {
  (void)state;
  start_exact_with_budget(0); /* every allocation a sample */
  /* placed while the sampler alone observes: a build that keeps every
     block's request (MI_STAT=2) observes every allocation */
  if (stats_now().heap_stats_detailed) {
    mi_prof_stop();
    skip();
  }
  static void* sampled[N];
  static void* plain[N];
  for (int i = 0; i < N; i++) assert_non_null(sampled[i] = mi_malloc(64));
  mi_prof_stop();
  for (int i = 0; i < N; i++) assert_non_null(plain[i] = mi_malloc(64));
  size_t shared = 0;
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < N; j++) shared += (region_of(sampled[i]) == region_of(plain[j]));
  }
  assert_int_equal(shared, 0);
  for (int i = 0; i < N; i++) {
    mi_free(sampled[i]);
    mi_free(plain[i]);
  }
}

typedef struct visit_s {
  void* const* blocks;
  size_t count;
  size_t found;
} visit_t;

static bool count_ours(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap, (void)area, (void)size;
  visit_t* v = (visit_t*)arg;
  if (block == NULL) return true;
  for (size_t i = 0; i < v->count; i++) v->found += (v->blocks[i] == block);
  return true;
}

static void test_prof_pages_heap_delete_backing_heap_holds_and_visits_them(void** state) {
  (void)state;
  start_exact_with_budget(0);
  static void* blocks[N];
  mi_heap_t* heap = mi_heap_new();
  assert_non_null(heap);
  for (int i = 0; i < N; i++) assert_non_null(blocks[i] = mi_heap_malloc(heap, 48 + (size_t)(i % 3) * 1000));
  visit_t v = {blocks, N, 0};
  assert_true(mi_heap_visit_blocks(heap, true, &count_ours, &v));
  assert_int_equal(v.found, N);
  mi_heap_delete(heap); /* its pages, the sample pages too, to the backing heap */
  mi_heap_t* backing = mi_heap_get_backing();
  for (int i = 0; i < N; i++) assert_true(mi_heap_contains_block(backing, blocks[i]));
  v.found = 0;
  assert_true(mi_heap_visit_blocks(backing, true, &count_ours, &v));
  assert_int_equal(v.found, N);
  assert_int_equal(stats_now().live_samples, N);
  for (int i = 0; i < N; i++) mi_free(blocks[i]);
  mi_collect(true); /* the emptied sample pages go back */
  assert_int_equal(stats_now().live_samples, 0);
  mi_prof_stop();
}

static void* allocate_and_exit(void* arg) {
  void** blocks = (void**)arg;
  for (int i = 0; i < N; i++) blocks[i] = mi_malloc(64 + (size_t)(i % 4) * 4000);
  return NULL;
}

static void test_prof_pages_thread_exited_its_samples_freed_here_and_pages_reused(void** state) {
  (void)state;
  start_exact_with_budget(0);
  static void* blocks[N];
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, &allocate_and_exit, blocks), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  for (int i = 0; i < N; i++) assert_non_null(blocks[i]);
  assert_int_equal(stats_now().live_samples, N);
  /* the exited thread's segments, its sample pages among them, may be
     taken over by this thread's allocations: they go on as pages of their
     sizes, and the samples' frees are still told */
  static void* more[4 * N];
  for (int i = 0; i < 4 * N; i++) assert_non_null(more[i] = mi_malloc(64 + (size_t)(i % 4) * 4000));
  assert_int_equal(stats_now().live_samples, 5 * N);
  for (int i = 0; i < N; i++) mi_free(blocks[i]);
  for (int i = 0; i < 4 * N; i++) mi_free(more[i]);
  mi_collect(true);
  mi_prof_stats_t st = stats_now();
  assert_int_equal(st.live_samples, 0);
  assert_int_equal(st.live_bytes, 0);
  mi_prof_stop();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prof_pages_samples_apart_from_unsampled_blocks),
      cmocka_unit_test(test_prof_pages_heap_delete_backing_heap_holds_and_visits_them),
      cmocka_unit_test(test_prof_pages_thread_exited_its_samples_freed_here_and_pages_reused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
