/* w1 churn: single-threaded small-object churn (cfrac / espresso-like).
 *
 * Models programs that allocate huge numbers of small, mostly short-lived
 * blocks with a mix of lifetimes:
 *   - very short-lived temporaries (alloc, use, free within a few ops),
 *   - a LIFO "evaluation stack" of medium-lived blocks (pushed/popped),
 *   - a table of long-lived blocks that are replaced at random.
 * Sizes are 8..512 bytes, skewed towards the small end.
 *
 * usage: w1_churn [threads(ignored, always 1)] [scale]  */
#include "common.h"

#define TABLE 8192
#define STACK 256

int main(int argc, char** argv) {
  args_t a = parse_args(argc, argv, 1);
  long ops = scaled(8000000, a.scale, 1000);
  rng_t r;
  rng_seed(&r, 42);

  void** table = (void**)xmalloc(TABLE * sizeof(void*));
  for (int i = 0; i < TABLE; i++) {
    size_t n = rng_log_uniform(&r, 16, 512);
    table[i] = xmalloc(n);
    memset(table[i], i, n < 16 ? n : 16);
  }
  void* stack[STACK];
  size_t stack_sz[STACK];
  int sp = 0;
  uint64_t acc = 0;

  for (long op = 0; op < ops; op++) {
    uint64_t x = rng_next(&r);
    unsigned kind = (unsigned)(x & 15);
    if (kind < 9) {
      /* short-lived temporaries: one or two blocks, freed right away */
      size_t n1 = rng_log_uniform(&r, 8, 128);
      uint8_t* p = (uint8_t*)xmalloc(n1);
      p[0] = (uint8_t)op;
      p[n1 - 1] = (uint8_t)x;
      if (x & 0x100) {
        size_t n2 = rng_log_uniform(&r, 8, 256);
        uint8_t* q = (uint8_t*)xmalloc(n2);
        memcpy(q, p, n1 < n2 ? n1 : n2);
        acc += q[0];
        free(q);
      }
      acc += p[n1 - 1];
      free(p);
    } else if (kind < 14) {
      /* evaluation stack: push with p=0.55 so it drifts up, pop otherwise;
         pop everything when full (an "expression" completes) */
      if (sp < STACK && ((x >> 8) % 100) < 55) {
        size_t n = rng_log_uniform(&r, 8, 256);
        stack[sp] = xmalloc(n);
        stack_sz[sp] = n;
        memset(stack[sp], (int)sp, n < 32 ? n : 32);
        sp++;
      } else if (sp > 0) {
        sp--;
        acc += ((uint8_t*)stack[sp])[stack_sz[sp] - 1];
        free(stack[sp]);
      }
      if (sp == STACK) {
        while (sp > 0) free(stack[--sp]);
      }
    } else {
      /* long-lived table: replace a random entry */
      size_t i = (size_t)((x >> 16) % TABLE);
      acc += ((uint8_t*)table[i])[0];
      free(table[i]);
      size_t n = rng_log_uniform(&r, 16, 512);
      table[i] = xmalloc(n);
      memset(table[i], (int)x, n < 16 ? n : 16);
    }
  }
  while (sp > 0) free(stack[--sp]);
  for (int i = 0; i < TABLE; i++) free(table[i]);
  free(table);
  sink(acc);
  printf("churn ops=%ld acc=%llu\n", ops, (unsigned long long)acc);
  return 0;
}
