#define _GNU_SOURCE
/* The secure build's frame-pointer walk (src/base/stack-walk.c) reads the
   stack a window at a time through mi_prim_read_self_prefix, one system call
   a window: the read gives exactly the readable start of a range, and a walk
   whose frames lie beyond its first window reads the next one and finds them
   all. Built with frame pointers (the walk follows them) and -O0 (each
   level a frame of its own). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define PAGE 4096
#define LEVELS 8
#define LEVEL_FRAME 1500 /* bytes of locals a level: the eight span 12 KiB, six windows */

/* two pages, the second unreadable */
static unsigned char* two_pages_second_fenced(void) {
  unsigned char* p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(p != MAP_FAILED);
  memset(p, 0xa5, PAGE);
  assert_int_equal(mprotect(p + PAGE, PAGE, PROT_NONE), 0);
  return p;
}

static void test_prefix_read_into_fenced_page_returns_readable_part(void** state) {
  (void)state;
  unsigned char* p = two_pages_second_fenced();
  unsigned char buf[1024];
  memset(buf, 0, sizeof(buf));
  assert_int_equal(mi_prim_read_self_prefix(p + PAGE - 96, buf, sizeof(buf)), 96);
  for (int i = 0; i < 96; i++) assert_int_equal(buf[i], 0xa5);
  assert_int_equal(mi_prim_read_self_prefix(p + PAGE, buf, sizeof(buf)), 0);
  munmap(p, 2 * PAGE);
}

static void test_prefix_read_all_readable_returns_whole(void** state) {
  (void)state;
  unsigned char* p = two_pages_second_fenced();
  unsigned char buf[1024];
  assert_int_equal(mi_prim_read_self_prefix(p + PAGE - 2048, buf, sizeof(buf)), sizeof(buf));
  assert_int_equal(mprotect(p + PAGE, PAGE, PROT_READ), 0); /* across the page boundary too */
  assert_int_equal(mi_prim_read_self_prefix(p + PAGE - 512, buf, sizeof(buf)), sizeof(buf));
  munmap(p, 2 * PAGE);
}

static size_t walked;
static uintptr_t walked_pcs[32];

static __attribute__((noinline)) int level(int depth) {
  volatile char locals[LEVEL_FRAME];
  locals[0] = (char)depth;
  if (depth == 0) {
    walked = _mi_stack_walk(walked_pcs, 32, 0);
    return locals[0];
  }
  return level(depth - 1) + locals[0] + 1; /* (no tail call) */
}

static void test_stack_walk_frames_beyond_first_window_all_found(void** state) {
  (void)state;
  walked = 0;
  (void)level(LEVELS - 1);
  /* the innermost level's call of the walk, then one return address into
     the recursive call for each of the other levels, then into this test */
  assert_true(walked >= LEVELS + 1);
  uintptr_t recursive_call = walked_pcs[1];
  for (int i = 2; i < LEVELS; i++) assert_int_equal(walked_pcs[i], recursive_call);
  assert_true(walked_pcs[LEVELS] != recursive_call);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prefix_read_into_fenced_page_returns_readable_part),
      cmocka_unit_test(test_prefix_read_all_readable_returns_whole),
      cmocka_unit_test(test_stack_walk_frames_beyond_first_window_all_found),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
