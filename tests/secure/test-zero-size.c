#define _GNU_SOURCE
/* Secure mode: zero-size allocations (src/secure/secure-zero.c). Any access through
   the pointer faults at once and is reported; a second free, or a free of a
   pointer that is not a slot handed out, aborts with its report. Each misuse
   runs in a child and has its control, the same program without the misuse,
   which must exit 0 with no report. Built only with MI_SECURE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <mimalloc.h>

/* The misuse here is planted on purpose: keep the compiler from refusing it. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
#if defined(__clang__)
#pragma clang diagnostic ignored "-Warray-bounds"
#endif
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../child.h"

#define SEGMENT_MASK (~(uintptr_t)((4u << 20) - 1))
#define ACCESS "access to a zero-size allocation detected at"

static void* volatile sink;
static volatile char sink_byte;

/* The misuse dies of `sig` with a line naming `message` and ending in
   "(size 0)"; its control exits 0 with no report. */
static void expect_size0(mi_case_fn fn, int sig, const char* message) {
  expect(fn, sig, message);
  char err[8192];
  (void)run_child(fn, true, err, sizeof(err));
  if (strstr(err, "(size 0)\n") == NULL) print_error("expected '(size 0)' in: %s\n", err);
  assert_non_null(strstr(err, "(size 0)\n"));
}

#define ZERO_TEST(name, sig, message) \
  static void test_##name(void** state) { \
    (void)state; \
    expect_size0(&case_##name, sig, message); \
  }

/* ---- Any access faults at once -------------------------------------------- */

static void case_read_faults(bool misuse) {
  char* p = (char*)mi_malloc(0);
  if (misuse) sink_byte = *(volatile char*)p;
  mi_free(p);
}
static void case_write_faults(bool misuse) {
  char* p = (char*)mi_malloc(0);
  if (misuse) *(volatile char*)p = 1;
  mi_free(p);
}
/* a read a little way past the pointer, as a loop that runs one too far */
static void case_read_past_faults(bool misuse) {
  char* p = (char*)mi_malloc(0);
  if (misuse) sink_byte = ((volatile char*)p)[20];
  mi_free(p);
}
/* the smallest blocks' page has free blocks: size 0 still does not take one */
static void case_read_after_small_blocks_faults(bool misuse) {
  void* small[4];
  for (int i = 0; i < 4; i++) small[i] = mi_malloc(1 + (size_t)i * 2);
  mi_free(small[0]);
  char* p = (char*)mi_malloc(0);
  if (misuse) sink_byte = *(volatile char*)p;
  mi_free(p);
  for (int i = 1; i < 4; i++) mi_free(small[i]);
}
static void case_calloc_write_faults(bool misuse) {
  char* p = (char*)mi_calloc(0, 8);
  if (misuse) *(volatile char*)p = 1;
  mi_free(p);
}
static void case_heap_malloc_write_faults(bool misuse) {
  mi_heap_t* heap = mi_heap_new();
  char* p = (char*)mi_heap_malloc(heap, 0);
  if (misuse) *(volatile char*)p = 1;
  mi_free(p);
  mi_heap_delete(heap);
}
static void case_aligned_write_faults(bool misuse) {
  char* p = (char*)mi_malloc_aligned(0, 4096);
  if (((uintptr_t)p & 4095) != 0) _exit(5);
  if (misuse) *(volatile char*)p = 1;
  mi_free(p);
}
static void case_realloc_to_zero_write_faults(bool misuse) {
  char* p = (char*)mi_malloc(40);
  memset(p, 1, 40);
  p = (char*)mi_realloc(p, 0);
  if (misuse) *(volatile char*)p = 1;
  mi_free(p);
}
ZERO_TEST(read_faults, SIGSEGV, ACCESS)
ZERO_TEST(write_faults, SIGSEGV, ACCESS)
ZERO_TEST(read_past_faults, SIGSEGV, ACCESS)
ZERO_TEST(read_after_small_blocks_faults, SIGSEGV, ACCESS)
ZERO_TEST(calloc_write_faults, SIGSEGV, ACCESS)
ZERO_TEST(heap_malloc_write_faults, SIGSEGV, ACCESS)
ZERO_TEST(aligned_write_faults, SIGSEGV, ACCESS)
ZERO_TEST(realloc_to_zero_write_faults, SIGSEGV, ACCESS)

/* ---- Frees ---------------------------------------------------------------- */

static void case_double_free_reported(bool misuse) {
  void* p = mi_malloc(0);
  mi_free(p);
  if (misuse) mi_free(p);
}
/* freed, and a zero-size allocation made since: it is not in the slot the
   stale pointer names, so the stale free is still a double free (and does
   not free the new one) */
