/* The purge policy (src/segment/purge-delay.c, src/segment/segment-cache.c): the delay grows
   while purged memory comes back soon after its purge and shrinks once it
   stops, an idle program's memory still goes at the plain delay, a large
   segment still committed serves a smaller block, and the dirty segment
   cache stays within its budget.

   The policy's functions take the time as an argument, so the first cases
   drive them with a clock of their own: nothing here depends on how fast
   the machine runs. The library's own purges are kept out of the way (a
   delay of -1 schedules none). */
#define _GNU_SOURCE
#include "testutil.h"

#include "internal.h" /* the policy's entry points, reached through the static library */

#define BASE 10L /* ms: the plain delay the cases pass in */

static int64_t test_clock = 1000000;

/* Bring the policy back to the plain delay: a calm second per halving. */
static void settle(void) {
  mi_purge_pass_t pass;
  for (int i = 0; i < 8; i++) {
    test_clock += 2000;
    _mi_purge_pass_begin(&pass, test_clock, BASE);
  }
  assert_int_equal(pass.extra, 0);
}

/* n reuses, each 1 ms after its purge: a regret each while the delay is above 1 ms */
static void regrets(int n) {
  for (int i = 0; i < n; i++) {
    _mi_purge_note_reused(test_clock, test_clock + 1, BASE);
    test_clock += 1;
  }
}

static int64_t extra_now(void) {
  mi_purge_pass_t pass;
  _mi_purge_pass_begin(&pass, test_clock, BASE);
  return pass.extra;
}

static int setup(void** state) {
  (void)state;
  mi_option_set(mi_option_purge_delay, -1);
  return 0;
}

static void test_delay_reuse_soon_after_purge_doubles(void** state) {
  (void)state;
  settle();
  /* purged at t, back 5 ms later: a delay of 20 would have kept it */
  _mi_purge_note_reused(test_clock, test_clock + 5, BASE);
  test_clock += 5;
  assert_int_equal(extra_now(), BASE);                      /* 2 x BASE in all */
  _mi_purge_note_reused(test_clock, test_clock + 15, BASE); /* within the 20 now */
  test_clock += 15;
  assert_int_equal(extra_now(), 3 * BASE);
}

/* purge_extend_delay=0 (mimalloc's switch for extending a purge's wait):
   the delay stays as set however soon purged memory comes back */
static void test_delay_extend_option_zero_not_grown(void** state) {
  (void)state;
  settle();
  mi_option_set(mi_option_purge_extend_delay, 0);
  regrets(3);
  int64_t kept = extra_now();
  mi_option_set(mi_option_purge_extend_delay, 1);
  assert_int_equal(kept, 0);
  regrets(1); /* the control: with it on, the same reuse doubles the delay */
  assert_int_equal(extra_now(), BASE);
}

static void test_delay_reuse_long_after_purge_unchanged(void** state) {
  (void)state;
  settle();
  _mi_purge_note_reused(test_clock, test_clock + BASE, BASE); /* a whole delay later: not the delay's fault */
  test_clock += BASE;
  assert_int_equal(extra_now(), 0);
  _mi_purge_note_reused(0, test_clock, BASE); /* never purged (fresh from the OS) */
  assert_int_equal(extra_now(), 0);
}

static void test_delay_grows_at_most_64_times(void** state) {
  (void)state;
  settle();
  regrets(20);
  assert_int_equal(extra_now(), 63 * BASE);
}

static void test_delay_calm_second_halves(void** state) {
  (void)state;
  settle();
  regrets(3);
  assert_int_equal(extra_now(), 7 * BASE);
  test_clock += 999; /* not a whole second yet */
  assert_int_equal(extra_now(), 7 * BASE);
  test_clock += 1;
  assert_int_equal(extra_now(), 3 * BASE);
  test_clock += 1000;
  assert_int_equal(extra_now(), BASE);
}

