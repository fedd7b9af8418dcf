/* The fault-injection knobs, the OOM retry and each fallback path, shown
   taken by the counters. Every case runs in a forked child, so each starts
   from the same allocator state and its policy cannot leak into the next. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <mimalloc.h>
#include <mimalloc-stats.h>
#include <mimalloc/fault.h>

#include "../../src/internal.h"
#if defined(_WIN32)
/* no fork: each case is this program run again with --case N (tests/win/spawn.h) */
#include "spawn.h"
#define mi_child_save_signals() ((void)0)
#define mi_child_restore_signals() ((void)0)
#else
#include "child.h"
#endif

#include "child-exit.h"

static const char* self_path;

/* Inside a child: a failed check prints and exits 1. */
#define CHECK(cond) \
  do { \
    if (!(cond)) { \
      fprintf(stderr, "test-fault: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      child_exit(1); \
    } \
  } while (0)

static void child_options(void) {
  mi_option_set(mi_option_purge_thread, 0);
  mi_option_set(mi_option_purge_delay, -1);
  mi_option_set(mi_option_segment_cache, 0);
  /* the first segment also maps the segment map: get that out of the counts */
  mi_free(mi_malloc((size_t)5 << 20));
  mi_fault_reset();
}

#if defined(_WIN32)
static int child_body_index(void (*body)(void)); /* the table of bodies, at the end */

static void in_child(void (*body)(void)) {
  char args[32], out[8192];
  snprintf(args, sizeof(args), "--case %d", child_body_index(body));
  int code = mi_spawn_self(args, NULL, true, true, out, sizeof(out), 120000);
  if (code != 0) print_error("child exited with %d: %s\n", code, out);
  assert_int_equal(code, 0);
}
#else
static void in_child(void (*body)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    mi_child_restore_signals(); /* a crash must kill the child, not resume cmocka in it */
    child_options();
    body();
    child_exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status)) print_error("child died with signal %d\n", WTERMSIG(status));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}
#endif

static mi_fault_counters_t counters(void) {
  mi_fault_counters_t c;
  mi_fault_get_counters(&c);
  return c;
}

static void set_policy(mi_fault_kind_t kind, long long nth, long long count, mi_fault_error_t error) {
  mi_fault_policy_t p = {kind, nth, count, 0.0, 0, error, false};
  mi_fault_set_policy(&p);
}

static void check_accounting(void) {
  CHECK(counters().os_reserved == atomic_load(&_mi_stats.reserved.current));
}

/* A block that needs a fresh segment of its own (a large block). */
#define LARGE_SIZE ((size_t)5 << 20)

/* ---- The knobs --------------------------------------------------------------- */

static void nth_and_count_body(void) {
  /* a large block's segment is one aligned attempt, then, if that fails,
     one over-reserve: failing calls 2 and 3 fails exactly the second block */
  set_policy(mi_fault_reserve, 2, 2, mi_fault_error_oom);
  mi_option_set(mi_option_retry_on_oom, 0);
  void* a = mi_malloc(LARGE_SIZE); /* call 1 */
  CHECK(a != NULL);
  errno = 0;
  void* b = mi_malloc(LARGE_SIZE); /* calls 2 and 3: both fail */
  CHECK(b == NULL && errno == ENOMEM);
  void* c = mi_malloc(LARGE_SIZE); /* call 4: succeeds again */
  CHECK(c != NULL);
  mi_fault_counters_t k = counters();
  CHECK(k.selected_calls == 4 && k.selected_injected == 2);
  CHECK(k.injected[mi_fault_reserve] == 2 && k.injected[mi_fault_release] == 0);
  CHECK(k.events[mi_fault_event_aligned_trim] == 1);
  mi_free(a);
  mi_free(c);
  check_accounting();
}

static void test_fault_nth_and_count_fail_exactly_those_calls(void** state) {
  (void)state;
  in_child(&nth_and_count_body);
}

/* The same seed fails the same calls; the draw depends on the call index only. */
static unsigned long long prob_pattern(unsigned long long seed) {
  mi_fault_reset();
  mi_fault_policy_t p = {mi_fault_reserve, 0, 1, 0.5, seed, mi_fault_error_oom, false};
  mi_fault_set_policy(&p);
  mi_option_set(mi_option_retry_on_oom, 0);
  unsigned long long pattern = 0;
  for (int i = 0; i < 32; i++) {
    void* q = mi_malloc(LARGE_SIZE);
    if (q == NULL) pattern |= (1ULL << i);
    mi_free(q);
  }
  mi_fault_set_policy(NULL);
  return pattern;
}

static void probability_body(void) {
  unsigned long long a = prob_pattern(42);
  unsigned long long b = prob_pattern(42);
  unsigned long long c = prob_pattern(7);
  CHECK(a == b);
  CHECK(a != c);
  int failed = __builtin_popcountll(a);
  CHECK(failed > 4 && failed < 28); /* p = 0.5 over 32 calls */
}

static void test_probability_reproducible(void** state) {
  (void)state;
  in_child(&probability_body);
}

/* The environment: MIMALLOC_FAULT_NTH=1 MIMALLOC_FAULT_COUNT=-1 fails every
   call and the report at exit says so in exactly one summary line. */
#if defined(_WIN32)
/* the exit code stands for the wait status */
#define WIFEXITED(status) ((status) >= 0)
#define WEXITSTATUS(status) (status)
static int run_env_ex(const char* nth, const char* count, const char* kind, bool show_errors, char* err,
                      size_t err_size) {
  char v_nth[64], v_count[64], v_kind[64];
  snprintf(v_nth, sizeof(v_nth), "MIMALLOC_FAULT_NTH=%s", nth);
  snprintf(v_count, sizeof(v_count), "MIMALLOC_FAULT_COUNT=%s", count);
  snprintf(v_kind, sizeof(v_kind), "MIMALLOC_FAULT_KIND=%s", kind);
  const char* env[] = {v_nth,
                       v_count,
                       v_kind,
                       "MIMALLOC_FAULT_REPORT=1",
                       "MIMALLOC_RETRY_ON_OOM=0",
                       "MIMALLOC_SEGMENT_CACHE=0",
                       show_errors ? "MIMALLOC_SHOW_ERRORS=1" : NULL,
                       NULL};
  return mi_spawn_self("--env-child", env, false, true, err, err_size, 120000);
}
#else
static int run_env_ex(const char* nth, const char* count, const char* kind, bool show_errors, char* err,
                      size_t err_size) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    setenv("MIMALLOC_FAULT_NTH", nth, 1);
    setenv("MIMALLOC_FAULT_COUNT", count, 1);
    setenv("MIMALLOC_FAULT_KIND", kind, 1);
    setenv("MIMALLOC_FAULT_REPORT", "1", 1);
    setenv("MIMALLOC_RETRY_ON_OOM", "0", 1);
    setenv("MIMALLOC_SEGMENT_CACHE", "0", 1);
    if (show_errors) setenv("MIMALLOC_SHOW_ERRORS", "1", 1);
    execl(self_path, self_path, "--env-child", (char*)NULL);
    _exit(127);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while (n + 1 < err_size && (r = read(fds[0], err + n, err_size - 1 - n)) > 0) n += (size_t)r;
  err[n] = 0;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}
