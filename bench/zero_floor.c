/* zero_floor: the least time that zeroing a workload's freed blocks can
 * take, measured with no allocator at all.
 *
 * The secure build zeroes every block up to ZF_MAX_BLOCK it frees
 * (docs/secure-mode.md). COUNTS, written by zero_count.so while the
 * workload ran, lists those blocks by the secure build's block size. This
 * zeroes the same blocks the way the secure build does (zero_floor.h): up
 * to 512 bytes with inline 16-byte stores, 64 bytes a step and the last 64
 * overlapping; to 8 KiB with memset; above, with non-temporal stores and a
 * fence per block. Each block is first written as the workloads write the
 * least (its first and last byte and one byte a page: common.h's touch),
 * so the zeroing finds it as a freed block is found, not cold and unmapped.
 *
 * The blocks, shuffled with a fixed seed, are laid out one after the other
 * in a pool of 64 MiB, twice the last-level cache, wrapping around: each is
 * out of the cache when its turn comes again. With THREADS > 1 they are
 * dealt in turn to that many threads, each with its own part of the pool,
 * which zero at once (the workloads split their work evenly over their
 * threads). Two passes, each REPS times, alternating: the writes alone,
 * then the writes and the zeroing. The floor is the best of the second
 * less the best of the first.
 *
 * A pass's time is its threads' CPU time, not its wall time: the longest
 * thread's, or their sum spread over the cores if that is more (4 threads
 * on 2 cores take twice their CPU time each, as the workloads' do). Time
 * the machine gives to other processes does not count, so on a shared
 * machine the floor comes out low rather than high: the adjusted ratio it
 * serves errs against the secure build, never for it.
 *
 * usage: zero_floor [-r REPS] [-o RESULT_FILE] [-F FENCE_RESULT_FILE] COUNTS THREADS
 * Each result file gets one line as runner.c writes it: "<floor_s> <maxrss_kb> 0". */
#include "workloads/common.h"
#include "zero_floor.h"

#include <stdbool.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define POOL_BYTES ((size_t)64 << 20)
#define MAX_CLASSES 256 /* block classes are bytes in the shuffled sequence */

typedef struct {
  int id;
  int threads;
  uint8_t* pool;
  size_t pool_bytes;
  const uint8_t* seq; /* class of each block, all threads' */
  size_t nblocks;
  const size_t* class_size;
  double cpu_s; /* of the last pass */
  char pad[64];
} zarg_t;

enum { PASS_WRITES, PASS_ZERO, PASS_FENCE, PASS_KINDS };

static pthread_barrier_t start_line, finish_line;
static int pass_kind;    /* set by main between the barriers */
static int fence_layout; /* -F: large blocks start on a page */
static int passes_left;

static inline void zero_inline(uint8_t* p, size_t n) {
#if defined(__SSE2__)
  const __m128i z = _mm_setzero_si128();
  uint8_t* end = p + n;
  if (n >= 64) {
    for (uint8_t* q = p; q < end - 64; q += 64) {
      _mm_store_si128((__m128i*)q, z);
      _mm_store_si128((__m128i*)(q + 16), z);
      _mm_store_si128((__m128i*)(q + 32), z);
      _mm_store_si128((__m128i*)(q + 48), z);
      __asm__ volatile("" ::: "memory"); /* a loop of stores, as the secure build's, not a memset call */
    }
    _mm_storeu_si128((__m128i*)(end - 64), z);
    _mm_storeu_si128((__m128i*)(end - 48), z);
    _mm_storeu_si128((__m128i*)(end - 32), z);
    _mm_storeu_si128((__m128i*)(end - 16), z);
  } else {
    _mm_store_si128((__m128i*)p, z);
    _mm_storeu_si128((__m128i*)(end - 16), z);
    if (n > 32) _mm_store_si128((__m128i*)(p + 16), z);
  }
#else
  memset(p, 0, n);
#endif
}

static inline void zero_stream(uint8_t* p, size_t n) {
#if defined(__SSE2__)
  const __m128i z = _mm_setzero_si128();
  __m128i* b = (__m128i*)p;
  __m128i* end = (__m128i*)(p + n);
  for (; b + 4 <= end; b += 4) {
    _mm_stream_si128(b, z);
    _mm_stream_si128(b + 1, z);
    _mm_stream_si128(b + 2, z);
    _mm_stream_si128(b + 3, z);
  }
  for (; b < end; b++) _mm_stream_si128(b, z);
  _mm_sfence();
#else
  memset(p, 0, n);
#endif
}

