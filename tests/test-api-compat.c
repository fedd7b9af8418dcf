/* The calls of mimalloc 2.4.1's API added for issue 21, each seen doing
   what it should: the usable-size variants, the zeroing aligned
   reallocations, the environment and wide-string duplicates, mi_new and
   family from C (no C++ run-time: a throwing failure aborts with a report;
   tests/cxx has the std::bad_alloc side), sub-processes and the thread-pool
   hint, the abandoned-block visit, per-heap guard sampling, page
   utilisation, mi_collect_reduce and mi_process_done. */
#define _GNU_SOURCE
#include "testutil.h"

#include <pthread.h>
#include <wchar.h>

#include "child.h"

#ifndef MI_TEST_SECURE
#define MI_TEST_SECURE 0
#endif
#ifndef MI_TEST_GUARDED
#define MI_TEST_GUARDED 0
#endif

static bool all_zero(const void* p, size_t from, size_t to) {
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = from; i < to; i++) {
    if (b[i] != 0) return false;
  }
  return true;
}

static bool all_byte(const void* p, size_t n, unsigned char c) {
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < n; i++) {
    if (b[i] != c) return false;
  }
  return true;
}

/* ---- mi_u*: the block's usable size ---------------------------------------------- */

static void test_umalloc_block_size_equals_usable(void** state) {
  (void)state;
  const size_t sizes[] = {1, 24, 100, 1000, 70000, 3 * MiB};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    size_t bsize = 0;
    void* p = mi_umalloc(sizes[i], &bsize);
    assert_non_null(p);
    assert_int_equal(bsize, mi_usable_size(p));
    assert_true(bsize >= sizes[i]);
    mi_free(p);
  }
}

static void test_umalloc_small_block_size_equals_usable(void** state) {
  (void)state;
  size_t bsize = 0;
  void* p = mi_umalloc_small(40, &bsize);
  assert_non_null(p);
  assert_int_equal(bsize, mi_usable_size(p));
  assert_true(bsize >= 40);
  mi_free(p);
}

static void test_uzalloc_small_block_zeroed_size_equals_usable(void** state) {
  (void)state;
  void* dirty = mi_malloc(48);
  memset(dirty, 0xAB, 48);
  mi_free(dirty); /* its block may come back: it must be zeroed then */
  size_t bsize = 0;
  void* p = mi_uzalloc_small(48, &bsize);
  assert_non_null(p);
  assert_int_equal(bsize, mi_usable_size(p));
  assert_true(all_zero(p, 0, 48));
  mi_free(p);
}

static void test_ucalloc_block_zeroed_size_equals_usable(void** state) {
  (void)state;
  size_t bsize = 0;
  void* p = mi_ucalloc(10, 30, &bsize);
  assert_non_null(p);
  assert_int_equal(bsize, mi_usable_size(p));
  assert_true(bsize >= 300);
  assert_true(all_zero(p, 0, 300));
  mi_free(p);
}

static void test_umalloc_aligned_block_aligned_size_equals_usable(void** state) {
  (void)state;
  size_t bsize = 0;
  void* p = mi_umalloc_aligned(200, 256, &bsize);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 256, 0);
  assert_int_equal(bsize, mi_usable_size(p));
  mi_free(p);
}

static void test_uzalloc_aligned_block_zeroed_aligned(void** state) {
  (void)state;
  size_t bsize = 0;
  void* p = mi_uzalloc_aligned(500, 128, &bsize);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 128, 0);
  assert_int_equal(bsize, mi_usable_size(p));
  assert_true(all_zero(p, 0, 500));
  mi_free(p);
}