#endif

static int run_env(const char* nth, const char* count, const char* kind, char* err, size_t err_size) {
  return run_env_ex(nth, count, kind, false, err, err_size);
}

static int env_child(void) {
  /* every allocation may fail here: say what happened in the exit code */
  if (getenv("MI_TEST_ZERO_FIRST") != NULL) {
    /* a zero-size allocation first: its slot's segment is the process's
       first (secure builds: src/secure/secure-zero.c), with its header's commit
       and the segment map; failed, NULL with ENOMEM (exit 40), else a slot */
    void* z = mi_malloc(0);
    if (z == NULL) return (errno == ENOMEM ? 40 : 4);
    mi_free(z);
  }
  void* p = mi_malloc(100);
  int small_enomem = (p == NULL && errno == ENOMEM);
  void* q = mi_malloc(LARGE_SIZE);
  int large_enomem = (q == NULL && errno == ENOMEM);
  mi_free(p);
  mi_free(q);
  return (p == NULL ? (small_enomem ? 10 : 1) : 0) + (q == NULL ? (large_enomem ? 20 : 2) : 0);
}

static void test_environment_all_fail_enomem_and_one_summary_line(void** state) {
  (void)state;
  char err[8192];
  int status = run_env("1", "-1", "any", err, sizeof(err));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 30); /* both NULL with ENOMEM */
  const char* line = strstr(err, "fault: calls=");
  assert_non_null(line);
  assert_null(strstr(line + 1, "fault: calls=")); /* exactly one summary line */
  unsigned long long calls = 0, injected = 0;
  assert_int_equal(sscanf(line, "fault: calls=%llu injected=%llu", &calls, &injected), 2);
  assert_true(calls > 0);
  assert_int_equal(calls, injected);
  assert_non_null(strstr(err, "fault: kind reserve"));
}

/* A value that is no number is warned about (with show_errors), named and
   quoted, and leaves its setting as if unset: nothing fails. The fault layer
   reports it through process set-up's message function (prim/fault.c calls
   nothing above it). */
static void test_environment_invalid_value_warned(void** state) {
  (void)state;
  char err[8192];
  int status = run_env_ex("abc", "-1", "any", true, err, sizeof(err));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0); /* no n-th call: none fails */
  assert_non_null(strstr(err, "mimalloc: warning: environment option MIMALLOC_FAULT_NTH has an invalid value: abc"));
}

/* its clean twin: valid values, errors shown, no warning */
static void test_environment_valid_values_not_warned(void** state) {
  (void)state;
  char err[8192];
  int status = run_env_ex("0", "-1", "any", true, err, sizeof(err));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_null(strstr(err, "has an invalid value"));
  assert_non_null(strstr(err, "fault: calls=")); /* the child ran with the environment read */
}

static void test_environment_kind_release_fails_only_releases(void** state) {
  (void)state;
  char err[8192];
  /* only releases fail: allocation works, the report counts only releases */
  int status = run_env("1", "-1", "release", err, sizeof(err));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  unsigned long long calls = 0, injected = 0;
  const char* line = strstr(err, "fault: calls=");
  assert_non_null(line);
  assert_int_equal(sscanf(line, "fault: calls=%llu injected=%llu", &calls, &injected), 2);
  assert_int_equal(calls, injected);
  assert_true(calls >= 1); /* the large block's segment went back */
}

/* A fresh process whose n-th reserve fails, for each of its first calls
   (thread data, the first segments, the segment map): it must carry on,
   with both allocations of the child served once the failure has passed. */
static void test_environment_startup_failures_allocations_served(void** state) {
  (void)state;
  char err[8192];
  for (int n = 1; n <= 6; n++) {
    char nth[8];
    snprintf(nth, sizeof(nth), "%d", n);
    int status = run_env(nth, "1", "reserve", err, sizeof(err));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) print_error("n=%d: status %d: %s\n", n, status, err);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    unsigned long long calls = 0, injected = 0;
    const char* line = strstr(err, "fault: calls=");
    assert_non_null(line);
    assert_int_equal(sscanf(line, "fault: calls=%llu injected=%llu", &calls, &injected), 2);
    assert_int_equal(injected, (calls >= (unsigned long long)n ? 1 : 0));
  }
}

#if MI_SECURE && !defined(_WIN32)
/* A fresh process whose first allocation is a zero-size one, with the n-th
   reserve or commit failing (thread data, the zero segment, its header, the
   segment map): it must fail with ENOMEM or be served, and the ordinary
   allocations after it be served once the failure has passed. */
static void test_environment_zero_first_failures_enomem_or_served(void** state) {
  (void)state;
  char err[8192];
  setenv("MI_TEST_ZERO_FIRST", "1", 1);
  static const char* const kinds[] = {"reserve", "commit"};
  int failed_zero = 0;
  for (int k = 0; k < 2; k++) {
    for (int n = 1; n <= 6; n++) {
      char nth[8];
      snprintf(nth, sizeof(nth), "%d", n);
      int status = run_env(nth, "1", kinds[k], err, sizeof(err));
      if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 40))
        print_error("%s n=%d: status %d: %s\n", kinds[k], n, status, err);
      assert_true(WIFEXITED(status));
      assert_true(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 40);
      if (WEXITSTATUS(status) == 40) failed_zero++;
    }
  }
  /* all failures at once: the thread's data cannot be had either */
  int status = run_env("1", "-1", "reserve", err, sizeof(err));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 40);
  unsetenv("MI_TEST_ZERO_FIRST");
  assert_true(failed_zero >= 2); /* some of them hit the zero-size allocation itself */
}
#endif

