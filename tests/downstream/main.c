/* A program built against the installed allocator (tests/downstream/run.sh):
   its own API, and malloc, which the shared library exports and the static
   library and mimalloc.o override. argv[1]: "default" or "secure", the
   variant it must be linked with (a secure block's usable size is exactly
   the request: the rest is canary); argv[2], for a shared link: the path the
   library must be loaded from. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mimalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  const char* want = (argc > 1 ? argv[1] : "default");
  char* s = mi_strdup("downstream");
  if (s == NULL || strcmp(s, "downstream") != 0) return 1;
  void* p = mi_malloc_aligned(1000, 4096);
  if (p == NULL || ((size_t)p % 4096) != 0) return 2;
  mi_free(p);
  mi_free(s);
  void* m = malloc(13);
  if (m == NULL || !mi_is_in_heap_region(m)) {
    fprintf(stderr, "downstream: malloc(13) = %p is not a block of the allocator\n", m);
    return 3;
  }
  const char* variant = (mi_usable_size(m) == 13 ? "secure" : "default");
  free(m);
  if (strcmp(variant, want) != 0) {
    fprintf(stderr, "downstream: linked with the %s variant, expected %s\n", variant, want);
    return 4;
  }
  Dl_info info;
  const char* from = "the program";
  if (dladdr((void*)&mi_version, &info) != 0 && info.dli_fname != NULL && strstr(info.dli_fname, ".so") != NULL) {
    from = info.dli_fname;
  }
  if (argc > 2 && strncmp(from, argv[2], strlen(argv[2])) != 0) {
    fprintf(stderr, "downstream: mi_version is in %s, expected %s\n", from, argv[2]);
    return 5;
  }
  printf("downstream ok: %s variant from %s, malloc served by it, API version %d\n", variant, from, mi_version());
  return 0;
}
