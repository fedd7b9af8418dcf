#define _GNU_SOURCE
/* Secure mode: writes into freed blocks above 8 KiB up to the large
   threshold (the medium pages, up to 128 KiB + 16), which are checked whole
   when handed out again (src/secure/memory.c,
   _mi_secure_block_untouched_medium), also when their page went back to its
   segment and a page set up on the same memory hands them out (the bits it
   inherits, src/secure/alloc.c). Each case frees a block, writes through the
   stale pointer at the start, the middle or the end of the block, and then
   allocates blocks of that size until the freed one comes back: the write
   must be reported in every run (30 children each, each with its own
   random state). Above the threshold a freed block is fenced: the stale
   write faults. Each case has its control, the same program without the
   write, which must exit 0 with no report (and must see the block come
   back, or the misuse would prove nothing). Built only with MI_SECURE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <mimalloc.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../child.h"

#define REPORT "use-after-free write detected in block"
#define RUNS 30
#define REUSE_TRIES 200

static void* volatile sink;
static uint8_t* volatile stale; /* the compiler must not drop the writes through it */

typedef enum { AT_START, AT_MIDDLE, AT_END, AT_LINK } position_t;

/* The case's parameters, set before the fork. */
static size_t c_size;      /* the request */
static position_t c_where; /* where the stale write lands */
static bool c_keep;        /* a second block keeps the page in use */
static size_t c_between;   /* a request of another medium size made and freed between (0: none) */
typedef enum { RETURN_NONE, RETURN_PURGE, RETURN_HOLES } return_t;
static return_t c_return; /* memory given back to the OS after the free, before the write */

/* The program's use of a block: a byte a page, and both ends. */
static void use_block(volatile uint8_t* p, size_t size, uint8_t v) {
  for (size_t i = 0; i < size; i += 4096) p[i] = v;
  p[size - 1] = v;
}

/* AT_START: just past the first word (which holds the free-list link while
   the block is free; AT_LINK writes that word alone) */
static size_t write_offset(size_t size, position_t where) {
  switch (where) {
    case AT_START: return 8;
    case AT_MIDDLE: return size / 2 + 5;
    case AT_END: return size - 1;
    default: return 0;
  }
}

/* Whether the OS page holding `p` is mapped (mincore) */
static bool page_resident(const void* p) {
  unsigned char vec[1];
  void* page = (void*)((uintptr_t)p & ~(uintptr_t)4095);
  if (mincore(page, 4096, vec) != 0) return true;
  return (vec[0] & 1) != 0;
}

static void case_stale_write(bool misuse) {
  /* a block of another size class keeps the segment in use when the
     tested block's page goes */
  void* anchor = mi_malloc(20000);
  uint8_t* keep = NULL;
  if (c_keep) {
    keep = (uint8_t*)mi_malloc(c_size);
    use_block(keep, c_size, 1);
  }
  uint8_t* p = (uint8_t*)mi_malloc(c_size);
  use_block(p, c_size, 1);
  stale = p;
  mi_free(p);
  if (c_return != RETURN_NONE) {
    /* the free page's memory goes (RETURN_PURGE), or, its page kept, the
       free block's OS pages inside it (RETURN_HOLES: hole purge) */
    mi_purge_all(true);
    size_t at = write_offset(c_size, c_where);
    if (page_resident(p + at)) {
      fprintf(stderr, "the freed block's memory at %p was not given back\n", (void*)(p + at));
      _exit(4);
    }
  }
  if (misuse) {
    if (c_where == AT_LINK) memset(stale, 0x41, 8);
    else stale[write_offset(c_size, c_where)] = 0x41;
  }
  if (c_between != 0) {
    /* a page of another size set up on the freed page's memory, and gone */
    void* q = mi_malloc(c_between);
    use_block((uint8_t*)q, c_between, 2);
    mi_free(q);
  }
  void* got[REUSE_TRIES];
  int n = 0;
  bool reused = false;
  while (n < REUSE_TRIES && !reused) {
    uint8_t* q = (uint8_t*)mi_malloc(c_size);
    use_block(q, c_size, 3);
    got[n++] = q;
    reused = (q == p);
  }
  if (!reused) {
    fprintf(stderr, "block %p not handed out again in %d allocations\n", (void*)p, REUSE_TRIES);
    _exit(3);
  }
  for (int i = 0; i < n; i++) mi_free(got[i]);
  mi_free(keep);
  mi_free(anchor);
}

