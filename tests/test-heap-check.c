#define _GNU_SOURCE
/* The debug build's heap-consistency check (MI_DEBUG >= 3, the top of the
   assertion ladder), with its positive control: a free list corrupted on
   purpose must be caught, in a child, with an abort and the assertion
   message. Lower levels compile the walk out; there the test only runs the
   clean case (ci/test-all.sh's debug3 jobs run the control). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <mimalloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#if defined(_WIN32)
/* no fork: the case runs in this program started again with --child 0|1
   (tests/win/spawn.h); abort() ends a Windows process with exit code 3,
   which stands for death by SIGABRT here */
#include "spawn.h"
#define WIFEXITED(status) ((status) >= 0 && (status) != 3)
#define WEXITSTATUS(status) (status)
#define WIFSIGNALED(status) ((status) == 3)
#define WTERMSIG(status) SIGABRT
#define mi_child_save_signals() ((void)0)
static int run_child(void (*fn)(bool), bool misuse, char* err, size_t err_size) {
  (void)fn; /* the one case of this file, churn_and_collect */
  return mi_spawn_self(misuse ? "--child 1" : "--child 0", NULL, false, true, err, err_size, 120000);
}
#else
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#endif

#ifndef MI_TEST_DEBUG_CHECK
#define MI_TEST_DEBUG_CHECK 0
#endif
#ifndef MI_TEST_SECURE
#define MI_TEST_SECURE 0
#endif
#ifndef MI_TEST_TRACK_ASAN
#define MI_TEST_TRACK_ASAN 0
#endif

static void churn_and_collect(bool corrupt) {
  mi_heap_t* heap = mi_heap_new();
  void* blocks[64];
  for (int i = 0; i < 64; i++) blocks[i] = mi_heap_malloc(heap, 48);
  for (int i = 0; i < 64; i += 2) mi_free(blocks[i]);
  if (corrupt) {
    /* a use-after-free write over the free-list link of a freed block */
    memset(blocks[10], 0x41, sizeof(void*));
  }
  mi_heap_collect(heap, false);
  for (int i = 1; i < 64; i += 2) mi_free(blocks[i]);
  if (!corrupt) mi_heap_destroy(heap);
}

static void test_clean_heap_passes(void** state) {
  (void)state;
  char err[4096];
  int status = run_child(&churn_and_collect, false, err, sizeof(err));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_null(strstr(err, "assertion failed"));
}

static void test_corrupted_free_list_is_caught(void** state) {
  (void)state;
  /* secure builds hold freed blocks in a quarantine, off the free list: the
     planted write is caught by secure mode's own tests (tests/secure) */
  if (MI_TEST_DEBUG_CHECK < 3 || MI_TEST_SECURE) {
    skip();
    return;
  }
  char err[4096];
  int status = run_child(&churn_and_collect, true, err, sizeof(err));
  if (MI_TEST_TRACK_ASAN) {
    /* the freed block is poisoned (docs/sanitizers.md): AddressSanitizer
       stops the planted write itself, before the heap check can run */
    assert_true(WIFEXITED(status));
    assert_int_not_equal(WEXITSTATUS(status), 0);
    if (strstr(err, "ERROR: AddressSanitizer: use-after-poison") == NULL) print_error("stderr: %s\n", err);
    assert_non_null(strstr(err, "ERROR: AddressSanitizer: use-after-poison"));
    return;
  }
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
  assert_non_null(strstr(err, "mimalloc: assertion failed: "));
  assert_non_null(strstr(err, "heap-check.c"));
}

int main(int argc, char** argv) {
#if defined(_WIN32)
  if (argc > 2 && strcmp(argv[1], "--child") == 0) {
    churn_and_collect(argv[2][0] == '1');
    return 0;
  }
#else
  (void)argc;
  (void)argv;
#endif
  mi_child_save_signals();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clean_heap_passes),
      cmocka_unit_test(test_corrupted_free_list_is_caught),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