static void heap_new_fails_body(void) {
  mi_option_set(mi_option_retry_on_oom, 0);
  set_policy(mi_fault_reserve, 1, -1, mi_fault_error_oom);
  /* heaps come from metadata slots; once the slots run out a new chunk is needed, and fails */
  static mi_heap_t* heaps[100000];
  size_t n = 0;
  errno = 0;
  while (n < 100000 && (heaps[n] = mi_heap_new()) != NULL) n++;
  CHECK(n < 100000 && errno == ENOMEM);
  mi_fault_set_policy(NULL);
  for (size_t i = 0; i < n; i++) mi_heap_delete(heaps[i]);
  check_accounting();
}

static void test_heap_new_reserve_fails_returns_null_enomem(void** state) {
  (void)state;
  in_child(&heap_new_fails_body);
}

/* The heap's JSON dump grows its text in metadata memory: a reservation that
   fails there gives NULL with ENOMEM, leaks nothing, and the same dump
   succeeds once memory is back. */
static void heap_dump_fails_body(void) {
  mi_option_set(mi_option_retry_on_oom, 0);
  void* live = mi_malloc(100); /* one page at least, so the dump has a line to add */
  CHECK(live != NULL);
  set_policy(mi_fault_reserve, 1, -1, mi_fault_error_oom);
  errno = 0;
  char* json = mi_heap_dump_json(true, false);
  int err = errno;
  mi_fault_set_policy(NULL);
  CHECK(json == NULL && err == ENOMEM);
  check_accounting();
  json = mi_heap_dump_json(true, false);
  CHECK(json != NULL && strstr(json, "\"complete\"") != NULL);
  mi_free(json);
  mi_free(live);
  check_accounting();
}

static void test_heap_dump_json_reserve_fails_returns_null_enomem(void** state) {
  (void)state;
  in_child(&heap_dump_fails_body);
}

/* ---- OOM retry ----------------------------------------------------------------- */

static void retry_transient_body(void) {
  mi_option_set(mi_option_retry_on_oom, 400);
  set_policy(mi_fault_reserve, 1, 3, mi_fault_error_oom);
  errno = 1234;
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);     /* three failures, hidden by the fallback and the retries */
  CHECK(errno == 1234); /* and no trace in errno */
  mi_fault_counters_t k = counters();
  CHECK(k.selected_injected == 3);
  CHECK(k.events[mi_fault_event_aligned_trim] == 1);
  CHECK(k.events[mi_fault_event_oom_retry] == 2);
  mi_free(p);
}

static void test_retry_transient_oom_hidden_from_caller(void** state) {
  (void)state;
  in_child(&retry_transient_body);
}

static void retry_persistent_body(void) {
  mi_option_set(mi_option_retry_on_oom, 20);
  set_policy(mi_fault_reserve, 1, -1, mi_fault_error_oom);
  errno = 0;
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p == NULL && errno == ENOMEM);
  mi_fault_counters_t k = counters();
  unsigned long long retries = k.events[mi_fault_event_oom_retry];
  CHECK(retries >= 1);
  /* the budget was spent in vain: the next failure does not wait */
  unsigned long long calls_before = k.calls[mi_fault_reserve];
  p = mi_malloc(LARGE_SIZE);
  CHECK(p == NULL && errno == ENOMEM);
  k = counters();
  CHECK(k.events[mi_fault_event_oom_retry] == retries);
  CHECK(k.events[mi_fault_event_oom_fail_fast] >= 1);
  CHECK(k.calls[mi_fault_reserve] == calls_before + 2); /* the aligned attempt and one over-reserve */
  /* a success ends the fail-fast period: the next failure is retried again */
  mi_fault_set_policy(NULL);
  p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  mi_free(p);
  set_policy(mi_fault_reserve, 1, -1, mi_fault_error_oom);
  p = mi_malloc(LARGE_SIZE);
  CHECK(p == NULL);
  CHECK(counters().events[mi_fault_event_oom_retry] > retries);
  check_accounting();
}

static void test_retry_persistent_oom_fails_fast_until_success(void** state) {
  (void)state;
  in_child(&retry_persistent_body);
}

static void retry_not_oom_body(void) {
  mi_option_set(mi_option_retry_on_oom, 400);
  set_policy(mi_fault_reserve, 1, 2, mi_fault_error_other);
  errno = 0;
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p == NULL && errno == ENOMEM); /* the caller always sees ENOMEM */
  CHECK(counters().events[mi_fault_event_oom_retry] == 0);
  p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  mi_free(p);
}

static void test_retry_not_for_other_errors(void** state) {
  (void)state;
  in_child(&retry_not_oom_body);
}

static void retry_meets_other_error_body(void) {
  mi_option_set(mi_option_retry_on_oom, 400);
  /* the aligned attempt and the over-reserve run out of memory, the retry
     then meets another error: it stops at once */
  set_policy(mi_fault_reserve, 1, 3, mi_fault_error_mixed);
  errno = 0;
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p == NULL && errno == ENOMEM);
  mi_fault_counters_t k = counters();
  CHECK(k.selected_injected == 3);
  CHECK(k.events[mi_fault_event_oom_retry] == 1);
  check_accounting();
}

static void test_retry_meets_other_error_stops_at_once(void** state) {
  (void)state;
  in_child(&retry_meets_other_error_body);
}

/* ---- Fallbacks ------------------------------------------------------------------ */

static void large_breaker_body(void) {
  mi_option_set(mi_option_allow_large_os_pages, 1);
  /* fail every large-page call, so the result does not depend on whether
     this machine has 2 MiB pages set aside */
  set_policy(mi_fault_large, 1, -1, mi_fault_error_oom);
  void* blocks[10];
  for (int i = 0; i < 10; i++) {
    blocks[i] = mi_malloc(LARGE_SIZE);
    CHECK(blocks[i] != NULL);
  }
  mi_fault_counters_t k = counters();
#if MI_SECURE
  CHECK(k.calls[mi_fault_large] == 0); /* secure builds never pin: guard pages need 4 KiB protection */
#else
  /* try, fail, skip 8, try again, fail */
  CHECK(k.calls[mi_fault_large] == 2);
  CHECK(k.events[mi_fault_event_large_fallback] == 2);
  CHECK(k.events[mi_fault_event_large_skipped] == 8);
#endif
  for (int i = 0; i < 10; i++) mi_free(blocks[i]);
  check_accounting();
}

