/* Positive control of the cppcheck check (ci/lint.sh): a null pointer
   dereference and a memory leak that cppcheck must report. Not built. */
#include <stdlib.h>

int lint_null_deref(void) {
  int* p = NULL;
  return *p;
}

void lint_leak(size_t n) {
  char* buf = malloc(n);
  if (buf == NULL) return;
  buf[0] = 1;
}
