/* w7 shortthreads: thousands of short-lived threads.
 *
 * Threads are started in waves of T concurrent threads (T = the threads
 * argument) until N threads in total have run. Each thread allocates a
 * little: 64 small blocks (16..512 B) and one medium block (4..64 KiB),
 * frees half of the small ones itself and hands the other half to the main
 * thread, which frees them after the thread has exited (blocks owned by a
 * dead thread's heap). Measures per-thread heap setup/teardown and the
 * handling of memory left behind by exited threads.
 *
 * usage: w7_shortthreads [threads] [scale]  */
#include "common.h"

#define SMALL 64

typedef struct {
  long seq;
  void* handoff[SMALL / 2];
  uint64_t acc;
} targ_t;

static void* worker(void* arg) {
  targ_t* ta = (targ_t*)arg;
  rng_t r;
  rng_seed(&r, 31337 + (uint64_t)ta->seq);
  void* objs[SMALL];
  uint64_t acc = 0;
  for (int i = 0; i < SMALL; i++) {
    size_t n = rng_log_uniform(&r, 16, 512);
    objs[i] = xmalloc(n);
    memset(objs[i], i, n < 32 ? n : 32);
  }
  size_t mn = rng_log_uniform(&r, 4096, 65536);
  uint8_t* m = (uint8_t*)xmalloc(mn);
  touch(m, mn, 7);
  acc += m[mn - 1];
  free(m);
  for (int i = 0; i < SMALL; i++) {
    if (i & 1) ta->handoff[i / 2] = objs[i];
    else {
      acc += *(uint8_t*)objs[i];
      free(objs[i]);
    }
  }
  ta->acc = acc;
  return NULL;
}

int main(int argc, char** argv) {
  args_t a = parse_args(argc, argv, 2);
  long total = scaled(12000, a.scale, a.threads);
  targ_t* ta = (targ_t*)calloc((size_t)a.threads, sizeof(targ_t));
  pthread_t* th = (pthread_t*)calloc((size_t)a.threads, sizeof(pthread_t));
  uint64_t acc = 0;
  long seq = 0;
  while (seq < total) {
    int wave = 0;
    for (; wave < a.threads && seq < total; wave++, seq++) {
      ta[wave].seq = seq;
      if (pthread_create(&th[wave], NULL, worker, &ta[wave]) != 0) {
        perror("pthread_create");
        return 3;
      }
    }
    for (int i = 0; i < wave; i++) {
      pthread_join(th[i], NULL);
      acc += ta[i].acc;
      for (int j = 0; j < SMALL / 2; j++) {
        acc += *(uint8_t*)ta[i].handoff[j];
        free(ta[i].handoff[j]);
      }
    }
  }
  sink(acc);
  printf("shortthreads concurrency=%d threads=%ld acc=%llu\n", a.threads, total, (unsigned long long)acc);
  free(th);
  free(ta);
  return 0;
}
