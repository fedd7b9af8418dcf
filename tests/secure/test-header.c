#define _GNU_SOURCE
/* Secure mode: a segment header written over, then a free (issue 18). What
   free reads of the header before it trusts it (the cookie, the kind and
   page size, a page's geometry, its state and counts, a large block's page
   and links) is checked, and a scribble over it aborts with one line,
   `corrupted segment header detected at <segment> (size N)`, never a wild
   access. Each case runs in a child and has its control: the same program
   without the scribble exits 0 with no report. Built only with MI_SECURE,
   against the library's internal header for the layout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "../child.h"

#define CORRUPTED "corrupted segment header detected at"

typedef enum block_kind_e { B_SMALL, B_MEDIUM, B_LARGE, B_HUGE, B_ALIGNED, B_ZERO } block_kind_t;

static void* alloc_of(block_kind_t kind) {
  switch (kind) {
    case B_SMALL: return mi_malloc(32);
    case B_MEDIUM: return mi_malloc(20000);
    case B_LARGE: return mi_malloc(1 << 20);
    case B_HUGE: return mi_malloc((size_t)40 << 20);
    case B_ALIGNED: return mi_malloc_aligned(100, 256);
    default: return mi_malloc(0);
  }
}

/* What a case writes over: bytes of the block's segment header (page:
   false) or of its page (page: true), xored with a mask. */
typedef struct scribble_s {
  block_kind_t kind;
  bool page;
  size_t offset;
  size_t size;
  uint64_t mask;
  bool remote;  /* freed by another thread */
  bool assign;  /* the bytes set to the mask's, not xored with them */
  bool sampled; /* the pprof sampler takes every block: a small or medium page's check word is marked */
} scribble_t;

static scribble_t scribble;
static void* volatile sink;

static void* free_in_thread(void* p) {
  mi_free(p);
  return NULL;
}

/* Every allocation a sample from here on. */
static void start_sampling_all(void) {
  mi_prof_config_t_decl(cfg);
  cfg.mode = MI_PROF_CONFIG_OVERRIDE;
  cfg.sample_interval = 1;
  cfg.seed = 7;
  assert_true(mi_prof_start_ex(&cfg));
}

static void case_scribbled(bool misuse) {
  if (scribble.sampled) start_sampling_all();
  void* keep = alloc_of(scribble.kind); /* its page stays in use */
  void* p = alloc_of(scribble.kind);
  sink = p;
  if (scribble.sampled) { /* the case is about a marked page: the page must be one */
    mi_segment_t* segment = _mi_ptr_segment(p);
    assert_true((mi_page_flags(_mi_segment_page_of(segment, p)) & MI_PAGE_FLAG_SAMPLED) != 0);
  }
  if (misuse) {
    mi_segment_t* segment = _mi_ptr_segment(p);
    uint8_t* base = (scribble.page ? (uint8_t*)_mi_segment_page_of(segment, p) : (uint8_t*)segment);
    uint8_t* at = base + scribble.offset;
    for (size_t i = 0; i < scribble.size; i++) {
      uint8_t m = (uint8_t)(scribble.mask >> (8 * i));
      at[i] = (scribble.assign ? m : (uint8_t)(at[i] ^ m));
    }
  }
  if (scribble.remote) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, &free_in_thread, p), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
  } else {
    mi_free(p);
  }
  for (int i = 0; i < 100; i++) mi_free(alloc_of(scribble.kind));
  mi_free(keep);
  mi_collect(true);
}

static void expect_reported(block_kind_t kind, bool page, size_t offset, size_t size, uint64_t mask) {
  scribble = (scribble_t){kind, page, offset, size, mask, false, false, false};
  expect(&case_scribbled, SIGABRT, CORRUPTED);
}

#define SEG(field) false, offsetof(mi_segment_t, field), sizeof(((mi_segment_t*)0)->field)
#define PAGE(field) true, offsetof(mi_page_t, field), sizeof(((mi_page_t*)0)->field)

/* ---- The segment: its cookie, kind and page size -------------------------------- */

static void test_scribbled_cookie_is_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, SEG(cookie), 0x10);
  expect_reported(B_LARGE, SEG(cookie), 0x8000);
}

/* the cookie zeroed alone is not a purged segment (whose header is all zero) */
static void test_zeroed_cookie_is_reported(void** state) {
  (void)state;
  scribble = (scribble_t){B_SMALL, SEG(cookie), 0, false, true, false};
  expect(&case_scribbled, SIGABRT, CORRUPTED);
}

