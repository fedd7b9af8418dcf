#define _GNU_SOURCE
/* Secure mode: an overflow off the end of a large block (above the medium
   sizes, a segment of its own). The block ends at its segment's guard page
   to the 16 bytes (src/segment/secure-checks.c, _mi_secure_single_place):
   the caller's data, then the canary, then the trailer against the guard
   page, the slack before the block. So a write past the data either changes
   the canary or the trailer (reported when the block is freed) or lands on
   the guard page (the fault handler names it, and the process dies of
   SIGSEGV). Before, the block started on a page boundary and the slack, up
   to a page, lay between the trailer's canary and the trailer: a write 64
   bytes past the end of a 300,000-byte block landed there, unseen. Each
   misuse runs in a child and has its control, which must exit 0 with no
   report. Built only with MI_SECURE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <mimalloc.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../child.h"

#define OVERFLOW_AT_FREE "heap buffer overflow detected in block"
#define OVERFLOW_GUARD "heap buffer overflow into a guard page detected at"
#define PAGE ((size_t)4096)

static uint8_t* volatile sink;

static size_t c_size; /* the request */
static size_t c_past; /* how far past the data the write lands */

static size_t align_up(size_t x, size_t a) {
  return (x + a - 1) & ~(a - 1);
}

/* where the guard page starts: the data, the canary and the 8-byte
   trailer, rounded to 16 bytes, end at it */
static uint8_t* guard_of(uint8_t* p, size_t size) {
  return p + align_up(size + 8, 16);
}

static void case_write_past(bool misuse) {
  uint8_t* p = (uint8_t*)mi_malloc(c_size);
  memset(p, 0x11, c_size);
  sink = p;
  if (misuse) p[c_size + c_past - 1] ^= 0x5A; /* a change, whatever the canary holds there */
  mi_free(p);
}

/* The misuse is reported: by the check at free (SIGABRT) or, on the guard
   page, by the fault handler (SIGSEGV); the control exits clean. */
static void expect_caught(size_t size, size_t past) {
  c_size = size;
  c_past = past;
  char err[4096];
  int status = run_child(&case_write_past, false, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || strstr(err, "mimalloc: error:") != NULL) {
    print_error("control of size %zu: status %d: %s\n", size, status, err);
    fail();
  }
  status = run_child(&case_write_past, true, err, sizeof(err));
  bool at_free = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(err, OVERFLOW_AT_FREE " 0x") != NULL;
  bool at_guard = WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV && strstr(err, OVERFLOW_GUARD " 0x") != NULL;
  if (!at_free && !at_guard) {
    print_error("size %zu, %zu bytes past the data: status %d: %s\n", size, past, status, err);
    fail();
  }
}

/* The case: 64 bytes past the end of a 300,000-byte block. */
static void test_overflow_64_past_300000_reported(void** state) {
  (void)state;
  expect_caught(300000, 64);
}

/* Every byte past the data, from the first to the guard page's first: the
   canary, the trailer, the guard page (and nothing between), for sizes of
   every remainder mod 16 */
static void test_overflow_every_byte_to_the_guard_reported(void** state) {
  (void)state;
  static const size_t sizes[] = {128 * 1024 + 9, 300000, 300001, 300007, 300015, 1000003};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    size_t to_guard = align_up(sizes[i] + 8, 16) - sizes[i];
    for (size_t past = 1; past <= to_guard + 1; past++) expect_caught(sizes[i], past);
  }
}

/* One byte past the trailer is the guard page's first: a fault, with our
   line. */
static void case_one_past_trailer(bool misuse) {
  uint8_t* p = (uint8_t*)mi_malloc(c_size);
  memset(p, 0x22, c_size);
  if (misuse) *guard_of(p, c_size) = 0x41;
  sink = p;
  mi_free(p);
}
static void test_overflow_one_past_trailer_faults(void** state) {
  (void)state;
  c_size = 300000;
  expect(&case_one_past_trailer, SIGSEGV, OVERFLOW_GUARD);
  c_size = 5 * 1024 * 1024 + 3;
  expect(&case_one_past_trailer, SIGSEGV, OVERFLOW_GUARD);
}