static void test_pass_busy_waits_the_grown_delay(void** state) {
  (void)state;
  settle();
  regrets(2);
  int64_t freed = test_clock;
  _mi_purge_note_taken(); /* the program keeps taking memory */
  test_clock += 2 * BASE;
  mi_purge_pass_t pass;
  _mi_purge_pass_begin(&pass, test_clock, BASE);
  assert_false(pass.idle);
  int64_t next = INT64_MAX;
  assert_false(_mi_purge_pass_due(&pass, freed + BASE, &next));
  /* look again one plain delay on (has it gone idle?), before the grown time */
  assert_int_equal(next, test_clock + BASE);
  test_clock = freed + 4 * BASE; /* the grown delay (4 x BASE) has passed */
  _mi_purge_note_taken();
  _mi_purge_pass_begin(&pass, test_clock, BASE);
  assert_false(pass.idle);
  next = INT64_MAX;
  assert_true(_mi_purge_pass_due(&pass, freed + BASE, &next));
  assert_int_equal(next, INT64_MAX);
}

static void test_pass_idle_purges_at_the_plain_delay(void** state) {
  (void)state;
  settle();
  regrets(6);
  int64_t freed = test_clock;
  _mi_purge_note_taken(); /* the last memory taken, then nothing */
  test_clock += BASE;
  mi_purge_pass_t pass;
  _mi_purge_pass_begin(&pass, test_clock, BASE); /* sees the taking */
  assert_false(pass.idle);
  int64_t next = INT64_MAX;
  assert_false(_mi_purge_pass_due(&pass, freed + BASE, &next));
  assert_int_equal(next, test_clock + BASE);
  test_clock = next;
  _mi_purge_pass_begin(&pass, test_clock, BASE); /* nothing taken for a plain delay */
  assert_true(pass.idle);
  assert_int_equal(pass.extra, 63 * BASE); /* still grown: only idleness lets it go */
  next = INT64_MAX;
  assert_true(_mi_purge_pass_due(&pass, freed + BASE, &next));
  /* what is not due at the plain delay yet waits for it, not for the grown one */
  assert_false(_mi_purge_pass_due(&pass, test_clock + 3, &next));
  assert_int_equal(next, test_clock + 3);
}

static void test_pass_never_due_stays(void** state) {
  (void)state;
  settle();
  mi_purge_pass_t pass;
  _mi_purge_pass_begin(&pass, test_clock, BASE);
  int64_t next = INT64_MAX;
  assert_false(_mi_purge_pass_due(&pass, INT64_MAX, &next)); /* freed with a delay below 0 */
  assert_int_equal(next, INT64_MAX);
}

/* ---- The segment cache ----------------------------------------------------- */

static size_t committed_now(void) {
  size_t commit = 0;
  mi_process_info(NULL, NULL, NULL, NULL, NULL, &commit, NULL, NULL);
  return commit;
}

/* ---- The budget of dirty free pages ---------------------------------------- */

static mi_purge_pass_t busy_grown_pass(void) {
  settle();
  regrets(6);
  _mi_purge_note_taken(); /* the program keeps taking memory */
  mi_purge_pass_t pass;
  _mi_purge_pass_begin(&pass, test_clock, BASE);
  assert_false(pass.idle);
  assert_int_equal(pass.extra, 63 * BASE);
  return pass;
}

static void test_page_budget_oldest_past_plain_delay_go(void** state) {
  (void)state;
  mi_purge_pass_t pass = busy_grown_pass();
  mi_purge_budget_t budget;
  memset(&budget, 0, sizeof(budget));
  int64_t now = pass.now;
  _mi_purge_budget_add(&budget, &pass, now - 5 * BASE, 8 * (int64_t)MiB); /* waited 5 plain delays past its own */
  _mi_purge_budget_add(&budget, &pass, now - 2 * BASE - 1, 8 * (int64_t)MiB);
  _mi_purge_budget_add(&budget, &pass, now, 8 * (int64_t)MiB);     /* just past the plain delay */
  _mi_purge_budget_add(&budget, &pass, now + 3, 8 * (int64_t)MiB); /* not yet */
  assert_int_equal(budget.dirty, 32 * (int64_t)MiB);
  /* 64 MiB in use allows 16: the two oldest go, the 8 MiB just due stays */
  int64_t cutoff = _mi_purge_budget_cutoff(&budget, &pass, 64 * (int64_t)MiB);
  assert_true(now - 2 * BASE - 1 <= cutoff);
  assert_true(cutoff < now);
  /* 16 MiB in use allows the minimum, 4: all that waited the plain delay goes, not the rest */
  assert_int_equal(_mi_purge_budget_cutoff(&budget, &pass, 16 * (int64_t)MiB), now);
}

