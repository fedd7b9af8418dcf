/* w6 large: large and huge blocks, 64 KiB .. 64 MiB.
 *
 * Each thread keeps 4 live blocks and repeatedly replaces a random one with
 * a block whose size is log-uniform in 64 KiB .. 64 MiB (so each power of
 * two is equally likely; most bytes come from the huge ones). Each new
 * block is written: every 4 KiB page of its first 1 MiB, then one byte per
 * 64 KiB, which measures how well the allocator reuses already-mapped
 * memory versus mapping and faulting in fresh pages every time.
 * Total work is fixed and divided among the threads.
 *
 * usage: w6_large [threads] [scale]  */
#include "common.h"

#define LIVE 4

static void write_block(uint8_t* p, size_t n, uint8_t v) {
  size_t dense = n < (1u << 20) ? n : (1u << 20);
  for (size_t i = 0; i < dense; i += 4096) p[i] = v;
  for (size_t i = dense; i < n; i += 65536) p[i] = v;
  p[n - 1] = v;
}

static void* worker(void* arg) {
  split_arg_t* ta = (split_arg_t*)arg;
  rng_t r;
  rng_seed(&r, 9001 + (uint64_t)ta->id);
  uint8_t* live[LIVE] = {0};
  size_t len[LIVE] = {0};
  uint64_t acc = 0;
  for (long it = 0; it < ta->iters; it++) {
    int i = (int)rng_below(&r, LIVE);
    if (live[i]) {
      acc += live[i][len[i] - 1];
      free(live[i]);
    }
    len[i] = rng_log_uniform(&r, 64 * 1024, 64 * 1024 * 1024);
    live[i] = (uint8_t*)xmalloc(len[i]);
    write_block(live[i], len[i], (uint8_t)it);
  }
  for (int i = 0; i < LIVE; i++) free(live[i]);
  ta->acc = acc;
  return NULL;
}

int main(int argc, char** argv) {
  args_t a = parse_args(argc, argv, 2);
  long total = scaled(2000, a.scale, 8);
  uint64_t acc = run_split(a.threads, total, worker);
  sink(acc);
  printf("large threads=%d allocs=%ld acc=%llu\n", a.threads, total, (unsigned long long)acc);
  return 0;
}
