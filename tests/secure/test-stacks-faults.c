/* MIMALLOC_SECURE_STACKS when the OS refuses memory (a build with the fault
   hooks, MI_FAULT): each OS call of the option's start failed in turn, and
   each of the calls that set up a new segment's records. The program goes
   on: a start without its table says so once and gives back what it had
   got (nothing left reserved), and its reports say the stacks were not
   recorded; a segment whose records could not be made holds blocks without
   a record while the OS refuses, whose misuse is reported saying its
   allocation was not recorded, while the other blocks keep theirs. Each case runs in a child (the option starts once a
   process); the failing call is the nth, EINVAL (not retried). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mimalloc/fault.h"
#include "child.h"

#define TABLE_WARNING "mimalloc: warning: the blocks' stacks cannot be kept: no memory for their table"
#define DOUBLE_FREE "mimalloc: error: double free detected of block"
#define NOT_RECORDED "where the block was allocated and freed: not recorded"
#define ALLOCATION_NOT_RECORDED "mimalloc:   where the block was allocated: not recorded ("
#define ALLOCATED_BY "mimalloc:   allocated by thread"
#define NTH_MAX 24

static long long case_nth;

static void fail_nth(mi_fault_kind_t kind, long long nth, long long count) {
  mi_fault_policy_t policy = {0};
  policy.kind = kind;
  policy.nth = nth;
  policy.count = count;
  policy.error = mi_fault_error_other;
  mi_fault_set_policy(&policy);
}

static bool filled_with(const void* p, size_t size, uint8_t byte) {
  for (size_t i = 0; i < size; i++) {
    if (((const uint8_t*)p)[i] != byte) return false;
  }
  return true;
}

static bool has_alloc_stack(const void* p) {
  mi_secure_stack_t allocated, freed;
  return _mi_secure_stacks_of(p, &allocated, &freed) && allocated.count > 0;
}

/* the option turned on with the nth OS call failing; then a double free */
static void case_start(bool misuse) {
  (void)misuse;
  mi_fault_counters_t before, after;
  mi_fault_get_counters(&before);
  fail_nth(mi_fault_any, case_nth, 1);
  mi_option_set(mi_option_secure_stacks, 1);
  mi_fault_get_counters(&after);
  mi_fault_reset();
  fprintf(stderr, "reserved since: %lld\n", after.os_reserved - before.os_reserved);
  void* p = mi_malloc(48);
  if (p == NULL) _exit(4);
  memset(p, 1, 48);
  mi_free(p);
  mi_free(p); /* reported: the child aborts */
  _exit(5);
}

/* The option on; then 12 MiB of blocks (new segments, each with its
   records) with FAILED_IN_A_ROW OS calls that map new memory failing from
   the nth (the records' memory is such a call; the pages' commits are not
   counted). A page whose records could not be made tries again at each
   allocation: its blocks lack one while the OS refuses, so the calls fail
   several in a row; an allocation may then fail too (NULL). A block with no record is
   double-freed (the report then has no stacks); or, if every block has
   one, the last. */
#define FAILED_IN_A_ROW 4
#define BLOCKS 6000
#define BLOCK_SIZE 2000
static void* blocks[BLOCKS];
static void case_segments(bool misuse) {
  (void)misuse;
  mi_option_set(mi_option_secure_stacks, 1);
  mi_free(mi_malloc(BLOCK_SIZE));
  fail_nth(mi_fault_reserve, case_nth, FAILED_IN_A_ROW);
  size_t made = 0;
  for (size_t i = 0; i < BLOCKS; i++) {
    blocks[i] = mi_malloc(BLOCK_SIZE);
    if (blocks[i] != NULL) {
      memset(blocks[i], (int)(i & 0xff), BLOCK_SIZE);
      made++;
    }
  }
  mi_fault_counters_t counters;
  mi_fault_get_counters(&counters);
  mi_fault_reset();
  fprintf(stderr, "calls %llu, failed %llu, blocks %zu\n", counters.selected_calls, counters.selected_injected, made);
  if (made < BLOCKS - FAILED_IN_A_ROW) _exit(4); /* at most one allocation a failed call */
  void* victim = NULL;
  size_t without = 0;
  for (size_t i = 0; i < BLOCKS; i++) {
    if (blocks[i] == NULL) continue;
    if (!filled_with(blocks[i], BLOCK_SIZE, (uint8_t)(i & 0xff))) _exit(6);
    if (!has_alloc_stack(blocks[i])) {
      without++;
      if (victim == NULL) victim = blocks[i];
    }
  }
  fprintf(stderr, "blocks without a record: %zu\n", without);
  for (size_t i = BLOCKS; victim == NULL && i > 0; i--) victim = blocks[i - 1];
  for (size_t i = 0; i < BLOCKS; i++) {
    if (blocks[i] != victim) mi_free(blocks[i]);
  }
  mi_free(victim);
  mi_free(victim); /* reported: the child aborts */
  _exit(5);
}