static void case_stale_double_free_reported(bool misuse) {
  void* p = mi_malloc(0);
  mi_free(p);
  void* q = mi_malloc(0);
  mi_free(misuse ? p : q);
}
/* the same, freed long ago, with many zero-size allocations since */
static void case_stale_double_free_long_after_reported(bool misuse) {
  void* p = mi_malloc(0);
  mi_free(p);
  for (int i = 0; i < 10000; i++) mi_free(mi_malloc(0));
  void* q = mi_malloc(0);
  mi_free(misuse ? p : q);
}
/* freed from another thread than the one that allocated it */
static void* free_in_thread(void* p) {
  mi_free(p);
  return NULL;
}
static void case_double_free_other_thread_reported(bool misuse) {
  void* p = mi_malloc(0);
  pthread_t t;
  if (pthread_create(&t, NULL, &free_in_thread, p) != 0) _exit(3);
  pthread_join(t, NULL);
  if (misuse) mi_free(p);
}
/* realloc moved it to a real block and freed the slot */
static void case_free_after_realloc_reported(bool misuse) {
  void* p = mi_malloc(0);
  void* q = mi_realloc(p, 100);
  if (misuse) mi_free(p);
  mi_free(q);
}
/* a heap's destroy frees its zero-size allocations with its blocks */
static void case_free_after_heap_destroy_reported(bool misuse) {
  mi_heap_t* heap = mi_heap_new();
  void* p = mi_heap_malloc(heap, 0);
  if (!misuse) mi_free(p);
  mi_heap_destroy(heap);
  if (misuse) mi_free(p);
}
static void case_usable_size_after_free_reported(bool misuse) {
  void* p = mi_malloc(0);
  void* q = mi_malloc(0); /* keeps the segment live */
  mi_free(p);
  if (misuse) sink = (void*)(uintptr_t)mi_usable_size(p);
  mi_free(q);
}
static void case_free_misaligned_reported(bool misuse) {
  char* p = (char*)mi_malloc(0);
  mi_free(misuse ? p + 1 : p);
}
static void case_free_interior_reported(bool misuse) {
  char* p = (char*)mi_malloc(0);
  mi_free(misuse ? p + 8 : p);
}
/* a slot-sized step past the only slot handed out: never a pointer of ours */
static void case_free_never_handed_out_reported(bool misuse) {
  char* p = (char*)mi_malloc(0);
  if (misuse) mi_free(p + 16 * 1000);
  mi_free(p);
}
/* the zero segment's header (found through a slot) */
static void case_free_segment_header_reported(bool misuse) {
  char* p = (char*)mi_malloc(0);
  char* header = (char*)((uintptr_t)p & SEGMENT_MASK);
  if (misuse) mi_free(header + 64);
  mi_free(p);
}
static void case_realloc_misaligned_reported(bool misuse) {
  char* p = (char*)mi_malloc(0);
  p = (char*)mi_realloc(misuse ? p + 4 : p, 10);
  mi_free(p);
}
ZERO_TEST(double_free_reported, SIGABRT, "double free detected of block")
ZERO_TEST(stale_double_free_reported, SIGABRT, "double free detected of block")
ZERO_TEST(stale_double_free_long_after_reported, SIGABRT, "double free detected of block")
ZERO_TEST(double_free_other_thread_reported, SIGABRT, "double free detected of block")
ZERO_TEST(free_after_realloc_reported, SIGABRT, "double free detected of block")
ZERO_TEST(free_after_heap_destroy_reported, SIGABRT, "double free detected of block")
ZERO_TEST(usable_size_after_free_reported, SIGABRT, "use of a freed block detected at")
ZERO_TEST(free_misaligned_reported, SIGABRT, "invalid free detected of pointer")
ZERO_TEST(free_interior_reported, SIGABRT, "invalid free detected of pointer")
ZERO_TEST(free_never_handed_out_reported, SIGABRT, "invalid free detected of pointer")
ZERO_TEST(free_segment_header_reported, SIGABRT, "invalid free detected of pointer")
ZERO_TEST(realloc_misaligned_reported, SIGABRT, "invalid realloc detected of pointer")

/* ---- What a correct program sees ---------------------------------------------- */

static void test_two_zero_size_allocations_differ(void** state) {
  (void)state;
  void* a = mi_malloc(0);
  void* b = mi_malloc(0);
  void* c = mi_calloc(0, 1);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  assert_ptr_not_equal(a, b);
  assert_ptr_not_equal(b, c);
  assert_ptr_not_equal(a, c);
  assert_int_equal((uintptr_t)a % 16, 0);
  mi_free(a);
  mi_free(b);
  mi_free(c);
}

static void test_usable_size_is_zero(void** state) {
  (void)state;
  void* p = mi_malloc(0);
  assert_int_equal(mi_usable_size(p), 0);
  assert_null(mi_expand(p, 1));
  assert_ptr_equal(mi_expand(p, 0), p);
  mi_free(p);
}

