/* mimalloc.h's C++ surface: mi_new and family throwing std::bad_alloc and
   honouring the new_handler, the STL allocators with std::vector and
   std::map, and (with mimalloc-new-delete.h, or the shared library's
   exports) operator new resolved to this library. Built against the static
   library (including mimalloc-new-delete.h, as a statically linked program
   does) and against the shared one; the shared build also runs with the
   library preloaded into a program that does not link it (MI_TEST_PRELOAD:
   mi_* reached through dlsym). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" { /* cmocka's header declares its functions without C linkage */
#include <cmocka.h>
}

#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#if MI_TEST_PRELOAD
/* the program knows nothing of the library: what it reaches, it reaches
   through the dynamic linker */
#include <stdbool.h>
typedef bool (*in_heap_fn)(const void*);
static bool mi_is_in_heap_region(const void* p) {
  static in_heap_fn fn = (in_heap_fn)dlsym(RTLD_DEFAULT, "mi_is_in_heap_region");
  if (fn == nullptr) fail_msg("mi_is_in_heap_region not found: the library is not preloaded");
  return fn(p);
}
#else
#include <mimalloc.h>
#if MI_TEST_NEW_DELETE_HEADER
#include <mimalloc-new-delete.h>
#endif
#endif

#include "../child.h"

/* A case in a child: a failed check exits 1 with a line saying which. */
#define CHECK(cond) \
  do { \
    if (!(cond)) { \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::fflush(stderr); \
      _exit(1); \
    } \
  } while (0)