static void fence(uint8_t* p, size_t n) {
  if (mprotect(p, n, PROT_NONE) != 0 || mprotect(p, n, PROT_READ | PROT_WRITE) != 0) {
    perror("zero_floor: mprotect");
    exit(3);
  }
}

static void run_blocks(const zarg_t* a, int kind) {
  size_t at = 0;
  for (size_t i = (size_t)a->id; i < a->nblocks; i += (size_t)a->threads) {
    size_t n = a->class_size[a->seq[i]];
    bool large = (n > ZF_MEDIUM_MAX);
    if (large && fence_layout) at = (at + 4095) & ~(size_t)4095;
    if (at + n > a->pool_bytes) at = 0;
    uint8_t* p = a->pool + at;
    at = (at + n + 63) & ~(size_t)63;
    touch(p, n, (uint8_t)i);
    if (kind != PASS_WRITES) {
      if (n <= ZF_INLINE_MAX) zero_inline(p, n);
      else if (n <= ZF_STREAM_MIN) memset(p, 0, n);
      else zero_stream(p, n);
    }
    if (kind == PASS_FENCE && large) fence(p, n);
    sink(p[n - 1]);
  }
}

static double now_s(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void* worker(void* arg) {
  zarg_t* a = (zarg_t*)arg;
  for (;;) {
    pthread_barrier_wait(&start_line);
    if (passes_left == 0) return NULL;
    double t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
    run_blocks(a, pass_kind);
    a->cpu_s = now_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    pthread_barrier_wait(&finish_line);
  }
}

static int write_result(const char* path, double floor_s, long maxrss_kb) {
  FILE* f = fopen(path, "w");
  if (f == NULL || fprintf(f, "%.6f %ld 0\n", floor_s, maxrss_kb) < 0 || fclose(f) != 0) {
    perror(path);
    return -1;
  }
  return 0;
}

/* the COUNTS file: "block_size count" lines; '#' lines are comments */
static size_t read_counts(const char* path, size_t* size, size_t* count, size_t* nclasses) {
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    perror(path);
    exit(2);
  }
  char line[256];
  size_t total = 0;
  *nclasses = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned long long s, c;
    if (line[0] == '#' || sscanf(line, "%llu %llu", &s, &c) != 2 || c == 0) continue;
    if (s == 0 || s > ZF_MAX_BLOCK || (s & 15) != 0 || *nclasses == MAX_CLASSES) {
      fprintf(stderr, "zero_floor: %s: bad block size %llu\n", path, s);
      exit(2);
    }
    size[*nclasses] = (size_t)s;
    count[(*nclasses)++] = (size_t)c;
    total += (size_t)c;
  }
  fclose(f);
  return total;
}

