/* The lock assertions the lock-order checker adds (base/lock.h,
   docs/lock-order.md), each with a planted violation in a child that must
   die of SIGABRT with the report, and its clean twin that must exit 0 with
   none:

   - a call into the program while the thread holds one of the allocator's
     locks: the error function (a failed allocation), the output function
     (a message) and the deferred-free function (mi_collect), each called
     with the purge lock held;
   - a `_locked` function's entry with its lock not held (the assertion
     itself, on a test lock class the allocator never takes).

   Without MI_LOCKORDER the assertions compile to nothing: the tests skip.
   White-box: built against the static library with its internal headers. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "internal.h"

#include "../child.h"

#define SRC "tests/lockorder/test-lock-assert.c"

#if MI_LOCKORDER
static const int line_take_purge = __LINE__ + 2;
static void take_purge_lock(void) {
  _mi_lock_acquire(&_mi_purge_lock);
}

static _Atomic(int) callbacks_seen;

static void error_fun(int err, void* arg) {
  (void)err, (void)arg;
  callbacks_seen++;
}
static void case_error_function(bool misuse) {
  mi_register_error(&error_fun, NULL);
  if (misuse) take_purge_lock();
  volatile size_t too_large = SIZE_MAX;    /* hidden from the compiler's size check */
  void* volatile p = mi_malloc(too_large); /* fails at once: the error function is told */
  if (p != NULL || callbacks_seen != 1) _exit(4);
}

static void output_fun(const char* msg, void* arg) {
  (void)msg, (void)arg;
  callbacks_seen++;
}
static void case_output_function(bool misuse) {
  mi_register_output(&output_fun, NULL);
  if (misuse) take_purge_lock();
  _mi_message("a message for the program's output function\n");
  if (callbacks_seen != 1) _exit(4);
}

static void deferred_fun(bool force, unsigned long long heartbeat, void* arg) {
  (void)force, (void)heartbeat, (void)arg;
  callbacks_seen++;
}
static void case_deferred_free_function(bool misuse) {
  mi_register_deferred_free(&deferred_fun, NULL);
  mi_free(mi_malloc(16)); /* the thread is set up */
  if (misuse) take_purge_lock();
  mi_heap_collect(mi_heap_get_default(), false); /* calls the deferred-free function first */
  if (callbacks_seen < 1) _exit(4);
  if (misuse) _mi_lock_release(&_mi_purge_lock);
}

static mi_lock_t lock_outer;
static const int line_assert_held = __LINE__ + 2;
static void outer_locked(void) { /* a `_locked` function's entry */
  mi_lock_assert_held(&lock_outer);
}
static void case_locked_function_entry(bool misuse) {
  _mi_lock_init(&lock_outer, MI_LOCK_TEST_OUTER);
  if (!misuse) _mi_lock_acquire(&lock_outer);
  outer_locked();
  if (!misuse) _mi_lock_release(&lock_outer);
}

static void expect_lock_report(mi_case_fn fn, const char* first_line, const char* held_line) {
  char err[8192];
  int status = run_child(fn, false, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) print_error("clean twin: status %d, stderr: %s\n", status, err);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_null(strstr(err, "lock-order violation"));
  status = run_child(fn, true, err, sizeof(err));
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) print_error("planted: status %d, stderr: %s\n", status, err);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
  /* the report starts a line (the error's own message may come first) */
  const char* report = strstr(err, first_line);
  if (report == NULL || (report != err && report[-1] != '\n') || strstr(err, held_line) == NULL) {
    print_error("expected a line starting '%s' and '%s' in:\n%s\n", first_line, held_line, err);
  }
  assert_non_null(report);
  assert_true(report == err || report[-1] == '\n');
  assert_non_null(strstr(report, held_line));
}

static char held_purge[160];
static const char* purge_held_line(void) {
  snprintf(held_purge, sizeof(held_purge), "mimalloc:   held:   'purge' acquired at " SRC ":%d\n", line_take_purge);
  return held_purge;
}

static void test_error_function_called_under_lock_aborts_with_report(void** state) {
  (void)state;
  expect_lock_report(
      &case_error_function,
      "mimalloc: error: lock-order violation: calling the error function at src/base/output.c:", purge_held_line());
}

static void test_output_function_called_under_lock_aborts_with_report(void** state) {
  (void)state;
  expect_lock_report(
      &case_output_function,
      "mimalloc: error: lock-order violation: calling the output function at src/base/output.c:", purge_held_line());
}

static void test_deferred_free_called_under_lock_aborts_with_report(void** state) {
  (void)state;
  expect_lock_report(&case_deferred_free_function,
                     "mimalloc: error: lock-order violation: calling the deferred-free function at "
                     "src/page/deferred-free.c:",
                     purge_held_line());
}

static void test_locked_entry_without_lock_aborts_with_report(void** state) {
  (void)state;
  char first[200];
  snprintf(first, sizeof(first),
           "mimalloc: error: lock-order violation: 'test-outer' must be held at " SRC
           ":%d, and this thread does not hold it\n",
           line_assert_held);
  expect_lock_report(&case_locked_function_entry, first, "mimalloc:   held:   (nothing)\n");
}
#else
static void test_lock_assertions_compiled_out_skipped(void** state) {
  (void)state;
  skip();
}
#endif

int main(void) {
  mi_child_save_signals();
  const struct CMUnitTest tests[] = {
#if MI_LOCKORDER
    cmocka_unit_test(test_error_function_called_under_lock_aborts_with_report),
    cmocka_unit_test(test_output_function_called_under_lock_aborts_with_report),
    cmocka_unit_test(test_deferred_free_called_under_lock_aborts_with_report),
    cmocka_unit_test(test_locked_entry_without_lock_aborts_with_report),
#else
    cmocka_unit_test(test_lock_assertions_compiled_out_skipped),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
