#include <mimalloc.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  char* s = mi_strdup("downstream");
  if (s == NULL || strcmp(s, "downstream") != 0) return 1;
  void* p = mi_malloc_aligned(1000, 4096);
  if (p == NULL || ((size_t)p % 4096) != 0) return 2;
  mi_free(p);
  mi_free(s);
  printf("downstream ok: mimalloc API version %d\n", mi_version());
  return 0;
}