/* The last byte before the guard page is the trailer's last: reported when
   the block is freed. */
static void case_last_before_guard(bool misuse) {
  uint8_t* p = (uint8_t*)mi_malloc(c_size);
  memset(p, 0x33, c_size);
  uint8_t* guard = guard_of(p, c_size);
  assert_true(((uintptr_t)guard & (PAGE - 1)) == 0);
  if (misuse) guard[-1] ^= 0x5A;
  sink = p;
  mi_free(p);
}
static void test_overflow_last_byte_before_guard_reported(void** state) {
  (void)state;
  c_size = 300000;
  expect(&case_last_before_guard, SIGABRT, OVERFLOW_AT_FREE);
}

/* A cached segment up to half again the size a block needs serves it
   (segment-cache.c): the block is laid out as in a segment of its own size,
   its guard page moved up to follow it, so a write past it is caught as in
   any large block. The control asserts the reuse (exit 3 if the second block
   came from another segment: the exact size alone). */
#define MIB ((size_t)1 << 20)
static void case_reused_larger(bool misuse) {
  mi_option_set(mi_option_large_quarantine, 0);   /* freed large blocks cached at once (the light level's) */
  uint8_t* first = (uint8_t*)mi_malloc(20 * MIB); /* a 24 MiB segment */
  memset(first, 0x44, 20 * MIB);
  mi_free(first);
  uint8_t* p = (uint8_t*)mi_malloc(c_size); /* needs 20 MiB */
  /* a large block starts in its segment's first 4 MiB, the segment aligned to them */
  if (((uintptr_t)p & ~(uintptr_t)(4 * MIB - 1)) != ((uintptr_t)first & ~(uintptr_t)(4 * MIB - 1))) exit(3);
  memset(p, 0x55, c_size);
  sink = p;
  if (misuse && c_past == 0) *guard_of(p, c_size) = 0x41;
  if (misuse && c_past != 0) p[c_size + c_past - 1] ^= 0x5A;
  mi_free(p);
}
static void test_overflow_in_reused_larger_segment_reported(void** state) {
  (void)state;
  c_size = 17 * MIB + 5;
  c_past = 3; /* the canary */
  expect(&case_reused_larger, SIGABRT, OVERFLOW_AT_FREE);
  c_past = 0; /* the guard page's first byte, past the trailer */
  expect(&case_reused_larger, SIGSEGV, OVERFLOW_GUARD);
}

/* An aligned allocation's large block, and a block that realloc grew into
   the large sizes (half its size again as room): the bytes past the canary
   lie in slack before the trailer, checked when the block is freed, up to
   the end of the page the canary ends in. */
static size_t c_align;
static void case_aligned_write_past(bool misuse) {
  uint8_t* p = (uint8_t*)mi_malloc_aligned(c_size, c_align);
  memset(p, 0x11, c_size);
  sink = p;
  if (misuse) p[c_size + c_past - 1] ^= 0x5A;
  mi_free(p);
}
static void test_overflow_past_aligned_large_reported(void** state) {
  (void)state;
  static const size_t aligns[] = {64, 4096, 65536};
  for (size_t a = 0; a < 3; a++) {
    c_align = aligns[a];
    c_size = 300000;
    c_past = 64;
    expect(&case_aligned_write_past, SIGABRT, OVERFLOW_AT_FREE);
    c_past = 17;
    expect(&case_aligned_write_past, SIGABRT, OVERFLOW_AT_FREE);
  }
}

static void case_room_write_past(bool misuse) {
  uint8_t* p = (uint8_t*)mi_malloc(100000);
  memset(p, 0x11, 100000);
  p = (uint8_t*)mi_realloc(p, c_size); /* moved into a large block with room */
  memset(p, 0x12, c_size);
  sink = p;
  if (misuse) p[c_size + c_past - 1] ^= 0x5A;
  mi_free(p);
}
static void test_overflow_into_realloc_room_reported(void** state) {
  (void)state;
  c_size = 300000;
  c_past = 64;
  expect(&case_room_write_past, SIGABRT, OVERFLOW_AT_FREE);
  c_past = 1000;
  expect(&case_room_write_past, SIGABRT, OVERFLOW_AT_FREE);
}

