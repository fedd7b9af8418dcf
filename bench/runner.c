/* runner: run one benchmark process and report its wall time and peak RSS.
 *
 * usage: runner [-p PRELOAD_LIB] [-t TIMEOUT_S] [-o RESULT_FILE] -- prog [args...]
 *
 * Forks, sets LD_PRELOAD=PRELOAD_LIB in the child only (so the runner
 * itself is never affected by the allocator under test; without -p the
 * child gets no LD_PRELOAD at all), execs prog, and waits with wait4().
 * The child's stdout/stderr are inherited. One line is written to
 * RESULT_FILE (or to stderr without -o):
 *
 *   <wall_seconds> <ru_maxrss_kb of the child> <status>
 *
 * status is the child's exit code, 128+signal if it was killed by a
 * signal, or "timeout" if it ran longer than TIMEOUT_S (then it is killed).
 * The runner's exit code is 0 if the child exited 0, else 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t timed_out = 0;
static pid_t child = -1;

static void on_alarm(int sig) {
  (void)sig;
  timed_out = 1;
  if (child > 0) kill(child, SIGKILL);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const char* preload = NULL;
  const char* outfile = NULL;
  int timeout = 0;
  int opt;
  while ((opt = getopt(argc, argv, "+p:t:o:")) != -1) {
    switch (opt) {
      case 'p': preload = optarg; break;
      case 't': timeout = atoi(optarg); break;
      case 'o': outfile = optarg; break;
      default:
        fprintf(stderr, "usage: %s [-p lib] [-t timeout_s] [-o result_file] -- prog [args...]\n", argv[0]);
        return 2;
    }
  }
  if (optind >= argc) {
    fprintf(stderr, "runner: no program given\n");
    return 2;
  }
  char** cmd = &argv[optind];

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);

  double t0 = now_s();
  child = fork();
  if (child < 0) {
    perror("runner: fork");
    return 2;
  }
  if (child == 0) {
    if (preload && preload[0]) setenv("LD_PRELOAD", preload, 1);
    else unsetenv("LD_PRELOAD");
    execvp(cmd[0], cmd);
    fprintf(stderr, "runner: cannot exec %s: %s\n", cmd[0], strerror(errno));
    _exit(127);
  }
  if (timeout > 0) alarm((unsigned)timeout);

  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof(ru));
  pid_t w;
  do {
    w = wait4(child, &status, 0, &ru);
  } while (w < 0 && errno == EINTR);
  double t1 = now_s();
  alarm(0);
  if (w < 0) {
    perror("runner: wait4");
    return 2;
  }

  char st[32];
  int ok = 0;
  if (timed_out) snprintf(st, sizeof(st), "timeout");
  else if (WIFEXITED(status)) {
    snprintf(st, sizeof(st), "%d", WEXITSTATUS(status));
    ok = (WEXITSTATUS(status) == 0);
  } else if (WIFSIGNALED(status)) snprintf(st, sizeof(st), "%d", 128 + WTERMSIG(status));
  else snprintf(st, sizeof(st), "unknown");

  FILE* out = stderr;
  if (outfile) {
    out = fopen(outfile, "w");
    if (!out) {
      perror("runner: open result file");
      return 2;
    }
  }
  fprintf(out, "%.6f %ld %s\n", t1 - t0, (long)ru.ru_maxrss, st);
  if (outfile) fclose(out);
  return ok ? 0 : 1;
}