static void test_scribbled_kind_is_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, SEG(kind), 1);  /* as if medium */
  expect_reported(B_SMALL, SEG(kind), 2);  /* as if a single block's */
  expect_reported(B_SMALL, SEG(kind), 3);  /* as if a zero segment */
  expect_reported(B_MEDIUM, SEG(kind), 1); /* as if small */
  expect_reported(B_LARGE, SEG(kind), 2);  /* as if small */
  expect_reported(B_LARGE, SEG(kind), 1);  /* as if a zero segment */
  expect_reported(B_ZERO, SEG(kind), 3);   /* a zero segment's, as if small */
  expect_reported(B_ZERO, SEG(kind), 1);   /* ... as if a single block's */
  expect_reported(B_SMALL, SEG(kind), 0xF0);
}

static void test_scribbled_page_shift_is_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, SEG(page_shift), 0x10); /* 0: every byte its own page */
  expect_reported(B_SMALL, SEG(page_shift), 0x01);
  expect_reported(B_MEDIUM, SEG(page_shift), 0x04);
  expect_reported(B_LARGE, SEG(page_shift), 0x40);
}

/* read by a large or huge block's free (and when its segment goes) */
static void test_scribbled_single_segment_size_is_reported(void** state) {
  (void)state;
  expect_reported(B_LARGE, SEG(segment_size), 0x100000);
  expect_reported(B_HUGE, SEG(segment_size), 0xFF00000000ULL);
  expect_reported(B_LARGE, SEG(page_count), 0xFF);
  expect_reported(B_HUGE, SEG(info_size), 0x1000);
  expect_reported(B_LARGE, SEG(is_pinned), 1);
}

/* ---- A small or medium page's geometry -------------------------------------------- */

static void test_scribbled_page_start_is_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, PAGE(start), 0x10);
  expect_reported(B_SMALL, PAGE(start), (uint64_t)1 << 40);
  expect_reported(B_MEDIUM, PAGE(start), 0x1000);
  expect_reported(B_ALIGNED, PAGE(start), 0x100);
}

static void test_scribbled_block_size_is_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, PAGE(block_size), 0x10);     /* within the page */
  expect_reported(B_SMALL, PAGE(block_size), 1u << 30); /* the zeroing would run off the segment */
  expect_reported(B_MEDIUM, PAGE(block_size), 0x4000);
  scribble = (scribble_t){B_SMALL, PAGE(block_size), 0x100000, true, false, false};
  expect(&case_scribbled, SIGABRT, CORRUPTED); /* the free of another thread */
}

static void test_scribbled_block_size_inverse_is_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, PAGE(block_size_inv), 1);
  expect_reported(B_SMALL, PAGE(block_size_inv), (uint64_t)1 << 50); /* an index far past the bitmap */
}

static void test_scribbled_page_counts_are_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, PAGE(reserved), 0x100);
  expect_reported(B_SMALL, PAGE(capacity), 0x10000); /* past the blocks that fit */
  scribble = (scribble_t){B_SMALL, PAGE(capacity), 0, false, true, false};
  expect(&case_scribbled, SIGABRT, CORRUPTED); /* none carved, yet a block is handed out */
  expect_reported(B_SMALL, PAGE(bin), 0x40);
  expect_reported(B_MEDIUM, PAGE(reserved), 1);
}

static void test_scribbled_page_state_is_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, PAGE(state), 0x80); /* no state a page has */
  expect_reported(B_LARGE, PAGE(state), 0x10);
  /* a page that reads as free but still has its heap */
  expect_reported(B_SMALL, PAGE(state), MI_PAGE_FREE_DIRTY);
}

static void test_scribbled_check_word_is_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, PAGE(geometry), 1);
  expect_reported(B_LARGE, PAGE(geometry), (uint64_t)1 << 63);
}

/* A page of the pprof sampler's carries its check word marked, which the
   free's check passes on its rare path: a scribble there is reported as
   anywhere else, freed by its thread or another, and a page marked and
   left alone frees cleanly. */
static void expect_reported_sampled(block_kind_t kind, bool page, size_t offset, size_t size, uint64_t mask,
                                    bool remote) {
  scribble = (scribble_t){kind, page, offset, size, mask, remote, false, true};
  expect(&case_scribbled, SIGABRT, CORRUPTED);
}