int main(int argc, char** argv) {
  int reps = 3, opt;
  const char *out = NULL, *fence_out = NULL;
  while ((opt = getopt(argc, argv, "r:o:F:")) != -1) {
    if (opt == 'r') reps = atoi(optarg);
    else if (opt == 'o') out = optarg;
    else if (opt == 'F') fence_out = optarg;
    else optind = argc + 1;
  }
  if (optind + 2 != argc || reps <= 0 || atoi(argv[optind + 1]) <= 0) {
    fprintf(stderr, "usage: zero_floor [-r REPS] [-o RESULT_FILE] [-F FENCE_RESULT_FILE] COUNTS THREADS\n");
    return 2;
  }
  int threads = atoi(argv[optind + 1]);
  static size_t size[MAX_CLASSES], count[MAX_CLASSES];
  size_t nclasses;
  size_t nblocks = read_counts(argv[optind], size, count, &nclasses);

  /* every block once, in an order of their own (Fisher-Yates, fixed seed) */
  uint8_t* seq = (uint8_t*)xmalloc(nblocks + 1);
  double bytes = 0;
  for (size_t c = 0, k = 0; c < nclasses; c++) {
    memset(seq + k, (int)c, count[c]);
    k += count[c];
    bytes += (double)size[c] * (double)count[c];
  }
  rng_t r;
  rng_seed(&r, 4242);
  for (size_t i = nblocks; i > 1; i--) {
    size_t j = (size_t)rng_below(&r, i);
    uint8_t t = seq[i - 1];
    seq[i - 1] = seq[j];
    seq[j] = t;
  }

  /* each thread's part of the pool, cache-line aligned, every page mapped before timing */
  fence_layout = (fence_out != NULL);
  int kinds = fence_layout ? PASS_KINDS : PASS_FENCE;
  size_t part = (POOL_BYTES / (size_t)threads) & ~(size_t)4095;
  if (part < 2 * ZF_MAX_BLOCK) part = (2 * ZF_MAX_BLOCK + 4095) & ~(size_t)4095;
  /* page-aligned, so that the fence changes only the block's pages */
  uint8_t* pool =
      (uint8_t*)mmap(NULL, part * (size_t)threads, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pool == MAP_FAILED) {
    perror("zero_floor: mmap");
    return 3;
  }
  uint8_t* base = pool;
  memset(base, 1, part * (size_t)threads);

  zarg_t* args = (zarg_t*)calloc((size_t)threads, sizeof(zarg_t));
  pthread_t* tid = (pthread_t*)calloc((size_t)threads, sizeof(pthread_t));
  if (args == NULL || tid == NULL) return 3;
  pthread_barrier_init(&start_line, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&finish_line, NULL, (unsigned)threads + 1);
  passes_left = kinds * reps;
  for (int t = 0; t < threads; t++) {
    args[t].id = t;
    args[t].threads = threads;
    args[t].pool = base + (size_t)t * part;
    args[t].pool_bytes = part;
    args[t].seq = seq;
    args[t].nblocks = nblocks;
    args[t].class_size = size;
    if (pthread_create(&tid[t], NULL, worker, &args[t]) != 0) {
      perror("pthread_create");
      return 3;
    }
  }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  double spread = (double)(cores > 0 && cores < threads ? cores : threads);
  double best[PASS_KINDS] = {-1, -1, -1}, best_wall[PASS_KINDS] = {-1, -1, -1};
  for (int pass = 0; pass < kinds * reps; pass++) {
    pass_kind = pass % kinds;
    pthread_barrier_wait(&start_line);
    double t0 = now_s(CLOCK_MONOTONIC);
    pthread_barrier_wait(&finish_line);
    double wall = now_s(CLOCK_MONOTONIC) - t0, longest = 0, sum = 0;
    for (int t = 0; t < threads; t++) {
      sum += args[t].cpu_s;
      if (args[t].cpu_s > longest) longest = args[t].cpu_s;
    }
    double dt = sum / spread > longest ? sum / spread : longest;
    if (best[pass_kind] < 0 || dt < best[pass_kind]) best[pass_kind] = dt;
    if (best_wall[pass_kind] < 0 || wall < best_wall[pass_kind]) best_wall[pass_kind] = wall;
    passes_left--;
  }
  pthread_barrier_wait(&start_line); /* passes_left is 0: the workers return */
  for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);

  /* the zeroing of a few blocks is lost in the noise: never below 0 */
  double floor_s = best[PASS_ZERO] > best[PASS_WRITES] ? best[PASS_ZERO] - best[PASS_WRITES] : 0;
  printf(
      "zero_floor: %zu blocks, %.3f GB, %d thread(s), best of %d (CPU time): writes alone %.1f ms, "
      "with the zeroing %.1f ms, floor %.1f ms (wall: %.1f, %.1f ms)\n",
      nblocks, bytes / 1e9, threads, reps, best[PASS_WRITES] * 1e3, best[PASS_ZERO] * 1e3, floor_s * 1e3,
      best_wall[PASS_WRITES] * 1e3, best_wall[PASS_ZERO] * 1e3);
  double fence_s = 0;
  if (fence_layout) {
    fence_s = best[PASS_FENCE] > best[PASS_WRITES] ? best[PASS_FENCE] - best[PASS_WRITES] : 0;
    if (fence_s < floor_s) fence_s = floor_s; /* no large blocks: the fence is lost in the noise */
    printf("zero_floor: with the large blocks' fence %.1f ms, fence floor %.1f ms (wall: %.1f ms)\n",
           best[PASS_FENCE] * 1e3, fence_s * 1e3, best_wall[PASS_FENCE] * 1e3);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  if ((out != NULL && write_result(out, floor_s, ru.ru_maxrss) != 0) ||
      (fence_out != NULL && write_result(fence_out, fence_s, ru.ru_maxrss) != 0))
    return 2;
  free(args);
  free(tid);
  munmap(pool, part * (size_t)threads);
  free(seq);
  return 0;
}
