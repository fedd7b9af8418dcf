/* w8 idle_rss: is memory returned to the OS after a burst, while idle?
 *
 * T threads (default and as run by the suite: 2) together allocate about
 * 300 MB * scale of blocks (16 B .. 256 KiB, log-skewed, every page
 * written), then each frees all of its blocks in a shuffled order. The
 * threads then block on a condition variable without making any allocator
 * call. The main thread samples the process RSS from /proc/self/statm at
 * 0 ms, 100 ms, 1 s and 5 s after the frees completed (with no allocator
 * calls of its own during sampling) and prints:
 *
 *   t_ms,rss_kb
 *   -1,<rss just before the frees>
 *   0,<...>
 *   100,<...>
 *   1000,<...>
 *   5000,<...>
 *
 * usage: w8_idle_rss [threads] [scale]  */
#include "common.h"
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  int id;
  size_t bytes;
  char pad[64];
} targ_t;

static pthread_barrier_t allocated, go, freed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int done = 0;

static size_t pick_size(rng_t* r) {
  unsigned u = (unsigned)rng_below(r, 100);
  if (u < 80) return rng_log_uniform(r, 16, 1024);
  if (u < 97) return rng_log_uniform(r, 1025, 32 * 1024);
  return rng_log_uniform(r, 32 * 1024 + 1, 256 * 1024);
}

static void* worker(void* arg) {
  targ_t* ta = (targ_t*)arg;
  rng_t r;
  rng_seed(&r, 808 + (uint64_t)ta->id);
  size_t cap = 1 << 16, cnt = 0, total = 0;
  void** ptrs = (void**)xmalloc(cap * sizeof(void*));
  while (total < ta->bytes) {
    if (cnt == cap) {
      cap *= 2;
      ptrs = (void**)realloc(ptrs, cap * sizeof(void*));
      if (!ptrs) exit(3);
    }
    size_t n = pick_size(&r);
    uint8_t* p = (uint8_t*)xmalloc(n);
    touch(p, n, (uint8_t)cnt);
    ptrs[cnt++] = p;
    total += n;
  }
  /* shuffle, so frees come in an order unrelated to allocation order */
  for (size_t i = cnt - 1; i > 0; i--) {
    size_t j = (size_t)rng_below(&r, i + 1);
    void* t = ptrs[i];
    ptrs[i] = ptrs[j];
    ptrs[j] = t;
  }
  pthread_barrier_wait(&allocated);
  pthread_barrier_wait(&go); /* main samples the peak RSS in between */
  for (size_t i = 0; i < cnt; i++) free(ptrs[i]);
  free(ptrs);
  pthread_barrier_wait(&freed);
  /* idle: block without any allocator call until main is done sampling */
  pthread_mutex_lock(&lock);
  while (!done) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  return NULL;
}

static long rss_kb(void) {
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  long size = 0, res = 0;
  char* s = buf;
  size = strtol(s, &s, 10);
  res = strtol(s, &s, 10);
  (void)size;
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void sleep_until(const struct timespec* t0, long ms) {
  struct timespec t = *t0;
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
  }
}

int main(int argc, char** argv) {
  args_t a = parse_args(argc, argv, 2);
  size_t total = (size_t)scaled(300L * 1000 * 1000, a.scale, 1000000);
  targ_t* ta = (targ_t*)calloc((size_t)a.threads, sizeof(targ_t));
  pthread_t* th = (pthread_t*)calloc((size_t)a.threads, sizeof(pthread_t));
  pthread_barrier_init(&allocated, NULL, (unsigned)a.threads + 1);
  pthread_barrier_init(&go, NULL, (unsigned)a.threads + 1);
  pthread_barrier_init(&freed, NULL, (unsigned)a.threads + 1);
  for (int i = 0; i < a.threads; i++) {
    ta[i].id = i;
    ta[i].bytes = total / (size_t)a.threads;
    if (pthread_create(&th[i], NULL, worker, &ta[i]) != 0) {
      perror("pthread_create");
      return 3;
    }
  }
  static const long at_ms[4] = {0, 100, 1000, 5000};
  long samples[4];
  pthread_barrier_wait(&allocated);
  long before = rss_kb();
  pthread_barrier_wait(&go);
  pthread_barrier_wait(&freed);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int k = 0; k < 4; k++) {
    sleep_until(&t0, at_ms[k]);
    samples[k] = rss_kb();
  }
  pthread_mutex_lock(&lock);
  done = 1;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < a.threads; i++) pthread_join(th[i], NULL);
  printf("t_ms,rss_kb\n-1,%ld\n", before);
  for (int k = 0; k < 4; k++) printf("%ld,%ld\n", at_ms[k], samples[k]);
  free(th);
  free(ta);
  return 0;
}