static void test_urealloc_sizes_before_and_after_reported(void** state) {
  (void)state;
  size_t pre = 1, post = 0;
  void* p = mi_urealloc(NULL, 64, &pre, &post); /* no block before: 0 */
  assert_non_null(p);
  assert_int_equal(pre, 0);
  assert_int_equal(post, mi_usable_size(p));
  size_t old_usable = mi_usable_size(p);
  memset(p, 0x5A, 64);
  void* q = mi_urealloc(p, 5000, &pre, &post);
  assert_non_null(q);
  assert_int_equal(pre, old_usable);
  assert_int_equal(post, mi_usable_size(q));
  assert_true(post >= 5000);
  assert_true(all_byte(q, 64, 0x5A));
  mi_free(q);
}

static void test_ufree_block_size_reported(void** state) {
  (void)state;
  void* p = mi_malloc(300);
  size_t expected = mi_usable_size(p);
  size_t bsize = 0;
  mi_ufree(p, &bsize);
  assert_int_equal(bsize, expected);
  mi_ufree(NULL, &bsize);
  assert_int_equal(bsize, 0);
}

static void test_umalloc_too_large_null_size_zero(void** state) {
  (void)state;
  size_t bsize = 7;
  void* p = mi_umalloc(tu_opaque(SIZE_MAX / 2), &bsize);
  assert_null(p);
  assert_int_equal(bsize, 0);
}

/* The block goes back to its page: the heap that held it holds it no more. */
static bool count_block(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap;
  (void)area;
  (void)size;
  if (block != NULL) (*(size_t*)arg)++;
  return true;
}

static size_t heap_live_blocks(mi_heap_t* heap) {
  size_t n = 0;
  assert_true(mi_heap_visit_blocks(heap, true, &count_block, &n));
  return n;
}

static void test_free_small_block_freed(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  void* p = mi_heap_malloc_small(heap, 32);
  assert_int_equal(heap_live_blocks(heap), 1);
  mi_free_small(p);
  assert_int_equal(heap_live_blocks(heap), 0);
  mi_heap_delete(heap);
}

/* ---- Zeroing aligned reallocation --------------------------------------------------- */

static void test_rezalloc_aligned_grown_part_zero_alignment_kept(void** state) {
  (void)state;
  unsigned char* p = (unsigned char*)mi_zalloc_aligned(100, 64);
  assert_non_null(p);
  memset(p, 0xAB, 100);
  unsigned char* q = (unsigned char*)mi_rezalloc_aligned(p, 20000, 64);
  assert_non_null(q);
  assert_int_equal((uintptr_t)q % 64, 0);
  assert_true(all_byte(q, 100, 0xAB));
  assert_true(all_zero(q, 100, 20000));
  mi_free(q);
}

static void test_rezalloc_aligned_at_offset_aligned_grown_part_zero(void** state) {
  (void)state;
  unsigned char* p = (unsigned char*)mi_zalloc_aligned_at(48, 256, 16);
  assert_non_null(p);
  memset(p, 0x11, 48);
  unsigned char* q = (unsigned char*)mi_rezalloc_aligned_at(p, 9000, 256, 16);
  assert_non_null(q);
  assert_int_equal(((uintptr_t)q + 16) % 256, 0);
  assert_true(all_byte(q, 48, 0x11));
  assert_true(all_zero(q, 48, 9000));
  mi_free(q);
}

static void test_recalloc_aligned_new_elements_zero_alignment_kept(void** state) {
  (void)state;
  uint32_t* p = (uint32_t*)mi_calloc_aligned(10, sizeof(uint32_t), 128);
  assert_non_null(p);
  for (int i = 0; i < 10; i++) p[i] = 0xC0FFEEu;
  uint32_t* q = (uint32_t*)mi_recalloc_aligned(p, 3000, sizeof(uint32_t), 128);
  assert_non_null(q);
  assert_int_equal((uintptr_t)q % 128, 0);
  for (int i = 0; i < 10; i++) assert_int_equal(q[i], 0xC0FFEEu);
  assert_true(all_zero(q, 10 * sizeof(uint32_t), 3000 * sizeof(uint32_t)));
  mi_free(q);
}