static void test_page_budget_within_allowance_none_go(void** state) {
  (void)state;
  mi_purge_pass_t pass = busy_grown_pass();
  mi_purge_budget_t budget;
  memset(&budget, 0, sizeof(budget));
  _mi_purge_budget_add(&budget, &pass, pass.now - 10 * BASE, 3 * (int64_t)MiB);
  assert_int_equal(_mi_purge_budget_cutoff(&budget, &pass, 0), INT64_MIN); /* under the 4 MiB minimum */
  _mi_purge_budget_add(&budget, &pass, pass.now - 10 * BASE, 17 * (int64_t)MiB);
  assert_int_equal(_mi_purge_budget_cutoff(&budget, &pass, 80 * (int64_t)MiB), INT64_MIN); /* a quarter of 80 */
  assert_int_not_equal(_mi_purge_budget_cutoff(&budget, &pass, 72 * (int64_t)MiB), INT64_MIN);
}

/* Free pages inside segments that stay in use: 64 MiB of 1 KiB blocks freed,
   with a 2 KiB block kept after every 64 KiB of them so that no segment
   empties (an empty one goes to the cache, which has a budget of its own).
   The delay grown to 64 ms, a plain delay of 1 ms: when the pass comes the
   pages have waited the plain delay but not the grown one, and only the
   budget purges them. (Were the machine to stall past 64 ms, the grown delay
   would purge them instead: the case cannot fail for that, and its positive
   control, the budget taken out, fails.) */
static void test_page_budget_dirty_free_pages_purged(void** state) {
  (void)state;
  mi_option_set(mi_option_purge_delay, 1);
  mi_option_set(mi_option_large_quarantine, 0); /* secure builds: the busy loop's blocks held zeroed, counted in */
  mi_collect(true);
  for (int i = 0; i < 6; i++) {
    int64_t now = mi_prim_clock_now();
    _mi_purge_note_reused(now, now, 1);
  }
  enum { ROUNDS = 1024, PER_ROUND = 64 };
  void** small = (void**)calloc((size_t)ROUNDS * PER_ROUND, sizeof(void*));
  void** kept = (void**)calloc(ROUNDS, sizeof(void*));
  assert_non_null(small);
  assert_non_null(kept);
  size_t before = committed_now();
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < PER_ROUND; i++) {
      void* p = mi_malloc(1024);
      assert_non_null(p);
      memset(p, 1, 1024);
      small[r * PER_ROUND + i] = p;
    }
    kept[r] = mi_malloc(2048);
    assert_non_null(kept[r]);
  }
  for (int i = 0; i < ROUNDS * PER_ROUND; i++) mi_free(small[i]);
  /* the plain delay passes while the program keeps taking memory (a large
     block's segment from the cache, again and again): not idle */
  int64_t start = mi_prim_clock_now();
  while (mi_prim_clock_now() < start + 5) mi_free(mi_malloc(MiB));
  mi_collect(false); /* a pass: about 64 MiB of dirty free pages, over budget */
  size_t after = committed_now();
  /* what is kept in use (2 MiB of 2 KiB blocks and their pages) and at most
     the 4 MiB minimum of dirty pages, with room for the cache's segment */
  assert_true(after < before + 4 * MiB + 4 * MiB + 8 * MiB);
  for (int r = 0; r < ROUNDS; r++) mi_free(kept[r]);
  free(small);
  free(kept);
  mi_collect(true);
  mi_option_set(mi_option_large_quarantine, MI_SECURE ? 64 : 0);
  mi_option_set(mi_option_purge_delay, -1);
}

static void test_cache_larger_dirty_segment_serves_smaller_block(void** state) {
  (void)state;
#if MI_SECURE
  skip(); /* exact sizes: a block ends at its segment's guard page */
#else
  mi_option_set(mi_option_purge_delay, 100000); /* nothing purged by time while the case runs */
  uint8_t* big = (uint8_t*)mi_malloc(20 * MiB);
  assert_non_null(big);
  memset(big, 1, 20 * MiB);
  mi_free(big);
  uint8_t* smaller = (uint8_t*)mi_malloc(15 * MiB); /* a segment size below, within half */
  assert_ptr_equal(smaller, big);
  mi_free(smaller);
  uint8_t* far = (uint8_t*)mi_malloc(6 * MiB); /* less than half: its own segment */
  assert_ptr_not_equal(far, big);
  mi_free(far);
  mi_collect(true);
  mi_option_set(mi_option_purge_delay, -1);
#endif
}

