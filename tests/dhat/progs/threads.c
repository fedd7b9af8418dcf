/* Two threads allocating and freeing: only totals are compared against
   Valgrind's DHAT (t-gmax depends on the interleaving). No stdio. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

NOINLINE static void* work(void* arg) {
  size_t base = (size_t)(uintptr_t)arg;
  void* ring[32] = {0};
  for (int i = 0; i < 5000; i++) {
    int k = i % 32;
    free(ring[k]);
    ring[k] = malloc(base + (size_t)(i % 97));
    if (i % 11 == 0) ring[k] = realloc(ring[k], base + 200);
  }
  for (int k = 0; k < 32; k++) free(ring[k]);
  return NULL;
}

int main(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, (void*)(uintptr_t)(16 + i * 8));
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  return 0;
}
