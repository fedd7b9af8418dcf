/* Running a case of misuse in a child process and checking how it died:
   shared by the tests of aborting behaviour. Include after
   <cmocka.h>. */
#ifndef MI_TEST_CHILD_H
#define MI_TEST_CHILD_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void (*mi_case_fn)(bool misuse);

static struct sigaction mi_saved_segv, mi_saved_bus;

/* Call first in main, before cmocka installs its signal handlers. */
static void mi_child_save_signals(void) {
  sigaction(SIGSEGV, NULL, &mi_saved_segv);
  sigaction(SIGBUS, NULL, &mi_saved_bus);
}

static void mi_child_restore_signals(void) {
  sigaction(SIGSEGV, &mi_saved_segv, NULL);
  sigaction(SIGBUS, &mi_saved_bus, NULL);
  signal(SIGABRT, SIG_DFL);
}

static bool misuse_flag;
static mi_case_fn case_fn;

static void run_case(void) {
  case_fn(misuse_flag);
}

/* Run a case in a child with stderr captured; returns the wait status. */
static int run_child(mi_case_fn fn, bool misuse, char* err, size_t err_size) {
  int pipefd[2];
  assert_int_equal(pipe(pipefd), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* cmocka's handlers would turn the signal into a test failure: put back
       what was there before it (the allocator's fault reporter) */
    mi_child_restore_signals();
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    case_fn = fn;
    misuse_flag = misuse;
    run_case();
    _exit(0);
  }
  close(pipefd[1]);
  size_t n = 0;
  ssize_t r;
  while (n + 1 < err_size && (r = read(pipefd[0], err + n, err_size - 1 - n)) > 0) n += (size_t)r;
  err[n] = 0;
  close(pipefd[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return status;
}

/* The misuse dies of `sig` with a report line starting with
   "mimalloc: error: <message>"; the control exits 0 with no report. */
__attribute__((unused)) static void expect(mi_case_fn fn, int sig, const char* message) {
  char err[8192];
  int status = run_child(fn, false, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    print_error("control failed: status %d, stderr: %s\n", status, err);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_null(strstr(err, "mimalloc: error:"));
  status = run_child(fn, true, err, sizeof(err));
  if (!WIFSIGNALED(status) || WTERMSIG(status) != sig) print_error("misuse: status %d, stderr: %s\n", status, err);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), sig);
  if (message != NULL) {
    char line[160];
    snprintf(line, sizeof(line), "mimalloc: error: %s 0x", message);
    if (strstr(err, line) == NULL) print_error("expected '%s' in: %s\n", line, err);
    assert_non_null(strstr(err, line));
    assert_non_null(strstr(err, "(size "));
  }
}

/* A correct program's case (`misuse` false): it exits 0, with no report. */
__attribute__((unused)) static void expect_clean_exit(mi_case_fn fn) {
  char err[8192];
  int status = run_child(fn, false, err, sizeof(err));
  if (err[0] != 0) print_message("%s", err);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_null(strstr(err, "mimalloc: error:"));
}

/* One test per case: the test `test_fn` asserts that `case_NAME` dies of
   `sig` with `message` (and its control exits 0). The test's name states that
   outcome (..._reported, ..._faults); the case's names the misuse. */
#define MI_CHILD_TEST(test_fn, name, sig, message) \
  static void test_fn(void** state) { \
    (void)state; \
    expect(&case_##name, sig, message); \
  }

/* The secure build's light level (MIMALLOC_SECURE_LEVEL=light,
   docs/secure-mode.md "Levels") leaves zero on free (with its check when a
   block is handed out), the fenced quarantine of freed large blocks and the
   small blocks' quarantine out: a test of one of those skips where it is off, so that the secure
   tests run at both levels and each protection a level keeps is seen to
   work there. */
#define MI_SKIP_UNLESS_ON(option) \
  do { \
    if (mi_option_get(option) == 0) { \
      printf("(%s off: not at this level)\n", #option); \
      skip(); \
    } \
  } while (0)
#define MI_CHILD_TEST_WHEN(option, test_fn, name, sig, message) \
  static void test_fn(void** state) { \
    (void)state; \
    MI_SKIP_UNLESS_ON(option); \
    expect(&case_##name, sig, message); \
  }

#endif
