/* Sampled guard-page allocations (MI_GUARDED, secure builds): an overflow off
   the end of a guarded block and a use after free each fault at once, with a
   report naming what was hit; each case has a control that exits 0, and the
   sampling knobs are each seen to act. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <mimalloc.h>

/* The misuse here is planted on purpose: keep the compiler from refusing it. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
#if defined(__clang__)
#pragma clang diagnostic ignored "-Warray-bounds"
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../child.h"

static char* volatile sink;

static void guard_every_allocation(void) {
  mi_option_set(mi_option_guarded_sample_rate, 1);
  mi_option_set(mi_option_guarded_min, 0);
  mi_option_set(mi_option_guarded_max, 1 << 20);
}

/* A guarded block of a multiple of 16 bytes ends exactly at a page boundary. */
static bool looks_guarded(const void* p, size_t size) {
  return (((uintptr_t)p + size) & 4095) == 0;
}

static void case_overflow_precise(bool misuse) {
  guard_every_allocation();
  mi_option_set(mi_option_guarded_precise, 1);
  char* p = (char*)mi_malloc(100);
  volatile char* v = p;
  for (int i = 0; i < 100; i++) v[i] = 'a';
  if (misuse) v[100] = 'b'; /* one byte past the end */
  mi_free(p);
}
static void case_overflow_16(bool misuse) {
  guard_every_allocation();
  char* p = (char*)mi_malloc(96);
  volatile char* v = p;
  for (int i = 0; i < (misuse ? 112 : 96); i++) v[i] = 'a';
  mi_free(p);
}
static void case_uaf_read(bool misuse) {
  guard_every_allocation();
  char* p = (char*)mi_malloc(64);
  p[0] = 'a';
  mi_free(p);
  if (misuse) sink = (char*)(uintptr_t)((volatile char*)p)[0];
}
static void case_uaf_write(bool misuse) {
  guard_every_allocation();
  char* p = (char*)mi_malloc(3000);
  mi_free(p);
  if (misuse) ((volatile char*)p)[1000] = 'x';
}
static void case_overflow_large(bool misuse) {
  guard_every_allocation();
  char* p = (char*)mi_malloc(200000);
  volatile char* v = p;
  for (int i = 0; i < (misuse ? 200016 : 200000); i++) v[i] = 'a';
  mi_free(p);
}
/* A freed guarded block waits fenced off with its memory given back: none of
   its pages is resident (its contents are gone with them). */
static void case_freed_memory_given_back(bool misuse) {
  (void)misuse;
  guard_every_allocation();
  enum { SIZE = 1 << 20 };
  char* p = (char*)mi_malloc(SIZE);
  if (p == NULL || !looks_guarded(p, SIZE)) exit(5);
  memset(p, 0x5a, SIZE);
  mi_free(p);
  unsigned char resident[SIZE / 4096];
  if (mincore(p, SIZE, resident) != 0) exit(6);
  size_t n = 0;
  for (size_t i = 0; i < sizeof(resident); i++) n += (resident[i] & 1);
  if (n != 0) {
    fprintf(stderr, "%zu of %zu pages of the freed guarded block still resident\n", n, sizeof(resident));
    exit(7);
  }
}
static void test_freed_memory_given_back(void** state) {
  (void)state;
  expect_clean_exit(&case_freed_memory_given_back);
}

/* A small freed guarded block is zeroed instead of given back (its segment
   keeps its memory for the next sample): while it waits, fenced off, its
   contents are gone, as the memory behind the fence reads (through
   /proc/self/mem, which reads past a page's protection). */
static void case_freed_small_contents_gone(bool misuse) {
  (void)misuse;
  guard_every_allocation();
  enum { SIZE = 4000 };
  char* p = (char*)mi_malloc(SIZE);
  if (p == NULL || !looks_guarded(p, SIZE)) exit(5);
  memset(p, 0x5a, SIZE);
  mi_free(p);
  static char seen[SIZE];
  FILE* mem = fopen("/proc/self/mem", "rb");
  if (mem == NULL || fseeko(mem, (off_t)(uintptr_t)p, SEEK_SET) != 0 || fread(seen, 1, SIZE, mem) != SIZE) exit(6);
  fclose(mem);
  for (size_t i = 0; i < SIZE; i++) {
    if (seen[i] != 0) {
      fprintf(stderr, "byte %zu of the freed guarded block reads 0x%02x\n", i, (unsigned char)seen[i]);
      exit(7);
    }
  }
}
static void test_freed_small_guarded_contents_gone(void** state) {
  (void)state;
  expect_clean_exit(&case_freed_small_contents_gone);
}