static void test_large_pages_failing_fall_back_breaker_skips(void** state) {
  (void)state;
  in_child(&large_breaker_body);
}

/* Large blocks written in whole, each on fresh memory (the cache purged
   before it), so that each may measure how densely they are used (os-thp.c). */
static void free_dense_blocks(int n) {
  for (int i = 0; i < n; i++) {
    mi_collect(true);
    void* p = mi_malloc(2 * LARGE_SIZE);
    CHECK(p != NULL);
    memset(p, 1, 2 * LARGE_SIZE);
    mi_free(p);
  }
}

static void resident_query_fails_body(void) {
  int before = _mi_os_thp_density();
  set_policy(mi_fault_resident, 1, -1, mi_fault_error_oom);
  free_dense_blocks(4);
  mi_fault_counters_t k = counters();
  mi_fault_set_policy(NULL);
#if defined(_WIN32)
  /* no transparent huge pages, so nothing asks which pages are resident */
  CHECK(k.calls[mi_fault_resident] == 0);
  (void)before;
#else
  /* unknown, so nothing learnt: the mean stays */
  CHECK(k.injected[mi_fault_resident] >= 1);
  CHECK(_mi_os_thp_density() == before);
  /* the twin: with the OS answering, such blocks make the use dense (16:
     at least 4 probes, whatever the mean was) */
  free_dense_blocks(16);
  CHECK(_mi_os_thp_density() >= 128);
#endif
  check_accounting();
}

static void test_resident_query_fails_density_kept(void** state) {
  (void)state;
  in_child(&resident_query_fails_body);
}

static void aligned_trim_body(void) {
  /* the aligned attempt fails: the over-reserve-and-trim path serves it */
  mi_option_set(mi_option_retry_on_oom, 0);
  set_policy(mi_fault_reserve, 1, 1, mi_fault_error_oom);
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  mi_fault_counters_t k = counters();
  CHECK(k.events[mi_fault_event_aligned_trim] == 1);
#if defined(_WIN32)
  /* no partial release: over-reserve, release it whole, reserve the aligned part */
  CHECK(k.calls[mi_fault_reserve] == 3);
  CHECK(k.calls[mi_fault_release] == 1);
#else
  CHECK(k.calls[mi_fault_reserve] == 2);
  CHECK(k.calls[mi_fault_release] >= 1); /* the ends given back */
#endif
  CHECK((((uintptr_t)p) & ~(uintptr_t)(MI_SEGMENT_SIZE - 1)) % MI_SEGMENT_SIZE == 0);
  mi_free(p);
  check_accounting();
}

static void test_aligned_reserve_fails_trimmed_over_reserve_serves(void** state) {
  (void)state;
  in_child(&aligned_trim_body);
}

static void misaligned_trim_body(void) {
  /* the aligned attempt lands one page off; then every release fails: the
     misaligned range and both trimmed ends stay mapped, and counted */
  mi_fault_policy_t p = {mi_fault_release, 1, -1, 0.0, 0, mi_fault_error_oom, true};
  mi_fault_set_policy(&p);
  errno = 0;
  void* q = mi_malloc(LARGE_SIZE);
  mi_fault_counters_t k = counters();
  CHECK(k.events[mi_fault_event_aligned_trim] == 1);
#if defined(_WIN32)
  /* no trimming on Windows: an aligned range is placed in a hole found by
     an over-reservation given back whole. With every release refused no
     hole is ever free: after the tries (os.c MI_OS_PLACE_TRIES, 4) the
     allocation fails, each kept range counted */
  CHECK(q == NULL && errno == ENOMEM);
  CHECK(k.events[mi_fault_event_release_failed] == 1 + 4);
  check_accounting();
  mi_fault_set_policy(NULL);
  q = mi_malloc(LARGE_SIZE);
  CHECK(q != NULL);
  mi_free(q);
  check_accounting();
  return;
#endif
  CHECK(q != NULL);
  CHECK(k.events[mi_fault_event_release_failed] == 3);
  /* in an aligned segment: the segment map finds its header from the
     pointer (secure builds place the block high in its segment, so the
     pointer's offset says nothing) */
  CHECK(mi_is_in_heap_region(q) && mi_usable_size(q) >= LARGE_SIZE);
  check_accounting();
  mi_fault_set_policy(NULL);
  mi_free(q);
  check_accounting();
}

static void test_misaligned_trim_release_fails_ranges_kept_counted(void** state) {
  (void)state;
  in_child(&misaligned_trim_body);
}

static void arena_table_full_body(void) {
  int err = 0;
  int reserved = 0;
  while (reserved < 64 && (err = mi_reserve_os_memory(MI_SEGMENT_SIZE, false, false)) == 0) reserved++;
  CHECK(err == ENOMEM && reserved == 16); /* the table has 16 arenas */
  CHECK(atomic_load(&_mi_stats.arenas.current) == 16 * (int64_t)MI_SEGMENT_SIZE);
  check_accounting(); /* the 17th reservation went back to the OS */
}

static void test_arena_table_full_17th_reservation_enomem(void** state) {
  (void)state;
  in_child(&arena_table_full_body);
}

static void huge_fallback_body(void) {
  set_policy(mi_fault_huge, 1, -1, mi_fault_error_oom);
  /* the call reports what it reserved: nothing, as mimalloc does */
  CHECK(mi_reserve_huge_os_pages_at(1, 0, 0) == ENOMEM);
  CHECK(atomic_load(&_mi_stats.arenas.current) == 0);
  /* the option's reservation at start falls back to normal pages */
  mi_option_set(mi_option_reserve_huge_os_pages, 1);
  _mi_arenas_reserve_from_options();
  mi_fault_counters_t k = counters();
  CHECK(k.calls[mi_fault_huge] == (MI_SECURE ? 0 : 2)); /* secure builds never pin */
  CHECK(k.events[mi_fault_event_huge_fallback] == 2);
  CHECK(atomic_load(&_mi_stats.arenas.current) == ((int64_t)1 << 30));
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL && _mi_arena_contains(p)); /* served from the arena */
  mi_free(p);
  check_accounting();
}