static void test_recalloc_aligned_at_offset_aligned_new_elements_zero(void** state) {
  (void)state;
  uint64_t* p = (uint64_t*)mi_calloc_aligned_at(4, sizeof(uint64_t), 64, 8);
  assert_non_null(p);
  for (int i = 0; i < 4; i++) p[i] = 42;
  uint64_t* q = (uint64_t*)mi_recalloc_aligned_at(p, 1000, sizeof(uint64_t), 64, 8);
  assert_non_null(q);
  assert_int_equal(((uintptr_t)q + 8) % 64, 0);
  for (int i = 0; i < 4; i++) assert_int_equal(q[i], 42);
  assert_true(all_zero(q, 4 * sizeof(uint64_t), 1000 * sizeof(uint64_t)));
  mi_free(q);
}

static void test_recalloc_aligned_count_overflow_null_block_kept(void** state) {
  (void)state;
  unsigned char* p = (unsigned char*)mi_zalloc_aligned(64, 64);
  memset(p, 0x77, 64);
  errno = 0;
  void* q = mi_recalloc_aligned(p, tu_opaque(SIZE_MAX / 2), 4, 64);
  assert_null(q);
  assert_int_equal(errno, ENOMEM);
  assert_true(all_byte(p, 64, 0x77)); /* still the program's */
  mi_free(p);
}

static void test_heap_rezalloc_aligned_block_in_heap_default_kept(void** state) {
  (void)state;
  mi_heap_t* def = mi_heap_get_default();
  mi_heap_t* heap = mi_heap_new();
  unsigned char* p = (unsigned char*)mi_heap_zalloc_aligned(heap, 64, 128);
  memset(p, 0x33, 64);
  unsigned char* q = (unsigned char*)mi_heap_rezalloc_aligned(heap, p, 12000, 128);
  assert_non_null(q);
  assert_true(mi_heap_contains_block(heap, q));
  assert_int_equal((uintptr_t)q % 128, 0);
  assert_true(all_byte(q, 64, 0x33));
  assert_true(all_zero(q, 64, 12000));
  assert_ptr_equal(mi_heap_get_default(), def);
  void* r = mi_heap_rezalloc_aligned_at(heap, NULL, 100, 64, 32); /* no block: a zeroed new one */
  assert_true(mi_heap_contains_block(heap, r));
  assert_int_equal(((uintptr_t)r + 32) % 64, 0);
  assert_true(all_zero(r, 0, 100));
  mi_heap_destroy(heap);
}

static void test_heap_recalloc_aligned_block_in_heap_new_elements_zero(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  uint16_t* p = (uint16_t*)mi_heap_calloc_aligned(heap, 8, sizeof(uint16_t), 64);
  for (int i = 0; i < 8; i++) p[i] = 0xBEEF;
  uint16_t* q = (uint16_t*)mi_heap_recalloc_aligned(heap, p, 5000, sizeof(uint16_t), 64);
  assert_true(mi_heap_contains_block(heap, q));
  assert_int_equal((uintptr_t)q % 64, 0);
  for (int i = 0; i < 8; i++) assert_int_equal(q[i], 0xBEEF);
  assert_true(all_zero(q, 8 * sizeof(uint16_t), 5000 * sizeof(uint16_t)));
  uint16_t* r = (uint16_t*)mi_heap_recalloc_aligned_at(heap, q, 9000, sizeof(uint16_t), 64, 16);
  assert_true(mi_heap_contains_block(heap, r));
  assert_int_equal(((uintptr_t)r + 16) % 64, 0);
  for (int i = 0; i < 8; i++) assert_int_equal(r[i], 0xBEEF);
  assert_true(all_zero(r, 8 * sizeof(uint16_t), 9000 * sizeof(uint16_t)));
  mi_heap_destroy(heap);
}

/* ---- Environment and wide strings --------------------------------------------------- */