static void escape(void* p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

#if !MI_TEST_PRELOAD
static const size_t huge_size = SIZE_MAX / 2; /* no allocator can serve it */

static size_t opaque(size_t n) {
  volatile size_t v = n;
  return v;
}
#endif

/* ---- operator new is the library's ------------------------------------------------- */

static bool in_library(const void* addr) {
  Dl_info info;
  if (dladdr(addr, &info) == 0 || info.dli_fname == nullptr) return false;
  print_message("%p in %s\n", addr, info.dli_fname);
#if MI_TEST_SHARED || MI_TEST_PRELOAD
  return std::strstr(info.dli_fname, "libmimalloc") != nullptr;
#else
  /* linked statically: the program's own text, not the C++ run-time's */
  return std::strstr(info.dli_fname, "libstdc++") == nullptr && std::strstr(info.dli_fname, "libc++") == nullptr;
#endif
}

static void test_operator_new_address_in_library(void** state) {
  (void)state;
  void* (*plain)(std::size_t) = &::operator new;
  void* (*array)(std::size_t) = &::operator new[];
  void* (*aligned)(std::size_t, std::align_val_t) = &::operator new;
  void (*del)(void*) noexcept = &::operator delete;
  assert_true(in_library(reinterpret_cast<void*>(plain)));
  assert_true(in_library(reinterpret_cast<void*>(array)));
  assert_true(in_library(reinterpret_cast<void*>(aligned)));
  assert_true(in_library(reinterpret_cast<void*>(del)));
}

static void test_new_expression_block_in_heap(void** state) {
  (void)state;
  int* one = new int(7);
  std::string* s = new std::string(200, 'x');
  char* arr = new char[5000];
  escape(one);
  escape(arr);
  assert_true(mi_is_in_heap_region(one));
  assert_true(mi_is_in_heap_region(s));
  assert_true(mi_is_in_heap_region(s->data()));
  assert_true(mi_is_in_heap_region(arr));
  delete[] arr;
  delete s;
  delete one;
}

#if !MI_TEST_PRELOAD
/* ---- mi_new and family --------------------------------------------------------------- */

static void test_mi_new_family_blocks_in_heap(void** state) {
  (void)state;
  void* p = mi_new(100);
  void* a = mi_new_aligned(64, 1024);
  void* n = mi_new_n(10, 24);
  void* r = mi_new_realloc(mi_new(10), 4000);
  void* rn = mi_new_reallocn(nullptr, 30, 40);
  void* blocks[] = {p, a, n, r, rn};
  for (void* b : blocks) {
    assert_true(mi_is_in_heap_region(b));
    mi_free(b);
  }
  assert_int_equal(reinterpret_cast<uintptr_t>(a) % 1024, 0);
}

static void test_mi_new_too_large_throws_bad_alloc(void** state) {
  (void)state;
  bool thrown = false;
  try {
    escape(mi_new(opaque(huge_size)));
  } catch (const std::bad_alloc&) {
    thrown = true;
  }
  assert_true(thrown);
}

static void test_mi_new_n_overflow_throws_bad_alloc(void** state) {
  (void)state;
  int thrown = 0;
  try {
    escape(mi_new_n(opaque(SIZE_MAX / 4), 8));
  } catch (const std::bad_alloc&) {
    thrown++;
  }
  try {
    escape(mi_new_reallocn(nullptr, opaque(SIZE_MAX / 4), 8));
  } catch (const std::bad_alloc&) {
    thrown++;
  }
  assert_int_equal(thrown, 2);
}

static void test_mi_new_aligned_too_large_throws_bad_alloc(void** state) {
  (void)state;
  bool thrown = false;
  try {
    escape(mi_new_aligned(opaque(huge_size), 64));
  } catch (const std::bad_alloc&) {
    thrown = true;
  }
  assert_true(thrown);
}

static void test_mi_new_realloc_too_large_throws_block_kept(void** state) {
  (void)state;
  char* p = static_cast<char*>(mi_new(32));
  std::memset(p, 'k', 32);
  bool thrown = false;
  try {
    escape(mi_new_realloc(p, opaque(huge_size)));
  } catch (const std::bad_alloc&) {
    thrown = true;
  }
  assert_true(thrown);
  assert_int_equal(p[31], 'k'); /* still the program's */
  mi_free(p);
}

static void test_mi_new_nothrow_too_large_null(void** state) {
  (void)state;
  assert_null(mi_new_nothrow(opaque(huge_size)));
  assert_null(mi_new_aligned_nothrow(opaque(huge_size), 32));
}

/* The handler is called on each failure until it gives up (removes itself). */
static int handler_calls;
static void counting_handler() {
  handler_calls++;
  if (handler_calls == 3) std::set_new_handler(nullptr);
}

static void test_heap_alloc_new_fails_through_new_handler(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  handler_calls = 0;
  std::set_new_handler(&counting_handler);
  bool thrown = false;
  try {
    escape(mi_heap_alloc_new(heap, opaque(huge_size)));
  } catch (const std::bad_alloc&) {
    thrown = true;
  }
  std::set_new_handler(nullptr);
  assert_true(thrown);
  assert_int_equal(handler_calls, 3);
  mi_heap_delete(heap);
}

/* A handler that makes room: the retry succeeds. The request fails at
   first under an address-space limit the reserve fills. */
static char* reserve;
static const size_t reserve_size = 256u << 20;
static const size_t request_size = 200u << 20;

static void handler_frees_reserve() {
  handler_calls++;
  mi_free(reserve);
  reserve = nullptr;
  mi_collect(true); /* nothing of the reserve kept cached */
  std::set_new_handler(nullptr);
}

static size_t address_space_now() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  CHECK(f != nullptr);
  unsigned long pages = 0;
  CHECK(std::fscanf(f, "%lu", &pages) == 1);
  std::fclose(f);
  return static_cast<size_t>(pages) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

static void case_heap_alloc_new_retry(bool misuse) {
  (void)misuse;
  mi_option_set(mi_option_retry_on_oom, 0);
  mi_option_set(mi_option_show_errors, 0); /* the first failure is expected: not a report */
  reserve = static_cast<char*>(mi_malloc(reserve_size));
  CHECK(reserve != nullptr);
  std::memset(reserve, 1, 4096);
  struct rlimit lim;
  CHECK(getrlimit(RLIMIT_AS, &lim) == 0);
  lim.rlim_cur = address_space_now() + (128u << 20);
  CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
  mi_heap_t* heap = mi_heap_new();
  CHECK(mi_heap_malloc(heap, request_size) == nullptr); /* fails with the reserve held */
  handler_calls = 0;
  std::set_new_handler(&handler_frees_reserve);
  char* p = static_cast<char*>(mi_heap_alloc_new(heap, request_size));
  CHECK(handler_calls == 1);
  CHECK(reserve == nullptr);
  CHECK(mi_heap_contains_block(heap, p));
  p[request_size - 1] = 1;
  mi_heap_destroy(heap);
}

static void test_heap_alloc_new_handler_frees_reserve_retry_succeeds(void** state) {
  (void)state;
  expect_clean_exit(&case_heap_alloc_new_retry);
}

/* ---- STL allocators ---------------------------------------------------------------------- */

static void test_stl_allocator_vector_and_map_blocks_in_heap(void** state) {
  (void)state;
  std::vector<int, mi_stl_allocator<int>> v;
  for (int i = 0; i < 10000; i++) v.push_back(i);
  assert_true(mi_is_in_heap_region(v.data()));
  long sum = 0;
  for (int x : v) sum += x;
  assert_int_equal(sum, 49995000L);
  typedef std::map<int, std::string, std::less<int>, mi_stl_allocator<std::pair<const int, std::string>>> map_t;
  map_t m;
  for (int i = 0; i < 1000; i++) m[i] = std::to_string(i);
  assert_true(mi_is_in_heap_region(&*m.begin()));
  assert_string_equal(m[567].c_str(), "567");
  assert_true(mi_stl_allocator<int>() == mi_stl_allocator<long>());
}

static void test_stl_allocator_too_large_throws_bad_alloc(void** state) {
  (void)state;
  mi_stl_allocator<double> alloc;
  bool thrown = false;
  try {
    escape(alloc.allocate(opaque(SIZE_MAX / 4)));
  } catch (const std::bad_alloc&) {
    thrown = true;
  }
  assert_true(thrown);
}

static void test_heap_stl_allocator_blocks_in_own_heap(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  {
    mi_heap_stl_allocator<int> alloc(heap);
    std::vector<int, mi_heap_stl_allocator<int>> v(alloc);
    for (int i = 0; i < 5000; i++) v.push_back(i);
    assert_true(mi_heap_contains_block(heap, v.data()));
    typedef std::pair<const int, int> kv;
    std::map<int, int, std::less<int>, mi_heap_stl_allocator<kv>> m{mi_heap_stl_allocator<kv>(heap)};
    for (int i = 0; i < 100; i++) m[i] = i * i;
    assert_true(mi_heap_contains_block(heap, &*m.begin()));
    assert_int_equal(m[9], 81);
    assert_true(m.get_allocator() == mi_heap_stl_allocator<kv>(alloc));
  }
  mi_heap_delete(heap); /* the heap passed in is the program's */
  /* a heap of the allocator's own, deleted with its last copy */
  std::vector<long, mi_heap_stl_allocator<long>> w;
  w.assign(3000, 5L);
  assert_true(mi_is_in_heap_region(w.data()));
  assert_false(mi_heap_contains_block(mi_heap_get_default(), w.data()));
  assert_false(mi_heap_stl_allocator<int>() == mi_heap_stl_allocator<int>());
}

static void test_heap_destroy_stl_allocator_heap_released_with_last_copy(void** state) {
  (void)state;
  void* data = nullptr;
  {
    std::vector<int, mi_heap_destroy_stl_allocator<int>> v;
    for (int i = 0; i < 20000; i++) v.push_back(i);
    data = v.data();
    assert_true(mi_is_in_heap_region(data));
    assert_int_equal(v[19999], 19999);
  }
  /* the whole heap went at once: its large block with it */
  assert_false(mi_is_in_heap_region(data));
}
#endif

int main(void) {
  mi_child_save_signals();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_operator_new_address_in_library),
    cmocka_unit_test(test_new_expression_block_in_heap),
#if !MI_TEST_PRELOAD
    cmocka_unit_test(test_mi_new_family_blocks_in_heap),
    cmocka_unit_test(test_mi_new_too_large_throws_bad_alloc),
    cmocka_unit_test(test_mi_new_n_overflow_throws_bad_alloc),
    cmocka_unit_test(test_mi_new_aligned_too_large_throws_bad_alloc),
    cmocka_unit_test(test_mi_new_realloc_too_large_throws_block_kept),
    cmocka_unit_test(test_mi_new_nothrow_too_large_null),
    cmocka_unit_test(test_heap_alloc_new_fails_through_new_handler),
    cmocka_unit_test(test_heap_alloc_new_handler_frees_reserve_retry_succeeds),
    cmocka_unit_test(test_stl_allocator_vector_and_map_blocks_in_heap),
    cmocka_unit_test(test_stl_allocator_too_large_throws_bad_alloc),
    cmocka_unit_test(test_heap_stl_allocator_blocks_in_own_heap),
    cmocka_unit_test(test_heap_destroy_stl_allocator_heap_released_with_last_copy),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
