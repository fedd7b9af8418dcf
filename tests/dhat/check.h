/* The profiler's test programs run without cmocka (they are also run
   preloaded, under Valgrind): a failed check prints itself and exits 1.
   Define CHECK_PROG, the program's name, before including. */
#ifndef MI_DHAT_CHECK_H
#define MI_DHAT_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(x) \
  do { \
    if (!(x)) { \
      fprintf(stderr, CHECK_PROG ": check failed: %s (line %d)\n", #x, __LINE__); \
      exit(1); \
    } \
  } while (0)

#endif
