/* Ending a forked test child: shared by the tests that fork one child per
   case. */
#ifndef MI_TEST_CHILD_EXIT_H
#define MI_TEST_CHILD_EXIT_H

#include <unistd.h>

/* Children end with _exit (no atexit handlers of the parent's run), which
   would drop a coverage build's counters: write them first. */
#if MI_TEST_COVERAGE
extern void __gcov_dump(void);
#endif
static void child_exit(int code) {
#if MI_TEST_COVERAGE
  __gcov_dump();
#endif
  _exit(code);
}

#endif
