/* Running this test program again as a fresh process with an environment of
   our choosing (the MIMALLOC_* of the run removed, `extra` added), for the
   options read at process start: the child runs `main` with "--child MODE"
   and its exit status, stdout and stderr come back. Include after
   <cmocka.h>; POSIX only. */
#ifndef MI_TEST_CHILD_ENV_H
#define MI_TEST_CHILD_ENV_H

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

/* Reads all of fd into buf (NUL-terminated, cut at size - 1). */
static void child_env_read_all(int fd, char* buf, size_t size) {
  size_t got = 0;
  for (;;) {
    ssize_t r = read(fd, buf + got, size - 1 - got);
    if (r <= 0) break;
    got += (size_t)r;
    if (got >= size - 1) {
      char sink[4096];
      while (read(fd, sink, sizeof(sink)) > 0) {
      }
      break;
    }
  }
  buf[got] = 0;
}

/* The child's wait status (waitpid's: a child that dies of a signal is told
   by it); its stdout and stderr end up together in `out` (stderr first, then
   stdout, each whole). */
__attribute__((unused)) static int run_self_env_status(const char* mode, const char* const* extra, char* out,
                                                       size_t outsize) {
  int fo[2], fe[2];
  assert_int_equal(pipe(fo), 0);
  assert_int_equal(pipe(fe), 0);
  size_t n = 0;
  while (environ[n] != NULL) n++;
  char** env = (char**)calloc(n + 16, sizeof(char*));
  assert_non_null(env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "MIMALLOC_", 9) != 0) env[k++] = environ[i];
  for (size_t i = 0; extra[i] != NULL && k < n + 15; i++) env[k++] = (char*)extra[i];
  env[k] = NULL;
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  assert_true(len > 0);
  self[len] = 0;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fo[1], 1);
    dup2(fe[1], 2);
    close(fo[0]);
    close(fo[1]);
    close(fe[0]);
    close(fe[1]);
    char* argv[] = {self, (char*)"--child", (char*)mode, NULL};
    execve(self, argv, env);
    _exit(127);
  }
  close(fo[1]);
  close(fe[1]);
  /* stderr first: a child writes little to either, well within a pipe's buffer */
  size_t half = outsize / 2;
  child_env_read_all(fe[0], out, half);
  size_t used = strlen(out);
  child_env_read_all(fo[0], out + used, outsize - used);
  close(fo[0]);
  close(fe[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  free(env);
  return status;
}

/* The same, the child's exit code (-1 if it died of a signal). */
__attribute__((unused)) static int run_self_env(const char* mode, const char* const* extra, char* out, size_t outsize) {
  int status = run_self_env_status(mode, extra, out, outsize);
  return (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

#endif
