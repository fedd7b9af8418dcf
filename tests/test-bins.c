/* Size classes: _mi_bin gives every size the smallest bin whose block size
   holds it (its table up to 1 KiB, page.c's _mi_bin_of_wsize, and its
   formula past it alike), and a block of each size lands in a page of its
   bin, whose blocks hold it. */
#include "testutil.h"

#include <pthread.h>

#include "internal.h" /* _mi_bin, _mi_bin_size */

static void test_bin_smallest_holding_every_size(void** state) {
  (void)state;
  assert_int_equal(_mi_bin(0), 1); /* size 0: the smallest bin */
  for (size_t size = 1; size <= 4 * MI_BIN_WSIZE_BYTES_MAX; size++) {
    size_t bin = _mi_bin(size);
    assert_true(_mi_bin_size(bin) >= size);
    assert_true(bin == 1 || _mi_bin_size(bin - 1) < size);
  }
}

/* Secure builds: a block holds its trailer too, a size of 0 gets a slot of
   its own (secure-zero.c), and guarded samples are turned off. */
static void test_block_of_each_size_in_page_of_its_bin(void** state) {
  (void)state;
#if MI_SECURE
  mi_option_set(mi_option_guarded_sample_rate, 0);
  const size_t first = 1, extra = MI_SECURE_TRAILER;
#else
  const size_t first = 0, extra = 0;
#endif
  for (size_t size = first; size <= 2 * MI_BIN_WSIZE_MAX * 8; size++) {
    void* p = mi_malloc(size);
    assert_non_null(p);
    const mi_page_t* page = _mi_segment_page_of(_mi_ptr_segment(p), p);
    size_t bin = _mi_bin(size + extra);
    assert_int_equal(page->bin, bin);
    assert_true(_mi_bin_size(bin) >= size);
    assert_true(mi_usable_size(p) >= size);
    mi_free(p);
  }
}

/* The heap's direct table (the fast path's page by size in words) stays the
   first page of each size's queue while pages fill, get blocks back out of
   order, are retired, collected and handed to another heap. */
static void check_direct(const mi_heap_t* heap, const char* when) {
  if (!_mi_heap_direct_consistent(heap)) fail_msg("direct table out of step with the queues %s", when);
}

static void test_direct_table_follows_queues_through_page_moves(void** state) {
  (void)state;
  assert_int_equal(_mi_bin(MI_BIN_WSIZE_BYTES_MAX), MI_BIN_DIRECT_MAX);
  assert_int_equal(_mi_bin(MI_BIN_WSIZE_BYTES_MAX + 1), MI_BIN_DIRECT_MAX + 1);
  enum { N = 6000 };
  static void* blocks[N];
  mi_heap_t* heap = mi_heap_new();
  assert_non_null(heap);
  check_direct(heap, "in a new heap");
  uint64_t x = 88172645463325252ULL;
  for (size_t i = 0; i < N; i++) {
    blocks[i] = mi_heap_malloc(heap, 1 + (i * 37) % MI_BIN_WSIZE_BYTES_MAX);
    assert_non_null(blocks[i]);
  }
  check_direct(heap, "after filling pages");
  for (size_t round = 0; round < 4; round++) {
    for (size_t i = 0; i < N; i++) { /* a random half back, out of order, then refilled */
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      if ((x & 1) == 0) continue;
      mi_free(blocks[i]);
      blocks[i] = NULL;
    }
    check_direct(heap, "after freeing out of order");
    for (size_t i = 0; i < N; i++) {
      if (blocks[i] == NULL) blocks[i] = mi_heap_malloc(heap, 1 + (i * 53 + round) % MI_BIN_WSIZE_BYTES_MAX);
    }
    check_direct(heap, "after refilling");
  }
  for (size_t i = 0; i < N; i += 2) mi_free(blocks[i]);
  mi_heap_collect(heap, true);
  check_direct(heap, "after collect");
  mi_heap_delete(heap); /* its pages go to the backing heap */
  check_direct(mi_heap_get_backing(), "in the heap that took the pages");
  for (size_t i = 1; i < N; i += 2) mi_free(blocks[i]);
  mi_collect(true);
  check_direct(mi_heap_get_backing(), "after every page was retired");
  mi_heap_t* doomed = mi_heap_new();
  for (size_t i = 0; i < 1000; i++) assert_non_null(mi_heap_malloc(doomed, 8 * (i % 128)));
  mi_heap_destroy(doomed);
  check_direct(mi_heap_get_backing(), "after a heap was destroyed");
}

/* A page that filled up while its queue's other pages filled too leaves its
   queue empty; a block another thread frees brings it back, to that empty
   queue (mi_heap_scan_full), where the direct table must find it. */
static void* free_elsewhere(void* p) {
  mi_free(p);
  return NULL;
}

static const mi_page_t* page_of(const void* p) {
  return _mi_segment_page_of(_mi_ptr_segment(p), p);
}

static void test_direct_table_follows_page_back_from_full_to_empty_queue(void** state) {
  (void)state;
#if MI_SECURE
  mi_option_set(mi_option_guarded_sample_rate, 0);
#endif
  mi_heap_t* heap = mi_heap_new();
  assert_non_null(heap);
  void* first = mi_heap_malloc(heap, 48);
  const mi_page_t* a = page_of(first);
  for (size_t i = 1; i < a->reserved; i++) assert_true(page_of(mi_heap_malloc(heap, 48)) == a); /* a is full */
  void* second = mi_heap_malloc(heap, 48);
  const mi_page_t* b = page_of(second);
  assert_true(b != a);
  for (size_t i = 1; i < b->reserved; i++) assert_true(page_of(mi_heap_malloc(heap, 48)) == b); /* b is full */
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, &free_elsewhere, first), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  void* again = mi_heap_malloc(heap, 48); /* b goes to the full queue, a comes back */
  assert_true(page_of(again) == a);
  check_direct(heap, "after a full page came back to an empty queue");
  mi_heap_destroy(heap);
}

/* The check's positive control: an entry left pointing at a page that is
   no longer its queue's first. */
static void test_direct_table_stale_entry_is_found(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  void* p = mi_heap_malloc(heap, 40);
  assert_true(_mi_heap_direct_consistent(heap));
  mi_page_t* saved = heap->pages_direct[5];
  heap->pages_direct[5] = (mi_page_t*)&_mi_page_empty;
  assert_false(_mi_heap_direct_consistent(heap));
  heap->pages_direct[5] = saved;
  assert_true(_mi_heap_direct_consistent(heap));
  mi_free(p);
  mi_heap_delete(heap);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bin_smallest_holding_every_size),
      cmocka_unit_test(test_block_of_each_size_in_page_of_its_bin),
      cmocka_unit_test(test_direct_table_follows_queues_through_page_moves),
      cmocka_unit_test(test_direct_table_follows_page_back_from_full_to_empty_queue),
      cmocka_unit_test(test_direct_table_stale_entry_is_found),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
