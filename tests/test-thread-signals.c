#define _GNU_SOURCE
/* The threads the library starts block every signal (issue 37): a signal the
   program blocks in its own threads and waits for (sigwait, sigtimedwait,
   signalfd) reaches the waiter, never our background thread, which took it
   and died of it while it inherited the mask of whoever started it. And a
   program whose last thread ends with pthread_exit ends: our thread ends
   when idle, where it slept for good and kept the process alive. Each case
   runs in a child (a fork child has no background thread until it frees
   something); both builds, POSIX only (the thread count and masks: Linux). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <mimalloc.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child-exit.h"

/* Child exit codes besides 0 (each says what went wrong). */
#define CHILD_NO_THREAD 2    /* the background thread did not start: the case proves nothing */
#define CHILD_NOT_RECEIVED 3 /* sigtimedwait did not return the signal */
#define CHILD_NOT_BLOCKED 4  /* the background thread leaves a signal unblocked */
#define CHILD_MASK_CHANGED 5 /* the starting thread's own mask was not given back */

/* The threads of this process other than the calling one; -1 where it cannot
   be told (not Linux). */
static int other_threads(void) {
#if defined(__linux__)
  DIR* d = opendir("/proc/self/task");
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] != '.' && atoi(e->d_name) != (int)gettid()) n++;
  }
  closedir(d);
  return n;
#else
  return -1;
#endif
}

/* True once every other thread sleeps (state S in /proc/self/task/N/stat):
   a new thread starts with every signal blocked (glibc's pthread_create) and
   takes its own mask only once it runs; one asleep in its wait has done so.
   Not Linux: true. */
static bool other_threads_asleep(void) {
#if defined(__linux__)
  DIR* d = opendir("/proc/self/task");
  if (d == NULL) return false;
  bool asleep = true;
  struct dirent* e;
  while (asleep && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == (int)gettid()) continue;
    char path[320];
    snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
    FILE* f = fopen(path, "r");
    if (f == NULL) continue; /* gone */
    char line[512];
    const char* close_paren = (fgets(line, sizeof(line), f) != NULL ? strrchr(line, ')') : NULL);
    if (close_paren == NULL || close_paren[1] != ' ' || close_paren[2] != 'S') asleep = false;
    fclose(f);
  }
  closedir(d);
  return asleep;
#else
  return true;
#endif
}

/* Free memory so that a purge is scheduled, which starts the background
   thread (segment/background.c: on the first purge that becomes due), and
   wait until it has run into its wait (at most 30 s; a condition, not a
   time the test depends on). */
static void start_background_thread(void) {
  mi_option_set(mi_option_purge_thread, 1);
  mi_option_set(mi_option_purge_delay, 10);
  enum { N = 64 };
  void* p[N];
  for (int i = 0; i < N; i++) {
    p[i] = mi_malloc(64 * 1024);
    memset(p[i], 1, 64 * 1024);
  }
  for (int i = 0; i < N; i++) mi_free(p[i]);
  for (int i = 0; i < 30000 && !other_threads_asleep(); i++) usleep(1000);
}

/* The program's threads block SIGUSR1 and wait for it; it is sent to the
   process (any thread not blocking it may be given it). */
static int case_blocked_signal_waited_for(void) {
  start_background_thread();
  if (other_threads() == 0) return CHILD_NO_THREAD;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  kill(getpid(), SIGUSR1);
  struct timespec timeout = {30, 0}; /* it is pending already: never waited out */
  int sig = sigtimedwait(&set, NULL, &timeout);
  return (sig == SIGUSR1 ? 0 : CHILD_NOT_RECEIVED);
}

/* Every other thread's blocked set (/proc/self/task/N/status, SigBlk) holds
   every standard signal that can be blocked. */
static int case_every_signal_blocked(void) {
  /* the thread that started it keeps its own mask */
  sigset_t before, after;
  pthread_sigmask(SIG_SETMASK, NULL, &before);
  start_background_thread();
  if (other_threads() == 0) return CHILD_NO_THREAD;
  pthread_sigmask(SIG_SETMASK, NULL, &after);
  for (int sig = 1; sig < 32; sig++) {
    if (sigismember(&before, sig) != sigismember(&after, sig)) return CHILD_MASK_CHANGED;
  }
#if defined(__linux__)
  DIR* d = opendir("/proc/self/task");
  if (d == NULL) return CHILD_NO_THREAD;
  struct dirent* e;
  int checked = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == (int)gettid()) continue;
    char path[320];
    snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
    FILE* f = fopen(path, "r");
    if (f == NULL) continue;
    char line[256];
    unsigned long long blocked = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
      if (strncmp(line, "SigBlk:", 7) == 0) blocked = strtoull(line + 7, NULL, 16);
    }
    fclose(f);
    for (int sig = 1; sig < 32; sig++) {
      if (sig == SIGKILL || sig == SIGSTOP) continue;
      if ((blocked & (1ULL << (sig - 1))) == 0) {
        fprintf(stderr, "thread %s: signal %d not blocked (SigBlk %llx)\n", e->d_name, sig, blocked);
        closedir(d);
        return CHILD_NOT_BLOCKED;
      }
    }
    checked++;
  }
  closedir(d);
  if (checked == 0) return CHILD_NO_THREAD;
#endif
  return 0;
}

/* The program's last thread ends with pthread_exit while our background
   thread runs: the process must end (with status 0, as it does when its
   last thread ends), which it does once ours ends too. */
static int case_last_thread_pthread_exit(void) {
  start_background_thread();
  if (other_threads() == 0) return CHILD_NO_THREAD;
  pthread_exit(NULL);
}

static int run_in_child(int (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) child_exit(fn());
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (WIFSIGNALED(status)) print_error("child died of signal %d\n", WTERMSIG(status));
    else print_error("child exited %d\n", WEXITSTATUS(status));
  }
  return status;
}

static void test_background_thread_blocked_signal_delivered_to_waiter(void** state) {
  (void)state;
  int status = run_in_child(&case_blocked_signal_waited_for);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_background_thread_every_signal_blocked(void** state) {
  (void)state;
  int status = run_in_child(&case_every_signal_blocked);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_background_thread_last_program_thread_exits_process_ends(void** state) {
  (void)state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) child_exit(case_last_thread_pthread_exit());
  /* a watchdog, not a time the test depends on: the process ends about a
     second after its last thread (ours idles that long), or never */
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 1200 && done == 0; i++) {
    done = waitpid(pid, &status, WNOHANG);
    if (done == 0) usleep(50 * 1000);
  }
  if (done == 0) {
    print_error("the process did not end within 60 s of its last thread's pthread_exit\n");
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  assert_int_equal(done, pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_background_thread_last_program_thread_exits_process_ends),
      cmocka_unit_test(test_background_thread_blocked_signal_delivered_to_waiter),
      cmocka_unit_test(test_background_thread_every_signal_blocked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
