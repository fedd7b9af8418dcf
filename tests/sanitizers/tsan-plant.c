/* Positive control of the ThreadSanitizer job (ci/tsan.sh): two threads
   write one mi_malloc block with no synchronisation between them, which
   TSan must report as a data race. The control mode joins the first
   thread before the second starts and must run clean. */
#include <mimalloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void* writer(void* arg) {
  volatile int* x = (volatile int*)arg;
  for (int i = 0; i < 1000; i++) *x = *x + 1;
  return NULL;
}

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "");
  int racy = (strcmp(mode, "race") == 0);
  if (!racy && strcmp(mode, "control") != 0) {
    fprintf(stderr, "usage: tsan-plant race|control\n");
    return 2;
  }
  int* shared = (int*)mi_malloc(sizeof(int));
  *shared = 0;
  pthread_t a, b;
  pthread_create(&a, NULL, &writer, shared);
  if (!racy) pthread_join(a, NULL);
  pthread_create(&b, NULL, &writer, shared);
  if (racy) pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("%d\n", *shared);
  mi_free(shared);
  return 0;
}
