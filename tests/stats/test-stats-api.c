/* The statistics as data (include/mimalloc-stats.h): the versioned struct
   refused at a wrong size or version, the JSON's buffer rules (too small:
   NULL and nothing half-written; an exact fit: the text), upstream's bin
   numbering, and counters that are true: threads back to 1 after joins,
   reserved at least committed, a large block's bytes in and out of
   malloc_huge, pages counted by their bin, a heap's share equal to what a
   visit of its blocks sees. */
#include "../testutil.h"

#include <pthread.h>
#include <string.h>

#include <mimalloc-stats.h>
#include <mimalloc/fault.h>

static void test_stats_get_wrong_size_or_version_refused(void** state) {
  (void)state;
  mi_stats_t_decl(stats);
  assert_true(mi_stats_get(&stats));
  stats.size = sizeof(stats) - 8;
  assert_false(mi_stats_get(&stats));
  mi_stats_init(&stats);
  stats.version = MI_STAT_VERSION - 1;
  stats.pages.current = -12345;
  assert_false(mi_stats_get(&stats));
  assert_int_equal(stats.pages.current, -12345); /* nothing written */
  assert_false(mi_stats_get(NULL));
  assert_null(mi_stats_as_json(&stats, 0, NULL));
  mi_stats_init(&stats);
  assert_false(mi_heap_stats_get(mi_heap_get_default(), NULL));
}

static void test_stats_json_buffer_too_small_null_exact_fit_ok(void** state) {
  (void)state;
  /* the figures must not move between the calls: a struct of fixed values */
  mi_stats_t_decl(stats);
  assert_true(mi_stats_get(&stats));
  char* text = mi_stats_as_json(&stats, 0, NULL);
  assert_non_null(text);
  size_t len = strlen(text);
  assert_true(len > 1000);
  assert_int_equal(text[0], '{');
  assert_int_equal(text[len - 2], '}');
  char* buf = (char*)malloc(len + 1);
  memset(buf, 'x', len + 1);
  assert_null(mi_stats_as_json(&stats, len, buf)); /* no room for the NUL */
  for (size_t i = 0; i < len; i++) {
    if (buf[i] != 0) fail_msg("byte %zu of a refused buffer left %#x", i, buf[i]);
  }
  assert_ptr_equal(mi_stats_as_json(&stats, len + 1, buf), buf);
  assert_string_equal(buf, text);
  free(buf);
  mi_free(text);
  /* the live figures: into a buffer large enough, and into memory of ours */
  static char big[1 << 16];
  assert_ptr_equal(mi_stats_get_json(sizeof(big), big), big);
  assert_non_null(strstr(big, "\"stat_version\": 5,"));
  char* live = mi_stats_get_json(0, NULL);
  assert_non_null(live);
  assert_true(mi_is_in_heap_region(live));
  mi_free(live);
}

static void test_stats_bins_upstream_numbering_sizes(void** state) {
  (void)state;
  /* upstream's table (mimalloc 3.4's init.c, in words): bin 0 and 1 one word,
     then 2..8 words, then four bins per doubling */
  static const size_t words[] = {1, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48};
  for (size_t bin = 0; bin < sizeof(words) / sizeof(words[0]); bin++) {
    assert_int_equal(mi_stats_get_bin_size(bin), words[bin] * 8);
  }
  assert_int_equal(mi_stats_get_bin_size(56), 32768 * 8);
  assert_int_equal(mi_stats_get_bin_size(60), 65536 * 8);
  assert_int_equal(mi_stats_get_bin_size(72), 524288 * 8);
  assert_int_equal(mi_stats_get_bin_size(MI_BIN_HUGE), (65536 + 1) * 8);
  assert_int_equal(mi_stats_get_bin_size(MI_BIN_HUGE + 1), 0);
  for (size_t bin = 1; bin < MI_BIN_HUGE; bin++) {
    assert_true(mi_stats_get_bin_size(bin) > mi_stats_get_bin_size(bin - 1) || bin == 1);
  }
}

static void* thread_allocates(void* arg) {
  (void)arg;
  void* p[64];
  for (int i = 0; i < 64; i++) p[i] = mi_malloc((size_t)(16 + 40 * i));
  for (int i = 0; i < 64; i++) mi_free(p[i]);
  return NULL;
}