static void test_scribbled_sampled_page_is_reported(void** state) {
  (void)state;
  expect_reported_sampled(B_SMALL, PAGE(geometry), 1, false);
  expect_reported_sampled(B_SMALL, PAGE(geometry), 1, true);
  expect_reported_sampled(B_MEDIUM, PAGE(block_size), 0x4000, false);
  expect_reported_sampled(B_SMALL, PAGE(start), 0x10, true);
  expect_reported_sampled(B_ALIGNED, PAGE(reserved), 0x100, false);
  for (int remote = 0; remote <= 1; remote++) {
    scribble = (scribble_t){B_SMALL, PAGE(geometry), 1, remote != 0, false, true};
    expect_clean_exit(&case_scribbled);
  }
}

/* ---- A large or huge block's page --------------------------------------------------- */

static void test_scribbled_single_page_is_reported(void** state) {
  (void)state;
  expect_reported(B_LARGE, PAGE(block_size), 0x1000);
  expect_reported(B_HUGE, PAGE(block_size), 0x100000);
  expect_reported(B_LARGE, PAGE(start), 0x1000);
  expect_reported(B_LARGE, PAGE(guard_offset), 0x1000); /* the fence would go elsewhere */
}

/* its links are followed and written when the block is unlinked */
static void test_scribbled_single_links_are_reported(void** state) {
  (void)state;
  expect_reported(B_LARGE, PAGE(prev), 0x10);
  expect_reported(B_LARGE, PAGE(next), 0x1000);
  expect_reported(B_HUGE, PAGE(prev), 0xFF);
  expect_reported(B_LARGE, PAGE(heap), 0x40);
  expect_reported(B_HUGE, PAGE(heap), (uint64_t)1 << 44);
}

/* ---- What freeing a page reads of its segment ---------------------------------------- */

/* read when the page goes back to its segment (here at mi_collect) */
static void test_scribbled_segment_counts_are_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, SEG(page_count), 0x01);
  expect_reported(B_MEDIUM, SEG(page_count), 0x80);
  expect_reported(B_SMALL, SEG(segment_size), 0x400000);
  expect_reported(B_SMALL, SEG(info_size), 0x1000);
  expect_reported(B_SMALL, SEG(used_pages), 0x100); /* more pages than the table has */
}

/* the count written over, then a page of another size is set up: the walk
   over the page table for a free slot stops at its end */
static void case_page_count_then_new_page(bool misuse) {
  void* p = mi_malloc(32);
  mi_segment_t* segment = _mi_ptr_segment(p);
  if (misuse) segment->page_count ^= 0x100;
  void* q = mi_malloc(1000); /* a fresh page: its segment's slots are walked */
  sink = q;
  mi_free(q);
  mi_free(p);
}

/* a count of pages in use lowered to 1 while two are: freeing one would
   release the segment under the other */
static void case_used_pages_lowered(bool misuse) {
  void* p = mi_malloc(32);
  void* q = mi_malloc(1000);
  mi_segment_t* segment = _mi_ptr_segment(p);
  assert_ptr_equal(segment, _mi_ptr_segment(q));
  if (misuse) segment->used_pages = 1;
  mi_free(q);
  mi_collect(true); /* q's page goes back to its segment */
  sink = p;
  mi_free(p);
}

/* A block on a page's list of other threads' frees that its owner had freed
   already (its bit clear): the owner's collect reports it, whatever let it
   onto the list (a remote free of it is stopped before: the mark in its
   trailer). Put there by hand; the clean twin puts a live block there, as a
   free from another thread does. */
static void case_collected_block_freed_before(bool misuse) {
  void* p = mi_malloc(64);
  void* q = mi_malloc(64);
  mi_segment_t* segment = _mi_ptr_segment(p);
  mi_page_t* page = _mi_segment_page_of(segment, p);
  assert_ptr_equal(page, _mi_segment_page_of(_mi_ptr_segment(q), q));
  if (misuse) mi_free(p);
  _mi_free_remote(page, (mi_block_t*)(misuse ? p : q));
  _mi_page_collect(page);
  sink = (misuse ? q : p);
  mi_free(misuse ? q : p);
}

static void test_collected_block_freed_before_reported(void** state) {
  (void)state;
  expect(&case_collected_block_freed_before, SIGABRT, "double free detected of block");
}

static void test_scribbled_segment_walks_are_reported(void** state) {
  (void)state;
  expect(&case_page_count_then_new_page, SIGABRT, CORRUPTED);
  expect(&case_used_pages_lowered, SIGABRT, CORRUPTED);
}

