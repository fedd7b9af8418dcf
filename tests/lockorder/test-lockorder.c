/* The lock-order checker (src/base/lockorder.c) and its table.

   - The table of lock classes in the code and the one in docs/lock-order.md
     agree (with a planted mismatch as the comparison's positive control).
   - Planted violations, each in a child process with its control: two
     classes in the wrong order, a three-class cycle across three threads
     that never hold the locks at the same time, a release of a lock not
     held, a recursive acquisition; each dies of SIGABRT with the report
     naming the classes and the file:line of both sites.
   - Warn mode reports each distinct violation once and does not abort.
   - Try-acquire out of order and release out of order are not violations.

   The test classes (test-outer, test-inner; test-x, test-y, test-z, which
   share a rank) are compiled into every build but never taken by the
   allocator. Built against the static library with its internal headers;
   without MI_LOCKORDER only the table test runs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "internal.h"
#include "base/lockorder.h"

#include "child.h"

#ifndef MI_LOCK_ORDER_DOC
#error "MI_LOCK_ORDER_DOC: path of docs/lock-order.md"
#endif

#define SRC "tests/lockorder/test-lockorder.c"

#if MI_LOCKORDER /* ---- The sites: each acquisition and release on a line of its own,
   so the expected reports can name them ---------------------------------- */
static mi_lock_t lock_outer, lock_inner, lock_x, lock_y, lock_z;

static const int line_take_outer = __LINE__ + 2;
static void take_outer(void) {
  _mi_lock_acquire(&lock_outer);
}
static const int line_take_inner = __LINE__ + 2;
static void take_inner(void) {
  _mi_lock_acquire(&lock_inner);
}
static void release_inner(void) {
  _mi_lock_release(&lock_inner);
}
static const int line_release_outer = __LINE__ + 2;
static void release_outer(void) {
  _mi_lock_release(&lock_outer);
}

static const int line_take_x = __LINE__ + 2;
static void take_x(void) {
  _mi_lock_acquire(&lock_x);
}
static const int line_take_y = __LINE__ + 2;
static void take_y(void) {
  _mi_lock_acquire(&lock_y);
}
static const int line_take_z = __LINE__ + 2;
static void take_z(void) {
  _mi_lock_acquire(&lock_z);
}

static void init_test_locks(void) {
  _mi_lock_init(&lock_outer, MI_LOCK_TEST_OUTER);
  _mi_lock_init(&lock_inner, MI_LOCK_TEST_INNER);
  _mi_lock_init(&lock_x, MI_LOCK_TEST_X);
  _mi_lock_init(&lock_y, MI_LOCK_TEST_Y);
  _mi_lock_init(&lock_z, MI_LOCK_TEST_Z);
}
#endif

/* ---- The table in the code and in docs/lock-order.md --------------------- */

/* Compare the table after the marker in `doc` with the code's global
   classes; returns the number of differences, the first described in `why`. */
static int table_differences(const char* doc, char* why, size_t why_size) {
  int diffs = 0;
  why[0] = 0;
  const char* s = strstr(doc, "<!-- lock-order table");
  if (s == NULL) {
    snprintf(why, why_size, "no table marker");
    return 1;
  }
  s = strchr(s, '\n');
  int row = 0;
  while (s != NULL && s[1] == '|') {
    const char* line = s + 1;
    s = strchr(line, '\n');
    int rank = 0;
    char name[64] = {0};
    /* | rank | `name` | protects | -- header and separator do not parse */
    if (sscanf(line, "| %d | `%63[^`]`", &rank, name) != 2) continue;
    if (row >= MI_LOCK_GLOBAL_COUNT) {
      if (diffs++ == 0) snprintf(why, why_size, "doc row %d (%s) has no class in the code", row + 1, name);
    } else if (strcmp(name, _mi_lock_class_name((mi_lock_class_t)row)) != 0 ||
               rank != _mi_lock_class_rank((mi_lock_class_t)row)) {
      if (diffs++ == 0)
        snprintf(why, why_size, "row %d: doc says %s (rank %d), code says %s (rank %d)", row + 1, name, rank,
                 _mi_lock_class_name((mi_lock_class_t)row), _mi_lock_class_rank((mi_lock_class_t)row));
    }
    row++;
  }
  if (row < MI_LOCK_GLOBAL_COUNT) {
    if (diffs++ == 0) snprintf(why, why_size, "doc lists %d classes, code has %d", row, (int)MI_LOCK_GLOBAL_COUNT);
  }
  return diffs;
}

