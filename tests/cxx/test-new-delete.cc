/* C++'s operator new and delete served by the library (src/api/new-delete.c):
   every form reaches it, failing new honours the new_handler and throws
   std::bad_alloc, and (secure builds) a sized or aligned delete that does
   not match its block aborts with a report, each next to its clean twin.
   Built twice: against the static library and, with MI_TEST_OVERRIDE,
   against the shared one (malloc and C23's free_sized exported too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" { /* cmocka's header declares its functions without C linkage */
#include <cmocka.h>
}

#include <dlfcn.h>
#include <mimalloc.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "../child.h"

#if MI_TEST_OVERRIDE
extern "C" void free_sized(void* p, size_t size);
extern "C" void free_aligned_sized(void* p, size_t alignment, size_t size);
#endif

/* new and delete pairs may be elided (C++14): keep every block escaped */
static void escape(void* p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

/* A case in a child: a failed check exits 1 with a line saying which. */
#define CHECK(cond) \
  do { \
    if (!(cond)) { \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::fflush(stderr); \
      _exit(1); \
    } \
  } while (0)

static const size_t huge_size = SIZE_MAX / 2; /* no allocator can serve it */

/* ---- Every form reaches the allocator ------------------------------------------- */

static void check_ours(void* p, size_t size, size_t alignment) {
  assert_non_null(p);
  assert_true(mi_is_in_heap_region(p));
  assert_true(mi_usable_size(p) >= size);
#if MI_TEST_SECURE
  assert_int_equal(mi_usable_size(p), size); /* exact in secure builds */
#endif
  assert_int_equal((uintptr_t)p % alignment, 0);
  std::memset(p, 0x5a, size);
}

static void test_every_new_form_allocates_from_the_heap(void** state) {
  (void)state;
  const std::align_val_t al{256};
  void* p;
  p = ::operator new(40);
  check_ours(p, 40, 16);
  ::operator delete(p);
  p = ::operator new[](41);
  check_ours(p, 41, 16);
  ::operator delete[](p);
  p = ::operator new(42, std::nothrow);
  check_ours(p, 42, 16);
  ::operator delete(p, std::nothrow);
  p = ::operator new[](43, std::nothrow);
  check_ours(p, 43, 16);
  ::operator delete[](p, std::nothrow);
  p = ::operator new(44, al);
  check_ours(p, 44, 256);
  ::operator delete(p, al);
  p = ::operator new[](45, al);
  check_ours(p, 45, 256);
  ::operator delete[](p, al);
  p = ::operator new(46, al, std::nothrow);
  check_ours(p, 46, 256);
  ::operator delete(p, al, std::nothrow);
  p = ::operator new[](47, al, std::nothrow);
  check_ours(p, 47, 256);
  ::operator delete[](p, al, std::nothrow);
  p = ::operator new(48);
  check_ours(p, 48, 16);
  ::operator delete(p, 48);
  p = ::operator new[](49);
  check_ours(p, 49, 16);
  ::operator delete[](p, 49);
  p = ::operator new(50, al);
  check_ours(p, 50, 256);
  ::operator delete(p, 50, al);
  p = ::operator new[](51, al);
  check_ours(p, 51, 256);
  ::operator delete[](p, 51, al);
  /* the expressions too, as a program writes them */
  struct alignas(128) over {
    char x[200];
  };
  over* o = new over;
  check_ours(o, sizeof(over), 128);
  delete o;
  over* oa = new over[3];
  check_ours(oa, 3 * sizeof(over), 128); /* no array cookie: trivial destructor */
  delete[] oa;
  std::string* s = new std::string(100, 'x');
  assert_true(mi_is_in_heap_region(s->data()));
  delete s;
}

/* operator new resolves to this library (or, linked statically, to the program) */
static void test_operator_new_resolves_to_the_library(void** state) {
  (void)state;
  void* f = dlsym(RTLD_DEFAULT, "_Znwm");
  void* m = dlsym(RTLD_DEFAULT, "mi_malloc");
  assert_non_null(f);
  Dl_info fi, mi;
  assert_true(dladdr(f, &fi) != 0);
  assert_true(dladdr(m != NULL ? m : (void*)&mi_malloc, &mi) != 0);
  assert_string_equal(fi.dli_fname, mi.dli_fname);
#if MI_TEST_OVERRIDE
  assert_non_null(std::strstr(fi.dli_fname, "libmimalloc"));
#endif
}

/* Each delete form frees the block into the heap: in the default build the
   next allocation of its size gets it back (a page's free list is a stack);
   in secure builds freeing it again is reported as a double free (below). */
enum delete_form {
  DEL_PLAIN,
  DEL_ARRAY,
  DEL_NOTHROW,
  DEL_ARRAY_NOTHROW,
  DEL_SIZED,
  DEL_ARRAY_SIZED,
  DEL_ALIGNED,
  DEL_ARRAY_ALIGNED,
  DEL_ALIGNED_NOTHROW,
  DEL_ARRAY_ALIGNED_NOTHROW,
  DEL_SIZED_ALIGNED,
  DEL_ARRAY_SIZED_ALIGNED,
  DEL_MI_FREE_SIZE,
  DEL_MI_FREE_SIZE_ALIGNED,
  DEL_MI_FREE_ALIGNED,
#if MI_TEST_OVERRIDE
  DEL_FREE_SIZED,
  DEL_FREE_ALIGNED_SIZED,
#endif
  DEL_COUNT
};

static const size_t form_size = 72;
static const std::align_val_t form_align{64};

static void* new_for(int form) {
  switch (form) {
    case DEL_ARRAY:
    case DEL_ARRAY_NOTHROW:
    case DEL_ARRAY_SIZED: return ::operator new[](form_size);
    case DEL_ALIGNED:
    case DEL_ALIGNED_NOTHROW:
    case DEL_SIZED_ALIGNED: return ::operator new(form_size, form_align);
    case DEL_ARRAY_ALIGNED:
    case DEL_ARRAY_ALIGNED_NOTHROW:
    case DEL_ARRAY_SIZED_ALIGNED: return ::operator new[](form_size, form_align);
    case DEL_MI_FREE_SIZE_ALIGNED:
    case DEL_MI_FREE_ALIGNED: return mi_malloc_aligned(form_size, (size_t)form_align);
#if MI_TEST_OVERRIDE
    case DEL_FREE_SIZED: return std::malloc(form_size);
    case DEL_FREE_ALIGNED_SIZED: return std::aligned_alloc((size_t)form_align, form_size);
#endif
    case DEL_MI_FREE_SIZE: return mi_malloc(form_size);
    default: return ::operator new(form_size);
  }
}

static void delete_with(int form, void* p) {
  switch (form) {
    case DEL_PLAIN: ::operator delete(p); break;
    case DEL_ARRAY: ::operator delete[](p); break;
    case DEL_NOTHROW: ::operator delete(p, std::nothrow); break;
    case DEL_ARRAY_NOTHROW: ::operator delete[](p, std::nothrow); break;
    case DEL_SIZED: ::operator delete(p, form_size); break;
    case DEL_ARRAY_SIZED: ::operator delete[](p, form_size); break;
    case DEL_ALIGNED: ::operator delete(p, form_align); break;
    case DEL_ARRAY_ALIGNED: ::operator delete[](p, form_align); break;
    case DEL_ALIGNED_NOTHROW: ::operator delete(p, form_align, std::nothrow); break;
    case DEL_ARRAY_ALIGNED_NOTHROW: ::operator delete[](p, form_align, std::nothrow); break;
    case DEL_SIZED_ALIGNED: ::operator delete(p, form_size, form_align); break;
    case DEL_ARRAY_SIZED_ALIGNED: ::operator delete[](p, form_size, form_align); break;
    case DEL_MI_FREE_SIZE: mi_free_size(p, form_size); break;
    case DEL_MI_FREE_SIZE_ALIGNED: mi_free_size_aligned(p, form_size, (size_t)form_align); break;
    case DEL_MI_FREE_ALIGNED: mi_free_aligned(p, (size_t)form_align); break;
#if MI_TEST_OVERRIDE
    case DEL_FREE_SIZED: free_sized(p, form_size); break;
    case DEL_FREE_ALIGNED_SIZED: free_aligned_sized(p, (size_t)form_align, form_size); break;
#endif
    default: break;
  }
}

#if MI_TEST_SECURE
static int current_form;

static void case_delete_form_twice(bool misuse) {
  void* p = new_for(current_form);
  escape(p);
  delete_with(current_form, p);
  if (misuse) delete_with(current_form, p);
}

static void test_every_delete_form_frees_into_the_heap(void** state) {
  (void)state;
  for (current_form = 0; current_form < DEL_COUNT; current_form++) {
    print_message("delete form %d\n", current_form);
    expect(&case_delete_form_twice, SIGABRT, "double free detected of block");
  }
}
#else
static void test_every_delete_form_frees_into_the_heap(void** state) {
  (void)state;
  for (int form = 0; form < DEL_COUNT; form++) {
    void* p = new_for(form);
    assert_non_null(p);
    assert_true(mi_is_in_heap_region(p));
    escape(p);
    delete_with(form, p);
    /* an aligned block may come from a larger size class: take it back
       the way it was allocated */
    void* q = new_for(form);
    escape(q);
    if (q != p) print_error("delete form %d: %p freed, %p handed out next\n", form, p, q);
    assert_ptr_equal(q, p);
    delete_with(form, q);
  }
}
#endif

/* ---- new failing ------------------------------------------------------------------ */

static void test_new_too_large_throws_bad_alloc(void** state) {
  (void)state;
  int thrown = 0;
  try {
    escape(::operator new(huge_size));
  } catch (const std::bad_alloc&) {
    thrown++;
  }
  try {
    escape(::operator new[](huge_size));
  } catch (const std::bad_alloc&) {
    thrown++;
  }
  try {
    escape(::operator new (huge_size, std::align_val_t{64}));
  } catch (const std::bad_alloc&) {
    thrown++;
  }
  try {
    escape(::operator new[](huge_size, std::align_val_t{64}));
  } catch (const std::bad_alloc&) {
    thrown++;
  }
  try {
    /* the expression: a count whose bytes do not fit reaches new as huge or throws bad_array_new_length */
    volatile size_t n = huge_size / 8;
    escape(new uint64_t[n]);
  } catch (const std::bad_alloc&) {
    thrown++;
  }
  assert_int_equal(thrown, 5);
}

static void test_nothrow_new_too_large_returns_null(void** state) {
  (void)state;
  assert_null(::operator new(huge_size, std::nothrow));
  assert_null(::operator new[](huge_size, std::nothrow));
  assert_null(::operator new (huge_size, std::align_val_t{64}, std::nothrow));
  assert_null(::operator new[](huge_size, std::align_val_t{64}, std::nothrow));
}

static int handler_calls;

static void handler_gives_up_third_time(void) {
  if (++handler_calls == 3) std::set_new_handler(nullptr);
}

/* the handler is called at each failure until it uninstalls itself */
static void test_new_handler_called_until_removed(void** state) {
  (void)state;
  handler_calls = 0;
  std::set_new_handler(&handler_gives_up_third_time);
  bool thrown = false;
  try {
    escape(::operator new(huge_size));
  } catch (const std::bad_alloc&) {
    thrown = true;
  }
  assert_true(thrown);
  assert_int_equal(handler_calls, 3);
  handler_calls = 0;
  std::set_new_handler(&handler_gives_up_third_time);
  assert_null(::operator new (huge_size, std::align_val_t{32}, std::nothrow));
  assert_int_equal(handler_calls, 3);
  assert_null(std::get_new_handler());
}

struct handler_error {
  int code;
};

static void handler_throws(void) {
  handler_calls++;
  throw handler_error{42};
}

/* what the handler throws leaves new as it is */
static void test_new_handler_exception_propagates(void** state) {
  (void)state;
  handler_calls = 0;
  std::set_new_handler(&handler_throws);
  int code = 0;
  try {
    escape(::operator new[](huge_size));
  } catch (const handler_error& e) {
    code = e.code;
  }
  std::set_new_handler(nullptr);
  assert_int_equal(code, 42);
  assert_int_equal(handler_calls, 1);
}

/* libstdc++ fails an alignment that is not a power of two (undefined
   behaviour) at once, without the handler: so do we */
static void test_new_bad_alignment_fails(void** state) {
  (void)state;
  handler_calls = 0;
  std::set_new_handler(&handler_gives_up_third_time);
  volatile size_t bad = 48; /* out of the compiler's sight: it warns of a constant */
  bool thrown = false;
  try {
    escape(::operator new (64, std::align_val_t{bad}));
  } catch (const std::bad_alloc&) {
    thrown = true;
  }
  assert_true(thrown);
  assert_null(::operator new[](64, std::align_val_t{bad - 45}, std::nothrow));
  assert_int_equal(handler_calls, 0);
  std::set_new_handler(nullptr);
}

/* A handler frees a reserve so that the retry succeeds. The child caps its
   address space so that the request fails while the reserve is held. */
static char* reserve;
static const size_t reserve_size = 256u << 20;
static const size_t request_size = 200u << 20;

static void handler_frees_reserve(void) {
  handler_calls++;
  delete[] reserve;
  reserve = nullptr;
  mi_collect(true); /* nothing of the reserve kept cached */
  std::set_new_handler(nullptr);
}

static size_t address_space_now(void) {
  FILE* f = std::fopen("/proc/self/statm", "r");
  CHECK(f != NULL);
  unsigned long pages = 0;
  CHECK(std::fscanf(f, "%lu", &pages) == 1);
  std::fclose(f);
  return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

static void case_new_handler_frees_reserve(bool misuse) {
  (void)misuse;
  mi_option_set(mi_option_retry_on_oom, 0);
  mi_option_set(mi_option_show_errors, 0); /* the failure is expected: not a report */
  reserve = new char[reserve_size];
  std::memset(reserve, 1, 4096);
  struct rlimit lim;
  CHECK(getrlimit(RLIMIT_AS, &lim) == 0);
  lim.rlim_cur = address_space_now() + (128u << 20);
  CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
  CHECK(::operator new(request_size, std::nothrow) == nullptr); /* fails with the reserve held */
  handler_calls = 0;
  std::set_new_handler(&handler_frees_reserve);
  char* p = new char[request_size];
  CHECK(handler_calls == 1);
  CHECK(reserve == nullptr);
  CHECK(mi_is_in_heap_region(p));
  p[request_size - 1] = 1;
  delete[] p;
}

static void test_new_handler_frees_reserve_and_retry_succeeds(void** state) {
  (void)state;
  expect_clean_exit(&case_new_handler_frees_reserve);
}

/* ---- No false alarm from the containers (sized delete everywhere) ----------------- */

static void test_containers_run_clean(void** state) {
  (void)state;
  std::map<std::string, std::vector<int>> m;
  for (int i = 0; i < 20000; i++) {
    std::string key = "key-" + std::to_string(i % 3000) + std::string((size_t)(i % 40), 'k');
    std::vector<int>& v = m[key];
    v.push_back(i);
    if (i % 7 == 0) v.shrink_to_fit();
    if (i % 11 == 0) m.erase(m.begin());
  }
  struct alignas(64) cell {
    double d[3];
  };
  std::vector<cell> cells;
  for (int i = 0; i < 5000; i++) cells.push_back(cell{{(double)i, 0, 0}});
  assert_true(m.size() > 0);
  assert_int_equal((uintptr_t)cells.data() % 64, 0);
}

/* ---- Secure builds: sized and aligned delete checked -------------------------------- */
#if MI_TEST_SECURE

struct small_obj {
  char x[32];
};
static const size_t large_size =
    38u * 8192; /* a large block (a segment of its own), a multiple of its alignment below */

static void case_sized_delete_wrong_size_small(bool misuse) {
  small_obj* p = new small_obj;
  escape(p);
  ::operator delete(p, misuse ? 40 : sizeof(small_obj));
}
MI_CHILD_TEST(test_sized_delete_wrong_size_small_reported, sized_delete_wrong_size_small, SIGABRT,
              "sized deallocation mismatch detected (40 bytes given) of block")

static void case_sized_delete_wrong_size_large(bool misuse) {
  char* p = new char[large_size];
  escape(p);
  ::operator delete[](p, misuse ? large_size - 16 : large_size);
}
MI_CHILD_TEST(test_sized_delete_wrong_size_large_reported, sized_delete_wrong_size_large, SIGABRT,
              "sized deallocation mismatch detected (311280 bytes given) of block")

/* delete through a base class without a virtual destructor: the compiler
   passes the base's size */
struct base {
  uint64_t a;
};
struct derived : base {
  uint64_t b, c, d;
};

static void case_delete_type_size_mismatch(bool misuse) {
  base* p = misuse ? new derived : new base;
  escape(p);
  delete p;
}
MI_CHILD_TEST(test_delete_type_size_mismatch_reported, delete_type_size_mismatch, SIGABRT,
              "sized deallocation mismatch detected (8 bytes given) of block")

/* an array of objects with a destructor carries a cookie: the size given
   to delete[] counts it, as new[] did */
struct with_dtor {
  char x[24];
  ~with_dtor() {
    escape(this);
  }
};

static void case_delete_array_with_cookie(bool misuse) {
  with_dtor* p = new with_dtor[5];
  escape(p);
  if (misuse) ::operator delete[]((char*)p - sizeof(size_t), 5 * sizeof(with_dtor));
  else delete[] p;
}
MI_CHILD_TEST(test_delete_array_size_without_cookie_reported, delete_array_with_cookie, SIGABRT,
              "sized deallocation mismatch detected (120 bytes given) of block")

struct alignas(64) aligned_small {
  char x[24];
};
struct alignas(8192) aligned_large {
  char x[large_size];
};

static void case_aligned_sized_delete_wrong_size_small(bool misuse) {
  aligned_small* p = new aligned_small;
  escape(p);
  ::operator delete (p, sizeof(aligned_small) + (misuse ? 64 : 0), std::align_val_t{alignof(aligned_small)});
}
MI_CHILD_TEST(test_aligned_sized_delete_wrong_size_small_reported, aligned_sized_delete_wrong_size_small, SIGABRT,
              "sized deallocation mismatch detected (128 bytes given) of block")

static void case_aligned_sized_delete_wrong_size_large(bool misuse) {
  aligned_large* p = new aligned_large;
  escape(p);
  ::operator delete (p, sizeof(aligned_large) - (misuse ? 10 : 0), std::align_val_t{alignof(aligned_large)});
}
MI_CHILD_TEST(test_aligned_sized_delete_wrong_size_large_reported, aligned_sized_delete_wrong_size_large, SIGABRT,
              "sized deallocation mismatch detected (311286 bytes given) of block")

/* No block starts on a 4 MiB boundary (a segment's header lies there): a
   pointer never has that alignment. */
static const size_t never_aligned = 4u << 20;

static void case_aligned_delete_wrong_alignment_small(bool misuse) {
  aligned_small* p = new aligned_small;
  escape(p);
  size_t al = misuse ? never_aligned : alignof(aligned_small);
  ::operator delete (p, sizeof(aligned_small), std::align_val_t{al});
}
MI_CHILD_TEST(test_aligned_delete_wrong_alignment_small_reported, aligned_delete_wrong_alignment_small, SIGABRT,
              "invalid aligned deallocation detected (alignment 4194304) of pointer")

static void case_aligned_delete_wrong_alignment_large(bool misuse) {
  aligned_large* p = new aligned_large;
  escape(p);
  size_t al = misuse ? never_aligned : alignof(aligned_large);
  ::operator delete (p, std::align_val_t{al});
}
MI_CHILD_TEST(test_aligned_delete_wrong_alignment_large_reported, aligned_delete_wrong_alignment_large, SIGABRT,
              "invalid aligned deallocation detected (alignment 4194304) of pointer")

static void case_aligned_delete_not_power_of_two(bool misuse) {
  void* p = ::operator new[](100, std::align_val_t{32});
  escape(p);
  ::operator delete[](p, 100, std::align_val_t{misuse ? 48u : 32u});
}
MI_CHILD_TEST(test_aligned_delete_not_power_of_two_reported, aligned_delete_not_power_of_two, SIGABRT,
              "invalid aligned deallocation detected (alignment 48) of pointer")

/* a calloc's size is count * size */
static void case_free_sized_wrong_size(bool misuse) {
#if MI_TEST_OVERRIDE
  char* p = (char*)std::calloc(10, 12);
  escape(p);
  free_sized(p, misuse ? 12 : 120);
#else
  char* p = (char*)mi_calloc(10, 12);
  escape(p);
  mi_free_size(p, misuse ? 12 : 120);
#endif
}
MI_CHILD_TEST(test_free_sized_wrong_size_reported, free_sized_wrong_size, SIGABRT,
              "sized deallocation mismatch detected (12 bytes given) of block")

static void case_free_aligned_sized_wrong_size(bool misuse) {
#if MI_TEST_OVERRIDE
  void* p = std::aligned_alloc(64, 128);
  escape(p);
  free_aligned_sized(p, 64, misuse ? 64 : 128);
#else
  void* p = mi_malloc_aligned(128, 64);
  escape(p);
  mi_free_size_aligned(p, misuse ? 64 : 128, 64);
#endif
}
MI_CHILD_TEST(test_free_aligned_sized_wrong_size_reported, free_aligned_sized_wrong_size, SIGABRT,
              "sized deallocation mismatch detected (64 bytes given) of block")

/* a size after realloc is the new one */
static void case_free_sized_after_realloc(bool misuse) {
  char* p = (char*)mi_malloc(50);
  p = (char*)mi_realloc(p, 5000);
  escape(p);
  mi_free_size(p, misuse ? 50 : 5000);
}
MI_CHILD_TEST(test_free_sized_old_size_after_realloc_reported, free_sized_after_realloc, SIGABRT,
              "sized deallocation mismatch detected (50 bytes given) of block")

/* every block sampled for guard pages: its size is as exact */
static void case_sized_delete_guarded(bool misuse) {
  mi_option_set(mi_option_guarded_sample_rate, 1);
  char* p = new char[100];
  escape(p);
  ::operator delete[](p, misuse ? 112 : 100);
}
MI_CHILD_TEST(test_sized_delete_guarded_wrong_size_reported, sized_delete_guarded, SIGABRT,
              "sized deallocation mismatch detected (112 bytes given) of block")

static void* volatile sink;

/* a bad pointer is reported as the free it is, before its size */
static void case_sized_delete_twice(bool misuse) {
  small_obj* p = new small_obj;
  sink = p; /* read back after the free: the compiler sees no use after free */
  ::operator delete(p, sizeof(small_obj));
  if (misuse) ::operator delete(sink, sizeof(small_obj));
}
MI_CHILD_TEST(test_sized_delete_twice_reported_as_double_free, sized_delete_twice, SIGABRT,
              "double free detected of block")

static void case_sized_delete_interior(bool misuse) {
  char* p = new char[64];
  escape(p);
  ::operator delete[](p + (misuse ? 16 : 0), 64);
}
MI_CHILD_TEST(test_sized_delete_interior_reported_as_invalid_free, sized_delete_interior, SIGABRT,
              "invalid free detected of interior pointer")

/* ---- Secure builds: each block freed by the family that allocated it -------------- */

/* Sizes of a small, a medium and a large block (a segment of its own); the
   guarded cases sample every allocation. */
static const size_t kind_small = 40, kind_medium = 20000, kind_large = 300000;

static void kind_guard_all(bool guarded) {
  if (guarded) mi_option_set(mi_option_guarded_sample_rate, 1);
}

/* malloc, free and realloc: the library's either way (the static variant
   does not export the malloc family) */
static void* kind_malloc(size_t n) {
#if MI_TEST_OVERRIDE
  return std::malloc(n);
#else
  return mi_malloc(n);
#endif
}
static void kind_free(void* p) {
#if MI_TEST_OVERRIDE
  std::free(p);
#else
  mi_free(p);
#endif
}
static void* kind_realloc(void* p, size_t n) {
#if MI_TEST_OVERRIDE
  return std::realloc(p, n);
#else
  return mi_realloc(p, n);
#endif
}

/* the pointer laundered: the compiler would see the mismatch (and warn) */
static void* hide(void* p) {
  __asm__ volatile("" : "+r"(p));
  return p;
}

#define MI_KIND_CASES(name, size, guarded, alloc, matching, mismatched) \
  static void case_##name(bool misuse) { \
    kind_guard_all(guarded); \
    void* p = hide(alloc); \
    escape(p); \
    if (misuse) mismatched; \
    else matching; \
  }

MI_KIND_CASES(new_array_deleted_small, kind_small, false, ::operator new[](kind_small), ::operator delete[](p),
              ::operator delete(p))
MI_KIND_CASES(new_array_deleted_medium, kind_medium, false, ::operator new[](kind_medium), ::operator delete[](p),
              ::operator delete(p))
MI_KIND_CASES(new_array_deleted_large, kind_large, false, ::operator new[](kind_large), ::operator delete[](p),
              ::operator delete(p))
MI_KIND_CASES(new_array_deleted_guarded, kind_small, true, ::operator new[](kind_small), ::operator delete[](p),
              ::operator delete(p))
MI_CHILD_TEST(test_new_array_freed_by_delete_small_reported, new_array_deleted_small, SIGABRT,
              "allocation kind mismatch detected (new[] freed by delete) of block")
MI_CHILD_TEST(test_new_array_freed_by_delete_medium_reported, new_array_deleted_medium, SIGABRT,
              "allocation kind mismatch detected (new[] freed by delete) of block")
MI_CHILD_TEST(test_new_array_freed_by_delete_large_reported, new_array_deleted_large, SIGABRT,
              "allocation kind mismatch detected (new[] freed by delete) of block")
MI_CHILD_TEST(test_new_array_freed_by_delete_guarded_reported, new_array_deleted_guarded, SIGABRT,
              "allocation kind mismatch detected (new[] freed by delete) of block")

MI_KIND_CASES(new_deleted_as_array_small, kind_small, false, ::operator new(kind_small), ::operator delete(p),
              ::operator delete[](p))
MI_KIND_CASES(new_deleted_as_array_large, kind_large, false, ::operator new(kind_large), ::operator delete(p),
              ::operator delete[](p))
MI_KIND_CASES(new_deleted_as_array_guarded, kind_small, true, ::operator new(kind_small), ::operator delete(p),
              ::operator delete[](p))
MI_CHILD_TEST(test_new_freed_by_delete_array_small_reported, new_deleted_as_array_small, SIGABRT,
              "allocation kind mismatch detected (new freed by delete[]) of block")
MI_CHILD_TEST(test_new_freed_by_delete_array_large_reported, new_deleted_as_array_large, SIGABRT,
              "allocation kind mismatch detected (new freed by delete[]) of block")
MI_CHILD_TEST(test_new_freed_by_delete_array_guarded_reported, new_deleted_as_array_guarded, SIGABRT,
              "allocation kind mismatch detected (new freed by delete[]) of block")

/* an over-aligned type: new and delete take its alignment; the plain delete
   of a pointer to it (through void*, or a base class) does not */
static void case_aligned_new_deleted_plain_small(bool misuse) {
  aligned_small* p = new aligned_small;
  escape(p);
  if (misuse) ::operator delete((void*)p);
  else delete p;
}
static void case_aligned_new_deleted_plain_large(bool misuse) {
  aligned_large* p = new aligned_large;
  escape(p);
  if (misuse) ::operator delete((void*)p);
  else delete p;
}
MI_CHILD_TEST(test_aligned_new_freed_by_plain_delete_small_reported, aligned_new_deleted_plain_small, SIGABRT,
              "allocation kind mismatch detected (aligned new freed by delete) of block")
MI_CHILD_TEST(test_aligned_new_freed_by_plain_delete_large_reported, aligned_new_deleted_plain_large, SIGABRT,
              "allocation kind mismatch detected (aligned new freed by delete) of block")

MI_KIND_CASES(aligned_new_array_deleted_aligned, 100, false, ::operator new[](100, std::align_val_t{64}),
              ::operator delete[](p, std::align_val_t{64}), ::operator delete (p, std::align_val_t{64}))
MI_CHILD_TEST(test_aligned_new_array_freed_by_aligned_delete_reported, aligned_new_array_deleted_aligned, SIGABRT,
              "allocation kind mismatch detected (aligned new[] freed by aligned delete) of block")

MI_KIND_CASES(malloc_deleted_small, kind_small, false, kind_malloc(kind_small), kind_free(p), ::operator delete(p))
MI_KIND_CASES(malloc_deleted_medium, kind_medium, false, kind_malloc(kind_medium), kind_free(p), ::operator delete(p))
MI_KIND_CASES(malloc_deleted_large, kind_large, false, kind_malloc(kind_large), kind_free(p), ::operator delete(p))
MI_KIND_CASES(malloc_deleted_guarded, kind_small, true, kind_malloc(kind_small), kind_free(p), ::operator delete(p))
MI_CHILD_TEST(test_malloc_freed_by_delete_small_reported, malloc_deleted_small, SIGABRT,
              "allocation kind mismatch detected (malloc freed by delete) of block")
MI_CHILD_TEST(test_malloc_freed_by_delete_medium_reported, malloc_deleted_medium, SIGABRT,
              "allocation kind mismatch detected (malloc freed by delete) of block")
MI_CHILD_TEST(test_malloc_freed_by_delete_large_reported, malloc_deleted_large, SIGABRT,
              "allocation kind mismatch detected (malloc freed by delete) of block")
MI_CHILD_TEST(test_malloc_freed_by_delete_guarded_reported, malloc_deleted_guarded, SIGABRT,
              "allocation kind mismatch detected (malloc freed by delete) of block")

MI_KIND_CASES(new_freed_small, kind_small, false, ::operator new(kind_small), ::operator delete(p), kind_free(p))
MI_KIND_CASES(new_freed_medium, kind_medium, false, ::operator new(kind_medium), ::operator delete(p), kind_free(p))
MI_KIND_CASES(new_freed_large, kind_large, false, ::operator new(kind_large), ::operator delete(p), kind_free(p))
MI_KIND_CASES(new_freed_guarded, kind_small, true, ::operator new(kind_small), ::operator delete(p), kind_free(p))
MI_CHILD_TEST(test_new_freed_by_free_small_reported, new_freed_small, SIGABRT,
              "allocation kind mismatch detected (new freed by free) of block")
MI_CHILD_TEST(test_new_freed_by_free_medium_reported, new_freed_medium, SIGABRT,
              "allocation kind mismatch detected (new freed by free) of block")
MI_CHILD_TEST(test_new_freed_by_free_large_reported, new_freed_large, SIGABRT,
              "allocation kind mismatch detected (new freed by free) of block")
MI_CHILD_TEST(test_new_freed_by_free_guarded_reported, new_freed_guarded, SIGABRT,
              "allocation kind mismatch detected (new freed by free) of block")

MI_KIND_CASES(new_reallocated_small, kind_small, false, ::operator new(kind_small), ::operator delete(p),
              escape(kind_realloc(hide(p), 2 * kind_small)))
MI_KIND_CASES(new_reallocated_large, kind_large, false, ::operator new(kind_large), ::operator delete(p),
              escape(kind_realloc(hide(p), kind_large / 2)))
MI_CHILD_TEST(test_new_resized_by_realloc_small_reported, new_reallocated_small, SIGABRT,
              "allocation kind mismatch detected (new resized by realloc) of block")
MI_CHILD_TEST(test_new_resized_by_realloc_large_reported, new_reallocated_large, SIGABRT,
              "allocation kind mismatch detected (new resized by realloc) of block")

/* the sized delete of the other form: its size is right, its kind is not */
MI_KIND_CASES(new_array_sized_deleted, kind_small, false, ::operator new[](kind_small),
              ::operator delete[](p, kind_small), ::operator delete(p, kind_small))
MI_CHILD_TEST(test_new_array_freed_by_sized_delete_reported, new_array_sized_deleted, SIGABRT,
              "allocation kind mismatch detected (new[] freed by delete) of block")

/* a block of one kind freed twice by the other is a double free, not a mismatch */
static void case_new_array_deleted_twice(bool misuse) {
  void* p = ::operator new[](kind_small);
  sink = p;
  ::operator delete[](p);
  if (misuse) ::operator delete(sink);
}
MI_CHILD_TEST(test_new_array_freed_twice_by_delete_reported_as_double_free, new_array_deleted_twice, SIGABRT,
              "double free detected of block")

/* The clean twins all at once: every matching pair of every size, realloc
   of malloc's blocks (in place and moved), the sized and aligned deletes,
   mi_usable_size of every kind, and mimalloc's own mi_new blocks, which
   free and every delete accept (its STL allocator pairs mi_new_n with
   mi_free; mimalloc-new-delete.h maps delete to mi_free). */
static void case_kinds_matching(bool misuse) {
  (void)misuse;
  const size_t sizes[] = {kind_small, kind_medium, kind_large};
  for (int guarded = 0; guarded < 2; guarded++) {
    kind_guard_all(guarded != 0);
    for (size_t n : sizes) {
      void* p = ::operator new(n);
      CHECK(mi_usable_size(p) == n);
      ::operator delete(p);
      p = ::operator new[](n);
      CHECK(mi_usable_size(p) == n);
      ::operator delete[](p);
      p = ::operator new(n, std::nothrow);
      ::operator delete(p, std::nothrow);
      p = ::operator new[](n, std::nothrow);
      ::operator delete[](p, std::nothrow);
      p = ::operator new(n);
      ::operator delete(p, n);
      p = ::operator new[](n);
      ::operator delete[](p, n);
      p = ::operator new (n, std::align_val_t{64});
      CHECK(mi_usable_size(p) == n);
      ::operator delete (p, std::align_val_t{64});
      p = ::operator new[](n, std::align_val_t{64});
      ::operator delete[](p, n, std::align_val_t{64});
      p = kind_malloc(n);
      p = kind_realloc(p, n + 8); /* in place */
      p = kind_realloc(p, 3 * n); /* moved */
      CHECK(mi_usable_size(p) == 3 * n);
      kind_free(p);
      p = mi_calloc(2, n);
      mi_free_size(p, 2 * n);
      p = mi_malloc_aligned(n, 128);
      mi_free_aligned(p, 128);
      p = mi_new(n);
      CHECK(mi_usable_size(p) == n);
      mi_free(p);
      p = mi_new(n);
      ::operator delete(p);
      p = mi_new_n(3, n);
      ::operator delete[](p);
      p = mi_new(n);
      ::operator delete(p, n);
      p = mi_new_aligned(n, 64);
      ::operator delete (p, std::align_val_t{64});
      p = mi_new_aligned(n, 64);
      mi_free_aligned(p, 64);
      p = mi_new(n);
      p = mi_new_realloc(p, 2 * n);
      ::operator delete(p);
      p = mi_new_nothrow(n);
      kind_free(p);
    }
  }
  /* a container's elements through std::allocator, strings, a map */
  std::map<int, std::string> m;
  std::vector<std::string> v;
  for (int i = 0; i < 2000; i++) {
    v.push_back(std::string((size_t)(i % 300), 'k'));
    m[i] = v.back();
  }
}
/* MIMALLOC_DEALLOC_KIND_CHECK=0 (mi_option_dealloc_kind_check): every
   mismatch above goes through, freed, with no report; the same cases with
   the option at its default are the tests above */
static void case_kind_check_off_mismatches(bool misuse) {
  (void)misuse;
  mi_option_set(mi_option_dealloc_kind_check, 0);
  static void (*const mismatches[])(bool) = {&case_new_array_deleted_small,
                                             &case_new_array_deleted_medium,
                                             &case_new_array_deleted_large,
                                             &case_new_array_deleted_guarded,
                                             &case_new_deleted_as_array_small,
                                             &case_new_deleted_as_array_large,
                                             &case_new_deleted_as_array_guarded,
                                             &case_aligned_new_array_deleted_aligned,
                                             &case_malloc_deleted_small,
                                             &case_malloc_deleted_medium,
                                             &case_malloc_deleted_large,
                                             &case_malloc_deleted_guarded,
                                             &case_new_freed_small,
                                             &case_new_freed_medium,
                                             &case_new_freed_large,
                                             &case_new_freed_guarded,
                                             &case_new_reallocated_small,
                                             &case_new_reallocated_large,
                                             &case_new_array_sized_deleted};
  for (int round = 0; round < 64; round++) {
    for (size_t i = 0; i < sizeof(mismatches) / sizeof(mismatches[0]); i++) mismatches[i](true);
  }
}
static void test_kind_check_off_mismatches_run_clean(void** state) {
  (void)state;
  expect_clean_exit(&case_kind_check_off_mismatches);
}
static void test_kinds_matching_pairs_run_clean(void** state) {
  (void)state;
  expect_clean_exit(&case_kinds_matching);
}
#endif /* MI_TEST_SECURE */

int main(void) {
  mi_child_save_signals();
  /* the cases count on sizes and pointers of ordinary blocks; the guarded
     ones have a case of their own */
  mi_option_set(mi_option_guarded_sample_rate, 0);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_new_form_allocates_from_the_heap),
    cmocka_unit_test(test_operator_new_resolves_to_the_library),
    cmocka_unit_test(test_every_delete_form_frees_into_the_heap),
    cmocka_unit_test(test_new_too_large_throws_bad_alloc),
    cmocka_unit_test(test_nothrow_new_too_large_returns_null),
    cmocka_unit_test(test_new_handler_called_until_removed),
    cmocka_unit_test(test_new_handler_exception_propagates),
    cmocka_unit_test(test_new_bad_alignment_fails),
    cmocka_unit_test(test_new_handler_frees_reserve_and_retry_succeeds),
    cmocka_unit_test(test_containers_run_clean),
#if MI_TEST_SECURE
    cmocka_unit_test(test_sized_delete_wrong_size_small_reported),
    cmocka_unit_test(test_sized_delete_wrong_size_large_reported),
    cmocka_unit_test(test_delete_type_size_mismatch_reported),
    cmocka_unit_test(test_delete_array_size_without_cookie_reported),
    cmocka_unit_test(test_aligned_sized_delete_wrong_size_small_reported),
    cmocka_unit_test(test_aligned_sized_delete_wrong_size_large_reported),
    cmocka_unit_test(test_aligned_delete_wrong_alignment_small_reported),
    cmocka_unit_test(test_aligned_delete_wrong_alignment_large_reported),
    cmocka_unit_test(test_aligned_delete_not_power_of_two_reported),
    cmocka_unit_test(test_free_sized_wrong_size_reported),
    cmocka_unit_test(test_free_aligned_sized_wrong_size_reported),
    cmocka_unit_test(test_free_sized_old_size_after_realloc_reported),
    cmocka_unit_test(test_sized_delete_guarded_wrong_size_reported),
    cmocka_unit_test(test_sized_delete_twice_reported_as_double_free),
    cmocka_unit_test(test_sized_delete_interior_reported_as_invalid_free),
    cmocka_unit_test(test_new_array_freed_by_delete_small_reported),
    cmocka_unit_test(test_new_array_freed_by_delete_medium_reported),
    cmocka_unit_test(test_new_array_freed_by_delete_large_reported),
    cmocka_unit_test(test_new_array_freed_by_delete_guarded_reported),
    cmocka_unit_test(test_new_freed_by_delete_array_small_reported),
    cmocka_unit_test(test_new_freed_by_delete_array_large_reported),
    cmocka_unit_test(test_new_freed_by_delete_array_guarded_reported),
    cmocka_unit_test(test_aligned_new_freed_by_plain_delete_small_reported),
    cmocka_unit_test(test_aligned_new_freed_by_plain_delete_large_reported),
    cmocka_unit_test(test_aligned_new_array_freed_by_aligned_delete_reported),
    cmocka_unit_test(test_malloc_freed_by_delete_small_reported),
    cmocka_unit_test(test_malloc_freed_by_delete_medium_reported),
    cmocka_unit_test(test_malloc_freed_by_delete_large_reported),
    cmocka_unit_test(test_malloc_freed_by_delete_guarded_reported),
    cmocka_unit_test(test_new_freed_by_free_small_reported),
    cmocka_unit_test(test_new_freed_by_free_medium_reported),
    cmocka_unit_test(test_new_freed_by_free_large_reported),
    cmocka_unit_test(test_new_freed_by_free_guarded_reported),
    cmocka_unit_test(test_new_resized_by_realloc_small_reported),
    cmocka_unit_test(test_new_resized_by_realloc_large_reported),
    cmocka_unit_test(test_new_array_freed_by_sized_delete_reported),
    cmocka_unit_test(test_new_array_freed_twice_by_delete_reported_as_double_free),
    cmocka_unit_test(test_kinds_matching_pairs_run_clean),
    cmocka_unit_test(test_kind_check_off_mismatches_run_clean),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