static void test_aligned_zero_size_allocations_are_aligned(void** state) {
  (void)state;
  for (size_t align = 1; align <= 2 * 1024 * 1024; align *= 2) {
    char* p = (char*)mi_malloc_aligned(0, align);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % align, 0);
    assert_int_equal(mi_usable_size(p), 0);
    char* q = (char*)mi_malloc_aligned_at(0, align, 32);
    assert_non_null(q);
    assert_int_equal(((uintptr_t)q + 32) % align, 0);
    mi_free(p);
    mi_free(q);
  }
  void* r = NULL;
  assert_int_equal(mi_posix_memalign(&r, 64, 0), 0);
  assert_int_equal((uintptr_t)r % 64, 0);
  mi_free(r);
}

static void test_realloc_to_and_from_zero_usable_size_follows(void** state) {
  (void)state;
  char* p = (char*)mi_malloc(0);
  p = (char*)mi_realloc(p, 10);
  assert_non_null(p);
  memset(p, 7, 10);
  assert_int_equal(mi_usable_size(p), 10);
  char* z = (char*)mi_realloc(p, 0);
  assert_non_null(z);
  assert_int_equal(mi_usable_size(z), 0);
  char* z2 = (char*)mi_realloc(z, 0);
  assert_non_null(z2);
  assert_int_equal(mi_usable_size(z2), 0);
  p = (char*)mi_rezalloc(z2, 100);
  for (int i = 0; i < 100; i++) assert_int_equal(p[i], 0);
  mi_free(p);
  p = (char*)mi_realloc_aligned(mi_malloc(0), 300, 64);
  assert_int_equal((uintptr_t)p % 64, 0);
  memset(p, 1, 300);
  p = (char*)mi_realloc_aligned(p, 0, 64);
  assert_int_equal((uintptr_t)p % 64, 0);
  assert_int_equal(mi_usable_size(p), 0);
  assert_ptr_equal(mi_realloc_aligned(p, 0, 64), p);
  mi_free(p);
}

static void test_heap_owns_its_zero_size_allocations(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  mi_heap_t* backing = mi_heap_get_backing();
  void* p = mi_heap_malloc(heap, 0);
  void* q = mi_malloc(0);
  assert_true(mi_heap_contains_block(heap, p));
  assert_false(mi_heap_contains_block(backing, p));
  assert_true(mi_heap_contains_block(backing, q));
  assert_true(mi_is_in_heap_region(p));
  mi_heap_delete(heap); /* p goes to the backing heap */
  assert_true(mi_heap_contains_block(backing, p));
  mi_free(p);
  mi_free(q);
}

/* A visit sees them as blocks of size 0; its visitor may ask their size and
   free them. */
static bool count_and_free(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap;
  (void)area;
  if (block == NULL || size != 0) return true;
  if (mi_usable_size(block) != 0) return false;
  mi_free(block);
  (*(size_t*)arg)++;
  return true;
}
static void test_visit_sees_and_frees_zero_size_allocations(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  void* big = mi_heap_malloc(heap, 100);
  for (int i = 0; i < 3; i++) sink = mi_heap_malloc(heap, 0);
  size_t n = 0;
  assert_true(mi_heap_visit_blocks(heap, true, &count_and_free, &n));
  assert_int_equal(n, 3);
  n = 0;
  assert_true(mi_heap_visit_blocks(heap, true, &count_and_free, &n));
  assert_int_equal(n, 0);
  mi_free(big);
  mi_heap_delete(heap);
}

/* Many of them, live together, freed by their own and by other threads. */
#define THREADS 4
#define PER_THREAD 20000
static void* zero_churn(void* arg) {
  void** mine = (void**)arg;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < PER_THREAD; i++) mine[i] = mi_malloc(0);
    for (int i = 0; i < PER_THREAD; i++) {
      if (round < 2 || i % 2 == 0) mi_free(mine[i]);
    }
  }
  return NULL;
}
static void case_many_from_threads_clean(bool misuse) {
  (void)misuse;
  static void* slots[THREADS][PER_THREAD];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    if (pthread_create(&t[i], NULL, &zero_churn, slots[i]) != 0) _exit(3);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  /* the odd ones of the last round outlived their threads */
  for (int i = 0; i < THREADS; i++) {
    for (int j = 1; j < PER_THREAD; j += 2) {
      if (mi_usable_size(slots[i][j]) != 0) _exit(4);
      mi_free(slots[i][j]);
    }
  }
  for (int i = 0; i < 1000; i++) mi_free(mi_malloc(0)); /* and the heap goes on */
}
static void test_many_from_threads_clean(void** state) {
  (void)state;
  expect_clean_exit(&case_many_from_threads_clean);
}