static char* read_doc(void) {
  FILE* f = fopen(MI_LOCK_ORDER_DOC, "r");
  if (f == NULL) return NULL;
  static char buf[64 * 1024];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  return buf;
}

static void test_table_matches_doc(void** state) {
  (void)state;
  char* doc = read_doc();
  assert_non_null(doc);
  char why[256];
  int diffs = table_differences(doc, why, sizeof(why));
  if (diffs != 0) print_error("docs/lock-order.md and src/base/lock-classes.h differ: %s\n", why);
  assert_int_equal(diffs, 0);
  /* the fork handler takes the locks in class order: ranks must increase */
  for (int c = 1; c < MI_LOCK_GLOBAL_COUNT; c++) {
    assert_true(_mi_lock_class_rank((mi_lock_class_t)(c - 1)) < _mi_lock_class_rank((mi_lock_class_t)c));
  }
  /* positive control: a doc with two rows swapped, or one row missing, differs */
  char* swapped = strdup(doc);
  char* a = strstr(swapped, "| 2 | `segment-abandoned`");
  assert_non_null(a);
  memcpy(a + 2, "3", 1);
  assert_true(table_differences(swapped, why, sizeof(why)) > 0);
  assert_non_null(strstr(why, "segment-abandoned"));
  char* cut = strdup(doc);
  char* m = strstr(cut, "| 7 | `meta`");
  assert_non_null(m);
  *m = 0;
  assert_true(table_differences(cut, why, sizeof(why)) > 0);
  free(swapped);
  free(cut);
}

#if MI_LOCKORDER
/* ---- Planted violations, each with its control ------------------------- */

static void case_wrong_order(bool misuse) {
  _mi_lockorder_reset(MI_LOCKORDER_ABORT);
  init_test_locks();
  if (misuse) {
    take_inner();
    take_outer(); /* rank 100 while holding rank 101 */
  } else {
    take_outer();
    take_inner();
  }
  release_inner();
  release_outer();
}

static void* cycle_thread(void* arg) {
  int which = (int)(intptr_t)arg;
  bool misuse = (which >= 10);
  which %= 10;
  mi_lock_t* first = NULL;
  mi_lock_t* second = NULL;
  if (which == 0) {
    take_x();
    take_y();
    first = &lock_x;
    second = &lock_y;
  } /* x -> y */
  if (which == 1) {
    take_y();
    take_z();
    first = &lock_y;
    second = &lock_z;
  } /* y -> z */
  if (which == 2 && misuse) {
    take_z();
    take_x();
    first = &lock_z;
    second = &lock_x;
  } /* z -> x closes the cycle */
  if (which == 2 && !misuse) {
    take_x();
    take_z();
    first = &lock_x;
    second = &lock_z;
  } /* x -> z agrees */
  _mi_lock_release(second);
  _mi_lock_release(first);
  return NULL;
}

/* Three threads, one after the other: no two ever hold locks at the same
   time, so nothing deadlocks, and the three ranks are equal, so only the
   graph can see that the three orders do not agree. */
static void case_three_class_cycle(bool misuse) {
  _mi_lockorder_reset(MI_LOCKORDER_ABORT);
  init_test_locks();
  for (int i = 0; i < 3; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, cycle_thread, (void*)(intptr_t)(i + (misuse ? 10 : 0))) != 0) _exit(3);
    pthread_join(t, NULL);
  }
}

