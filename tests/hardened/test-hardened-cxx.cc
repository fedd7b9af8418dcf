/* hardened_malloc's C++ test programs (sized and aligned delete) as our own
   cases: see test-hardened.c. The delete of a wrong size dies of SIGABRT
   with the sized-deallocation report; its clean twin, and the programs that
   delete with the right size, exit 0. Built with MI_SECURE where the library
   exports operator new and delete (tests/CMakeLists.txt). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka 1.1 declares print_error and print_message outside extern "C" */
extern "C" {
#include <cmocka.h>
}

#include "hardened-cases-cxx.h"
#include "../child.h"
#include "hardened-expect.h"

/* The start of the line: the given size follows it in the text. */
#ifndef MI_HARDENED_SIZED_REPORT
#define MI_HARDENED_SIZED_REPORT "sized deallocation mismatch detected"
#endif

/* Every other case means nothing if new and delete are the C++ run-time's. */
static void test_new_is_ours(void** state) {
  (void)state;
  char* p = new char[100];
  assert_true(mi_is_in_heap_region(p));
  assert_int_equal(mi_usable_size(p), 100);
  delete[] p;
}

/* test_fn: the runner's test name with the outcome asserted appended;
   case_NAME: the runner's name (as in test-hardened.c) */
#define MI_HARDENED_SIZED(test_fn, name) \
  static void test_fn(void** state) { \
    (void)state; \
    expect_report_start(&case_##name, SIGABRT, MI_HARDENED_SIZED_REPORT); \
  }
#define MI_HARDENED_QUIET(test_fn, name) \
  static void test_fn(void** state) { \
    (void)state; \
    expect_quiet_exit(&case_##name); \
  }

MI_HARDENED_SIZED(test_delete_type_size_mismatch_reported, delete_type_size_mismatch)
MI_HARDENED_SIZED(test_invalid_aligned_sized_delete_small_reported, invalid_aligned_sized_delete_small)
MI_HARDENED_SIZED(test_invalid_aligned_sized_delete_large_reported, invalid_aligned_sized_delete_large)
MI_HARDENED_QUIET(test_aligned_sized_delete_small_accepted_quietly, aligned_sized_delete_small)
MI_HARDENED_QUIET(test_aligned_sized_delete_large_accepted_quietly, aligned_sized_delete_large)

int main(void) {
  mi_child_save_signals();
  mi_option_set(mi_option_guarded_sample_rate, 0); /* as in test-hardened.c */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_new_is_ours),
      cmocka_unit_test(test_delete_type_size_mismatch_reported),
      cmocka_unit_test(test_invalid_aligned_sized_delete_small_reported),
      cmocka_unit_test(test_invalid_aligned_sized_delete_large_reported),
      cmocka_unit_test(test_aligned_sized_delete_small_accepted_quietly),
      cmocka_unit_test(test_aligned_sized_delete_large_accepted_quietly),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