/* Two dirty cached segments of one size, one that held a 2 MiB block and
   one a 256 KiB block (the newer): a 2 MiB block gets the first, a 256 KiB
   block the second, each the one whose committed memory fits it. (Taking
   the newest for any size gave a guarded sample of a few bytes the segment
   of a megabyte block: mstress held 50 MiB more in the secure build.) */
static void test_cache_segment_closest_in_committed_serves_block(void** state) {
  (void)state;
  mi_option_set(mi_option_purge_delay, 100000); /* nothing purged by time while the case runs */
  mi_option_set(mi_option_large_quarantine, 0); /* secure builds: freed large blocks straight to the cache */
  long sample_rate = mi_option_get(mi_option_guarded_sample_rate);
  mi_option_set(mi_option_guarded_sample_rate, 0);
  mi_collect(true);
  const size_t big_size = 2 * MiB;
  const size_t small_size = 256 * 1024; /* above the medium sizes: a segment of its own */
  uint8_t* big = (uint8_t*)mi_malloc(big_size);
  uint8_t* small = (uint8_t*)mi_malloc(small_size);
  assert_non_null(big);
  assert_non_null(small);
  memset(big, 1, big_size);
  memset(small, 1, small_size);
  mi_segment_t* big_segment = _mi_ptr_segment(big);
  mi_segment_t* small_segment = _mi_ptr_segment(small);
  assert_int_equal(big_segment->segment_size, small_segment->segment_size); /* one size in the cache */
  mi_free(big);
  int64_t freed_at = mi_prim_clock_now();
  while (mi_prim_clock_now() == freed_at) { /* the next millisecond: the small block's segment is the newer */
  }
  mi_free(small);
  uint8_t* again_big = (uint8_t*)mi_malloc(big_size);
  assert_non_null(again_big);
  assert_ptr_equal(_mi_ptr_segment(again_big), big_segment);
  uint8_t* again_small = (uint8_t*)mi_malloc(small_size);
  assert_non_null(again_small);
  assert_ptr_equal(_mi_ptr_segment(again_small), small_segment);
  mi_free(again_big);
  mi_free(again_small);
  mi_collect(true);
  mi_option_set(mi_option_guarded_sample_rate, sample_rate);
  mi_option_set(mi_option_large_quarantine, MI_SECURE ? 64 : 0);
  mi_option_set(mi_option_purge_delay, -1);
}

/* The delay grown to 64 ms (as regrets grow it), a plain delay of 1 ms: the
   freed segments have waited the plain delay but not the grown one when the
   pass comes, and only the budget purges them. (Were the machine to stall
   past 64 ms, the grown delay would purge them instead: the case cannot fail
   for that, and its positive control, the budget taken out, fails.) */
static void test_cache_dirty_over_budget_purged(void** state) {
  (void)state;
  mi_option_set(mi_option_purge_delay, 1);
  mi_option_set(mi_option_large_quarantine, 0); /* secure builds: freed large blocks straight to the cache */
  mi_collect(true);
  for (int i = 0; i < 6; i++) {
    int64_t now = mi_prim_clock_now();
    _mi_purge_note_reused(now, now, 1);
  }
  size_t before = committed_now();
  enum { N = 8 };
  void* blocks[N];
  for (int i = 0; i < N; i++) {
    blocks[i] = mi_malloc(20 * MiB);
    assert_non_null(blocks[i]);
    memset(blocks[i], 1, 20 * MiB);
  }
  for (int i = 0; i < N; i++) mi_free(blocks[i]);
  /* the plain delay passes while the program keeps taking memory (a large
     block's segment from the cache, again and again): not idle, so only
     the budget lets the freed segments go */
  int64_t start = mi_prim_clock_now();
  while (mi_prim_clock_now() < start + 5) mi_free(mi_malloc(MiB));
  mi_collect(false); /* a pass: 160 MiB of dirty segments, over budget */
  size_t after = committed_now();
  /* at most 32 MiB of dirty segments (more than a quarter of the little in use) */
  assert_true(after < before + 32 * MiB + 8 * MiB);
  mi_collect(true);
  mi_option_set(mi_option_large_quarantine, MI_SECURE ? 64 : 0);
  mi_option_set(mi_option_purge_delay, -1);
}