static void test_huge_pages_fail_enomem_option_falls_back_to_normal_pages(void** state) {
  (void)state;
  in_child(&huge_fallback_body);
}

static void arena_fallback_body(void) {
  /* an arena with room for one large segment: the second comes from the OS */
  CHECK(mi_reserve_os_memory(MI_SEGMENT_SIZE * 2, false, false) == 0);
  void* a = mi_malloc(LARGE_SIZE); /* 8 MiB segment: the whole arena */
  void* b = mi_malloc(LARGE_SIZE);
  CHECK(a != NULL && b != NULL);
  CHECK(_mi_arena_contains(a) && !_mi_arena_contains(b));
  mi_fault_counters_t k = counters();
  CHECK(k.events[mi_fault_event_arena_fallback] >= 1);
  CHECK(k.calls[mi_fault_commit] == 1); /* the reserved-only arena committed its chunk */
  mi_free(a);
  mi_free(b);
  check_accounting();
}

static void test_arena_full_segment_falls_back_to_os(void** state) {
  (void)state;
  in_child(&arena_fallback_body);
}

static void arena_reserve_fails_body(void) {
  mi_option_set(mi_option_retry_on_oom, 0);
  set_policy(mi_fault_reserve, 1, 2, mi_fault_error_oom); /* the aligned attempt and the over-reserve */
  CHECK(mi_reserve_os_memory((size_t)64 << 20, false, false) == ENOMEM);
  CHECK(atomic_load(&_mi_stats.arenas.current) == 0);
  void* p = mi_malloc(LARGE_SIZE); /* straight from the OS */
  CHECK(p != NULL && !_mi_arena_contains(p));
  mi_free(p);
  check_accounting();
}

static void test_arena_reservation_fails_enomem_os_serves(void** state) {
  (void)state;
  in_child(&arena_reserve_fails_body);
}

static void commit_fails_body(void) {
  mi_option_set(mi_option_retry_on_oom, 0);
  CHECK(mi_reserve_os_memory((size_t)64 << 20, false, false) == 0);
  /* the arena's commit fails: the OS is asked directly instead */
  set_policy(mi_fault_commit, 1, -1, mi_fault_error_oom);
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL && !_mi_arena_contains(p));
  CHECK(counters().events[mi_fault_event_commit_failed] == 1);
  mi_free(p);
  /* commit and reserve both fail: NULL with ENOMEM, the chunk back in the arena */
  set_policy(mi_fault_any, 1, -1, mi_fault_error_oom);
  errno = 0;
  p = mi_malloc(LARGE_SIZE);
  CHECK(p == NULL && errno == ENOMEM);
  mi_fault_set_policy(NULL);
  p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL && _mi_arena_contains(p));
  mi_free(p);
  check_accounting();
}

static void test_commit_failure_falls_back_to_os_then_enomem(void** state) {
  (void)state;
  in_child(&commit_fails_body);
}

static void decommit_fails_body(void) {
  CHECK(mi_reserve_os_memory(MI_SEGMENT_SIZE * 2, false, false) == 0);
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL && _mi_arena_contains(p));
  memset(p, 0xAB, LARGE_SIZE);
  unsigned long long commits = counters().calls[mi_fault_commit];
  set_policy(mi_fault_decommit, 1, -1, mi_fault_error_oom);
  mi_free(p); /* back to the arena: the decommit fails, the chunk stays committed */
  CHECK(counters().events[mi_fault_event_decommit_failed] == 1);
  mi_fault_set_policy(NULL);
  unsigned char* q = (unsigned char*)mi_calloc(1, LARGE_SIZE);
  CHECK(q != NULL && _mi_arena_contains(q));
  CHECK(counters().calls[mi_fault_commit] == commits); /* still committed: no commit needed */
  for (size_t i = 0; i < LARGE_SIZE; i += 4096) CHECK(q[i] == 0);
  mi_free(q);
  check_accounting();
}

static void test_decommit_failure_chunk_stays_committed(void** state) {
  (void)state;
  in_child(&decommit_fails_body);
}

static void purge_fails_body(void) {
  /* fill and free a small page, then make its purge fail; a live block of
     another size keeps the segment (an empty one would be unmapped whole) */
  void* keep = mi_malloc(2000);
  void* blocks[512];
  for (int i = 0; i < 512; i++) blocks[i] = mi_malloc(100);
  for (int i = 0; i < 512; i++) mi_free(blocks[i]);
  int64_t committed = atomic_load(&_mi_stats.committed.current);
  int64_t purged = atomic_load(&_mi_stats.purged.total);
  set_policy(mi_fault_purge, 1, -1, mi_fault_error_oom);
  mi_collect(true);
  mi_fault_counters_t k = counters();
  CHECK(k.calls[mi_fault_purge] >= 1 && k.events[mi_fault_event_purge_failed] >= 1);
  CHECK(atomic_load(&_mi_stats.committed.current) == committed); /* still committed, still counted */
  CHECK(atomic_load(&_mi_stats.purged.total) == purged);
  /* the next purge without faults succeeds */
  mi_fault_set_policy(NULL);
  mi_collect(true);
  CHECK(atomic_load(&_mi_stats.committed.current) < committed);
  CHECK(atomic_load(&_mi_stats.purged.total) > purged);
  mi_free(keep);
  check_accounting();
}

static void test_purge_failure_page_stays_committed(void** state) {
  (void)state;
  in_child(&purge_fails_body);
}

static void release_fails_body(void) {
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  int64_t reserved = atomic_load(&_mi_stats.reserved.current);
  set_policy(mi_fault_release, 1, -1, mi_fault_error_oom);
  mi_free(p); /* the OS refuses the segment back: it stays counted */
  CHECK(counters().events[mi_fault_event_release_failed] == 1);
  CHECK(atomic_load(&_mi_stats.reserved.current) == reserved);
  check_accounting();
}

static void test_release_failure_range_stays_counted(void** state) {
  (void)state;
  in_child(&release_fails_body);
}

