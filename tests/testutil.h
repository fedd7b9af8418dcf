/* Shared helpers for the mimalloc-pprof test suite (cmocka based).
   Every test file defines _GNU_SOURCE before including this header. */
#ifndef MI_TESTUTIL_H
#define MI_TESTUTIL_H

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mimalloc.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

/* Hide a pointer from the optimizer so that writes up to the usable size
   (beyond the requested alloc_size) are not diagnosed or folded. */
static inline void* tu_launder(void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __asm__ volatile("" : "+r"(p) : : "memory");
#endif
  return p;
}

/* Hide a size from the optimizer (avoids -Walloc-size-larger-than on
   deliberately impossible requests). */
static inline size_t tu_opaque(size_t n) {
  volatile size_t v = n;
  return v;
}

static inline bool tu_is_aligned(const void* p, size_t align) {
  return align == 0 || ((uintptr_t)p % align) == 0;
}

static inline uint8_t tu_pat(size_t i, uint8_t seed) {
  return (uint8_t)(seed + i * 31u + (i >> 8) * 7u + 1u);
}

static inline void tu_fill(void* p, size_t n, uint8_t seed) {
  uint8_t* b = (uint8_t*)tu_launder(p);
  for (size_t i = 0; i < n; i++) b[i] = tu_pat(i, seed);
}

/* returns true if the first n bytes carry the pattern */
static inline bool tu_check(const void* p, size_t n, uint8_t seed) {
  const uint8_t* b = (const uint8_t*)tu_launder((void*)(uintptr_t)p);
  for (size_t i = 0; i < n; i++) {
    if (b[i] != tu_pat(i, seed)) {
      fprintf(stderr, "  pattern mismatch at %p + %zu (of %zu): got 0x%02x expected 0x%02x\n", (void*)b, i, n, b[i],
              tu_pat(i, seed));
      return false;
    }
  }
  return true;
}

static inline bool tu_all_bytes(const void* p, size_t n, uint8_t v) {
  const uint8_t* b = (const uint8_t*)tu_launder((void*)(uintptr_t)p);
  for (size_t i = 0; i < n; i++) {
    if (b[i] != v) {
      fprintf(stderr, "  byte at %p + %zu (of %zu) is 0x%02x, expected 0x%02x\n", (void*)b, i, n, b[i], v);
      return false;
    }
  }
  return true;
}

/* Deterministic PRNG (splitmix64 / xorshift) */
static inline uint64_t tu_rand(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static inline size_t tu_commit(void) {
  size_t commit = 0;
  mi_process_info(NULL, NULL, NULL, NULL, NULL, &commit, NULL, NULL);
  return commit;
}

/* resident set size from /proc/self/statm (bytes); on Windows the working set */
#if defined(_WIN32)
static inline size_t tu_rss(void) {
  size_t rss = 0;
  mi_process_info(NULL, NULL, NULL, &rss, NULL, NULL, NULL, NULL);
  return rss;
}
#else
static inline size_t tu_rss(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  unsigned long size = 0, resident = 0;
  int n = fscanf(f, "%lu %lu", &size, &resident);
  fclose(f);
  if (n != 2) return 0;
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}
#endif

/* Failure recording usable from any thread (cmocka asserts are only valid on
   the thread running the test). The test thread asserts tu_failures == 0. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((unused))
#endif
static atomic_long tu_failures;
#define TU_CHECK(cond) \
  do { \
    if (!(cond)) { \
      atomic_fetch_add(&tu_failures, 1); \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    } \
  } while (0)

#endif /* MI_TESTUTIL_H */
