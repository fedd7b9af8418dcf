/* Positive control of the clang-tidy check (ci/lint.sh): a null pointer
   dereference on one path that the static analyzer must report. Not built. */
#include <stddef.h>

int lint_tidy_deref(int* p, int flag) {
  if (flag) p = NULL;
  return *p;
}
