/* The purge tests' cases each run in a child process: its RSS and address
   space its own, under a watchdog (a deadlock dies of SIGALRM instead of
   hanging the suite). Include after "../testutil.h" and "../child.h". */
#ifndef MI_TEST_PURGE_CHILD_H
#define MI_TEST_PURGE_CHILD_H

#include <sys/wait.h>
#include <unistd.h>

#define MI_PURGE_CASE_WATCHDOG_S 120

/* The case passes if `body` returns with no TU_CHECK failed. */
static void run_in_child(void (*body)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    mi_child_restore_signals();
    alarm(MI_PURGE_CASE_WATCHDOG_S);
    body();
    fflush(NULL);
    _exit(tu_failures == 0 ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status)) print_error("the case died with signal %d\n", WTERMSIG(status));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

#endif
