/* Size classes: _mi_bin gives every size the smallest bin whose block size
   holds it (its table up to 1 KiB, page.c's _mi_bin_of_wsize, and its
   formula past it alike), and a block of each size lands in a page of its
   bin, whose blocks hold it. */
#include "testutil.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bin_smallest_holding_every_size),
      cmocka_unit_test(test_block_of_each_size_in_page_of_its_bin),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
