/* A cmocka-compatible runner for the Windows build, where cmocka has no
   MinGW package: exactly the subset of cmocka's API the test sources use
   (grep them before adding), with cmocka's output lines, so the same test
   files build for Linux with cmocka and for Windows with this. A failed
   assertion prints where and why and ends the test (longjmp back to the
   runner), as in cmocka; the group's return value is the number of failed
   tests. Single-threaded: assert only on the thread running the test. */
#ifndef MI_CMOCKA_SHIM_H
#define MI_CMOCKA_SHIM_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*CMUnitTestFunction)(void** state);
typedef int (*CMFixtureFunction)(void** state);

struct CMUnitTest {
  const char* name;
  CMUnitTestFunction test_func;
  CMFixtureFunction setup_func;
  CMFixtureFunction teardown_func;
  void* initial_state;
};

#define cmocka_unit_test(f) \
  { #f, f, NULL, NULL, NULL }
#define cmocka_unit_test_setup_teardown(f, setup, teardown) \
  { #f, f, setup, teardown, NULL }

enum { MI_SHIM_RUNNING = 0, MI_SHIM_FAILED = 1, MI_SHIM_SKIPPED = 2 };
static jmp_buf mi_shim_jmp;
static int mi_shim_in_test;

static void mi_shim_end(int how) {
  fflush(stdout);
  fflush(stderr);
  if (!mi_shim_in_test) {
    fprintf(stderr, "cmocka-shim: assertion outside a test\n");
    exit(1);
  }
  longjmp(mi_shim_jmp, how);
}

__attribute__((format(gnu_printf, 1, 2), unused)) static void print_message(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vprintf(fmt, args);
  va_end(args);
  fflush(stdout);
}

__attribute__((format(gnu_printf, 1, 2), unused)) static void print_error(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vfprintf(stderr, fmt, args);
  va_end(args);
  fflush(stderr);
}

__attribute__((unused)) static void mi_shim_fail(const char* file, int line, const char* what) {
  print_error("[   LINE   ] --- %s:%d: error: %s\n", file, line, what);
  mi_shim_end(MI_SHIM_FAILED);
}

__attribute__((format(gnu_printf, 3, 4), unused)) static void mi_shim_fail_msg(const char* file, int line,
                                                                               const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "[   LINE   ] --- %s:%d: error: ", file, line);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, "\n");
  va_end(args);
  mi_shim_end(MI_SHIM_FAILED);
}

#define fail() mi_shim_fail(__FILE__, __LINE__, "fail()")
#define fail_msg(...) mi_shim_fail_msg(__FILE__, __LINE__, __VA_ARGS__)
#define skip() mi_shim_end(MI_SHIM_SKIPPED)

#define assert_true(c) ((c) ? (void)0 : mi_shim_fail(__FILE__, __LINE__, #c " is not true"))
#define assert_false(c) (!(c) ? (void)0 : mi_shim_fail(__FILE__, __LINE__, #c " is not false"))
#define assert_non_null(p) ((uintptr_t)(p) != 0 ? (void)0 : mi_shim_fail(__FILE__, __LINE__, #p " is NULL"))
#define assert_null(p) ((uintptr_t)(p) == 0 ? (void)0 : mi_shim_fail(__FILE__, __LINE__, #p " is not NULL"))

/* cmocka compares integers as its largest unsigned type */
__attribute__((unused)) static void mi_shim_int_equal(unsigned long long a, unsigned long long b, bool equal,
                                                      const char* file, int line) {
  if ((a == b) == equal) return;
  mi_shim_fail_msg(file, line, "%llu (%#llx) %s %llu (%#llx)", a, a, equal ? "!=" : "==", b, b);
}
#define assert_int_equal(a, b) \
  mi_shim_int_equal((unsigned long long)(a), (unsigned long long)(b), true, __FILE__, __LINE__)
#define assert_int_not_equal(a, b) \
  mi_shim_int_equal((unsigned long long)(a), (unsigned long long)(b), false, __FILE__, __LINE__)
#define assert_ptr_equal(a, b) \
  mi_shim_int_equal((unsigned long long)(uintptr_t)(a), (unsigned long long)(uintptr_t)(b), true, __FILE__, __LINE__)
