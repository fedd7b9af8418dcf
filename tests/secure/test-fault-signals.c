#define _GNU_SOURCE
/* The secure build's guard-page fault handler (src/prim/unix/prim.c) and
   SIGSEGV/SIGBUS that were sent, not caused by an access (raise, kill: si_code
   <= 0; issue 37): such a signal is passed on as if the handler were not there
   (the program's earlier handler runs; with none the process dies of it), and
   the handler stays installed, so a later fault on one of our guard pages is
   still reported. Faults that are not ours still go where they went.

   Each case runs in a fresh process (this program again, "--child CASE"):
   ours is installed as the library starts, so a program handler installed
   before it is installed by a constructor that runs earlier (environment
   MI_TEST_EARLY_HANDLER). Built only with MI_SECURE; POSIX only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <mimalloc.h>

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../child-env.h"
#include "../child-exit.h"

/* ---- The program's own handler ---------------------------------------------- */

static volatile sig_atomic_t program_sent_seen; /* sent SIGSEGV/SIGBUS that reached it */
static bool early_installed;
static bool early_ignored;
static bool early_found_other; /* something was installed before the program's */

static void say(const char* s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

/* Counts a sent signal and returns; on a real fault it says so, puts back the
   default action and returns, so the access faults again and the process dies
   of it (as CPython's faulthandler does). */
static void program_handler(int sig, siginfo_t* info, void* context) {
  (void)context;
  if (info->si_code <= 0) {
    program_sent_seen++;
    return;
  }
  say("program handler: fault\n");
  signal(sig, SIG_DFL);
}

static void program_handler_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = &program_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
}

static bool program_handler_is_current(int sig) {
  struct sigaction cur;
  sigaction(sig, NULL, &cur);
  return (cur.sa_flags & SA_SIGINFO) != 0 && cur.sa_sigaction == &program_handler;
}

/* Before the library's constructor (priority 101 runs before the default):
   the program's handler ("handler") or SIGSEGV ignored ("ignore"). */
__attribute__((constructor(101))) static void early_handler_install(void) {
  const char* e = getenv("MI_TEST_EARLY_HANDLER");
  if (e == NULL) return;
  struct sigaction cur;
  sigaction(SIGSEGV, NULL, &cur);
  early_found_other = (cur.sa_handler != SIG_DFL);
  if (strcmp(e, "handler") == 0) {
    program_handler_install();
    early_installed = true;
  } else if (strcmp(e, "ignore") == 0) {
    signal(SIGSEGV, SIG_IGN);
    early_ignored = true;
  }
}

/* A handler installed after ours that passes the signal on to whatever was
   there before it and sends it again (CPython's faulthandler). */
static struct sigaction chained_prev;
static void chaining_handler(int sig) {
  say("program handler: chained\n");
  sigaction(sig, &chained_prev, NULL);
  raise(sig);
}

/* ---- Cases (in the child) ---------------------------------------------------- */

#define CHILD_BAD_SETUP 90  /* the early handler was not underneath ours: the case proves nothing */
#define CHILD_NOT_PASSED 91 /* a sent signal did not reach the program's handler */

#define LARGE_SIZE (300 * 1024)
static void* volatile sink;

/* A freed large block is fenced off (secure-large.c): reading it faults on
   our page. `misuse` false reads a live block instead. */
static void large_block_read(bool misuse) {
  char* p = (char*)mi_malloc(LARGE_SIZE);
  memset(p, 'S', LARGE_SIZE);
  sink = p;
  if (misuse) {
    mi_free(p);
    sink = (void*)(uintptr_t)((volatile char*)p)[LARGE_SIZE / 2];
  } else {
    sink = (void*)(uintptr_t)((volatile char*)p)[LARGE_SIZE / 2];
    mi_free(p);
  }
}

static int run_case(const char* name) {
  mi_option_set(mi_option_guarded_sample_rate, 0); /* no sampled guard pages in the way */
  if (early_installed || early_ignored) {
    /* ours must be on top of the program's, with the program's found alone */
    struct sigaction cur;
    sigaction(SIGSEGV, NULL, &cur);
    if (early_found_other || program_handler_is_current(SIGSEGV) || program_handler_is_current(SIGBUS) ||
        cur.sa_handler == SIG_IGN) {
      say("set-up: the program's handler is not underneath the library's\n");
      return CHILD_BAD_SETUP;
    }
  }
  if (strcmp(name, "raise-segv") == 0) {
    raise(SIGSEGV);
  } else if (strcmp(name, "raise-bus") == 0) {
    raise(SIGBUS);
  } else if (strcmp(name, "kill-segv") == 0) {
    kill(getpid(), SIGSEGV);
  } else if (strcmp(name, "none") == 0) {
    /* the clean twin: nothing sent */
  } else if (strcmp(name, "chained-raise") == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = &chaining_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &chained_prev);
    raise(SIGSEGV);
  } else if (strcmp(name, "sent-to-program") == 0) {
    kill(getpid(), SIGSEGV);
    raise(SIGSEGV);
    raise(SIGBUS);
    if (program_sent_seen != 3) return CHILD_NOT_PASSED;
  } else if (strcmp(name, "sent-then-uaf") == 0 || strcmp(name, "sent-then-live") == 0) {
    kill(getpid(), SIGSEGV);
    raise(SIGSEGV);
    if (program_sent_seen != 2) return CHILD_NOT_PASSED;
    say("program: sent signals handled\n");
    large_block_read(strcmp(name, "sent-then-uaf") == 0);
  } else if (strcmp(name, "sent-ignored-then-uaf") == 0 || strcmp(name, "sent-ignored-then-live") == 0) {
    /* a sent SIGSEGV the program ignores is ignored; ours stays */
    raise(SIGSEGV);
    say("program: sent signal ignored\n");
    large_block_read(strcmp(name, "sent-ignored-then-uaf") == 0);
  } else if (strcmp(name, "foreign-fault") == 0) {
    /* a fault on memory that is not ours */
    char* q = (char*)mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return 92;
    ((volatile char*)q)[8] = 1;
  } else {
    return 93;
  }
  return 0;
}

