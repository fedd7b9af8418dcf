/* Many sites and many peaks: the global peak moves several times, one site
   is freed right after the peak, others stay. Compared against Valgrind's
   DHAT (tests/dhat/compare-valgrind.sh). No stdio. */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static void* volatile keep[256];

NOINLINE static void* site_a(size_t n) {
  return malloc(n);
}
NOINLINE static void* site_b(size_t n) {
  return malloc(n);
}
NOINLINE static void* site_c(size_t n) {
  return calloc(1, n);
}
NOINLINE static void* site_d(void* p, size_t n) {
  return realloc(p, n);
}
NOINLINE static void level2(int i) {
  keep[i] = site_b((size_t)(i * 3 + 1));
}
NOINLINE static void level1(int i) {
  level2(i);
  keep[128 + i] = site_a((size_t)(i + 1));
}

int main(void) {
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < 64; i++) level1(i);
    void* c = site_c((size_t)(1000 * (round + 1)));
    void* d = site_d(NULL, 10);
    for (int k = 0; k < 5; k++) d = site_d(d, (size_t)(10 + k * 700));
    for (int i = 0; i < 64; i += (round + 1)) {
      free(keep[i]);
      keep[i] = NULL;
    }
    free(c);
    d = site_d(d, 5);
    keep[200 + round] = d;
    for (int i = 0; i < 64; i++) {
      free(keep[128 + i]);
      free(keep[i]);
      keep[128 + i] = NULL;
      keep[i] = NULL;
    }
  }
  return 0;
}