#define assert_ptr_not_equal(a, b) \
  mi_shim_int_equal((unsigned long long)(uintptr_t)(a), (unsigned long long)(uintptr_t)(b), false, __FILE__, __LINE__)

__attribute__((unused)) static void mi_shim_string_equal(const char* a, const char* b, const char* file, int line) {
  if (a != NULL && b != NULL && strcmp(a, b) == 0) return;
  mi_shim_fail_msg(file, line, "\"%s\" != \"%s\"", a != NULL ? a : "(null)", b != NULL ? b : "(null)");
}
#define assert_string_equal(a, b) mi_shim_string_equal((a), (b), __FILE__, __LINE__)

__attribute__((unused)) static void mi_shim_memory_equal(const void* a, const void* b, size_t n, const char* file,
                                                         int line) {
  const unsigned char* x = (const unsigned char*)a;
  const unsigned char* y = (const unsigned char*)b;
  for (size_t i = 0; i < n; i++) {
    if (x[i] != y[i]) mi_shim_fail_msg(file, line, "difference at byte %zu: 0x%02x != 0x%02x", i, x[i], y[i]);
  }
}
#define assert_memory_equal(a, b, n) mi_shim_memory_equal((a), (b), (size_t)(n), __FILE__, __LINE__)

static int mi_shim_run_group(const char* group, const struct CMUnitTest* tests, size_t count, CMFixtureFunction setup,
                             CMFixtureFunction teardown) {
  void* group_state = NULL;
  printf("[==========] %s: Running %zu test(s).\n", group, count);
  if (setup != NULL && setup(&group_state) != 0) {
    printf("[  ERROR   ] %s: group setup failed\n", group);
    return (int)count;
  }
  size_t passed = 0, failed = 0, skipped = 0;
  const char* failed_names[256];
  for (size_t i = 0; i < count; i++) {
    const struct CMUnitTest* t = &tests[i];
    void* state = (t->initial_state != NULL ? t->initial_state : group_state);
    printf("[ RUN      ] %s\n", t->name);
    fflush(stdout);
    /* volatile: read after longjmp */
    volatile int how = MI_SHIM_RUNNING;
    mi_shim_in_test = 1;
    int jumped = setjmp(mi_shim_jmp);
    if (jumped == 0) {
      if (t->setup_func != NULL && t->setup_func(&state) != 0) {
        how = MI_SHIM_FAILED;
      } else {
        t->test_func(&state);
        if (t->teardown_func != NULL && t->teardown_func(&state) != 0) how = MI_SHIM_FAILED;
      }
    } else {
      how = jumped;
    }
    mi_shim_in_test = 0;
    if (how == MI_SHIM_SKIPPED) {
      skipped++;
      printf("[  SKIPPED ] %s\n", t->name);
    } else if (how == MI_SHIM_FAILED) {
      if (failed < 256) failed_names[failed] = t->name;
      failed++;
      printf("[  FAILED  ] %s\n", t->name);
    } else {
      passed++;
      printf("[       OK ] %s\n", t->name);
    }
    fflush(stdout);
  }
  if (teardown != NULL) teardown(&group_state);
  printf("[==========] %s: %zu test(s) run.\n", group, count);
  printf("[  PASSED  ] %zu test(s).\n", passed);
  if (skipped > 0) printf("[  SKIPPED ] %zu test(s).\n", skipped);
  if (failed > 0) {
    printf("[  FAILED  ] %s: %zu test(s), listed below:\n", group, failed);
    for (size_t i = 0; i < failed && i < 256; i++) printf("[  FAILED  ] %s\n", failed_names[i]);
  }
  fflush(stdout);
  return (int)failed;
}

#define cmocka_run_group_tests(tests, setup, teardown) \
  mi_shim_run_group(#tests, (tests), sizeof(tests) / sizeof((tests)[0]), (setup), (teardown))
#define cmocka_run_group_tests_name(name, tests, setup, teardown) \
  mi_shim_run_group((name), (tests), sizeof(tests) / sizeof((tests)[0]), (setup), (teardown))

#endif
