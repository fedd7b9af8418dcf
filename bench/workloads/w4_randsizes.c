/* w4 randsizes: random sizes 8 B .. 1 MiB, multi-threaded
 * (alloc-test / mstress-like).
 *
 * Each thread keeps a working set of live blocks and repeatedly replaces a
 * random one with a new block whose size follows a realistic log-skewed
 * distribution: ~85% 8..256 B, ~12% 256 B..8 KiB, ~2.7% 8..128 KiB,
 * ~0.3% 128 KiB..1 MiB. Every new block is written (first/last byte and
 * one byte per page). About 1 in 64 replacements goes through a shared
 * exchange array instead, so some blocks are freed by another thread
 * (as in mstress). Total work is fixed and divided among the threads.
 *
 * usage: w4_randsizes [threads] [scale]  */
#include "common.h"

#define SLOTS 2048
#define SHARED 1024

static void* shared_slots[SHARED];

static size_t pick_size(rng_t* r) {
  unsigned u = (unsigned)rng_below(r, 1000);
  if (u < 850) return rng_log_uniform(r, 8, 256);
  if (u < 970) return rng_log_uniform(r, 257, 8192);
  if (u < 997) return rng_log_uniform(r, 8193, 128 * 1024);
  return rng_log_uniform(r, 128 * 1024 + 1, 1024 * 1024);
}

static void* new_block(rng_t* r, uint8_t v) {
  size_t n = pick_size(r);
  uint8_t* p = (uint8_t*)xmalloc(n);
  touch(p, n, v);
  return p;
}

static void* worker(void* arg) {
  split_arg_t* ta = (split_arg_t*)arg;
  rng_t r;
  rng_seed(&r, 4242 + (uint64_t)ta->id);
  void** slots = (void**)xmalloc(SLOTS * sizeof(void*));
  for (int i = 0; i < SLOTS; i++) slots[i] = new_block(&r, (uint8_t)i);
  uint64_t acc = 0;
  for (long it = 0; it < ta->iters; it++) {
    size_t i = (size_t)rng_below(&r, SLOTS);
    acc += *(uint8_t*)slots[i];
    if ((it & 63) == 0) {
      /* hand our block to whoever picks this shared slot; free what was there */
      size_t j = (size_t)rng_below(&r, SHARED);
      void* old = __atomic_exchange_n(&shared_slots[j], slots[i], __ATOMIC_ACQ_REL);
      free(old);
    } else {
      free(slots[i]);
    }
    slots[i] = new_block(&r, (uint8_t)it);
  }
  for (int i = 0; i < SLOTS; i++) free(slots[i]);
  free(slots);
  ta->acc = acc;
  return NULL;
}

int main(int argc, char** argv) {
  args_t a = parse_args(argc, argv, 2);
  long total = scaled(3000000, a.scale, 1000);
  uint64_t acc = run_split(a.threads, total, worker);
  for (int j = 0; j < SHARED; j++) free(shared_slots[j]);
  sink(acc);
  printf("randsizes threads=%d iters=%ld acc=%llu\n", a.threads, total, (unsigned long long)acc);
  return 0;
}