/* A sample placed in a cached segment that last held a large block keeps
   no more of that block's memory than its own pages: the rest is given back
   (a sample a page, in segments that had held blocks of megabytes, kept
   `mstress` at 2.8 times the default build's peak RSS). */
static void case_sample_in_cached_large_segment_keeps_own_pages(bool misuse) {
  (void)misuse;
  enum { LARGE = 3 << 20, SEGMENT = 4 << 20 };
  mi_option_set(mi_option_large_quarantine, 0); /* freed, it goes to the cache at once */
  mi_option_set(mi_option_guarded_sample_rate, 0);
  char* q = (char*)mi_malloc(LARGE);
  if (q == NULL) exit(5);
  memset(q, 0x5a, LARGE);
  mi_free(q);
  guard_every_allocation();
  char* p = (char*)mi_malloc(100);
  if (p == NULL || !looks_guarded(p, 112)) exit(5);
  /* the control: the sample took that segment */
  if (((uintptr_t)p & ~(uintptr_t)(SEGMENT - 1)) != ((uintptr_t)q & ~(uintptr_t)(SEGMENT - 1))) exit(6);
  char* first = (char*)((uintptr_t)q & ~(uintptr_t)4095);
  size_t pages = (size_t)((char*)((uintptr_t)p & ~(uintptr_t)4095) - first) / 4096;
  static unsigned char resident[LARGE / 4096 + 1];
  if (pages > sizeof(resident) || mincore(first, pages * 4096, resident) != 0) exit(6);
  size_t n = 0;
  for (size_t i = 0; i < pages; i++) n += (resident[i] & 1);
  if (n != 0) {
    fprintf(stderr, "%zu of the %zu pages before the sample still resident\n", n, pages);
    exit(7);
  }
  mi_free(p);
}
static void test_sample_in_cached_large_segment_keeps_own_pages(void** state) {
  (void)state;
  expect_clean_exit(&case_sample_in_cached_large_segment_keeps_own_pages);
}

/* sampling off: the same overflow is left to the canary, caught at free */
static void case_rate_zero(bool misuse) {
  mi_option_set(mi_option_guarded_sample_rate, 0);
  char* p = (char*)mi_malloc(96);
  if (looks_guarded(p, 96)) exit(5);
  volatile char* v = p;
  for (int i = 0; i < (misuse ? 112 : 96); i++) v[i] = 'a';
  mi_free(p);
}
/* outside [guarded_min, guarded_max] nothing is sampled */
static void case_size_range(bool misuse) {
  guard_every_allocation();
  mi_option_set(mi_option_guarded_min, 1024);
  char* small = (char*)mi_malloc(96);
  char* big = (char*)mi_malloc(2048);
  if (looks_guarded(small, 96) || !looks_guarded(big, 2048)) exit(5);
  volatile char* v = small;
  for (int i = 0; i < (misuse ? 112 : 96); i++) v[i] = 'a';
  mi_free(small);
  mi_free(big);
}

/* Between the data and the guard page: under 16 bytes for a plain block
   (sizes are rounded up to 16), up to the alignment for an aligned one. That
   slack holds canary bytes, checked at free. */
static void case_overflow_slack(bool misuse) {
  guard_every_allocation();
  char* p = (char*)mi_malloc(100);
  if (!looks_guarded(p, 112)) exit(5);
  volatile char* v = p;
  for (int i = 0; i < 100; i++) v[i] = 'a';
  if (misuse) v[100] = (char)~v[100]; /* one byte past the end, still before the guard page */
  mi_free(p);
}
static void case_overflow_aligned_slack(bool misuse) {
  guard_every_allocation();
  char* p = (char*)mi_malloc_aligned(100, 4096);
  if (mi_usable_size(p) != 100) exit(6); /* the size asked, as for every block */
  volatile char* v = p;
  for (int i = 0; i < 100; i++) v[i] = 'a';
  if (misuse) v[100] = (char)~v[100];
  mi_free(p);
}
/* A heap destroyed with a sampled block live frees it as free would: fenced
   off and held, so a use after the destroy faults. */
