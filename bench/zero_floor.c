/* zero_floor: the least time that zeroing freed blocks can take, measured
 * with no allocator at all.
 *
 * The secure build zeroes every block it frees (docs/secure-mode.md). This
 * times the zeroing alone on blocks drawn the way the workloads draw them:
 * COUNT blocks with sizes log-uniform in [LO, HI] (common.h's generator,
 * rounded up to 16 bytes), each written first as `touch` writes it (first
 * and last byte, one byte a page), then zeroed. The blocks are slots of a
 * pool larger than the last-level cache, picked at random, as a workload's
 * freed blocks are scattered over its heap. Three passes: the writes alone,
 * then with non-temporal stores (how the secure build zeroes blocks above
 * 8 KiB on x86-64), then with memset. Each pass is the best of RUNS; the
 * zeroing's cost is a pass less the writes alone.
 *
 * usage: zero_floor LO HI COUNT [RUNS]
 * randsizes at scale 1 frees 3,000,000 x 2.7% = 81,000 blocks of 8..128 KiB:
 *   zero_floor 8193 131072 81000  */
#include "workloads/common.h"

#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define POOL_SLOTS 256 /* of HI bytes each: 32 MiB at HI = 128 KiB */

typedef enum { PASS_WRITES, PASS_STREAM, PASS_MEMSET } pass_t;

#if defined(__SSE2__)
static void zero_stream(void* p, size_t n) {
  __m128i* b = (__m128i*)p;
  __m128i* end = (__m128i*)((uint8_t*)p + n);
  const __m128i zero = _mm_setzero_si128();
  for (; b < end; b++) _mm_stream_si128(b, zero);
  _mm_sfence();
}
#endif

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* one pass: the same blocks (same seed) every time */
static double run_pass(uint8_t* pool, size_t slot_size, size_t lo, size_t hi, long count, pass_t pass) {
  rng_t r;
  rng_seed(&r, 4242);
  double start = now_ms();
  for (long i = 0; i < count; i++) {
    size_t n = (rng_log_uniform(&r, lo, hi) + 15) & ~(size_t)15;
    uint8_t* p = pool + rng_below(&r, POOL_SLOTS) * slot_size;
    touch(p, n, (uint8_t)i);
    if (pass == PASS_MEMSET) memset(p, 0, n);
#if defined(__SSE2__)
    if (pass == PASS_STREAM) zero_stream(p, n);
#endif
    sink(p[n - 1]);
  }
  return now_ms() - start;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: zero_floor LO HI COUNT [RUNS]\n");
    return 2;
  }
  size_t lo = (size_t)atol(argv[1]);
  size_t hi = (size_t)atol(argv[2]);
  long count = atol(argv[3]);
  int runs = argc > 4 ? atoi(argv[4]) : 5;
  if (lo == 0 || hi < lo || count <= 0 || runs <= 0) {
    fprintf(stderr, "zero_floor: need 0 < LO <= HI, COUNT > 0, RUNS > 0\n");
    return 2;
  }
  size_t slot_size = (hi + 15 + 4095) & ~(size_t)4095;
  uint8_t* pool = (uint8_t*)xmalloc(POOL_SLOTS * slot_size);
  memset(pool, 1, POOL_SLOTS * slot_size); /* every page mapped before timing */

  static const char* const names[] = {"writes alone", "non-temporal stores", "memset"};
  double best[3];
  for (int pass = 0; pass < 3; pass++) {
    best[pass] = -1;
#if !defined(__SSE2__)
    if (pass == PASS_STREAM) continue;
#endif
    for (int k = 0; k < runs; k++) {
      double ms = run_pass(pool, slot_size, lo, hi, count, (pass_t)pass);
      if (best[pass] < 0 || ms < best[pass]) best[pass] = ms;
    }
  }
  rng_t r;
  rng_seed(&r, 4242);
  double bytes = 0;
  for (long i = 0; i < count; i++) {
    bytes += (double)((rng_log_uniform(&r, lo, hi) + 15) & ~(size_t)15);
    (void)rng_next(&r); /* the slot pick */
  }
  printf("zero_floor: %ld blocks of %zu..%zu B, %.2f GB, best of %d\n", count, lo, hi, bytes / 1e9, runs);
  for (int pass = 0; pass < 3; pass++) {
    if (best[pass] < 0) continue;
    if (pass == PASS_WRITES) printf("  %-20s %8.1f ms\n", names[pass], best[pass]);
    else printf("  %-20s %8.1f ms  (zeroing %.1f ms)\n", names[pass], best[pass], best[pass] - best[PASS_WRITES]);
  }
  free(pool);
  return 0;
}
