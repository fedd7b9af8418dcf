#define _GNU_SOURCE
/* Secure mode: writes into freed blocks above 8 KiB (up to 128 KiB + 16, the
   medium pages), which are sample-checked when handed out again
   (src/secure/memory.c, _mi_secure_block_untouched_sampled): their first and last 64 bytes
   always, and of the m 64-byte chunks between, 16 evenly spaced from a
   random start. So a write of t chunks between is caught with probability
   16 t / m per reuse, and for certain once t >= m / 16. (A block's first
   hand-out after its page is set up is not checked: the cases here free and
   reuse blocks handed out before.) Each misuse runs in a child and has its
   control, the same program without the write, which must exit 0 with no
   report. Built only with MI_SECURE. */
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
#include <sys/wait.h>
#include <unistd.h>

#include "../child.h"

#define REPORT "use-after-free write detected in block"
#define SAMPLES 16 /* MI_SECURE_UAF_SAMPLES */
#define TRAILER 8

/* Size classes go in 1 KiB steps from 8 to 16 KiB and in 8 KiB steps from
   64 to 128 KiB: a request of a block's size less its trailer fills it, so
   its last byte is in the block's last 64 bytes. A request of 100 KiB is
   served from the 104 KiB block. */
#define BLOCK_10K ((size_t)10 * 1024)
#define BLOCK_104K ((size_t)104 * 1024)
#define REQ_100K ((size_t)100 * 1024)

/* the chunks between the first and the last 64 bytes */
static size_t chunks_between(size_t block_size) {
  return (block_size - 128 + 63) / 64;
}

static void* volatile sink;
static uint8_t* volatile stale; /* the compiler must not drop the writes through it */

/* The case's parameters, set before the fork. */
static size_t c_size; /* the request */
static size_t c_at;   /* where the stale write lands, from the block's start */
static size_t c_len;  /* its length */
static long c_reuses; /* how many times the block is freed, written, handed out again */
static bool c_count;  /* print the reuse that was caught, and exit */
static long c_reuse;  /* the reuse under way */

static void count_and_exit(int err, void* arg) {
  (void)err;
  (void)arg;
  fprintf(stderr, "caught at reuse %ld\n", c_reuse);
  _exit(0);
}

/* The program's use of a block: a byte a page, and both ends (as
   bench/workloads/w4_randsizes.c writes its blocks). */
static void use_block(volatile uint8_t* p, size_t size, uint8_t v) {
  for (size_t i = 0; i < size; i += 4096) p[i] = v;
  p[size - 1] = v;
}

/* A block freed and handed out again `c_reuses` times, the same block each
   time (a second block keeps its page in use; the free list is LIFO); after
   each free, unless this is the control, the stale pointer writes into it. */
static void case_stale_write(bool misuse) {
  if (c_count) mi_register_error(&count_and_exit, NULL);
  uint8_t* keep = (uint8_t*)mi_malloc(c_size);
  uint8_t* p = (uint8_t*)mi_malloc(c_size);
  use_block(keep, c_size, 1);
  use_block(p, c_size, 1);
  stale = p;
  for (c_reuse = 1; c_reuse <= c_reuses; c_reuse++) {
    mi_free(p);
    if (misuse) memset(stale + c_at, 0x41, c_len);
    uint8_t* q = (uint8_t*)mi_malloc(c_size);
    if (q != p) {
      fprintf(stderr, "block not reused: %p then %p\n", (void*)p, (void*)q);
      _exit(2);
    }
    use_block(q, c_size, (uint8_t)c_reuse);
  }
  mi_free(p);
  mi_free(keep);
}

/* Forked children start from this process's random state: draw past what a
   child may use (a draw per reuse, and a few), so that each child's samples
   are its own. */
static void advance_random(long draws) {
  for (long i = 0; i < draws; i++) {
    void* p = mi_malloc(16);
    sink = p;
    mi_free(p); /* the quarantine takes a random slot */
  }
}

static void stale_write(size_t size, size_t at, size_t len, long reuses) {
  c_size = size;
  c_at = at;
  c_len = len;
  c_reuses = reuses;
  c_count = false;
  advance_random(reuses + 64);
}

static void expect_caught(size_t size, size_t at, size_t len, long reuses) {
  stale_write(size, at, len, reuses);
  expect(&case_stale_write, SIGABRT, REPORT);
}

/* ---- Always caught: the ends, a wide write --------------------------------- */

/* one reuse: no second chance */
static void test_first_line_write_caught_10k(void** state) {
  (void)state;
  expect_caught(BLOCK_10K - TRAILER, 40, 1, 1);
}
static void test_last_line_write_caught_10k(void** state) {
  (void)state;
  expect_caught(BLOCK_10K - TRAILER, BLOCK_10K - TRAILER - 1, 1, 1);
}
static void test_trailer_write_caught_10k(void** state) {
  (void)state;
  expect_caught(BLOCK_10K - TRAILER, BLOCK_10K - 1, 1, 1);
}
static void test_first_line_write_caught_104k(void** state) {
  (void)state;
  expect_caught(BLOCK_104K - TRAILER, 8, 1, 1);
}
static void test_last_line_write_caught_104k(void** state) {
  (void)state;
  expect_caught(BLOCK_104K - TRAILER, BLOCK_104K - TRAILER - 1, 1, 1);
}
static void test_first_line_write_caught_100k_request(void** state) {
  (void)state;
  expect_caught(REQ_100K, 63, 1, 1);
}