static void test_wcsdup_copy_equal_and_ours(void** state) {
  (void)state;
  const wchar_t* s = L"wide \u00e9t\u00e9 string";
  wchar_t* t = mi_wcsdup(s);
  assert_non_null(t);
  assert_ptr_not_equal(t, s);
  assert_int_equal(wcscmp(t, s), 0);
  assert_true(mi_is_in_heap_region(t));
  assert_true(mi_usable_size(t) >= (wcslen(s) + 1) * sizeof(wchar_t));
  mi_free(t);
  assert_null(mi_wcsdup(NULL));
}

static void test_mbsdup_copy_equal_and_ours(void** state) {
  (void)state;
  const unsigned char s[] = {0xE2, 0x82, 0xAC, 'x', 0};
  unsigned char* t = mi_mbsdup(s);
  assert_non_null(t);
  assert_memory_equal(t, s, sizeof(s));
  assert_true(mi_is_in_heap_region(t));
  mi_free(t);
}

static void test_dupenv_s_set_variable_copied_with_size(void** state) {
  (void)state;
  assert_int_equal(setenv("MI_TEST_DUPENV", "hello there", 1), 0);
  char* buf = NULL;
  size_t size = 0;
  assert_int_equal(mi_dupenv_s(&buf, &size, "MI_TEST_DUPENV"), 0);
  assert_non_null(buf);
  assert_string_equal(buf, "hello there");
  assert_int_equal(size, strlen("hello there") + 1);
  assert_true(mi_is_in_heap_region(buf));
  assert_ptr_not_equal(buf, getenv("MI_TEST_DUPENV"));
  mi_free(buf);
}

static void test_dupenv_s_unset_variable_null_size_zero(void** state) {
  (void)state;
  unsetenv("MI_TEST_DUPENV_UNSET");
  char* buf = (char*)&buf;
  size_t size = 5;
  assert_int_equal(mi_dupenv_s(&buf, &size, "MI_TEST_DUPENV_UNSET"), 0);
  assert_null(buf);
  assert_int_equal(size, 0);
}

static void test_dupenv_s_null_argument_einval(void** state) {
  (void)state;
  char* buf = NULL;
  size_t size = 3;
  assert_int_equal(mi_dupenv_s(NULL, &size, "PATH"), EINVAL);
  assert_int_equal(size, 0);
  assert_int_equal(mi_dupenv_s(&buf, NULL, NULL), EINVAL);
}

static void test_wdupenv_s_set_variable_copied_with_size(void** state) {
  (void)state;
  assert_int_equal(setenv("MI_TEST_WDUPENV", "wide value", 1), 0);
  wchar_t* buf = NULL;
  size_t size = 0;
  assert_int_equal(mi_wdupenv_s(&buf, &size, L"MI_TEST_WDUPENV"), 0);
  assert_non_null(buf);
  assert_int_equal(wcscmp(buf, L"wide value"), 0);
  assert_int_equal(size, wcslen(L"wide value") + 1);
  assert_true(mi_is_in_heap_region(buf));
  mi_free(buf);
}

static void test_wdupenv_s_unset_variable_null_size_zero(void** state) {
  (void)state;
  unsetenv("MI_TEST_WDUPENV_UNSET");
  wchar_t dummy[1] = {0};
  wchar_t* buf = dummy;
  size_t size = 9;
  assert_int_equal(mi_wdupenv_s(&buf, &size, L"MI_TEST_WDUPENV_UNSET"), 0);
  assert_null(buf);
  assert_int_equal(size, 0);
}

/* ---- mi_new from C ------------------------------------------------------------------ */

static void test_new_family_blocks_usable_and_aligned(void** state) {
  (void)state;
  void* p = mi_new(100);
  assert_true(mi_usable_size(p) >= 100);
  void* a = mi_new_aligned(100, 4096);
  assert_int_equal((uintptr_t)a % 4096, 0);
  void* n = mi_new_n(25, 8);
  assert_true(mi_usable_size(n) >= 200);
  void* t = mi_new_nothrow(10);
  void* ta = mi_new_aligned_nothrow(10, 256);
  assert_int_equal((uintptr_t)ta % 256, 0);
  memset(p, 0x42, 100);
  void* r = mi_new_realloc(p, 10000);
  assert_true(all_byte(r, 100, 0x42));
  void* rn = mi_new_reallocn(r, 300, 50);
  assert_true(all_byte(rn, 100, 0x42));
  assert_true(mi_usable_size(rn) >= 15000);
  void* blocks[] = {a, n, t, ta, rn};
  for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
    assert_true(mi_is_in_heap_region(blocks[i]));
    mi_free(blocks[i]);
  }
}

