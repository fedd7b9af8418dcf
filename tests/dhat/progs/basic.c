/* Deterministic single-threaded allocation pattern compared against
   Valgrind's DHAT (tests/dhat/compare-valgrind.sh). No stdio: every
   allocation is the program's own. Built -O0 with frame pointers and no
   inlining, so that both tools see the same call stacks. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static void* volatile sink[64];

NOINLINE static void* make_node(size_t n) {
  return malloc(n);
}
NOINLINE static void* make_zeroed(size_t count, size_t n) {
  return calloc(count, n);
}
NOINLINE static void* grow(void* p, size_t n) {
  return realloc(p, n);
}
NOINLINE static void* make_aligned(size_t align, size_t n) {
  void* p = NULL;
  return (posix_memalign(&p, align, n) == 0 ? p : NULL);
}
NOINLINE static void* make_c11_aligned(size_t align, size_t n) {
  return aligned_alloc(align, n);
}
NOINLINE static void* make_memalign(size_t align, size_t n) {
  return memalign(align, n);
}
NOINLINE static void* make_empty(void) {
  return malloc(0);
}
NOINLINE static void leak_some(void) {
  for (int i = 0; i < 5; i++) sink[40 + i] = malloc(24 + (size_t)i);
}

NOINLINE static void churn(void) {
  for (int i = 0; i < 100; i++) {
    void* p = make_node((size_t)(i % 7) * 16 + 1);
    memset(p, 1, 1);
    free(p);
  }
}

int main(void) {
  /* growth and shrinking reallocs charge the first site */
  void* a = make_node(100);
  a = grow(a, 4000);
  a = grow(a, 50);
  a = grow(a, 200000); /* large block */
  /* realloc(NULL, n) is a malloc at the realloc's site */
  void* b = grow(NULL, 30);
  /* zero-size requests count one byte */
  void* z = make_empty();
  void* zc = make_zeroed(0, 8);
  void* c = make_zeroed(10, 12);
  void* al = make_aligned(64, 100);
  void* al2 = make_c11_aligned(4096, 8192);
  void* al3 = make_memalign(128, 3);
  churn();
  /* the global peak: live bytes are highest here */
  void* big = make_node(300000);
  sink[0] = big;
  free(big);
  /* an equal peak later: the later one is t-gmax */
  void* big2 = make_node(300000);
  sink[1] = big2;
  free(b);
  free(z);
  /* realloc(p, 0) frees */
  void* gone = grow(c, 0);
  sink[2] = gone;
  free(al2);
  /* a failing calloc counts nothing */
  sink[3] = make_zeroed(SIZE_MAX / 2, 4);
  leak_some();
  sink[4] = a;
  sink[5] = zc;
  sink[6] = al;
  sink[7] = al3;
  free(big2);
  return 0;
}
