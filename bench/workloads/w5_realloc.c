/* w5 realloc: growth of buffers by realloc (string builders, vectors).
 *
 * Each thread keeps 64 buffers. Each step appends 1..128 bytes to a random
 * buffer, growing it with realloc to exactly the new length (the naive
 * pattern, which leaves it to the allocator to grow in place or cheaply);
 * 1 in 4 buffers instead grows geometrically (x1.5, vector-like). When a
 * buffer reaches its random target size (log-uniform 256 B .. 256 KiB) it
 * is shrunk to fit once and then freed and started again. Appended bytes
 * are written. Total work is fixed and divided among the threads.
 *
 * usage: w5_realloc [threads] [scale]  */
#include "common.h"

#define NBUF 64

typedef struct {
  uint8_t* p;
  size_t len, cap, target;
  int geometric;
} buf_t;

static void reset(buf_t* b, rng_t* r) {
  b->p = NULL;
  b->len = 0;
  b->cap = 0;
  b->target = rng_log_uniform(r, 256, 256 * 1024);
  b->geometric = (rng_below(r, 4) == 0);
}

static void* worker(void* arg) {
  split_arg_t* ta = (split_arg_t*)arg;
  rng_t r;
  rng_seed(&r, 555 + (uint64_t)ta->id);
  buf_t bufs[NBUF];
  for (int i = 0; i < NBUF; i++) reset(&bufs[i], &r);
  uint64_t acc = 0;
  for (long it = 0; it < ta->iters; it++) {
    buf_t* b = &bufs[rng_below(&r, NBUF)];
    size_t add = (size_t)rng_range(&r, 1, 128);
    size_t need = b->len + add;
    if (need > b->cap) {
      size_t ncap = b->geometric ? (b->cap + b->cap / 2 > need ? b->cap + b->cap / 2 : need) : need;
      uint8_t* np = (uint8_t*)realloc(b->p, ncap);
      if (!np) {
        fprintf(stderr, "realloc failed\n");
        exit(3);
      }
      b->p = np;
      b->cap = ncap;
    }
    memset(b->p + b->len, (int)it, add);
    b->len = need;
    if (b->len >= b->target) {
      uint8_t* np = (uint8_t*)realloc(b->p, b->len); /* shrink to fit */
      if (np) b->p = np;
      acc += b->p[b->len / 2];
      free(b->p);
      reset(b, &r);
    }
  }
  for (int i = 0; i < NBUF; i++) free(bufs[i].p);
  ta->acc = acc;
  return NULL;
}

int main(int argc, char** argv) {
  args_t a = parse_args(argc, argv, 2);
  long total = scaled(1500000, a.scale, 1000);
  uint64_t acc = run_split(a.threads, total, worker);
  sink(acc);
  printf("realloc threads=%d appends=%ld acc=%llu\n", a.threads, total, (unsigned long long)acc);
  return 0;
}