/* Forked children start from this process's random state: draw past it, so
   that each child's carve order and quarantine slots are its own. */
static void advance_random(void) {
  for (int i = 0; i < 7; i++) {
    void* p = mi_malloc(16);
    sink = p;
    mi_free(p);
  }
}

/* The control once, then the misuse in RUNS children: every one reported
   (c_return set by the caller). */
static void expect_every_run_after(size_t size, position_t where, bool keep, size_t between, const char* message) {
  c_size = size;
  c_where = where;
  c_keep = keep;
  c_between = between;
  advance_random();
  expect(&case_stale_write, SIGABRT, message);
  for (int run = 1; run < RUNS; run++) {
    advance_random();
    char err[4096];
    int status = run_child(&case_stale_write, true, err, sizeof(err));
    char line[160];
    snprintf(line, sizeof(line), "mimalloc: error: %s 0x", message);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT || strstr(err, line) == NULL) {
      print_error("size %zu, position %d, keep %d, between %zu: run %d of %d missed (status %d): %s\n", size,
                  (int)where, (int)keep, between, run + 1, RUNS, status, err);
      fail();
    }
  }
}
static void expect_every_run(size_t size, position_t where, bool keep, size_t between, const char* message) {
  c_return = RETURN_NONE;
  expect_every_run_after(size, where, keep, between, message);
}

/* The sizes of the issue: a request of exactly 8 KiB (its trailer takes it
   to the 9 KiB class), one byte more, 10 KiB, 64 KiB, 100 KiB, 128 KiB, and
   the largest medium request (128 KiB + 16 less the 8-byte trailer). */
static const size_t medium_sizes[] = {8192, 8193, 10 * 1024, 64 * 1024, 100 * 1024, 128 * 1024, 128 * 1024 + 8};
#define MEDIUM_SIZES (sizeof(medium_sizes) / sizeof(medium_sizes[0]))

static void every_size(position_t where, bool keep) {
  for (size_t i = 0; i < MEDIUM_SIZES; i++) expect_every_run(medium_sizes[i], where, keep, 0, REPORT);
}

/* The page stays in use (another block of it is live): the block comes back
   from its page's free list. */
static void test_stale_write_start_page_kept_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  every_size(AT_START, true);
}
static void test_stale_write_middle_page_kept_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  every_size(AT_MIDDLE, true);
}
static void test_stale_write_end_page_kept_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  every_size(AT_END, true);
}

/* The block was its page's only one: the page went back to its segment on
   the free, and a new page set up on the same memory hands the block out. */
static void test_stale_write_start_page_gone_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  every_size(AT_START, false);
}
static void test_stale_write_middle_page_gone_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  every_size(AT_MIDDLE, false);
}
static void test_stale_write_end_page_gone_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  every_size(AT_END, false);
}

/* The link's word alone: on the free list it decodes to no block of the
   page; once the page is gone, the carve of the new page finds it written
   before it lays a link there. */
static void test_stale_write_link_page_kept_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  for (size_t i = 0; i < MEDIUM_SIZES; i++) {
    expect_every_run(medium_sizes[i], AT_LINK, true, 0, "corrupted free list detected at");
  }
}
static void test_stale_write_link_page_gone_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  for (size_t i = 0; i < MEDIUM_SIZES; i++) expect_every_run(medium_sizes[i], AT_LINK, false, 0, REPORT);
}

/* Between the free and the reuse, a page of another medium size is set up
   on the freed page's memory and goes: the page after it inherits what
   both handed out. */
static void test_stale_write_page_of_other_size_between_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  expect_every_run(64 * 1024, AT_MIDDLE, false, 40 * 1024, REPORT);
  expect_every_run(10 * 1024, AT_END, false, 100 * 1024, REPORT);
  expect_every_run(128 * 1024, AT_START, false, 9000, REPORT);
}

/* The freed page's memory went back to the OS before the write (purged:
   the write maps a page again), and a page set up on the slot hands the
   block out: the slot's history is kept, and mincore tells the page was
   written since. */
static void test_stale_write_after_purge_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  c_return = RETURN_PURGE;
  for (size_t i = 0; i < MEDIUM_SIZES; i++) {
    expect_every_run_after(medium_sizes[i], AT_MIDDLE, false, 0, REPORT);
    expect_every_run_after(medium_sizes[i], AT_END, false, 0, REPORT);
  }
}