/* Threads that each leave a zero-size allocation behind do not keep a
   segment each: the next thread's heap adopts the segment of the one before. */
static void* leave_one(void* arg) {
  (void)arg;
  return mi_malloc(0);
}
static void test_exited_threads_share_a_segment(void** state) {
  (void)state;
  enum { N = 40 };
  void* left[N];
  size_t nsegments = 0;
  uintptr_t segments[N];
  for (int i = 0; i < N; i++) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, &leave_one, NULL), 0);
    assert_int_equal(pthread_join(t, &left[i]), 0);
    uintptr_t s = (uintptr_t)left[i] & SEGMENT_MASK;
    bool known = false;
    for (size_t k = 0; k < nsegments; k++) known = known || segments[k] == s;
    if (!known) segments[nsegments++] = s;
  }
  print_message("%d exited threads' zero-size allocations in %zu segment(s)\n", N, nsegments);
  assert_true(nsegments <= 2);
  for (int i = 0; i < N; i++) mi_free(left[i]);
}

/* A child of a fork frees the parent's zero-size allocations and makes its own. */
static void case_fork_clean(bool misuse) {
  (void)misuse;
  void* p = mi_malloc(0);
  pid_t pid = fork();
  if (pid < 0) _exit(3);
  if (pid == 0) {
    mi_free(p);
    for (int i = 0; i < 1000; i++) mi_free(mi_malloc(0));
    _exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) _exit(4);
  mi_free(p);
}
static void test_fork_clean(void** state) {
  (void)state;
  expect_clean_exit(&case_fork_clean);
}

static size_t rss_bytes(void) {
  size_t rss = 0;
  mi_process_info(NULL, NULL, NULL, &rss, NULL, NULL, NULL, NULL);
  return rss;
}

/* 1e6 pairs (after a first million that sweeps every slot of the segment
   once): RSS does not grow, and all of it fits in one or two segments */
static void test_million_pairs_keep_rss_flat(void** state) {
  (void)state;
  for (int i = 0; i < 1000000; i++) mi_free(mi_malloc(0));
  size_t before = rss_bytes();
  uintptr_t segments[3] = {0, 0, 0};
  size_t nsegments = 0;
  for (int i = 0; i < 1000000; i++) {
    void* p = mi_malloc(0);
    uintptr_t s = (uintptr_t)p & SEGMENT_MASK;
    bool known = false;
    for (size_t k = 0; k < nsegments; k++) known = known || segments[k] == s;
    if (!known) {
      assert_true(nsegments < 2);
      segments[nsegments++] = s;
    }
    mi_free(p);
  }
  size_t after = rss_bytes();
  print_message("rss %zu KiB -> %zu KiB, %zu zero segment(s)\n", before / 1024, after / 1024, nsegments);
  assert_true(after <= before + 256 * 1024);
}

int main(void) {
  mi_child_save_signals();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_read_faults),
      cmocka_unit_test(test_write_faults),
      cmocka_unit_test(test_read_past_faults),
      cmocka_unit_test(test_read_after_small_blocks_faults),
      cmocka_unit_test(test_calloc_write_faults),
      cmocka_unit_test(test_heap_malloc_write_faults),
      cmocka_unit_test(test_aligned_write_faults),
      cmocka_unit_test(test_realloc_to_zero_write_faults),
      cmocka_unit_test(test_double_free_reported),
      cmocka_unit_test(test_stale_double_free_reported),
      cmocka_unit_test(test_stale_double_free_long_after_reported),
      cmocka_unit_test(test_double_free_other_thread_reported),
      cmocka_unit_test(test_free_after_realloc_reported),
      cmocka_unit_test(test_free_after_heap_destroy_reported),
      cmocka_unit_test(test_usable_size_after_free_reported),
      cmocka_unit_test(test_free_misaligned_reported),
      cmocka_unit_test(test_free_interior_reported),
      cmocka_unit_test(test_free_never_handed_out_reported),
      cmocka_unit_test(test_free_segment_header_reported),
      cmocka_unit_test(test_realloc_misaligned_reported),
      cmocka_unit_test(test_two_zero_size_allocations_differ),
      cmocka_unit_test(test_usable_size_is_zero),
      cmocka_unit_test(test_aligned_zero_size_allocations_are_aligned),
      cmocka_unit_test(test_realloc_to_and_from_zero_usable_size_follows),
      cmocka_unit_test(test_heap_owns_its_zero_size_allocations),
      cmocka_unit_test(test_visit_sees_and_frees_zero_size_allocations),
      cmocka_unit_test(test_many_from_threads_clean),
      cmocka_unit_test(test_exited_threads_share_a_segment),
      cmocka_unit_test(test_fork_clean),
      cmocka_unit_test(test_million_pairs_keep_rss_flat),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