static void test_stats_threads_back_to_one_after_join(void** state) {
  (void)state;
  mi_free(mi_malloc(8)); /* this thread counted */
  mi_stats_t_decl(before);
  assert_true(mi_stats_get(&before));
  assert_int_equal(before.threads.current, 1);
  pthread_t t[8];
  for (int i = 0; i < 8; i++) assert_int_equal(pthread_create(&t[i], NULL, &thread_allocates, NULL), 0);
  for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
  mi_stats_t_decl(after);
  assert_true(mi_stats_get(&after));
  assert_int_equal(after.threads.current, 1);
  assert_true(after.threads.total >= before.threads.total + 8);
  assert_true(after.threads.peak >= 2);
}

static void test_stats_reserved_at_least_committed(void** state) {
  (void)state;
  void* big = mi_malloc(40 << 20);
  assert_non_null(big);
  mi_stats_t_decl(stats);
  assert_true(mi_stats_get(&stats));
  assert_true(stats.committed.current > (40 << 20));
  assert_true(stats.reserved.current >= stats.committed.current);
  assert_true(stats.reserved.peak >= stats.reserved.current);
  assert_true(stats.mmap_calls.total > 0);
  mi_free(big);
}

/* A large block: its usable bytes in malloc_huge while it lives, its page
   in the page bin of its size. */
static void test_stats_large_block_counted_in_and_out(void** state) {
  (void)state;
  const size_t size = 3 << 20;
  mi_stats_t_decl(before);
  assert_true(mi_stats_get(&before));
  void* p = mi_malloc(size);
  assert_non_null(p);
  mi_stats_t_decl(during);
  assert_true(mi_stats_get(&during));
  size_t usable = mi_usable_size(p);
  assert_true(during.malloc_huge.current - before.malloc_huge.current >= (int64_t)usable);
  assert_true(during.malloc_huge.current - before.malloc_huge.current < (int64_t)usable + 2 * 4096 + 64);
  assert_int_equal(during.malloc_huge_count.total, before.malloc_huge_count.total + 1);
  assert_int_equal(during.page_bins[MI_BIN_HUGE].current, before.page_bins[MI_BIN_HUGE].current + 1);
  mi_free(p);
  mi_stats_t_decl(after);
  assert_true(mi_stats_get(&after));
  assert_int_equal(after.malloc_huge.current, before.malloc_huge.current);
  assert_int_equal(after.page_bins[MI_BIN_HUGE].current, before.page_bins[MI_BIN_HUGE].current);
}

/* Small pages by bin: 2000 blocks of 1000 bytes fill pages of one class,
   which falls in upstream's bin of its block size; the pages go when the
   blocks do (a page kept for reuse aside). */
static void test_stats_page_bins_follow_pages(void** state) {
  (void)state;
  enum { N = 2000 };
  static void* blocks[N];
  /* (secure builds: a guarded sample is a segment of its own, not a page) */
  long rate = mi_option_get(mi_option_guarded_sample_rate);
  mi_option_set(mi_option_guarded_sample_rate, 0);
  mi_heap_t* heap = mi_heap_new();
  mi_stats_t_decl(before);
  assert_true(mi_stats_get(&before));
  for (int i = 0; i < N; i++) blocks[i] = mi_heap_malloc(heap, 1000);
  size_t bsize = mi_usable_size(blocks[0]);
  size_t bin = 0;
  while (bin < MI_BIN_HUGE && mi_stats_get_bin_size(bin) < bsize) bin++;
  mi_stats_t_decl(during);
  assert_true(mi_stats_get(&during));
  int64_t added = during.page_bins[bin].current - before.page_bins[bin].current;
  int64_t per_page = (64 * 1024) / (int64_t)bsize;
  assert_true(added >= N / per_page);
  assert_true(added <= N); /* (the secure build spreads blocks over more pages) */
  assert_int_equal(during.pages.current - before.pages.current, added);
  mi_heap_destroy(heap);
  mi_collect(true); /* (secure builds hold a destroyed heap's pages until then) */
  mi_stats_t_decl(after);
  assert_true(mi_stats_get(&after));
  assert_int_equal(after.page_bins[bin].current, before.page_bins[bin].current);
  mi_option_set(mi_option_guarded_sample_rate, rate);
}

typedef struct visit_sum_s {
  int64_t bytes;
  int64_t pages;
} visit_sum_t;