/* mi_purge_all_ex(MI_PURGE_RECLAIM) where the OS refuses an empty arena's
   release: the arena stays as it was (counted, listed), the status says
   PARTIAL; the next pass gives it back. */
static void reclaim_release_fails_body(void) {
  mi_free(mi_malloc(16));
  CHECK(mi_purge_all_ex(MI_PURGE_FORCE | MI_PURGE_RECLAIM, 0, NULL) == MI_PURGE_OK); /* the cache emptied */
  CHECK(mi_reserve_os_memory(16 << 20, false, false) == 0);
  int64_t reserved = atomic_load(&_mi_stats.reserved.current);
  set_policy(mi_fault_release, 1, -1, mi_fault_error_other);
  mi_purge_all_report_t r;
  r.size = sizeof(r);
  CHECK(mi_purge_all_ex(MI_PURGE_FORCE | MI_PURGE_RECLAIM, 0, &r) == MI_PURGE_PARTIAL);
  CHECK(r.reclaimed && r.arenas_reclaimed == 0 && r.arena_reclaim_bytes == 0);
  CHECK(atomic_load(&_mi_stats.reserved.current) == reserved);
  mi_fault_set_policy(NULL);
  size_t size = 0;
  void* area = mi_arena_area(1, &size);
  CHECK(area != NULL && size == (16 << 20));
  CHECK(mi_purge_all_ex(MI_PURGE_FORCE | MI_PURGE_RECLAIM, 0, &r) == MI_PURGE_OK);
  CHECK(r.arenas_reclaimed == 1 && r.arena_reclaim_bytes == (16 << 20));
  CHECK(mi_arena_area(1, NULL) == NULL);
  check_accounting();
}

static void test_reclaim_release_fails_arena_kept_partial(void** state) {
  (void)state;
  in_child(&reclaim_release_fails_body);
}

/* Hole purge where the OS refuses to discard: the holes and the
   never-carved tail stay as they were (nothing counted, the free blocks
   still listed: 54 of 55 were lost when the eager-zero knob, on in Debug
   builds, had zeroed their links first), every block intact; the next
   sweep discards them. */
static size_t page_free_bytes(const void* p) {
  const mi_page_t* page = _mi_segment_page_of(_mi_ptr_segment(p), p);
  size_t free_bytes = 0, hole_bytes = 0, pinned = 0;
  _mi_page_holes_census(page, &free_bytes, &hole_bytes, &pinned);
  return free_bytes;
}

static void holes_discard_fails_body(void) {
  mi_option_set(mi_option_purge_delay, 100000); /* freed pages stay committed, to be reused */
  static uint8_t* old[640];
  for (size_t i = 0; i < 640; i++) {
    old[i] = (uint8_t*)mi_malloc(1024);
    memset(old[i], 0x5A, 1024);
  }
  uint8_t* kept = old[100]; /* its page's other blocks become holes */
  for (size_t i = 0; i < 640; i++) {
    if (old[i] != kept) mi_free(old[i]);
  }
  mi_heap_t* heap = mi_heap_new();
  uint8_t* fresh = (uint8_t*)mi_heap_malloc(heap, 64); /* a page on a used slot: its tail */
  memset(fresh, 0x3C, 64);
  size_t free_bytes = page_free_bytes(kept);
  CHECK(free_bytes >= 16 * 1024);
  set_policy(mi_fault_purge, 1, -1, mi_fault_error_other);
  mi_on_thread_idle();
  mi_purge_holes_stats_t st;
  mi_purge_holes_stats_get(&st);
  CHECK(counters().injected[mi_fault_purge] >= 2);
  CHECK(st.purged_bytes == 0 && st.purged_blocks == 0 && st.unformed_bytes == 0);
  CHECK(st.discard_calls >= 1);
  /* (the secure build holds freed pages back a while: no page on a used slot yet) */
  CHECK(MI_SECURE || st.unformed_discard_calls >= 1);
  CHECK(page_free_bytes(kept) == free_bytes); /* every free block still listed */
  mi_fault_set_policy(NULL);
  CHECK(mi_purge_all_ex(MI_PURGE_FORCE, 0, NULL) == MI_PURGE_OK);
  mi_purge_holes_stats_get(&st);
  CHECK(st.purged_bytes > 0 && (MI_SECURE || st.unformed_bytes > 0));
  CHECK(page_free_bytes(kept) == free_bytes); /* listed or in holes */
  CHECK(kept[0] == 0x5A && kept[1023] == 0x5A && fresh[0] == 0x3C && fresh[63] == 0x3C);
  mi_free(kept);
  mi_heap_destroy(heap);
  check_accounting();
}

static void test_holes_discard_fails_nothing_counted_next_sweep_does(void** state) {
  (void)state;
  in_child(&holes_discard_fails_body);
}

#if MI_SECURE
static int protect_error;
static void on_error(int err, void* arg) {
  (void)arg;
  protect_error = err;
}

static void protect_fails_body(void) {
  mi_register_error(&on_error, NULL);
  mi_option_set(mi_option_retry_on_oom, 0);
  set_policy(mi_fault_protect, 1, -1, mi_fault_error_oom);
  errno = 0;
  void* p = mi_malloc(LARGE_SIZE); /* its guard page cannot be set: not used */
  CHECK(p == NULL && errno == ENOMEM);
  CHECK(protect_error == ENOMEM);
  CHECK(counters().events[mi_fault_event_protect_failed] >= 1);
  mi_fault_set_policy(NULL);
  p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  mi_free(p);
  check_accounting();
}

static void test_protect_failure_reported(void** state) {
  (void)state;
  in_child(&protect_fails_body);
}

#if MI_GUARDED
static void guard_everything(void) {
  mi_option_set(mi_option_guarded_sample_rate, 1);
  mi_option_set(mi_option_guarded_min, 0);
  mi_option_set(mi_option_guarded_max, 1 << 20);
}

static void guard_free_protect_fails_body(void) {
  guard_everything();
  void* p = mi_malloc(1000);
  CHECK(p != NULL);
  set_policy(mi_fault_protect, 1, 1, mi_fault_error_oom);
  mi_free(p); /* cannot be fenced off: given back at once */
  CHECK(counters().events[mi_fault_event_protect_failed] == 1);
  mi_fault_set_policy(NULL);
  p = mi_malloc(1000);
  CHECK(p != NULL);
  memset(p, 1, 1000);
  mi_free(p);
  check_accounting();
}

