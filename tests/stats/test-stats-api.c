/* The statistics as data (include/mimalloc-stats.h): the versioned struct
   refused at a wrong size or version, the JSON's buffer rules (too small:
   NULL and nothing half-written; an exact fit: the text), upstream's bin
   numbering, and counters that are true: threads back to 1 after joins,
   reserved at least committed, a large block's bytes in and out of
   malloc_huge, pages counted by their bin, a heap's share equal to what a
   visit of its blocks sees. */
#include "../testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <mimalloc-stats.h>

#ifndef MI_TEST_SECURE
#define MI_TEST_SECURE 0
#endif
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
  /* (in its bin: the secure build's blocks hold a trailer past the request,
     so their bin is found by the counts) */
  int64_t counted = 0, in_one = 0;
  for (size_t bin = 0; bin < sizeof(after.malloc_bins) / sizeof(after.malloc_bins[0]); bin++) {
    int64_t n = after.malloc_bins[bin].total - before.malloc_bins[bin].total;
    counted += n;
    if (n > in_one) in_one = n;
  }
  assert_int_equal(counted, 37);
  assert_int_equal(in_one, 37);
  assert_int_equal(after.malloc_normal_count.total - before.malloc_normal_count.total, 37);
#else
  skip();
#endif
}

/* Detailed statistics (MI_STAT=2): malloc_requested.current moves by
   exactly the sizes asked for, through every kind of allocation, in-place
   and moving reallocation and free; and goes back when all are freed. */
static void test_stats_malloc_requested_exact_when_detailed(void** state) {
  (void)state;
#if MI_TEST_STAT >= 2
  mi_stats_t_decl(before);
  assert_true(mi_stats_get(&before));
  int64_t want = 0;
  void* a = mi_malloc(100);               /* small */
  void* b = mi_calloc(3, 1000);           /* zeroed, medium class */
  void* c = mi_malloc(5 << 20);           /* large: a segment of its own */
  void* d = mi_malloc_aligned(700, 4096); /* aligned, interior pointer */
  void* e = mi_zalloc(0);                 /* zero bytes asked */
  want += 100 + 3000 + (5 << 20) + 700 + 0;
  mi_stats_t_decl(mid);
  assert_true(mi_stats_get(&mid));
  assert_int_equal(mid.malloc_requested.current - before.malloc_requested.current, want);
  a = mi_realloc(a, 104); /* in place */
  want += 4;
  b = mi_realloc(b, 50000); /* moves */
  want += 50000 - 3000;
  c = mi_realloc(c, 1 << 20); /* shrinks */
  want += (1 << 20) - (5 << 20);
  assert_true(mi_stats_get(&mid));
  assert_int_equal(mid.malloc_requested.current - before.malloc_requested.current, want);
  assert_true(mid.malloc_requested.peak >= before.malloc_requested.current + 100 + 3000 + (5 << 20) + 700);
  mi_free(a);
  mi_free(b);
  mi_free(c);
  mi_free(d);
  mi_free(e);
  mi_stats_t_decl(after);
  assert_true(mi_stats_get(&after));
  assert_int_equal(after.malloc_requested.current, before.malloc_requested.current);
  char* text = mi_stats_get_json(0, NULL);
  assert_non_null(strstr(text, "\"stat_level\": 2,"));
  mi_free(text);
#else
  skip();
#endif
}

#if MI_TEST_STAT >= 2
static int64_t requested_now(void) {
  mi_stats_t_decl(stats);
  assert_true(mi_stats_get(&stats));
  return stats.malloc_requested.current;
}

/* 8 threads, each allocating 2000 blocks of sizes it draws and leaving
   every other one to the next thread of a second round to free (its
   allocating thread gone by then) */
#define REQ_THREADS 8
#define REQ_BLOCKS 2000
static void* req_handoff[REQ_THREADS][REQ_BLOCKS / 2];