static void test_heap_alloc_new_blocks_in_heap(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  void* p = mi_heap_alloc_new(heap, 64);
  void* q = mi_heap_alloc_new_n(heap, 10, 100);
  assert_true(mi_heap_contains_block(heap, p));
  assert_true(mi_heap_contains_block(heap, q));
  assert_true(mi_usable_size(q) >= 1000);
  mi_heap_destroy(heap);
}

static void test_new_nothrow_too_large_null(void** state) {
  (void)state;
  assert_null(mi_new_nothrow(tu_opaque(SIZE_MAX / 2)));
  assert_null(mi_new_aligned_nothrow(tu_opaque(SIZE_MAX / 2), 64));
  assert_null(mi_new_aligned_nothrow(64, tu_opaque(48))); /* not a power of two */
}

/* A C program has no C++ run-time to throw with: the failure that would
   throw std::bad_alloc aborts with a report instead. */
static void case_new_n_overflow(bool misuse) {
  void* p = mi_new_n(tu_opaque(misuse ? SIZE_MAX / 4 : 4), 8);
  mi_free(p);
}
static void case_new_too_large(bool misuse) {
  void* p = mi_new(tu_opaque(misuse ? SIZE_MAX / 2 : 100));
  mi_free(p);
}
static void case_heap_alloc_new_too_large(bool misuse) {
  mi_heap_t* heap = mi_heap_new();
  void* p = mi_heap_alloc_new(heap, tu_opaque(misuse ? SIZE_MAX / 2 : 100));
  mi_free(p);
  mi_heap_delete(heap);
}
static void case_new_realloc_too_large(bool misuse) {
  void* p = mi_malloc(10);
  p = mi_new_realloc(p, tu_opaque(misuse ? SIZE_MAX / 2 : 100));
  mi_free(p);
}

static void expect_bad_alloc_abort(mi_case_fn fn) {
  char err[8192];
  int status = run_child(fn, false, err, sizeof(err));
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  status = run_child(fn, true, err, sizeof(err));
  if (!WIFSIGNALED(status)) print_error("status %d, stderr: %s\n", status, err);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
  assert_non_null(strstr(err, "no C++ run-time to throw std::bad_alloc"));
}

static void test_new_n_overflow_without_cxx_runtime_aborts_reported(void** state) {
  (void)state;
  expect_bad_alloc_abort(&case_new_n_overflow);
}
static void test_new_too_large_without_cxx_runtime_aborts_reported(void** state) {
  (void)state;
  expect_bad_alloc_abort(&case_new_too_large);
}
static void test_heap_alloc_new_too_large_without_cxx_runtime_aborts_reported(void** state) {
  (void)state;
  expect_bad_alloc_abort(&case_heap_alloc_new_too_large);
}
static void test_new_realloc_too_large_without_cxx_runtime_aborts_reported(void** state) {
  (void)state;
  expect_bad_alloc_abort(&case_new_realloc_too_large);
}

/* ---- Sub-processes, thread pools ----------------------------------------------------- */

static void test_subproc_main_null_new_is_main(void** state) {
  (void)state;
  assert_null(mi_subproc_main());
  mi_subproc_id_t sp = mi_subproc_new();
  assert_ptr_equal(sp, mi_subproc_main());
  mi_subproc_delete(sp);
}

static void* subproc_thread(void* arg) {
  mi_subproc_add_current_thread(arg);
  mi_thread_set_in_threadpool();
  void* p = mi_malloc(1000);
  return p;
}