static void case_release_not_held(bool misuse) {
  _mi_lockorder_reset(MI_LOCKORDER_ABORT);
  init_test_locks();
  if (!misuse) take_outer();
  take_inner();
  release_outer(); /* the control holds it (and releases it out of order) */
  release_inner();
}

static void case_recursive(bool misuse) {
  _mi_lockorder_reset(MI_LOCKORDER_ABORT);
  init_test_locks();
  take_outer();
  if (misuse) take_outer(); /* reported before it blocks for ever */
  release_outer();
  take_outer();
  release_outer();
}

/* Run a case in a child and check how it ended: died of SIGABRT with every
   string of `needles` in its stderr; its control exited 0 with no report. */
static void expect_report(mi_case_fn fn, const char* const* needles) {
  char err[8192];
  int status = run_child(fn, false, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    print_error("control failed: status %d, stderr: %s\n", status, err);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_null(strstr(err, "lock-order violation"));
  status = run_child(fn, true, err, sizeof(err));
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) print_error("misuse: status %d, stderr: %s\n", status, err);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
  for (size_t i = 0; needles[i] != NULL; i++) {
    if (strstr(err, needles[i]) == NULL) print_error("expected '%s' in:\n%s\n", needles[i], err);
    assert_non_null(strstr(err, needles[i]));
  }
  /* the report's first line starts the output */
  assert_true(strncmp(err, "mimalloc: error: lock-order violation: ", 39) == 0);
}

static char needle_buf[8][256];

static const char* site(int i, const char* fmt, int line) {
  snprintf(needle_buf[i], sizeof(needle_buf[i]), fmt, line);
  return needle_buf[i];
}

static void test_lock_wrong_order_aborts_naming_both_sites(void** state) {
  (void)state;
  const char* needles[] = {
      "mimalloc: error: lock-order violation: taking 'test-outer' (rank 100) while holding 'test-inner' (rank 101)\n",
      site(0, "mimalloc:   held:   'test-inner' acquired at " SRC ":%d\n", line_take_inner),
      site(1, "mimalloc:   taking: 'test-outer' at " SRC ":%d\n", line_take_outer), NULL};
  expect_report(&case_wrong_order, needles);
}

static void test_lock_three_class_cycle_aborts_naming_edges(void** state) {
  (void)state;
  const char* needles[] = {
      "mimalloc: error: lock-order violation: taking 'test-x' while holding 'test-z' closes a cycle: "
      "test-x -> test-y -> test-z -> test-x\n",
      site(0, "mimalloc:   held:   'test-z' acquired at " SRC ":%d\n", line_take_z),
      site(1, "mimalloc:   taking: 'test-x' at " SRC ":%d\n", line_take_x),
      site(2, "mimalloc:   edge test-x -> test-y seen before: 'test-x' held from " SRC ":%d, ", line_take_x),
      site(3, "'test-y' taken at " SRC ":%d\n", line_take_y),
      site(4, "mimalloc:   edge test-y -> test-z seen before: 'test-y' held from " SRC ":%d, ", line_take_y),
      site(5, "'test-z' taken at " SRC ":%d\n", line_take_z),
      NULL};
  expect_report(&case_three_class_cycle, needles);
}

static void test_lock_release_not_held_aborts_with_report(void** state) {
  (void)state;
  const char* needles[] = {site(0,
                                "mimalloc: error: lock-order violation: releasing 'test-outer' at " SRC
                                ":%d, which this thread does not hold\n",
                                line_release_outer),
                           site(1, "mimalloc:   held:   'test-inner' acquired at " SRC ":%d\n", line_take_inner), NULL};
  expect_report(&case_release_not_held, needles);
}

static void test_lock_recursive_acquire_aborts_as_self_deadlock(void** state) {
  (void)state;
  const char* needles[] = {
      "mimalloc: error: lock-order violation: taking 'test-outer' again while this thread holds it (self-deadlock)\n",
      site(0, "mimalloc:   held:   'test-outer' acquired at " SRC ":%d\n", line_take_outer),
      site(1, "mimalloc:   taking: 'test-outer' at " SRC ":%d\n", line_take_outer), NULL};
  expect_report(&case_recursive, needles);
}