/* ---- Running a case in a fresh process --------------------------------------- */

/* The child's wait status; its stderr (then its stdout) in `err`. `early`:
   what the child's constructor installs before the library's (NULL: nothing). */
static int run_self(const char* name, const char* early, char* err, size_t size) {
  char setting[64];
  const char* extra[2] = {NULL, NULL};
  if (early != NULL) {
    snprintf(setting, sizeof(setting), "MI_TEST_EARLY_HANDLER=%s", early);
    extra[0] = setting;
  }
  return run_self_env_status(name, extra, err, size);
}

static void expect_death(const char* name, const char* early, int sig, const char* must_say) {
  char err[8192];
  int status = run_self(name, early, err, sizeof(err));
  if (!WIFSIGNALED(status) || WTERMSIG(status) != sig) {
    print_error("%s: expected death by signal %d, got status 0x%x; stderr: %s\n", name, sig, status, err);
  }
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), sig);
  if (must_say != NULL) {
    if (strstr(err, must_say) == NULL) print_error("%s: expected '%s' in: %s\n", name, must_say, err);
    assert_non_null(strstr(err, must_say));
  } else {
    if (strstr(err, "mimalloc: error:") != NULL) print_error("%s: unexpected report: %s\n", name, err);
    assert_null(strstr(err, "mimalloc: error:"));
  }
}

static void expect_clean(const char* name, const char* early) {
  char err[8192];
  int status = run_self(name, early, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) print_error("%s: status 0x%x; stderr: %s\n", name, status, err);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_null(strstr(err, "mimalloc: error:"));
}

#define UAF_LINE "mimalloc: error: use-after-free detected in freed large block at 0x"

/* (a) no handler of the program's: a sent SIGSEGV or SIGBUS kills it, no report */
static void test_sent_segv_no_program_handler_kills(void** state) {
  (void)state;
  expect_clean("none", NULL);
  expect_death("raise-segv", NULL, SIGSEGV, NULL);
  expect_death("kill-segv", NULL, SIGSEGV, NULL);
}
static void test_sent_sigbus_no_program_handler_kills(void** state) {
  (void)state;
  expect_death("raise-bus", NULL, SIGBUS, NULL);
}
/* a handler installed after ours that hands the signal back to ours */
static void test_sent_segv_chained_back_kills(void** state) {
  (void)state;
  expect_death("chained-raise", NULL, SIGSEGV, "program handler: chained");
}
/* (b) the program's handler, installed before ours, gets every sent signal */
static void test_sent_segv_earlier_program_handler_called(void** state) {
  (void)state;
  expect_clean("sent-to-program", "handler");
}
/* (c) after sent signals, a fault on our page is still reported (and the
   program's handler still called for it); (d) its clean twin */
static void test_sent_segv_then_guard_fault_reported(void** state) {
  (void)state;
  expect_clean("sent-then-live", "handler");
  expect_death("sent-then-uaf", "handler", SIGSEGV, UAF_LINE);
  char err[8192];
  int status = run_self("sent-then-uaf", "handler", err, sizeof(err));
  assert_true(WIFSIGNALED(status));
  assert_non_null(strstr(err, "program: sent signals handled"));
  assert_non_null(strstr(err, "program handler: fault")); /* passed on after the report */
}
static void test_sent_segv_ignored_then_guard_fault_reported(void** state) {
  (void)state;
  expect_clean("sent-ignored-then-live", "ignore");
  expect_death("sent-ignored-then-uaf", "ignore", SIGSEGV, UAF_LINE);
}
/* a fault that is not ours: the program's handler, or death, with no report */
static void test_foreign_fault_no_program_handler_kills(void** state) {
  (void)state;
  expect_death("foreign-fault", NULL, SIGSEGV, NULL);
}
static void test_foreign_fault_earlier_program_handler_called(void** state) {
  (void)state;
  expect_death("foreign-fault", "handler", SIGSEGV, NULL);
  char err[8192];
  int status = run_self("foreign-fault", "handler", err, sizeof(err));
  assert_true(WIFSIGNALED(status));
  assert_non_null(strstr(err, "program handler: fault"));
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--child") == 0) child_exit(run_case(argv[2]));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sent_segv_no_program_handler_kills),
      cmocka_unit_test(test_sent_sigbus_no_program_handler_kills),
      cmocka_unit_test(test_sent_segv_chained_back_kills),
      cmocka_unit_test(test_sent_segv_earlier_program_handler_called),
      cmocka_unit_test(test_sent_segv_then_guard_fault_reported),
      cmocka_unit_test(test_sent_segv_ignored_then_guard_fault_reported),
      cmocka_unit_test(test_foreign_fault_no_program_handler_kills),
      cmocka_unit_test(test_foreign_fault_earlier_program_handler_called),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
