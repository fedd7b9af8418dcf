/* The secure build's reports on Windows (tests/win/check_win_reports.py):
   a misuse of each kind in its own process, named by argv[1], and its
   clean twin ("clean": the same calls, correct). Built -O0 with frame
   pointers and linked statically, so that the stack of the misuse is as
   written: misuse_* called from main. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mimalloc.h"

static volatile int sink;

__attribute__((noinline)) static char* alloc_for_double_free(void) {
  return (char*)mi_malloc(64);
}
__attribute__((noinline)) static void free_for_double_free(char* p) {
  mi_free(p);
}
__attribute__((noinline)) static void misuse_double_free(int misuse) {
  char* p = alloc_for_double_free();
  p[0] = 1;
  free_for_double_free(p);
  if (misuse) mi_free(p);
}

__attribute__((noinline)) static char* alloc_for_overflow(void) {
  return (char*)mi_malloc(48);
}
__attribute__((noinline)) static void free_for_overflow(char* p, int misuse) {
  memset(p, 7, misuse ? 49 : 48);
  mi_free(p);
}

int main(int argc, char** argv) {
  const char* kind = (argc > 1 ? argv[1] : "clean");
  int misuse = strcmp(kind, "clean") != 0;
  setvbuf(stderr, NULL, _IONBF, 0);
  if (!misuse || strcmp(kind, "double-free") == 0) misuse_double_free(misuse);
  if (!misuse || strcmp(kind, "heap-buffer-overflow") == 0) free_for_overflow(alloc_for_overflow(), misuse);
  sink = 1;
  printf("report-misuse: %s: no report\n", kind);
  return 0;
}