/* ---- Clean programs ------------------------------------------------------------ */

/* A buffer grown by appends (in place, in its room), shrunk in place and
   grown again, aligned blocks shrunk, then all of it again with the large
   quarantine off (a cached segment's old contents under the slack): no
   report. */
static void case_clean_resized(bool misuse) {
  (void)misuse;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      mi_option_set(mi_option_large_quarantine, 0);
    }
    uint8_t* p = (uint8_t*)mi_malloc(100);
    size_t n = 100;
    while (n < 3 * 1024 * 1024) {
      size_t m = n + 1 + (n % 977);
      p = (uint8_t*)mi_realloc(p, m);
      memset(p + n, (int)(m & 0xFF) | 1, m - n);
      n = m;
    }
    p = (uint8_t*)mi_realloc(p, n - n / 3); /* in place */
    n -= n / 3;
    p = (uint8_t*)mi_realloc(p, n - 5000);
    n -= 5000;
    p = (uint8_t*)mi_realloc(p, n + 3000);
    memset(p, 0x77, n + 3000);
    mi_free(p);
    for (int i = 0; i < 20; i++) {
      size_t size = 200000 + (size_t)i * 37777;
      uint8_t* q = (uint8_t*)mi_malloc_aligned(size, (size_t)64 << (i % 8));
      memset(q, 0x66, size);
      q = (uint8_t*)mi_realloc(q, size - size / 4);
      memset(q, 0x67, size - size / 4);
      mi_free(q);
      uint8_t* r = (uint8_t*)mi_malloc(size + 5);
      memset(r, 0x68, size + 5);
      mi_free(r);
    }
  }
}
static void test_clean_resized_large_no_report(void** state) {
  (void)state;
  expect_clean_exit(&case_clean_resized);
}

/* Large blocks of many sizes written to their last byte, zeroed, shrunk and
   grown by realloc, aligned ones at their alignment; the usable size is the
   size asked for; a zeroing allocation reads zero; never a report. */
static void case_clean_large(bool misuse) {
  (void)misuse;
  for (size_t size = 128 * 1024 + 9; size < 9 * 1024 * 1024; size = size * 3 / 2 + 7) {
    uint8_t* p = (uint8_t*)mi_malloc(size);
    assert_true(((uintptr_t)p & 15) == 0);
    assert_int_equal(mi_usable_size(p), size);
    memset(p, 0x44, size);
    uint8_t* z = (uint8_t*)mi_calloc(1, size);
    for (size_t i = 0; i < size; i += 4093) assert_int_equal(z[i], 0);
    assert_int_equal(z[size - 1], 0);
    mi_free(z);
    p = (uint8_t*)mi_realloc(p, size - size / 3);
    assert_int_equal(p[size - size / 3 - 1], 0x44);
    p = (uint8_t*)mi_realloc(p, size + 5000);
    memset(p, 0x55, size + 5000);
    mi_free(p);
    static const size_t aligns[] = {32, 64, 4096, 65536};
    for (size_t a = 0; a < 4; a++) {
      uint8_t* q = (uint8_t*)mi_malloc_aligned(size, aligns[a]);
      assert_true(((uintptr_t)q & (aligns[a] - 1)) == 0);
      memset(q, 0x66, size);
      mi_free(q);
    }
  }
}
static void test_clean_large_no_report(void** state) {
  (void)state;
  expect_clean_exit(&case_clean_large);
}

int main(void) {
  mi_child_save_signals();
  mi_option_set(mi_option_guarded_sample_rate, 0); /* an ordinary large block, not a sampled guarded one */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_overflow_64_past_300000_reported),
      cmocka_unit_test(test_overflow_every_byte_to_the_guard_reported),
      cmocka_unit_test(test_overflow_one_past_trailer_faults),
      cmocka_unit_test(test_overflow_last_byte_before_guard_reported),
      cmocka_unit_test(test_overflow_in_reused_larger_segment_reported),
      cmocka_unit_test(test_overflow_past_aligned_large_reported),
      cmocka_unit_test(test_overflow_into_realloc_room_reported),
      cmocka_unit_test(test_clean_large_no_report),
      cmocka_unit_test(test_clean_resized_large_no_report),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