static void case_uaf_after_heap_destroy(bool misuse) {
  guard_every_allocation();
  mi_heap_t* heap = mi_heap_new();
  char* p = (char*)mi_heap_malloc(heap, 100);
  if (!looks_guarded(p, 112)) exit(5);
  p[0] = 'a';
  mi_heap_destroy(heap);
  if (misuse) sink = (char*)(uintptr_t)((volatile char*)p)[0];
}

MI_CHILD_TEST(test_guarded_overflow_one_byte_precise_faults, overflow_precise, SIGSEGV,
              "guarded heap buffer overflow detected at")
MI_CHILD_TEST(test_guarded_overflow_16_bytes_faults, overflow_16, SIGSEGV, "guarded heap buffer overflow detected at")
MI_CHILD_TEST(test_guarded_uaf_read_faults, uaf_read, SIGSEGV, "use-after-free detected in guarded block at")
MI_CHILD_TEST(test_guarded_uaf_write_faults, uaf_write, SIGSEGV, "use-after-free detected in guarded block at")
MI_CHILD_TEST(test_guarded_overflow_large_faults, overflow_large, SIGSEGV, "guarded heap buffer overflow detected at")
MI_CHILD_TEST(test_guard_rate_zero_overflow_caught_by_canary, rate_zero, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_guard_below_min_size_overflow_caught_by_canary, size_range, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_guarded_overflow_into_slack_caught_by_canary, overflow_slack, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_guarded_aligned_overflow_into_slack_caught, overflow_aligned_slack, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_guarded_uaf_after_heap_destroy_faults, uaf_after_heap_destroy, SIGSEGV,
              "use-after-free detected in guarded block at")

/* MIMALLOC_GUARDED_PRECISE ends a sampled block at its guard page to the
   byte, giving up 16-byte alignment for plain allocations, but never an
   alignment asked for. Read through a volatile: the compiler takes the
   declared alignment for granted. */
static void case_precise_aligned(bool misuse) {
  (void)misuse;
  guard_every_allocation();
  mi_option_set(mi_option_guarded_precise, 1);
  for (size_t alignment = 2; alignment <= 16; alignment *= 2) {
    for (size_t size = 1; size <= 40; size++) {
      void* volatile p = mi_malloc_aligned(size, alignment);
      uintptr_t address = (uintptr_t)p;
      if (p == NULL || (address & (alignment - 1)) != 0) {
        fprintf(stderr, "mi_malloc_aligned(%zu, %zu) = %p\n", size, alignment, (void*)address);
        exit(6);
      }
      mi_free(p);
    }
  }
}
static void test_guarded_precise_keeps_requested_alignment(void** state) {
  (void)state;
  expect_clean_exit(&case_precise_aligned);
}

/* 1 in N on average, reproducibly with a seed */
static int count_guarded(long rate, long seed) {
  mi_option_set(mi_option_guarded_sample_rate, rate);
  mi_option_set(mi_option_guarded_sample_seed, seed);
  mi_option_set(mi_option_guarded_min, 0);
  int n = 0;
  void* blocks[2000];
  for (int i = 0; i < 2000; i++) {
    blocks[i] = mi_malloc(48);
    if (looks_guarded(blocks[i], 48)) n++;
  }
  for (int i = 0; i < 2000; i++) mi_free(blocks[i]);
  return n;
}

static void case_rate_count(bool misuse) {
  (void)misuse;
  int n = count_guarded(20, 12345);
  fprintf(stderr, "guarded %d of 2000 at rate 20\n", n);
  exit(n >= 40 && n <= 200 ? 0 : 6);
}