/* arena_purge_mult: a cached segment of arena memory waits that many purge
   delays, one of OS memory the plain delay. A pass of our own, two delays
   on: only the OS segment is due; with the multiplier 1, the arena's too. */
static void test_cache_arena_segment_waits_purge_mult_delays(void** state) {
  (void)state;
  const long delay = 100000; /* nothing purged by time while the case runs */
  mi_option_set(mi_option_purge_delay, delay);
  mi_option_set(mi_option_large_quarantine, 0); /* secure builds: freed large blocks straight to the cache */
  mi_option_set(mi_option_arena_purge_mult, 10);
  long cache_slots = mi_option_get(mi_option_segment_cache);
  mi_option_set(mi_option_segment_cache, 64); /* room beside the clean segments earlier cases left */
  long sample_rate = mi_option_get(mi_option_guarded_sample_rate);
  mi_option_set(mi_option_guarded_sample_rate, 0);
  mi_collect(true);
  assert_int_equal(_mi_segment_cache_dirty(), 0);
  mi_arena_id_t id = 0;
  assert_int_equal(mi_reserve_os_memory_ex(16 * MiB, true, false, true, &id), 0); /* exclusive: no other case's */
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  assert_non_null(heap);
  uint8_t* in_arena = (uint8_t*)mi_heap_malloc(heap, MiB);
  uint8_t* from_os = (uint8_t*)mi_malloc(MiB);
  assert_non_null(in_arena);
  assert_non_null(from_os);
  memset(in_arena, 1, MiB);
  memset(from_os, 1, MiB);
  mi_free(in_arena);
  mi_free(from_os);
  int64_t both = _mi_segment_cache_dirty();
  assert_true(both >= (int64_t)(2 * MiB));
  mi_purge_pass_t pass = {.now = mi_prim_clock_now() + 2 * delay, .base = delay, .extra = 0, .idle = false};
  (void)_mi_segment_cache_purge(false, &pass);
  int64_t arena_left = _mi_segment_cache_dirty();
  assert_true(arena_left >= (int64_t)MiB && arena_left < both); /* the arena's still dirty */
  mi_option_set(mi_option_arena_purge_mult, 1);
  (void)_mi_segment_cache_purge(false, &pass);
  assert_int_equal(_mi_segment_cache_dirty(), 0);
  mi_option_set(mi_option_arena_purge_mult, 10);
  mi_heap_delete(heap);
  mi_collect(true);
  mi_option_set(mi_option_segment_cache, cache_slots);
  mi_option_set(mi_option_guarded_sample_rate, sample_rate);
  mi_option_set(mi_option_large_quarantine, MI_SECURE ? 64 : 0);
  mi_option_set(mi_option_purge_delay, -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_delay_reuse_soon_after_purge_doubles),
      cmocka_unit_test(test_delay_reuse_long_after_purge_unchanged),
      cmocka_unit_test(test_delay_extend_option_zero_not_grown),
      cmocka_unit_test(test_delay_grows_at_most_64_times),
      cmocka_unit_test(test_delay_calm_second_halves),
      cmocka_unit_test(test_pass_busy_waits_the_grown_delay),
      cmocka_unit_test(test_pass_idle_purges_at_the_plain_delay),
      cmocka_unit_test(test_pass_never_due_stays),
      cmocka_unit_test(test_page_budget_oldest_past_plain_delay_go),
      cmocka_unit_test(test_page_budget_within_allowance_none_go),
      cmocka_unit_test(test_page_budget_dirty_free_pages_purged),
      cmocka_unit_test(test_cache_larger_dirty_segment_serves_smaller_block),
      cmocka_unit_test(test_cache_segment_closest_in_committed_serves_block),
      cmocka_unit_test(test_cache_dirty_over_budget_purged),
      cmocka_unit_test(test_cache_arena_segment_waits_purge_mult_delays),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