static void* req_thread(void* arg) {
  size_t t = (size_t)(uintptr_t)arg;
  uint64_t x = 0x9E3779B97F4A7C15ULL * (t + 1);
  void* mine[REQ_BLOCKS / 2];
  for (size_t i = 0; i < REQ_BLOCKS; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t size = (size_t)(x % 5000);
    if (i % 97 == 0) size = (size_t)(x % (3 << 20)); /* some large ones */
    void* p = (i % 3 == 0 ? mi_malloc_aligned(size, (size_t)64 << (x % 6)) : mi_malloc(size));
    assert_non_null(p);
    if (i % 2 == 0) req_handoff[t][i / 2] = p;
    else mine[i / 2] = p;
  }
  for (size_t i = 0; i < REQ_BLOCKS / 2; i++) mine[i] = mi_realloc(mine[i], (size_t)(x >> 40) % 3000 + i);
  for (size_t i = 0; i < REQ_BLOCKS / 2; i++) mi_free(mine[i]);
  return NULL;
}

static void* req_free_thread(void* arg) {
  size_t t = (size_t)(uintptr_t)arg;
  for (size_t i = 0; i < REQ_BLOCKS / 2; i++) mi_free(req_handoff[(t + 1) % REQ_THREADS][i]);
  return NULL;
}
#endif

/* Detailed statistics: exact through a destroyed heap's live blocks (small,
   aligned, large), the other entry points (strdup, posix_memalign, expand,
   reallocf), failures (none counted, the block kept), and 8 threads
   freeing each other's blocks. */
static void test_stats_malloc_requested_exact_through_destroy_and_threads(void** state) {
  (void)state;
#if MI_TEST_STAT >= 2
  int64_t base = requested_now();
  mi_heap_t* heap = mi_heap_new();
  assert_non_null(heap);
  void* hp[4] = {mi_heap_malloc(heap, 33), mi_heap_malloc_aligned(heap, 1000, 256), mi_heap_malloc(heap, 3 << 20),
                 mi_heap_zalloc(heap, 70000)};
  for (int i = 0; i < 4; i++) assert_non_null(hp[i]);
  assert_int_equal(requested_now() - base, 33 + 1000 + (3 << 20) + 70000);
  mi_heap_destroy(heap);
  assert_int_equal(requested_now(), base);

  char* s = mi_strdup("detailed");
  void* pm = NULL;
  assert_int_equal(mi_posix_memalign(&pm, 128, 300), 0);
  void* big = mi_malloc(600);
  assert_non_null(mi_expand(big, 500));
  /* (the secure build's request is where the block's canary starts, which
     mi_expand leaves where it was) */
  const int64_t expanded = (MI_TEST_SECURE ? 600 : 500);
  assert_int_equal(requested_now() - base, 9 + 300 + expanded);
  errno = 0;
  assert_null(mi_realloc(big, (size_t)1 << 62)); /* fails: the block and its count stay */
  assert_int_equal(errno, ENOMEM);
  assert_null(mi_malloc((size_t)1 << 62));
  assert_int_equal(requested_now() - base, 9 + 300 + expanded);
  big = mi_reallocf(big, 20000);
  assert_int_equal(requested_now() - base, 9 + 300 + 20000);
  mi_free(s);
  mi_free(pm);
  mi_free(big);
  assert_int_equal(requested_now(), base);

  pthread_t threads[REQ_THREADS];
  for (size_t t = 0; t < REQ_THREADS; t++) {
    assert_int_equal(pthread_create(&threads[t], NULL, &req_thread, (void*)(uintptr_t)t), 0);
  }
  for (size_t t = 0; t < REQ_THREADS; t++) pthread_join(threads[t], NULL);
  assert_true(requested_now() > base); /* the handed-off half, live */
  for (size_t t = 0; t < REQ_THREADS; t++) {
    assert_int_equal(pthread_create(&threads[t], NULL, &req_free_thread, (void*)(uintptr_t)t), 0);
  }
  for (size_t t = 0; t < REQ_THREADS; t++) pthread_join(threads[t], NULL);
  assert_int_equal(requested_now(), base);
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
      cmocka_unit_test(test_stats_malloc_requested_exact_when_detailed),
      cmocka_unit_test(test_stats_malloc_requested_exact_through_destroy_and_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
