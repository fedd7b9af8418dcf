/* What the heap handle check and the fence of a destroyed heap's pages cost
   (docs/secure-mode.md, "Heap handles"), in instructions: run it under
   cachegrind with two counts and take the difference over the count.
     heap-malloc N  N pairs of mi_heap_malloc(heap, 32) and mi_free
     malloc N       N pairs of mi_malloc(32) and mi_free (no handle to check)
     calloc N       N pairs of mi_calloc(1, 32) and mi_free
     destroy N      N heaps: mi_heap_new, 20 blocks of 16 to 13,316 bytes
                    (3 small and 1 medium page or so), mi_heap_destroy
   Build: cc -O2 bench/heap-handle-cost.c -Iinclude libmimalloc-secure.a -lpthread */
#include <mimalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void* volatile sink;

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s heap-malloc|malloc|calloc|destroy N\n", argv[0]);
    return 2;
  }
  long n = atol(argv[2]);
  mi_heap_t* heap = mi_heap_new();
  mi_free(mi_heap_malloc(heap, 32)); /* set-up out of the count */
  if (strcmp(argv[1], "heap-malloc") == 0) {
    for (long i = 0; i < n; i++) {
      void* p = mi_heap_malloc(heap, 32);
      sink = p;
      mi_free(p);
    }
  } else if (strcmp(argv[1], "malloc") == 0) {
    for (long i = 0; i < n; i++) {
      void* p = mi_malloc(32);
      sink = p;
      mi_free(p);
    }
  } else if (strcmp(argv[1], "calloc") == 0) {
    for (long i = 0; i < n; i++) {
      void* p = mi_calloc(1, 32);
      sink = p;
      mi_free(p);
    }
  } else if (strcmp(argv[1], "destroy") == 0) {
    for (long i = 0; i < n; i++) {
      mi_heap_t* h = mi_heap_new();
      for (int j = 0; j < 20; j++) sink = mi_heap_malloc(h, 16 + (size_t)j * 700);
      mi_heap_destroy(h);
    }
  } else {
    return 2;
  }
  mi_heap_delete(heap);
  return 0;
}
