/* The assertion ladder (MI_DEBUG, docs/architecture.md), each level with a
   planted violation it must catch and the clean twin it must pass:

   - level 2, the slow paths' invariants: a page flagged full while it sits
     in its size class's queue is caught when the queue is next changed;
   - level 3, the walks: a free slot of a segment marked taken behind the
     segment's back is caught when the next page is set up in it (the heap
     walk's own control is tests/test-heap-check.c).

   Each case runs in a child; the planted one must die of SIGABRT with the
   assertion's line, its clean twin exit 0 with none. Below a case's level
   only the clean twin runs (the check is compiled out). White-box: built
   against the static library with its internal headers. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "internal.h"

#include "../child.h"

/* A page of a new heap, with one block of `size` handed out. */
static mi_page_t* page_of_new_block(mi_heap_t** heap, size_t size) {
  *heap = mi_heap_new();
  if (*heap == NULL) _exit(3);
  void* p = mi_heap_malloc(*heap, size);
  if (p == NULL) _exit(3);
  return _mi_segment_page_of(_mi_ptr_segment(p), p);
}

static void case_page_flagged_full_in_its_queue(bool misuse) {
  mi_heap_t* heap;
  mi_page_t* page = page_of_new_block(&heap, 48);
  if (misuse) mi_page_flags_add(page, MI_PAGE_FLAG_IN_FULL); /* but left in the queue of its bin */
  mi_heap_destroy(heap);                                     /* takes every page off its queue */
}

static void case_segment_slot_taken_behind_its_back(bool misuse) {
  mi_heap_t* heap;
  (void)page_of_new_block(&heap, 48);
  /* in every small segment of the thread: the next page may come from any */
  for (mi_segment_t* segment = heap->tld->segments; misuse && segment != NULL; segment = segment->next) {
    if (segment->kind != MI_SEGMENT_SMALL) continue;
    for (size_t i = 0; i < segment->page_count; i++) {
      uint32_t state = atomic_load(&segment->pages[i].state);
      if (state == MI_PAGE_FREE_CLEAN || state == MI_PAGE_FREE_DIRTY) {
        atomic_store(&segment->pages[i].state, MI_PAGE_IN_USE); /* not counted in used_pages */
        break;
      }
    }
  }
  /* another size class of the same (small) kind: a fresh page of the segment */
  if (mi_heap_malloc(heap, 1000) == NULL) _exit(3);
  if (!misuse) mi_heap_destroy(heap);
}

/* The planted case dies of SIGABRT naming `expr`; the clean twin exits 0.
   Below `level` the check is compiled out: only the twin runs. */
static void expect_assertion(mi_case_fn fn, int level, const char* expr) {
  char err[8192];
  int status = run_child(fn, false, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) print_error("clean twin: status %d, stderr: %s\n", status, err);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_null(strstr(err, "assertion failed"));
  if (MI_DEBUG < level) return;
  status = run_child(fn, true, err, sizeof(err));
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) print_error("planted: status %d, stderr: %s\n", status, err);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
  char line[256];
  snprintf(line, sizeof(line), ": %s\n", expr);
  if (strncmp(err, "mimalloc: assertion failed: ", 28) != 0 || strstr(err, line) == NULL) {
    print_error("expected 'mimalloc: assertion failed: ...%s' in:\n%s\n", line, err);
  }
  assert_true(strncmp(err, "mimalloc: assertion failed: ", 28) == 0);
  assert_non_null(strstr(err, line));
}

static void test_page_flagged_full_in_bin_queue_asserts_at_level_2(void** state) {
  (void)state;
  expect_assertion(&case_page_flagged_full_in_its_queue, 2, "mi_page_queue_is_its(heap, pq, page)");
}

static void test_segment_slot_taken_uncounted_asserts_at_level_3(void** state) {
  (void)state;
  expect_assertion(&case_segment_slot_taken_behind_its_back, 3,
                   "mi_segment_pages_taken(segment) == segment->used_pages");
}

int main(void) {
  mi_child_save_signals();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_page_flagged_full_in_bin_queue_asserts_at_level_2),
      cmocka_unit_test(test_segment_slot_taken_uncounted_asserts_at_level_3),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
