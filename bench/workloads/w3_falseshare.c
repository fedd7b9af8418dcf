/* w3 falseshare: allocator-induced false sharing (cache-scratch-like).
 *
 * The main thread first allocates one small object per thread back to back
 * (so they likely share a cache line) and hands one to each thread, which
 * frees it ("passive" false sharing: an allocator that recycles that
 * memory to the freeing thread hands out blocks on a shared line). Then
 * each thread repeatedly allocates a small object (8..64 B), writes to it
 * many times, and frees it ("active" false sharing: does the allocator give
 * different threads blocks on the same cache line?).
 * Total work is fixed and divided among the threads (strong scaling).
 *
 * usage: w3_falseshare [threads] [scale]  */
#include "common.h"

#define WRITES 400

typedef struct {
  int id;
  long iters;
  uint8_t* initial;
  uint64_t acc;
  char pad[64];
} targ_t;

static void* worker(void* arg) {
  targ_t* ta = (targ_t*)arg;
  rng_t r;
  rng_seed(&r, 77 + (uint64_t)ta->id);
  /* passive: free the object the main thread allocated for us */
  for (int w = 0; w < WRITES; w++) ((volatile uint8_t*)ta->initial)[w & 7] += (uint8_t)w;
  free(ta->initial);
  uint64_t acc = 0;
  for (long it = 0; it < ta->iters; it++) {
    size_t n = (size_t)rng_range(&r, 8, 64);
    volatile uint8_t* p = (volatile uint8_t*)xmalloc(n);
    for (int w = 0; w < WRITES; w++) p[(size_t)w % n] = (uint8_t)(p[(size_t)w % n] + w);
    acc += p[0];
    free((void*)p);
  }
  ta->acc = acc;
  return NULL;
}

int main(int argc, char** argv) {
  args_t a = parse_args(argc, argv, 2);
  long total = scaled(250000, a.scale, 100);
  targ_t* ta = (targ_t*)calloc((size_t)a.threads, sizeof(targ_t));
  for (int i = 0; i < a.threads; i++) {
    ta[i].id = i;
    ta[i].iters = total / a.threads;
    ta[i].initial = (uint8_t*)xmalloc(8);
    memset(ta[i].initial, 0, 8);
  }
  run_threads(a.threads, worker, ta, sizeof(targ_t));
  uint64_t acc = 0;
  for (int i = 0; i < a.threads; i++) acc += ta[i].acc;
  sink(acc);
  printf("falseshare threads=%d iters=%ld acc=%llu\n", a.threads, total, (unsigned long long)acc);
  free(ta);
  return 0;
}