static void test_guard_free_protect_fails_counted_and_reusable(void** state) {
  (void)state;
  in_child(&guard_free_protect_fails_body);
}

static void guard_unprotect_fails_body(void) {
  guard_everything();
  /* fill the guarded quarantine, then make the next eviction's unprotect fail */
  for (int i = 0; i < 64; i++) mi_free(mi_malloc(1000));
  void* p = mi_malloc(1000);
  CHECK(p != NULL);
  set_policy(mi_fault_protect, 2, 1, mi_fault_error_oom); /* 1: fence p off, 2: lift the oldest */
  int64_t segments = atomic_load(&_mi_stats.segments.current);
  mi_free(p);
  CHECK(counters().events[mi_fault_event_protect_failed] == 1);
  CHECK(atomic_load(&_mi_stats.segments.current) == segments - 1); /* the evicted one went to the OS */
  mi_fault_set_policy(NULL);
  for (int i = 0; i < 70; i++) {
    void* q = mi_malloc(1000);
    CHECK(q != NULL);
    memset(q, 2, 1000); /* nothing handed out is still fenced off */
    mi_free(q);
  }
  check_accounting();
}

static void test_guard_unprotect_fails_segment_goes_to_os(void** state) {
  (void)state;
  in_child(&guard_unprotect_fails_body);
}

#endif

#if MI_SECURE
/* A freed large block is discarded, then fenced off (its pages made
   inaccessible), and held. Each failure keeps every block handed out usable. */
static void large_fence_fails_body(void) {
  mi_option_set(mi_option_large_quarantine, 64);
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  memset(p, 1, LARGE_SIZE);
  set_policy(mi_fault_protect, 1, 1, mi_fault_error_oom);
  mi_free(p); /* cannot be fenced off: cached at once, as with the quarantine off */
  CHECK(counters().events[mi_fault_event_protect_failed] == 1);
  CHECK(counters().calls[mi_fault_purge] == 1); /* its contents discarded before the fence */
  mi_fault_set_policy(NULL);
  p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  memset(p, 2, LARGE_SIZE);
  mi_free(p);
  check_accounting();
}

static void test_large_fence_fails_contents_discarded_and_reusable(void** state) {
  (void)state;
  in_child(&large_fence_fails_body);
}

static void large_discard_fails_body(void) {
  mi_option_set(mi_option_large_quarantine, 64);
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  set_policy(mi_fault_purge, 1, 1, mi_fault_error_oom);
  mi_free(p); /* fenced off, its contents kept (reported) */
  CHECK(counters().events[mi_fault_event_purge_failed] == 1);
  mi_fault_set_policy(NULL);
  mi_collect(true); /* the quarantine emptied: open again, to the cache */
  p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  memset(p, 2, LARGE_SIZE);
  mi_free(p);
  check_accounting();
}

static void test_large_discard_fails_counted_memory_reusable(void** state) {
  (void)state;
  in_child(&large_discard_fails_body);
}

static void large_unfence_fails_body(void) {
  mi_option_set(mi_option_large_quarantine, 1);
  mi_free(mi_malloc(LARGE_SIZE)); /* held in the one slot */
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  int64_t segments = atomic_load(&_mi_stats.segments.current);
  set_policy(mi_fault_protect, 2, 1, mi_fault_error_oom); /* 1: fence p off, 2: open the one it evicts */
  mi_free(p);
  CHECK(counters().events[mi_fault_event_protect_failed] == 1);
  CHECK(atomic_load(&_mi_stats.segments.current) == segments - 1); /* the evicted one went to the OS */
  mi_fault_set_policy(NULL);
  for (int i = 0; i < 4; i++) {
    void* q = mi_malloc(LARGE_SIZE);
    CHECK(q != NULL);
    memset(q, 3, LARGE_SIZE); /* nothing handed out is still fenced off */
    mi_free(q);
  }
  check_accounting();
}

static void test_large_unfence_fails_evicted_segment_goes_to_os(void** state) {
  (void)state;
  in_child(&large_unfence_fails_body);
}
#endif

static void cache_guard_lift_fails_body(void) {
  mi_option_set(mi_option_segment_cache, 4);
  void* p = mi_malloc(LARGE_SIZE);
  CHECK(p != NULL);
  mi_free(p); /* cached, dirty, with its guard page */
  set_policy(mi_fault_protect, 1, -1, mi_fault_error_oom);
  mi_collect(true); /* purging the cache must lift the guard first: refused */
  CHECK(counters().events[mi_fault_event_protect_failed] >= 1);
  CHECK(counters().calls[mi_fault_purge] == 0); /* not purged with the guard in place */
  mi_fault_set_policy(NULL);
  p = mi_malloc(LARGE_SIZE); /* the cached segment, still usable */
  CHECK(p != NULL);
  memset(p, 3, LARGE_SIZE);
  mi_free(p);
  check_accounting();
}

static void test_cache_guard_lift_fails_segment_not_purged(void** state) {
  (void)state;
  in_child(&cache_guard_lift_fails_body);
}
#endif

#if MI_SECURE
/* realloc's room for a block grown into the large sizes (secure builds) cannot
   be had: the block is taken at the size asked, with no error reported and
   errno kept; without the room, growing it again moves it. */
static int room_errors;
static void count_room_error(int err, void* arg) {
  (void)err;
  (void)arg;
  room_errors++;
}

static void realloc_room_fails_body(void) {
  mi_option_set(mi_option_retry_on_oom, 0);
  uint8_t* p = (uint8_t*)mi_malloc(200000);
  CHECK(p != NULL);
  memset(p, 7, 200000);
  mi_register_error(&count_room_error, NULL);
  /* the room's segment: the aligned attempt and the over-reserve both fail;
     the plain block's segment then comes at the first attempt */
  set_policy(mi_fault_reserve, 1, 2, mi_fault_error_oom);
  errno = EINTR;
  uint8_t* q = (uint8_t*)mi_realloc(p, 204800);
  CHECK(q != NULL && errno == EINTR && room_errors == 0);
  mi_fault_counters_t k = counters();
  CHECK(k.selected_calls == 3 && k.selected_injected == 2);
  CHECK(mi_usable_size(q) == 204800 && q[0] == 7 && q[199999] == 7);
  mi_fault_set_policy(NULL);
  uint8_t* r = (uint8_t*)mi_realloc(q, 300000);
  CHECK(r != NULL && r != q && r[199999] == 7);
  mi_register_error(NULL, NULL);
  mi_free(r);
  check_accounting();
}