static void test_subproc_thread_added_allocates_freed_by_main(void** state) {
  (void)state;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, &subproc_thread, mi_subproc_new()), 0);
  void* p = NULL;
  assert_int_equal(pthread_join(t, &p), 0);
  assert_true(mi_is_in_heap_region(p)); /* one pool: the main thread frees it */
  mi_free(p);
}

/* ---- Abandoned blocks ------------------------------------------------------------------ */

#define ABANDONED_N 200
#define ABANDONED_SIZE 712
static void* abandoned_blocks[ABANDONED_N];

static void* abandon_thread(void* arg) {
  (void)arg;
  mi_heap_guarded_set_sample_rate(mi_heap_get_default(), 0, 0); /* every block in its segment */
  for (int i = 0; i < ABANDONED_N; i++) abandoned_blocks[i] = mi_malloc(ABANDONED_SIZE);
  return NULL; /* exits with its blocks live: its segments are abandoned */
}

typedef struct {
  size_t found;
  size_t areas;
  bool heap_null;
} abandoned_visit_t;

static bool abandoned_visitor(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  abandoned_visit_t* v = (abandoned_visit_t*)arg;
  if (heap != NULL) v->heap_null = false;
  if (block == NULL) {
    v->areas++;
    return true;
  }
  assert_true(size >= ABANDONED_SIZE && size <= area->block_size);
  for (int i = 0; i < ABANDONED_N; i++) {
    if (abandoned_blocks[i] == block) v->found++;
  }
  return true;
}

static void test_abandoned_visit_blocks_exited_thread_blocks_visited(void** state) {
  (void)state;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, &abandon_thread, NULL), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  /* right away, before an allocation of this thread could claim the segment */
  abandoned_visit_t v = {0, 0, true};
  assert_true(mi_abandoned_visit_blocks(mi_subproc_main(), 0, true, &abandoned_visitor, &v));
  assert_int_equal(v.found, ABANDONED_N);
  assert_true(v.areas > 0);
  assert_true(v.heap_null);
  abandoned_visit_t tagged = {0, 0, true};
  assert_true(mi_abandoned_visit_blocks(mi_subproc_main(), 1, true, &abandoned_visitor, &tagged));
  assert_int_equal(tagged.found + tagged.areas, 0); /* no area carries tag 1 */
  assert_false(mi_abandoned_visit_blocks((mi_subproc_id_t)&v, 0, true, &abandoned_visitor, &v));
  for (int i = 0; i < ABANDONED_N; i++) mi_free(abandoned_blocks[i]);
}

/* ---- Per-heap guard sampling ------------------------------------------------------------ */

/* A guarded block of a multiple of 16 bytes ends exactly at a page boundary. */
static bool looks_guarded(const void* p, size_t size) {
  return (((uintptr_t)p + size) & 4095) == 0;
}

static size_t count_guarded(mi_heap_t* heap, size_t size, int n) {
  size_t guarded = 0;
  void* blocks[64];
  for (int i = 0; i < n; i++) {
    blocks[i] = mi_heap_malloc(heap, size);
    if (looks_guarded(blocks[i], size)) guarded++;
  }
  for (int i = 0; i < n; i++) mi_free(blocks[i]);
  return guarded;
}

