/* The heap snapshot's cost on a 1 GiB heap (issue 23: "well under a
   second"): 1 GiB in blocks of mixed sizes (1 KiB, 8 KiB, 100 KiB and 4 MiB
   blocks, a quarter each by bytes), every other block freed in the small
   classes, then mi_heap_snapshot to a file with and without free maps,
   best of 5, wall-clock.
   build: cc -O2 bench/snapshot-cost.c -Iinclude -L<build> -lmimalloc -o snapshot-cost */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mimalloc-stats.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const char* path = (argc > 1 ? argv[1] : "/tmp/snapshot-cost.bin");
  static const size_t sizes[4] = {1024, 8192, 100 * 1024, 4 << 20};
  size_t total = 0;
  for (int k = 0; k < 4; k++) {
    size_t n = ((size_t)256 << 20) / sizes[k];
    void** p = (void**)malloc(n * sizeof(void*));
    for (size_t i = 0; i < n; i++) {
      p[i] = mi_malloc(sizes[k]);
      memset(p[i], 1, 64);
    }
    for (size_t i = 0; i < n; i += 2) {
      if (k < 3) mi_free(p[i]);
    }
    total += n * sizes[k];
    free(p);
  }
  mi_stats_t_decl(stats);
  mi_stats_get(&stats);
  for (unsigned flags = 0; flags <= MI_SNAPSHOT_BLOCKS; flags++) {
    double best = 1e9;
    off_t size = 0;
    for (int r = 0; r < 5; r++) {
      int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      double t0 = now();
      if (mi_heap_snapshot(fd, flags) != 0) return 1;
      double t = now() - t0;
      size = lseek(fd, 0, SEEK_END);
      close(fd);
      if (t < best) best = t;
    }
    printf("heap %.0f MiB allocated, committed %.0f MiB: snapshot%s %.1f ms (best of 5), %lld bytes\n",
           (double)total / (1 << 20), (double)stats.committed.current / (1 << 20), flags ? " with free maps" : "",
           best * 1e3, (long long)size);
  }
  unlink(path);
  return 0;
}
