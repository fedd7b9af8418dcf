/* Shared helpers for the mimalloc-pprof benchmark workloads.
 * Header-only: each workload is a single .c file that includes this.
 * Everything here is deterministic (fixed seeds), uses only libc
 * malloc/free/realloc/calloc (so LD_PRELOAD decides the allocator), and
 * makes no allocator calls of its own. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

/* ---- deterministic PRNG: splitmix64 seeding + xorshift64* ---- */
typedef struct {
  uint64_t s;
} rng_t;

static inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static inline void rng_seed(rng_t* r, uint64_t seed) {
  r->s = splitmix64(seed) | 1;
}
static inline uint64_t rng_next(rng_t* r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545F4914F6CDD1Dull;
}
/* uniform in [0, n) (n > 0); slight modulo bias is irrelevant here */
static inline uint64_t rng_below(rng_t* r, uint64_t n) {
  return rng_next(r) % n;
}
/* uniform in [lo, hi] */
static inline uint64_t rng_range(rng_t* r, uint64_t lo, uint64_t hi) {
  return lo + rng_below(r, hi - lo + 1);
}
/* log-uniform in [lo, hi]: pick a power-of-two bucket uniformly, then a
 * uniform size inside it. Gives the "mostly small" skew of real programs
 * when combined with a skewed bucket choice (see rng_size_skewed). */
static inline size_t rng_log_uniform(rng_t* r, size_t lo, size_t hi) {
  int blo = 63 - __builtin_clzll((unsigned long long)lo);
  int bhi = 63 - __builtin_clzll((unsigned long long)hi);
  int b = blo + (int)rng_below(r, (uint64_t)(bhi - blo + 1));
  size_t a = (size_t)1 << b;
  size_t z = (a << 1) - 1;
  if (a < lo) a = lo;
  if (z > hi) z = hi;
  return (size_t)rng_range(r, a, z);
}

/* ---- argument parsing: prog [threads] [scale] ---- */
typedef struct {
  int threads;
  double scale;
} args_t;

static inline args_t parse_args(int argc, char** argv, int default_threads) {
  args_t a = {default_threads, 1.0};
  if (argc > 1) a.threads = atoi(argv[1]);
  if (argc > 2) a.scale = atof(argv[2]);
  if (a.threads < 1) a.threads = 1;
  if (a.scale <= 0) a.scale = 1.0;
  return a;
}
/* base * scale, at least min_v */
static inline long scaled(long base, double scale, long min_v) {
  double v = (double)base * scale;
  return v < (double)min_v ? min_v : (long)v;
}

/* ---- keep the compiler from deleting work ---- */
static volatile uint64_t bench_sink;
static inline void sink(uint64_t v) {
  bench_sink += v;
}

/* write to the first and last byte plus one byte per 4 KiB page */
static inline void touch(void* p, size_t n, uint8_t v) {
  uint8_t* b = (uint8_t*)p;
  if (n == 0) return;
  for (size_t i = 0; i < n; i += 4096) b[i] = v;
  b[n - 1] = v;
}

static inline void* xmalloc(size_t n) {
  void* p = malloc(n);
  if (p == NULL && n != 0) {
    fprintf(stderr, "out of memory (%zu bytes)\n", n);
    exit(3);
  }
  return p;
}

/* run fn(i) on `threads` threads (thread 0 included) and join them */
static inline void run_threads(int threads, void* (*fn)(void*), void* args, size_t arg_size) {
  pthread_t* t = (pthread_t*)calloc((size_t)threads, sizeof(pthread_t));
  if (!t) exit(3);
  for (int i = 0; i < threads; i++) {
    if (pthread_create(&t[i], NULL, fn, (char*)args + (size_t)i * arg_size) != 0) {
      perror("pthread_create");
      exit(3);
    }
  }
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  free(t);
}

/* Per-thread argument of the workloads that split a fixed amount of work. */
typedef struct {
  int id;
  long iters;
  uint64_t acc;
  char pad[64];
} split_arg_t;

/* Divide `total` iterations among `threads` threads running fn, and return
   the sum of their checksums. */
static inline uint64_t run_split(int threads, long total, void* (*fn)(void*)) {
  split_arg_t* ta = (split_arg_t*)calloc((size_t)threads, sizeof(split_arg_t));
  if (!ta) exit(3);
  for (int i = 0; i < threads; i++) {
    ta[i].id = i;
    ta[i].iters = total / threads;
  }
  run_threads(threads, fn, ta, sizeof(split_arg_t));
  uint64_t acc = 0;
  for (int i = 0; i < threads; i++) acc += ta[i].acc;
  free(ta);
  return acc;
}

#endif