static int run_nth(mi_case_fn fn, long long nth, char* err, size_t size) {
  case_nth = nth;
  return run_child(fn, false, err, size);
}

/* every child ends in the double free's report, with the stacks or saying
   they were not recorded */
static void assert_reported(int status, const char* err, long long nth) {
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT || strstr(err, DOUBLE_FREE) == NULL) {
    print_error("nth %lld: status %d, stderr: %s\n", nth, status, err);
    fail();
  }
  if (strstr(err, NOT_RECORDED) == NULL && strstr(err, ALLOCATED_BY) == NULL &&
      strstr(err, ALLOCATION_NOT_RECORDED) == NULL) {
    print_error("nth %lld: neither stacks nor their absence said: %s\n", nth, err);
    fail();
  }
}

static void test_stacks_start_os_call_fails_warned_memory_given_back_reported_without_stacks(void** state) {
  (void)state;
  char err[16384];
  int warned = 0, started = 0;
  for (long long nth = 1; nth <= NTH_MAX; nth++) {
    int status = run_nth(case_start, nth, err, sizeof(err));
    assert_reported(status, err, nth);
    if (strstr(err, TABLE_WARNING) != NULL) {
      warned++;
      /* the pieces it got are given back; its reports say nothing of the sites */
      if (strstr(err, "reserved since: 0\n") == NULL) print_error("nth %lld: %s\n", nth, err);
      assert_non_null(strstr(err, "reserved since: 0\n"));
      assert_non_null(strstr(err, NOT_RECORDED));
      assert_null(strstr(err, ALLOCATED_BY));
    } else {
      started++;
      assert_non_null(strstr(err, ALLOCATED_BY));
    }
  }
  /* the table is several calls: each of them failed once; the rest started */
  assert_true(warned >= 3);
  assert_true(started >= 1);
  /* the clean twin: no failure, the stacks kept, no warning */
  int status = run_nth(case_start, 0, err, sizeof(err));
  assert_reported(status, err, 0);
  assert_null(strstr(err, TABLE_WARNING));
  assert_non_null(strstr(err, ALLOCATED_BY));
}

static void test_stacks_segment_records_os_call_fails_blocks_without_record_reported_without_stacks(void** state) {
  (void)state;
  char err[16384];
  int without_seen = 0;
  for (long long nth = 1; nth <= NTH_MAX; nth++) {
    int status = run_nth(case_segments, nth, err, sizeof(err));
    assert_reported(status, err, nth);
    assert_null(strstr(err, TABLE_WARNING));
    if (getenv("MI_TEST_VERBOSE") != NULL) fprintf(stderr, "nth %lld: %s\n", nth, err);
    const char* line = strstr(err, "blocks without a record: ");
    assert_non_null(line);
    long without = strtol(line + strlen("blocks without a record: "), NULL, 10);
    if (without > 0) {
      without_seen++;
      assert_non_null(strstr(err, ALLOCATION_NOT_RECORDED)); /* the victim is one of them */
      assert_null(strstr(err, ALLOCATED_BY));
    } else {
      assert_non_null(strstr(err, ALLOCATED_BY));
    }
  }
  /* the path was taken: some failing call was a segment's records */
  assert_true(without_seen >= 1);
  /* the clean twin: every block has its record */
  int status = run_nth(case_segments, 0, err, sizeof(err));
  assert_reported(status, err, 0);
  assert_non_null(strstr(err, "blocks without a record: 0\n"));
}

int main(void) {
  mi_child_save_signals();
  mi_process_init();
  mi_option_set(mi_option_guarded_sample_rate, 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stacks_start_os_call_fails_warned_memory_given_back_reported_without_stacks),
      cmocka_unit_test(test_stacks_segment_records_os_call_fails_blocks_without_record_reported_without_stacks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