/* ---- Warn mode, try-acquire, release out of order ------------------------- */

static void case_warn(bool misuse) {
  (void)misuse;
  _mi_lockorder_reset(MI_LOCKORDER_WARN);
  init_test_locks();
  for (int i = 0; i < 3; i++) { /* the same inversion three times: reported once */
    take_inner();
    take_outer();
    release_outer();
    release_inner();
  }
  release_outer(); /* a release of a lock not held */
  if (_mi_lockorder_violations() != 4) _exit(4);
}

static size_t count_of(const char* s, const char* what) {
  size_t n = 0;
  for (const char* p = strstr(s, what); p != NULL; p = strstr(p + 1, what)) n++;
  return n;
}

static void test_lock_warn_mode_reports_once_without_abort(void** state) {
  (void)state;
  char err[8192];
  int status = run_child(&case_warn, true, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) print_error("warn: status %d, stderr: %s\n", status, err);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(count_of(err,
                            "mimalloc: warning: lock-order violation: taking 'test-outer' (rank 100) while "
                            "holding 'test-inner' (rank 101)"),
                   1);
  assert_int_equal(count_of(err, "mimalloc: warning: lock-order violation: releasing 'test-outer'"), 1);
  assert_int_equal(count_of(err, "lock-order violation"), 2);
  assert_null(strstr(err, "mimalloc: error:"));
}

static void case_try_and_out_of_order(bool misuse) {
  (void)misuse;
  _mi_lockorder_reset(MI_LOCKORDER_ABORT);
  init_test_locks();
  take_inner();
  /* a try-acquire cannot deadlock: out of rank order is fine */
  if (!_mi_lock_try_acquire(&lock_outer)) _exit(5);
  /* ... and of a held lock it just fails */
  if (_mi_lock_try_acquire(&lock_outer)) _exit(6);
  take_x();        /* checked against both: inner -> x, outer -> x */
  release_inner(); /* out of order */
  release_outer();
  _mi_lock_release(&lock_x);
  if (_mi_lockorder_violations() != 0) _exit(7);
}

static void test_lock_try_and_out_of_order_release_not_violations(void** state) {
  (void)state;
  char err[8192];
  int status = run_child(&case_try_and_out_of_order, false, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) print_error("status %d, stderr: %s\n", status, err);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_null(strstr(err, "lock-order violation"));
}

/* The fork handlers take every allocator lock in order with the checker on:
   a fork (and a fork from the child) reports nothing, and the child can
   allocate. */
static void case_fork(bool misuse) {
  (void)misuse;
  void* p = mi_malloc(100);
  pid_t pid = fork();
  if (pid < 0) _exit(8);
  if (pid == 0) {
    void* q = mi_malloc(1000000);
    mi_free(p);
    mi_free(q);
    mi_collect(true);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  mi_free(p);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) _exit(9);
}

static void test_fork_under_lock_checker_reports_no_violation(void** state) {
  (void)state;
  char err[8192];
  int status = run_child(&case_fork, false, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) print_error("status %d, stderr: %s\n", status, err);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_null(strstr(err, "lock-order violation"));
}
#endif

int main(void) {
  mi_child_save_signals();
  mi_process_init();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_table_matches_doc),
#if MI_LOCKORDER
    cmocka_unit_test(test_lock_wrong_order_aborts_naming_both_sites),
    cmocka_unit_test(test_lock_three_class_cycle_aborts_naming_edges),
    cmocka_unit_test(test_lock_release_not_held_aborts_with_report),
    cmocka_unit_test(test_lock_recursive_acquire_aborts_as_self_deadlock),
    cmocka_unit_test(test_lock_warn_mode_reports_once_without_abort),
    cmocka_unit_test(test_lock_try_and_out_of_order_release_not_violations),
    cmocka_unit_test(test_fork_under_lock_checker_reports_no_violation),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
