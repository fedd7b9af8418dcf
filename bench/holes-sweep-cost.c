/* What an idle sweep costs on a 1 GiB heap (docs/memory-return.md): 1 GiB
   of 1 KiB blocks, a scattered 1 in 20 kept, the rest freed; then
   mi_on_thread_idle() timed: the first sweep (it discards the holes), a
   second at once (every page unchanged: skipped), a full one
   (purge_holes_full_every 1: every page looked at again, nothing left to
   discard), and one within the pacing interval (nothing swept). The best
   of 5 of each. Build: cc -O2 bench/holes-sweep-cost.c -Iinclude
   libmimalloc.a -lpthread */
#define _POSIX_C_SOURCE 200809L
#include <mimalloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK 1024
#define N ((size_t)1 << 20) /* 1 GiB */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double timed_idle(void) {
  double t = now_ms();
  mi_on_thread_idle();
  return now_ms() - t;
}

int main(void) {
  double best[4] = {1e9, 1e9, 1e9, 1e9};
  for (int round = 0; round < 5; round++) {
    void** blocks = (void**)calloc(N, sizeof(void*));
    if (blocks == NULL) return 1;
    for (size_t i = 0; i < N; i++) {
      blocks[i] = mi_malloc(BLOCK);
      if (blocks[i] == NULL) return 1;
      memset(blocks[i], 1, BLOCK);
    }
    for (size_t i = 0; i < N; i++) {
      if ((((uint64_t)i * 0x9E3779B97F4A7C15ULL) >> 32) % 20 != 0) {
        mi_free(blocks[i]);
        blocks[i] = NULL;
      }
    }
    mi_option_set(mi_option_purge_holes_min_interval, 0);
    mi_option_set(mi_option_purge_holes_full_every, 1000);
    double t[4];
    t[0] = timed_idle(); /* (the first sweep of a thread is a full one) */
    t[1] = timed_idle();
    mi_option_set(mi_option_purge_holes_full_every, 1);
    t[2] = timed_idle();
    mi_option_set(mi_option_purge_holes_min_interval, 3600000);
    t[3] = timed_idle();
    for (int k = 0; k < 4; k++) {
      if (t[k] < best[k]) best[k] = t[k];
    }
    mi_purge_holes_stats_t s;
    mi_purge_holes_stats_get(&s);
    if (round == 0)
      printf("holes after the first sweep: %zu MiB in %zu discards\n", s.purged_bytes >> 20, s.discard_calls);
    for (size_t i = 0; i < N; i++) mi_free(blocks[i]);
    free(blocks);
    mi_collect(true);
  }
  printf("| sweep | ms (best of 5) |\n|---|---|\n");
  printf("| first: discards the holes | %.1f |\n", best[0]);
  printf("| again at once: pages unchanged, skipped | %.2f |\n", best[1]);
  printf("| full: every page looked at again | %.1f |\n", best[2]);
  printf("| within the pacing interval | %.3f |\n", best[3]);
  return 0;
}
