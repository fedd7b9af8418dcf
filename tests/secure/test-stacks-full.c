/* MIMALLOC_SECURE_STACKS with its table full (src/secure/stacks.c keeps at
   most 2^18 distinct stacks): the program goes on as before, the blocks of
   stacks seen before keep theirs, and the blocks of a stack first seen
   since have none (a report then says nothing of where they were
   allocated) instead of a wrong one. The distinct stacks come from eight
   levels of calls, each from one of six call sites: 6^8 paths, more than
   the table takes even when an allocator frame takes one of the 8 frames a
   stack keeps. Built with frame pointers (the walk follows them) and -O0
   (an optimizer would merge the six sites into one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>

#include "internal.h"

#define LEVELS 8
#define SITES 6

typedef void* level_fun(unsigned code, int depth);

/* one of SITES call sites by the code's lowest digit; `+ k` after each call
   keeps them apart (no tail call, no merged sites) */
#define SIX_SITES(next) \
  switch (code % SITES) { \
    case 0: return (char*)next(code / SITES, depth + 1) + 0; \
    case 1: return (char*)next(code / SITES, depth + 1) + 1; \
    case 2: return (char*)next(code / SITES, depth + 1) + 2; \
    case 3: return (char*)next(code / SITES, depth + 1) + 3; \
    case 4: return (char*)next(code / SITES, depth + 1) + 4; \
    default: return (char*)next(code / SITES, depth + 1) + 5; \
  }

static __attribute__((noinline)) void* alloc_here(unsigned code, int depth) {
  (void)depth;
  switch (code % SITES) {
    case 0: return (char*)mi_malloc(32) + 0;
    case 1: return (char*)mi_malloc(32) + 1;
    case 2: return (char*)mi_malloc(32) + 2;
    case 3: return (char*)mi_malloc(32) + 3;
    case 4: return (char*)mi_malloc(32) + 4;
    default: return (char*)mi_malloc(32) + 5;
  }
}

#define LEVEL(name, next) \
  static __attribute__((noinline)) void* name(unsigned code, int depth) { \
    SIX_SITES(next) \
  }
LEVEL(level7, alloc_here)
LEVEL(level6, level7)
LEVEL(level5, level6)
LEVEL(level4, level5)
LEVEL(level3, level4)
LEVEL(level2, level3)
LEVEL(level1, level2)

/* a block allocated on the path `code` names (the site's offset taken off) */
static void* alloc_on_path(unsigned code) {
  unsigned c = code;
  unsigned offsets = 0;
  for (int i = 0; i < LEVELS; i++) {
    offsets += c % SITES;
    c /= SITES;
  }
  return (char*)level1(code, 0) - offsets;
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
  void* first = alloc_on_path(0);
  assert_non_null(first);
  assert_true(has_alloc_stack(first)); /* the option on, the walk whole */
  const unsigned paths = 1679616;      /* SITES^LEVELS */
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
  void* again = alloc_on_path(0);
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
