/* Hole purge of never-carved page tails (docs/memory-return.md): a page set
   up on memory a page before it used carves its blocks a few at a time; the
   rest of it may still hold, resident, what the page before left. At an
   idle point that tail is discarded; blocks carved into it later find it
   committed and zero.
   - 100 pages of 1 KiB blocks are filled and freed (a long purge delay keeps
     them committed); 90 heaps then take one 64-byte block each, each heap's
     page on one of those slots, 4 KiB of it carved: mi_on_thread_idle
     discards the tails (60 KiB a page), RSS falls by at least half of what
     the statistics say was discarded, every block is intact (with the
     eager-zero knob: a discard past a tail's end zeroes a live block of the
     next page); blocks carved into the tails afterwards hold what is written
     to them, and the statistics count them back; destroyed, nothing stays
     counted;
   - the control: hole purge off, no tail is discarded;
   - the clean twin: pages on fresh memory have no tail to discard.
   Each run in a child process, its RSS its own, transparent huge pages off. */
#define _GNU_SOURCE
#include "../testutil.h"
#include "../child.h"
#include "purge-child.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define OLD_BLOCKS 6400 /* 1 KiB: about 100 small pages */
#define HEAPS 90
#define NEW_SIZE 64
#define REFILL 900 /* 64-byte blocks a heap takes afterwards: its page's tail */

static inline uint8_t pattern(size_t heap, size_t block) {
  return (uint8_t)(heap * 7u + block * 13u + 1u);
}

typedef enum { TAILS_REUSED, TAILS_HOLES_OFF, TAILS_FRESH } tails_case_t;

static void tails_body(tails_case_t which) {
  prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
  mi_option_set(mi_option_allow_thp, 0);
  mi_option_set(mi_option_purge_thread, 0);
  mi_option_set(mi_option_purge_delay, 100000); /* freed pages stay committed */
  mi_option_set(mi_option_purge_holes_eager_zero, 1);
  if (which == TAILS_HOLES_OFF) mi_option_set(mi_option_purge_holes, 0);
  if (which != TAILS_FRESH) {
    static void* old[OLD_BLOCKS];
    for (size_t i = 0; i < OLD_BLOCKS; i++) {
      old[i] = mi_malloc(1024);
      memset(old[i], 0xA5, 1024);
    }
    for (size_t i = 0; i < OLD_BLOCKS; i++) mi_free(old[i]);
  }
  static mi_heap_t* heaps[HEAPS];
  static uint8_t* blocks[HEAPS][REFILL + 1];
  for (size_t h = 0; h < HEAPS; h++) {
    heaps[h] = mi_heap_new();
    TU_CHECK(heaps[h] != NULL);
    blocks[h][0] = (uint8_t*)mi_heap_malloc(heaps[h], NEW_SIZE);
    memset(blocks[h][0], pattern(h, 0), NEW_SIZE);
  }
  mi_purge_holes_stats_t before, after;
  mi_purge_holes_stats_get(&before);
  size_t rss0 = tu_rss();
  mi_on_thread_idle();
  size_t rss1 = tu_rss();
  mi_purge_holes_stats_get(&after);
  size_t discarded = after.unformed_bytes_total - before.unformed_bytes_total;
  fprintf(stderr, "case %d: RSS %zu KiB -> %zu KiB, tails discarded %zu KiB in %zu calls, %zu KiB counted now\n",
          (int)which, rss0 >> 10, rss1 >> 10, discarded >> 10,
          after.unformed_discard_calls - before.unformed_discard_calls, after.unformed_bytes >> 10);
  for (size_t h = 0; h < HEAPS; h++) {
    for (size_t j = 0; j < NEW_SIZE; j++) TU_CHECK(blocks[h][0][j] == pattern(h, 0));
  }
  if (which == TAILS_REUSED) {
    TU_CHECK(discarded >= (size_t)40 * 56 * 1024); /* (63 of the 90 pages land on used slots here) */
    TU_CHECK(after.unformed_bytes == discarded);
#if !defined(MI_TEST_TRACK_ASAN)
    TU_CHECK(rss0 > rss1 && rss0 - rss1 >= discarded / 2);
#endif
  } else {
    TU_CHECK(discarded == 0 && after.unformed_discard_calls == before.unformed_discard_calls);
  }
  /* blocks carved into the tails: written and read back, counted back */
  for (size_t h = 0; h < HEAPS; h++) {
    for (size_t i = 1; i <= REFILL; i++) {
      blocks[h][i] = (uint8_t*)mi_heap_malloc(heaps[h], NEW_SIZE);
      memset(blocks[h][i], pattern(h, i), NEW_SIZE);
    }
  }
  for (size_t h = 0; h < HEAPS; h++) {
    for (size_t i = 0; i <= REFILL; i++) {
      for (size_t j = 0; j < NEW_SIZE; j++) TU_CHECK(blocks[h][i][j] == pattern(h, i));
    }
  }
  mi_purge_holes_stats_t refilled;
  mi_purge_holes_stats_get(&refilled);
  if (which == TAILS_REUSED) {
    TU_CHECK(refilled.unformed_reuse_calls > after.unformed_reuse_calls);
    TU_CHECK(refilled.unformed_bytes < after.unformed_bytes / 4);
  }
  for (size_t h = 0; h < HEAPS; h++) mi_heap_destroy(heaps[h]);
  mi_purge_holes_stats_t destroyed;
  mi_purge_holes_stats_get(&destroyed);
  TU_CHECK(destroyed.unformed_bytes == 0);
}

static void case_reused(void) {
  tails_body(TAILS_REUSED);
}

static void case_holes_off(void) {
  tails_body(TAILS_HOLES_OFF);
}

static void case_fresh(void) {
  tails_body(TAILS_FRESH);
}

static void test_tails_reused_pages_discarded_blocks_intact(void** state) {
  (void)state;
  run_in_child(&case_reused);
}

static void test_tails_holes_off_nothing_discarded(void** state) {
  (void)state;
  run_in_child(&case_holes_off);
}

static void test_tails_fresh_memory_nothing_discarded(void** state) {
  (void)state;
  run_in_child(&case_fresh);
}

int main(void) {
  mi_child_save_signals();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tails_reused_pages_discarded_blocks_intact),
      cmocka_unit_test(test_tails_holes_off_nothing_discarded),
      cmocka_unit_test(test_tails_fresh_memory_nothing_discarded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