static void test_scribbled_segment_links_are_reported(void** state) {
  (void)state;
  expect_reported(B_SMALL, SEG(tld), 0x40);
  expect_reported(B_SMALL, SEG(next), 0x10);
  expect_reported(B_SMALL, SEG(prev), 0x1000);
  expect_reported(B_SMALL, SEG(free_next), 0x10);
  expect_reported(B_MEDIUM, SEG(free_prev), 0x400000);
  expect_reported(B_SMALL, SEG(purge_next), 0x08);
}

/* ---- Every byte of what is sealed ---------------------------------------------------- */

typedef struct field_s {
  bool page;
  size_t offset;
  size_t size;
} field_t;

/* the fields whose every bit free checks, for each kind of block */
static const field_t small_fields[] = {
    {SEG(cookie)},      {SEG(kind)},   {SEG(page_shift)},      {PAGE(bin)},      {PAGE(reserved)},
    {PAGE(block_size)}, {PAGE(start)}, {PAGE(block_size_inv)}, {PAGE(geometry)},
};
static const field_t single_fields[] = {
    {SEG(cookie)},    {SEG(segment_size)}, {SEG(kind)},   {SEG(page_shift)},    {SEG(is_pinned)}, {SEG(page_count)},
    {SEG(info_size)}, {PAGE(block_size)},  {PAGE(start)}, {PAGE(guard_offset)}, {PAGE(geometry)}, {PAGE(heap_check)},
};

static void expect_every_byte_reported(block_kind_t kind, const field_t* fields, size_t count, bool sampled) {
  char err[8192];
  for (size_t f = 0; f < count; f++) {
    for (size_t i = 0; i < fields[f].size; i++) {
      scribble = (scribble_t){kind, fields[f].page, fields[f].offset + i, 1, 0xFF, false, false, sampled};
      int status = run_child(&case_scribbled, true, err, sizeof(err));
      if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT || strstr(err, CORRUPTED " 0x") == NULL) {
        print_error("kind %d, %s offset %zu: status %d, stderr: %s\n", (int)kind, fields[f].page ? "page" : "segment",
                    fields[f].offset + i, status, err);
        fail();
      }
    }
  }
  expect_clean_exit(&case_scribbled);
}

static void test_every_sealed_byte_flipped_is_reported(void** state) {
  (void)state;
  const size_t small_count = sizeof(small_fields) / sizeof(small_fields[0]);
  expect_every_byte_reported(B_SMALL, small_fields, small_count, false);
  expect_every_byte_reported(B_MEDIUM, small_fields, small_count, false);
  expect_every_byte_reported(B_ALIGNED, small_fields, small_count, false);
  expect_every_byte_reported(B_LARGE, single_fields, sizeof(single_fields) / sizeof(single_fields[0]), false);
  expect_every_byte_reported(B_HUGE, single_fields, sizeof(single_fields) / sizeof(single_fields[0]), false);
  /* a page of the sampler's, its check word marked */
  expect_every_byte_reported(B_SMALL, small_fields, small_count, true);
}

int main(void) {
  mi_child_save_signals();
  /* a sampled guarded block has a segment of its own: the cases expect the
     kinds they ask for (a guarded block's page is checked as a large one's) */
  mi_option_set(mi_option_guarded_sample_rate, 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scribbled_cookie_is_reported),
      cmocka_unit_test(test_zeroed_cookie_is_reported),
      cmocka_unit_test(test_scribbled_kind_is_reported),
      cmocka_unit_test(test_scribbled_page_shift_is_reported),
      cmocka_unit_test(test_scribbled_single_segment_size_is_reported),
      cmocka_unit_test(test_scribbled_page_start_is_reported),
      cmocka_unit_test(test_scribbled_block_size_is_reported),
      cmocka_unit_test(test_scribbled_block_size_inverse_is_reported),
      cmocka_unit_test(test_scribbled_page_counts_are_reported),
      cmocka_unit_test(test_scribbled_page_state_is_reported),
      cmocka_unit_test(test_scribbled_check_word_is_reported),
      cmocka_unit_test(test_scribbled_sampled_page_is_reported),
      cmocka_unit_test(test_scribbled_single_page_is_reported),
      cmocka_unit_test(test_scribbled_single_links_are_reported),
      cmocka_unit_test(test_scribbled_segment_counts_are_reported),
      cmocka_unit_test(test_scribbled_segment_walks_are_reported),
      cmocka_unit_test(test_scribbled_segment_links_are_reported),
      cmocka_unit_test(test_collected_block_freed_before_reported),
      cmocka_unit_test(test_every_sealed_byte_flipped_is_reported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
