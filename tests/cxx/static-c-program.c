/* A C program linked with the static library: it frees through the paths
   that check a block's kind (secure builds), and asks nothing of C++. Its
   binary must not hold the library's operator new and delete
   (static-operators.sh): a program's C++ run-time, or a fuzzing engine's,
   linked in after the library, would otherwise allocate its own objects
   from the default heap. */
#include <mimalloc.h>
#include <stdio.h>

int main(void) {
  void* p = mi_malloc(24);
  void* q = mi_realloc(p, 200);
  if (q == NULL) return 1;
  mi_free_size(mi_malloc(40), 40);
  mi_free(q);
  puts("ok");
  return 0;
}