#if MI_TEST_GUARDED
static void test_heap_guarded_rate_one_guards_every_block_in_bound_only(void** state) {
  (void)state;
  long saved_rate = mi_option_get(mi_option_guarded_sample_rate);
  mi_option_set(mi_option_guarded_sample_rate, 0); /* the options guard nothing */
  mi_heap_t* heap = mi_heap_new();
  mi_heap_guarded_set_sample_rate(heap, 1, 0);
  mi_heap_guarded_set_size_bound(heap, 200, 300);
  assert_int_equal(count_guarded(heap, 256, 20), 20);
  assert_int_equal(count_guarded(heap, 96, 20), 0);  /* below the bound */
  assert_int_equal(count_guarded(heap, 512, 20), 0); /* above it */
  mi_heap_t* other = mi_heap_new();
  assert_int_equal(count_guarded(other, 256, 20), 0); /* the options still decide there */
  mi_heap_guarded_set_sample_rate(heap, 0, 0);
  assert_int_equal(count_guarded(heap, 256, 20), 0);
  mi_heap_delete(other);
  mi_heap_delete(heap);
  mi_option_set(mi_option_guarded_sample_rate, saved_rate);
}
#else
static void test_heap_guarded_set_without_guard_pages_accepted_nothing_guarded(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  mi_heap_guarded_set_sample_rate(heap, 1, 0);
  mi_heap_guarded_set_size_bound(heap, 0, 4096);
  size_t guarded = count_guarded(heap, 256, 32);
  assert_true(guarded < 32); /* blocks are packed on their page, not each before a guard */
  mi_heap_delete(heap);
}
#endif

/* ---- Page utilisation --------------------------------------------------------------------- */

#define UTIL_N 3000
static void* util_blocks[UTIL_N];

static void test_unsafe_heap_page_is_under_utilized_sparse_true_full_false(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  for (int i = 0; i < UTIL_N; i++) util_blocks[i] = mi_heap_malloc(heap, 64);
  /* the first page's blocks: all but one freed (more than a secure
     quarantine holds back) */
  uintptr_t page_mask = ~(uintptr_t)(64 * KiB - 1);
  uintptr_t first_page = (uintptr_t)util_blocks[0] & page_mask;
  int kept = -1;
  for (int i = 0; i < UTIL_N; i++) {
    if (((uintptr_t)util_blocks[i] & page_mask) != first_page) continue;
    if (kept < 0) {
      kept = i;
      continue;
    }
    mi_free(util_blocks[i]);
    util_blocks[i] = NULL;
  }
  assert_true(mi_unsafe_heap_page_is_under_utilized(heap, util_blocks[kept], 10));
  assert_true(mi_unsafe_heap_page_is_under_utilized(NULL, util_blocks[kept], 10)); /* any heap */
  mi_heap_t* other = mi_heap_new();
  assert_false(mi_unsafe_heap_page_is_under_utilized(other, util_blocks[kept], 10));
  /* a full page in the middle of the run */
  assert_false(mi_unsafe_heap_page_is_under_utilized(heap, util_blocks[UTIL_N / 2], 100));
  assert_false(mi_unsafe_heap_page_is_under_utilized(heap, NULL, 100));
  int local = 0;
  assert_false(mi_unsafe_heap_page_is_under_utilized(heap, &local, 100));
  mi_heap_delete(other);
  mi_heap_destroy(heap);
}

/* ---- Collection, process end ---------------------------------------------------------------- */

static bool count_area(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap;
  (void)area;
  (void)size;
  if (block == NULL) (*(size_t*)arg)++;
  return true;
}

static void test_collect_reduce_empty_pages_released(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_get_default();
  size_t before = 0, filled = 0, after = 0;
  mi_collect(true);
  assert_true(mi_heap_visit_blocks(heap, false, &count_area, &before));
  for (int i = 0; i < UTIL_N; i++) util_blocks[i] = mi_malloc(1000);
  assert_true(mi_heap_visit_blocks(heap, false, &count_area, &filled));
  for (int i = 0; i < UTIL_N; i++) mi_free(util_blocks[i]);
  mi_collect_reduce(0);
  assert_true(mi_heap_visit_blocks(heap, false, &count_area, &after));
  assert_true(filled > before);
  assert_true(after < filled);
}

static void case_process_done_twice(bool misuse) {
  (void)misuse;
  mi_option_enable(mi_option_show_stats);
  mi_process_done();
  mi_process_done();
  void* p = mi_malloc(100); /* the allocator still serves */
  mi_free(p);
  exit(0); /* the exit runs it again: nothing more is printed */
}