static bool sum_areas(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap, (void)block, (void)block_size;
  visit_sum_t* sum = (visit_sum_t*)arg;
  sum->bytes += (int64_t)(area->used * area->block_size);
  sum->pages++;
  return true;
}

static void* heap_stats_other_thread(void* arg) {
  mi_stats_t_decl(stats);
  return (void*)(uintptr_t)mi_heap_stats_get((mi_heap_t*)arg, &stats);
}

static void test_heap_stats_equal_visit_other_thread_refused(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  static void* kept[501];
  for (int i = 0; i < 500; i++) kept[i] = mi_heap_malloc(heap, (size_t)(8 + 24 * i));
  kept[500] = mi_heap_malloc(heap, 1 << 20);
  assert_non_null(kept[500]);
  visit_sum_t sum = {0, 0};
  assert_true(mi_heap_visit_blocks(heap, false, &sum_areas, &sum));
  mi_stats_t_decl(stats);
  assert_true(mi_heap_stats_get(heap, &stats));
  assert_int_equal(stats.malloc_normal.current + stats.malloc_huge.current, sum.bytes);
  assert_int_equal(stats.pages.current, sum.pages);
  int64_t blocks = 0;
  for (size_t bin = 0; bin <= MI_BIN_HUGE; bin++) blocks += stats.malloc_bins[bin].current;
  assert_int_equal(blocks, 501);
  assert_int_equal(stats.reserved.current, 0); /* the process's, not the heap's */
  char* text = mi_heap_stats_get_json(heap, 0, NULL);
  assert_non_null(text);
  assert_null(strstr(text, "\"secure\""));
  mi_free(text);
  pthread_t t;
  void* res = (void*)1;
  assert_int_equal(pthread_create(&t, NULL, &heap_stats_other_thread, heap), 0);
  pthread_join(t, &res);
  assert_null(res);
  mi_heap_destroy(heap);
}

/* The secure build's figures, and the fault-injection build's, in the JSON. */
static void test_stats_json_secure_and_fault_objects_when_built(void** state) {
  (void)state;
  char* text = mi_stats_get_json(0, NULL);
  assert_non_null(text);
#if MI_TEST_SECURE
  assert_non_null(strstr(text, "\"secure\": {\n    \"reports\": 0,"));
  assert_non_null(strstr(text, "\"quarantine_capacity\": 64,"));
#else
  assert_null(strstr(text, "\"secure\""));
#endif
  if (mi_fault_available()) {
    assert_non_null(strstr(text, "\"fault\": {\n    \"calls\": { \"any\": "));
  } else {
    assert_null(strstr(text, "\"fault\""));
  }
  mi_free(text);
}

/* Per size class counts (MI_STAT builds): N blocks of a size add N to its
   bin's total once merged. */
static void test_stats_malloc_bins_count_exact_when_built(void** state) {
  (void)state;
#if MI_TEST_STAT
  mi_stats_merge();
  mi_stats_t_decl(before);
  assert_true(mi_stats_get(&before));
  void* p[37];
  for (int i = 0; i < 37; i++) p[i] = mi_malloc(700);
  for (int i = 0; i < 37; i++) mi_free(p[i]);
  mi_stats_t_decl(after);
  assert_true(mi_stats_get(&after));
  size_t bin = 0;
  while (mi_stats_get_bin_size(bin) < 700) bin++;
  assert_int_equal(after.malloc_bins[bin].total - before.malloc_bins[bin].total, 37);
  assert_int_equal(after.malloc_normal_count.total - before.malloc_normal_count.total, 37);
#else
  skip();
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stats_get_wrong_size_or_version_refused),
      cmocka_unit_test(test_stats_json_buffer_too_small_null_exact_fit_ok),
      cmocka_unit_test(test_stats_bins_upstream_numbering_sizes),
      cmocka_unit_test(test_stats_threads_back_to_one_after_join),
      cmocka_unit_test(test_stats_reserved_at_least_committed),
      cmocka_unit_test(test_stats_large_block_counted_in_and_out),
      cmocka_unit_test(test_stats_page_bins_follow_pages),
      cmocka_unit_test(test_heap_stats_equal_visit_other_thread_refused),
      cmocka_unit_test(test_stats_json_secure_and_fault_objects_when_built),
      cmocka_unit_test(test_stats_malloc_bins_count_exact_when_built),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