static void test_realloc_room_fails_block_served_no_error(void** state) {
  (void)state;
  in_child(&realloc_room_fails_body);
}
#endif

#if defined(_WIN32)
static void (*const child_bodies[])(void) = {
    &nth_and_count_body,
    &probability_body,
    &heap_new_fails_body,
    &heap_dump_fails_body,
    &retry_transient_body,
    &retry_persistent_body,
    &retry_not_oom_body,
    &retry_meets_other_error_body,
    &large_breaker_body,
    &resident_query_fails_body,
    &aligned_trim_body,
    &misaligned_trim_body,
    &arena_table_full_body,
    &huge_fallback_body,
    &arena_fallback_body,
    &arena_reserve_fails_body,
    &commit_fails_body,
    &decommit_fails_body,
    &purge_fails_body,
    &release_fails_body,
    &reclaim_release_fails_body,
    &holes_discard_fails_body,
#if MI_SECURE
    &protect_fails_body,
#endif
#if MI_SECURE && MI_GUARDED
    &guard_free_protect_fails_body,
#endif
#if MI_SECURE && MI_GUARDED
    &guard_unprotect_fails_body,
#endif
#if MI_SECURE
    &cache_guard_lift_fails_body,
    &realloc_room_fails_body,
#endif
};
#define CHILD_BODIES ((int)(sizeof(child_bodies) / sizeof(child_bodies[0])))

static int child_body_index(void (*body)(void)) {
  for (int i = 0; i < CHILD_BODIES; i++) {
    if (child_bodies[i] == body) return i;
  }
  return -1;
}

/* --case N: one case's body, in this fresh process */
static int run_child_case(int index) {
  if (index < 0 || index >= CHILD_BODIES) return 2;
  child_options();
  child_bodies[index]();
  return 0;
}
#endif

int main(int argc, char** argv) {
  mi_child_save_signals();
  self_path = argv[0];
  /* secure builds sample one allocation in thousands into a guarded segment
     of its own, whose release (mi_collect empties its quarantine) moves the
     counters these cases compare: one run in ten of
     test_purge_failure_page_stays_committed */
  mi_option_set(mi_option_guarded_sample_rate, 0);
  /* and hold freed large blocks fenced off (secure-large.c) before they go
     to the segment cache: the cases of the cache's and the arena's paths
     free a large block and look at it there at once; the quarantine's own
     paths have cases of their own, which turn it back on */
  mi_option_set(mi_option_large_quarantine, 0);
  if (argc > 1 && strcmp(argv[1], "--env-child") == 0) return env_child();
#if defined(_WIN32)
  if (argc > 2 && strcmp(argv[1], "--case") == 0) return run_child_case(atoi(argv[2]));
#endif
  if (!mi_fault_available()) {
    printf("test-fault: built without the fault hooks (MI_FAULT=OFF)\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fault_nth_and_count_fail_exactly_those_calls),
    cmocka_unit_test(test_probability_reproducible),
    cmocka_unit_test(test_environment_all_fail_enomem_and_one_summary_line),
    cmocka_unit_test(test_environment_kind_release_fails_only_releases),
    cmocka_unit_test(test_environment_invalid_value_warned),
    cmocka_unit_test(test_environment_valid_values_not_warned),
#if MI_SECURE && !defined(_WIN32)
    cmocka_unit_test(test_environment_zero_first_failures_enomem_or_served),
#endif
    cmocka_unit_test(test_environment_startup_failures_allocations_served),
    cmocka_unit_test(test_heap_new_reserve_fails_returns_null_enomem),
    cmocka_unit_test(test_heap_dump_json_reserve_fails_returns_null_enomem),
    cmocka_unit_test(test_retry_transient_oom_hidden_from_caller),
    cmocka_unit_test(test_retry_persistent_oom_fails_fast_until_success),
    cmocka_unit_test(test_retry_not_for_other_errors),
    cmocka_unit_test(test_retry_meets_other_error_stops_at_once),
    cmocka_unit_test(test_large_pages_failing_fall_back_breaker_skips),
    cmocka_unit_test(test_resident_query_fails_density_kept),
    cmocka_unit_test(test_aligned_reserve_fails_trimmed_over_reserve_serves),
    cmocka_unit_test(test_misaligned_trim_release_fails_ranges_kept_counted),
    cmocka_unit_test(test_arena_table_full_17th_reservation_enomem),
    cmocka_unit_test(test_huge_pages_fail_enomem_option_falls_back_to_normal_pages),
    cmocka_unit_test(test_arena_full_segment_falls_back_to_os),
    cmocka_unit_test(test_arena_reservation_fails_enomem_os_serves),
    cmocka_unit_test(test_commit_failure_falls_back_to_os_then_enomem),
    cmocka_unit_test(test_decommit_failure_chunk_stays_committed),
    cmocka_unit_test(test_purge_failure_page_stays_committed),
    cmocka_unit_test(test_release_failure_range_stays_counted),
    cmocka_unit_test(test_reclaim_release_fails_arena_kept_partial),
    cmocka_unit_test(test_holes_discard_fails_nothing_counted_next_sweep_does),
#if MI_SECURE
    cmocka_unit_test(test_protect_failure_reported),
#if MI_GUARDED
    cmocka_unit_test(test_guard_free_protect_fails_counted_and_reusable),
    cmocka_unit_test(test_guard_unprotect_fails_segment_goes_to_os),
#endif
    cmocka_unit_test(test_cache_guard_lift_fails_segment_not_purged),
#if MI_SECURE
    cmocka_unit_test(test_large_fence_fails_contents_discarded_and_reusable),
    cmocka_unit_test(test_large_discard_fails_counted_memory_reusable),
    cmocka_unit_test(test_large_unfence_fails_evicted_segment_goes_to_os),
#endif
    cmocka_unit_test(test_realloc_room_fails_block_served_no_error),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