/* A write of m/16 chunks (rounded up) always holds a sample, wherever it
   lands and whatever the random start: 32 children, each its own start. */
static void test_wide_write_always_caught(void** state) {
  (void)state;
  static const size_t blocks[] = {BLOCK_10K, BLOCK_104K};
  for (size_t k = 0; k < 2; k++) {
    size_t width = 64 * ((chunks_between(blocks[k]) + SAMPLES - 1) / SAMPLES);
    for (int i = 0; i < 16; i++) {
      size_t at = 64 + (size_t)i * (blocks[k] - 128 - width) / 15;
      expect_caught(blocks[k] - TRAILER, at, width, 1);
    }
  }
}

/* ---- One byte between: the stated probability -------------------------------- */

/* Written again after every reuse, a byte between the ends is caught at a
   reuse with probability 16 / m: within n reuses but with (1 - 16/m)^n.
   10 KiB: m = 158, n = 250, missed with probability 3e-12. 104 KiB: m =
   1662, n = 2500, 3e-11. */
static void test_one_byte_caught_within_250_reuses_10k(void** state) {
  (void)state;
  assert_int_equal(chunks_between(BLOCK_10K), 158);
  expect_caught(BLOCK_10K - TRAILER, BLOCK_10K / 2 + 5, 1, 250);
}
static void test_one_byte_caught_within_2500_reuses_104k(void** state) {
  (void)state;
  assert_int_equal(chunks_between(BLOCK_104K), 1662);
  /* the end of a 100 KiB request in its 104 KiB block */
  expect_caught(REQ_100K, REQ_100K - 1, 1, 2500);
}

/* The reuse at which the byte is caught, over `trials` children: a
   geometric variable of mean m / 16 and standard deviation
   sqrt(1 - p) / p (p = 16 / m). The mean of the trials must lie within 6
   standard errors of m / 16 (a false failure once in 10^9 runs); were the
   samples fewer, or the ends all that is checked, it would not. */
static void expect_rate(size_t block_size, size_t size, size_t at, int trials, long cap) {
  double p = (double)SAMPLES / (double)chunks_between(block_size);
  double sum = 0;
  for (int t = 0; t < trials; t++) {
    stale_write(size, at, 1, cap);
    c_count = true;
    char err[1024];
    int status = run_child(&case_stale_write, true, err, sizeof(err));
    const char* line = strstr(err, "caught at reuse ");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || line == NULL || strstr(err, REPORT) == NULL) {
      print_error("trial %d: status %d, stderr: %s\n", t, status, err);
      fail();
    }
    long reuse = strtol(line + strlen("caught at reuse "), NULL, 10);
    sum += (double)reuse;
  }
  double mean = sum / trials;
  double var_of_mean = (1 - p) / (p * p) / trials;
  print_message("block %zu: caught at reuse %.2f on average over %d trials (expected %.2f, variance %.3f)\n",
                block_size, mean, trials, 1 / p, var_of_mean);
  assert_true((mean - 1 / p) * (mean - 1 / p) < 36 * var_of_mean);
}
static void test_one_byte_caught_at_rate_16_in_158_10k(void** state) {
  (void)state;
  expect_rate(BLOCK_10K, BLOCK_10K - TRAILER, 3000, 400, 250);
}
static void test_one_byte_caught_at_rate_16_in_1662_104k(void** state) {
  (void)state;
  expect_rate(BLOCK_104K, REQ_100K, REQ_100K - 1, 200, 2500);
}

/* ---- Clean programs: no report ---------------------------------------------- */

static void touch_free(void* p) {
  sink = p;
  mi_free(p);
}

/* Every medium size class, reused many times, written all over (calloc,
   realloc, memset to its usable size), freed by the owner and by another
   thread, its heap destroyed with blocks live: never a report. */
static void* free_all(void* arg) {
  void** blocks = (void**)arg;
  for (int i = 0; i < 64; i++) mi_free(blocks[i]);
  return NULL;
}
static void case_clean_reuse(bool misuse) {
  (void)misuse;
  for (int round = 0; round < 40; round++) {
    for (size_t size = 8 * 1024 + 1; size <= 128 * 1024 + 8; size += 1024 + 8 * (size_t)round) {
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
      size_t size = 9000 + (size_t)i * 1900;
      blocks[i] = mi_malloc(size);
      memset(blocks[i], 0xCC, size);
    }
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, &free_all, blocks), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    for (int i = 0; i < 64; i++) touch_free(mi_malloc(9000 + (size_t)i * 1900));
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
      cmocka_unit_test(test_first_line_write_caught_10k),
      cmocka_unit_test(test_last_line_write_caught_10k),
      cmocka_unit_test(test_trailer_write_caught_10k),
      cmocka_unit_test(test_first_line_write_caught_104k),
      cmocka_unit_test(test_last_line_write_caught_104k),
      cmocka_unit_test(test_first_line_write_caught_100k_request),
      cmocka_unit_test(test_wide_write_always_caught),
      cmocka_unit_test(test_one_byte_caught_within_250_reuses_10k),
      cmocka_unit_test(test_one_byte_caught_within_2500_reuses_104k),
      cmocka_unit_test(test_one_byte_caught_at_rate_16_in_158_10k),
      cmocka_unit_test(test_one_byte_caught_at_rate_16_in_1662_104k),
      cmocka_unit_test(test_clean_reuse_no_report),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