static void test_process_done_twice_and_exit_prints_stats_once(void** state) {
  (void)state;
  char err[16384];
  int status = run_child(&case_process_done_twice, false, err, sizeof(err));
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const char* first = strstr(err, " allocator: mimalloc-pprof"); /* the table's last row, once a table */
  assert_non_null(first);
  assert_null(strstr(first + 1, " allocator: mimalloc-pprof"));
}

int main(void) {
  mi_child_save_signals();
  mi_process_init();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_umalloc_block_size_equals_usable),
    cmocka_unit_test(test_umalloc_small_block_size_equals_usable),
    cmocka_unit_test(test_uzalloc_small_block_zeroed_size_equals_usable),
    cmocka_unit_test(test_ucalloc_block_zeroed_size_equals_usable),
    cmocka_unit_test(test_umalloc_aligned_block_aligned_size_equals_usable),
    cmocka_unit_test(test_uzalloc_aligned_block_zeroed_aligned),
    cmocka_unit_test(test_urealloc_sizes_before_and_after_reported),
    cmocka_unit_test(test_ufree_block_size_reported),
    cmocka_unit_test(test_umalloc_too_large_null_size_zero),
    cmocka_unit_test(test_free_small_block_freed),
    cmocka_unit_test(test_rezalloc_aligned_grown_part_zero_alignment_kept),
    cmocka_unit_test(test_rezalloc_aligned_at_offset_aligned_grown_part_zero),
    cmocka_unit_test(test_recalloc_aligned_new_elements_zero_alignment_kept),
    cmocka_unit_test(test_recalloc_aligned_at_offset_aligned_new_elements_zero),
    cmocka_unit_test(test_recalloc_aligned_count_overflow_null_block_kept),
    cmocka_unit_test(test_heap_rezalloc_aligned_block_in_heap_default_kept),
    cmocka_unit_test(test_heap_recalloc_aligned_block_in_heap_new_elements_zero),
    cmocka_unit_test(test_wcsdup_copy_equal_and_ours),
    cmocka_unit_test(test_mbsdup_copy_equal_and_ours),
    cmocka_unit_test(test_dupenv_s_set_variable_copied_with_size),
    cmocka_unit_test(test_dupenv_s_unset_variable_null_size_zero),
    cmocka_unit_test(test_dupenv_s_null_argument_einval),
    cmocka_unit_test(test_wdupenv_s_set_variable_copied_with_size),
    cmocka_unit_test(test_wdupenv_s_unset_variable_null_size_zero),
    cmocka_unit_test(test_new_family_blocks_usable_and_aligned),
    cmocka_unit_test(test_heap_alloc_new_blocks_in_heap),
    cmocka_unit_test(test_new_nothrow_too_large_null),
    cmocka_unit_test(test_new_n_overflow_without_cxx_runtime_aborts_reported),
    cmocka_unit_test(test_new_too_large_without_cxx_runtime_aborts_reported),
    cmocka_unit_test(test_heap_alloc_new_too_large_without_cxx_runtime_aborts_reported),
    cmocka_unit_test(test_new_realloc_too_large_without_cxx_runtime_aborts_reported),
    cmocka_unit_test(test_subproc_main_null_new_is_main),
    cmocka_unit_test(test_subproc_thread_added_allocates_freed_by_main),
    cmocka_unit_test(test_abandoned_visit_blocks_exited_thread_blocks_visited),
#if MI_TEST_GUARDED
    cmocka_unit_test(test_heap_guarded_rate_one_guards_every_block_in_bound_only),
#else
    cmocka_unit_test(test_heap_guarded_set_without_guard_pages_accepted_nothing_guarded),
#endif
    cmocka_unit_test(test_unsafe_heap_page_is_under_utilized_sparse_true_full_false),
    cmocka_unit_test(test_collect_reduce_empty_pages_released),
    cmocka_unit_test(test_process_done_twice_and_exit_prints_stats_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