static void test_guard_sample_rate_20_guards_2_to_10_percent(void** state) {
  (void)state;
  expect_clean_exit(&case_rate_count);
}

/* the knobs are read from the environment too */
static void test_guard_sample_rate_env_var_honoured(void** state) {
  (void)state;
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "MIMALLOC_GUARDED_SAMPLE_RATE=1 /proc/%d/exe --probe", (int)getpid());
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof(cmd), "MIMALLOC_GUARDED_SAMPLE_RATE=0 /proc/%d/exe --probe", (int)getpid());
  assert_int_not_equal(system(cmd), 0);
}

/* A report in a fork's child names the child's thread, and the stacks it
   walked there: the process and thread numbers the allocator keeps (for
   the stack walk's reads of the process's memory) are the parent's until
   the child forgets them. The parent (this test process, which allocated)
   walked stacks and named threads first; the child makes the misuse and
   says its thread number first. */
static void case_uaf_in_fork_child_names_child(bool misuse) {
  guard_every_allocation();
  char* before = (char*)mi_malloc(64); /* numbers taken in this process (a child of the test's) */
  mi_free(before);
  pid_t pid = fork();
  if (pid != 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) raise(WTERMSIG(status)); /* the grandchild's death is the case's */
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  }
  fprintf(stderr, "case thread %d\n", (int)getpid()); /* a fork's child: its one thread's number is its pid */
  char* p = (char*)mi_malloc(64);
  p[0] = 'a';
  mi_free(p);
  if (misuse) sink = (char*)(uintptr_t)((volatile char*)p)[0];
}

static void test_guarded_uaf_in_fork_child_report_names_child_thread(void** state) {
  (void)state;
  expect(&case_uaf_in_fork_child_names_child, SIGSEGV, "use-after-free detected in guarded block at");
  char err[8192];
  (void)run_child(&case_uaf_in_fork_child_names_child, true, err, sizeof(err));
  int tid = 0;
  const char* at = strstr(err, "case thread ");
  assert_non_null(at);
  assert_int_equal(sscanf(at, "case thread %d", &tid), 1);
  char line[96];
  const char* heads[] = {"detected by thread", "allocated by thread", "freed by thread"};
  for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
    snprintf(line, sizeof(line), "mimalloc:   %s %d", heads[i], tid);
    if (strstr(err, line) == NULL) print_error("expected '%s' in: %s\n", line, err);
    assert_non_null(strstr(err, line));
  }
  /* the allocation's stack was walked in the child: the case's own frame on it */
  const char* alloc = strstr(err, "allocated by thread");
  assert_non_null(alloc);
  assert_non_null(strstr(alloc, "#0 0x"));
}

int main(int argc, char** argv) {
  mi_child_save_signals();
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) {
    void* p = mi_malloc(64);
    return looks_guarded(p, 64) ? 0 : 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_guarded_overflow_one_byte_precise_faults),
      cmocka_unit_test(test_guarded_overflow_16_bytes_faults),
      cmocka_unit_test(test_guarded_uaf_read_faults),
      cmocka_unit_test(test_guarded_uaf_write_faults),
      cmocka_unit_test(test_guarded_overflow_large_faults),
      cmocka_unit_test(test_guard_rate_zero_overflow_caught_by_canary),
      cmocka_unit_test(test_guard_below_min_size_overflow_caught_by_canary),
      cmocka_unit_test(test_guard_sample_rate_20_guards_2_to_10_percent),
      cmocka_unit_test(test_guard_sample_rate_env_var_honoured),
      cmocka_unit_test(test_guarded_overflow_into_slack_caught_by_canary),
      cmocka_unit_test(test_guarded_aligned_overflow_into_slack_caught),
      cmocka_unit_test(test_guarded_uaf_after_heap_destroy_faults),
      cmocka_unit_test(test_guarded_precise_keeps_requested_alignment),
      cmocka_unit_test(test_freed_memory_given_back),
      cmocka_unit_test(test_freed_small_guarded_contents_gone),
      cmocka_unit_test(test_sample_in_cached_large_segment_keeps_own_pages),
      cmocka_unit_test(test_guarded_uaf_in_fork_child_report_names_child_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
