/* The floor of a forked check (docs/fuzzing.md, "Speed"): the secure fuzz
   harness commits each corruption case in a forked child, which must die of
   the case's report, so that the parent's heap stays untouched. This
   measures what the fork alone costs, with nothing in the child: fork,
   _exit(0) at once, waitpid, in a process holding MB megabytes resident
   (the page tables copied, the parent's pages made copy-on-write, and
   written again after: the first write to each is a fault).
     fork_floor [ROUNDS]   prints microseconds a fork at 8, 48 and 192 MB */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double fork_floor_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char** argv) {
  int rounds = (argc > 1 ? atoi(argv[1]) : 200);
  const size_t sizes_mb[] = {8, 48, 192};
  for (size_t k = 0; k < sizeof(sizes_mb) / sizeof(sizes_mb[0]); k++) {
    size_t size = sizes_mb[k] << 20;
    char* mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return 1;
    memset(mem, 1, size);
    double fork_us = 0, rewrite_us = 0;
    for (int r = 0; r < rounds; r++) {
      double t0 = fork_floor_now();
      pid_t pid = fork();
      if (pid == 0) _exit(0);
      int status;
      if (pid < 0 || waitpid(pid, &status, 0) != pid) return 1;
      double t1 = fork_floor_now();
      /* a tenth of the pages written again, as a program goes on after
         the fork: each a copy-on-write fault while the child lived, a
         plain write after */
      for (size_t i = 0; i < size; i += 10 * 4096) mem[i]++;
      double t2 = fork_floor_now();
      fork_us += t1 - t0;
      rewrite_us += t2 - t1;
    }
    printf("fork_floor: %3zu MB resident: fork + exit + wait %7.1f us, a tenth of the pages written after %6.1f us\n",
           sizes_mb[k], fork_us / rounds, rewrite_us / rounds);
    munmap(mem, size);
  }
  return 0;
}