/* The freed block's pages were discarded inside its page, which stays in
   use (a hole: mi_purge_all sweeps the caller's pages), before the write. */
static void test_stale_write_into_hole_always_reported(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  c_return = RETURN_HOLES;
  expect_every_run_after(64 * 1024, AT_MIDDLE, true, 0, REPORT);
  expect_every_run_after(128 * 1024, AT_MIDDLE, true, 0, REPORT);
}

/* ---- Above the large threshold: fenced ---------------------------------------- */

static void case_stale_write_large(bool misuse) {
  uint8_t* p = (uint8_t*)mi_malloc(c_size);
  use_block(p, c_size, 1);
  stale = p;
  mi_free(p);
  if (misuse) stale[write_offset(c_size, c_where)] = 0x41;
  void* q = mi_malloc(c_size);
  sink = q;
  mi_free(q);
}
static void test_stale_write_first_large_sizes_faults(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_large_quarantine);
  static const size_t sizes[] = {128 * 1024 + 9, 128 * 1024 + 4096, 300000};
  for (size_t i = 0; i < 3; i++) {
    for (int w = AT_START; w <= AT_END; w++) {
      c_size = sizes[i];
      c_where = (position_t)w;
      expect(&case_stale_write_large, SIGSEGV, "use-after-free detected in freed large block at");
    }
  }
}

/* ---- Clean programs: no report ---------------------------------------------- */

/* Every medium size class, reused many times, written all over (calloc,
   realloc, memset to its usable size), freed by the owner and by another
   thread, its heap destroyed with blocks live, its pages gone and set up
   again with other sizes: never a report. */
static void* free_all(void* arg) {
  void** blocks = (void**)arg;
  for (int i = 0; i < 64; i++) mi_free(blocks[i]);
  return NULL;
}
static void case_clean_reuse(bool misuse) {
  (void)misuse;
  for (int round = 0; round < 40; round++) {
    for (size_t size = 8 * 1024; size <= 128 * 1024 + 8; size += 1024 + 8 * (size_t)round) {
      uint8_t* p = (uint8_t*)(round % 3 == 0 ? mi_calloc(1, size) : mi_malloc(size));
      memset(p, 0xEE, size);
      p = (uint8_t*)mi_realloc(p, size + 4096);
      memset(p, 0xDD, size + 4096);
      mi_free(p);
    }
  }
  void* blocks[64];
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < 64; i++) {
      size_t size = 8192 + (size_t)i * 1900;
      blocks[i] = mi_malloc(size);
      memset(blocks[i], 0xCC, size);
    }
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, &free_all, blocks), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    for (int i = 0; i < 64; i++) {
      size_t size = 8192 + (size_t)((i * 7 + round) % 64) * 1900;
      uint8_t* p = (uint8_t*)mi_malloc(size);
      memset(p, 0xAA, size);
      mi_free(p);
    }
    mi_heap_t* heap = mi_heap_new();
    for (int i = 0; i < 64; i++) memset(mi_heap_malloc(heap, 20000), 0xBB, 20000);
    mi_heap_destroy(heap);
    for (int i = 0; i < 64; i++) blocks[i] = mi_malloc(20000);
    for (int i = 0; i < 64; i++) mi_free(blocks[i]);
  }
}
static void test_clean_reuse_no_report(void** state) {
  (void)state;
  expect_clean_exit(&case_clean_reuse);
}

int main(void) {
  mi_child_save_signals();
  mi_option_set(mi_option_guarded_sample_rate, 0); /* the same block must come back */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stale_write_start_page_kept_always_reported),
      cmocka_unit_test(test_stale_write_middle_page_kept_always_reported),
      cmocka_unit_test(test_stale_write_end_page_kept_always_reported),
      cmocka_unit_test(test_stale_write_start_page_gone_always_reported),
      cmocka_unit_test(test_stale_write_middle_page_gone_always_reported),
      cmocka_unit_test(test_stale_write_end_page_gone_always_reported),
      cmocka_unit_test(test_stale_write_link_page_kept_always_reported),
      cmocka_unit_test(test_stale_write_link_page_gone_always_reported),
      cmocka_unit_test(test_stale_write_page_of_other_size_between_always_reported),
      cmocka_unit_test(test_stale_write_after_purge_always_reported),
      cmocka_unit_test(test_stale_write_into_hole_always_reported),
      cmocka_unit_test(test_stale_write_first_large_sizes_faults),
      cmocka_unit_test(test_clean_reuse_no_report),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
