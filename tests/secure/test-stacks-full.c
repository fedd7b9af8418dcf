/* MIMALLOC_SECURE_STACKS with its table full (src/secure/stacks.c keeps at
   most 2^18 - 1 distinct stacks): the program goes on as before, the
   blocks of stacks seen before keep theirs, and the blocks of a stack first
   seen since have none (a report then says nothing of where they were
   allocated) instead of a wrong one. The distinct stacks come from six
   levels of calls, each from one of 23 call sites, the innermost level's
   site changing fastest: 23^4 paths already differ in the four innermost
   frames, more than the table takes, so that up to four of the allocator's
   own frames may take the first places of the 8 a stack keeps (a static
   link of a Debug build keeps four: no tail calls, and the walk tells the
   allocator's code apart only in a shared library). Built with frame
   pointers (the walk follows them) and -O0 (an optimizer would merge the
   sites into one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>

#include "internal.h"

#define LEVELS 6
#define SITES 23

/* one of SITES call sites by the code's lowest digit; `+ k` after each call
   keeps them apart (no tail call, no merged sites) */
#define SITE(k, call) \
  case k: \
    return (char*)(call) + k;
#define ALL_SITES(call) \
  switch (code % SITES) { \
    SITE(0, call) \
    SITE(1, call) \
    SITE(2, call) \
    SITE(3, call) \
    SITE(4, call) \
    SITE(5, call) \
    SITE(6, call) \
    SITE(7, call) \
    SITE(8, call) \
    SITE(9, call) \
    SITE(10, call) \
    SITE(11, call) \
    SITE(12, call) \
    SITE(13, call) \
    SITE(14, call) \
    SITE(15, call) \
    SITE(16, call) \
    SITE(17, call) \
    SITE(18, call) \
    SITE(19, call) \
    SITE(20, call) \
    SITE(21, call) \
    default: return (char*)(call) + 22; \
  }

static __attribute__((noinline)) void* alloc_here(unsigned code) {
  ALL_SITES(mi_malloc(32));
}
/* level k calls level k+1 (level5: alloc_here) from one of its sites */
#define LEVEL(name, next) \
  static __attribute__((noinline)) void* name(unsigned code) { \
    ALL_SITES(next(code / SITES)); \
  }
/* clang-format off */
LEVEL(level5, alloc_here)
LEVEL(level4, level5)
LEVEL(level3, level4)
LEVEL(level2, level3)
LEVEL(level1, level2)
/* clang-format on */

/* A block allocated on path `path` (0 to SITES^LEVELS - 1): its lowest
   digit picks the innermost site (alloc_here's), the next level5's, and so
   on out; the sites' offsets are taken off again. */
static void* alloc_on_path(unsigned path) {
  unsigned code = 0;
  unsigned offsets = 0;
  for (int i = 0; i < LEVELS; i++) { /* level1 takes code's lowest digit: the path's highest */
    code = code * SITES + path % SITES;
    offsets += path % SITES;
    path /= SITES;
  }
  return (char*)level1(code) - offsets;
}

/* path 0's block, always from this one place (a stack's 8 frames reach
   past alloc_on_path into its caller) */
static __attribute__((noinline)) void* alloc_on_path_zero(void) {
  return alloc_on_path(0);
}

static bool has_alloc_stack(void* p) {
  mi_secure_stack_t allocated, freed;
  return _mi_secure_stacks_of(p, &allocated, &freed) && allocated.count > 0;
}

static void stacks_table_full_new_stacks_none_old_kept(void** state) {
  (void)state;
  /* (a guarded sample keeps its stacks with its guard, not in the table's records) */
  mi_option_set(mi_option_guarded_sample_rate, 0);
  mi_option_set(mi_option_secure_stacks, 1);
  void* first = alloc_on_path_zero();
  assert_non_null(first);
  assert_true(has_alloc_stack(first)); /* the option on, the walk whole */
  const unsigned paths = 148035889;    /* SITES^LEVELS */
  unsigned full_at = 0;
  for (unsigned code = 1; code < paths; code++) {
    void* p = alloc_on_path(code);
    assert_non_null(p);
    bool kept = has_alloc_stack(p);
    mi_free(p);
    if (!kept) {
      full_at = code;
      break;
    }
  }
  /* the table filled (the positive control: the loop did make new stacks) */
  assert_true(full_at >= ((unsigned)1 << 17));
  /* past that, every new stack has none, an old one keeps its number */
  for (unsigned code = full_at; code < full_at + 1000 && code < paths; code++) {
    void* p = alloc_on_path(code);
    assert_non_null(p);
    assert_false(has_alloc_stack(p));
    mi_free(p);
  }
  void* again = alloc_on_path_zero();
  assert_non_null(again);
  assert_true(has_alloc_stack(again));
  assert_true(has_alloc_stack(first));
  mi_free(again);
  mi_free(first);
  /* and allocation goes on as before */
  for (int i = 0; i < 100000; i++) {
    void* p = mi_malloc((size_t)(i % 500) + 1);
    assert_non_null(p);
    mi_free(p);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stacks_table_full_new_stacks_none_old_kept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
