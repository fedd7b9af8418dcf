/* The C library's allocation names that mimalloc's shared library also
   exports (glibc's __libc_* and __posix_memalign, the BSD and macOS calls,
   strdup, strndup, realpath) reach this library: looked up by name as a
   program or a profiler does (dlsym with RTLD_DEFAULT and RTLD_NEXT), and
   called directly. Every block handed out must be one of ours. Run with
   the shared library preloaded (not linked: MI_TEST_LINKED 0), and linked
   to it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef bool (*in_heap_fn)(const void*);

static void* lookup(void* handle, const char* name) {
  void* sym = dlsym(handle, name);
  if (sym == NULL) fail_msg("%s: not found", name);
  Dl_info info;
  assert_true(dladdr(sym, &info) != 0 && info.dli_fname != NULL);
  if (strstr(info.dli_fname, "libmimalloc") == NULL) fail_msg("%s resolved in %s", name, info.dli_fname);
  return sym;
}

static bool ours(const void* p) {
  in_heap_fn in_heap = (in_heap_fn)lookup(RTLD_DEFAULT, "mi_is_in_heap_region");
  return p != NULL && in_heap(p);
}

typedef void* (*malloc_fn)(size_t);
typedef void* (*calloc_fn)(size_t, size_t);
typedef void* (*realloc_fn)(void*, size_t);
typedef void* (*memalign_fn)(size_t, size_t);
typedef void (*free_fn)(void*);
typedef int (*posix_memalign_fn)(void**, size_t, size_t);
typedef void* (*reallocarray_fn)(void*, size_t, size_t);
typedef int (*reallocarr_fn)(void*, size_t, size_t);
typedef size_t (*size_of_fn)(const void*);
typedef size_t (*good_size_fn)(size_t);

static void test_libc_internal_names_rtld_default_blocks_ours(void** state) {
  (void)state;
  void* p = ((malloc_fn)lookup(RTLD_DEFAULT, "__libc_malloc"))(100);
  assert_true(ours(p));
  unsigned char* c = ((calloc_fn)lookup(RTLD_DEFAULT, "__libc_calloc"))(10, 10);
  assert_true(ours(c));
  for (int i = 0; i < 100; i++) assert_int_equal(c[i], 0);
  p = ((realloc_fn)lookup(RTLD_DEFAULT, "__libc_realloc"))(p, 5000);
  assert_true(ours(p));
  void* m = ((memalign_fn)lookup(RTLD_DEFAULT, "__libc_memalign"))(256, 100);
  assert_true(ours(m));
  assert_int_equal((uintptr_t)m % 256, 0);
  void* v = ((malloc_fn)lookup(RTLD_DEFAULT, "__libc_valloc"))(100);
  void* pv = ((malloc_fn)lookup(RTLD_DEFAULT, "__libc_pvalloc"))(100);
  assert_true(ours(v) && ours(pv));
  assert_int_equal((uintptr_t)v % 4096, 0);
  assert_int_equal((uintptr_t)pv % 4096, 0);
  void* pm = NULL;
  assert_int_equal(((posix_memalign_fn)lookup(RTLD_DEFAULT, "__posix_memalign"))(&pm, 64, 100), 0);
  assert_true(ours(pm));
  assert_int_equal((uintptr_t)pm % 64, 0);
  free_fn libc_free = (free_fn)lookup(RTLD_DEFAULT, "__libc_free");
  free_fn libc_cfree = (free_fn)lookup(RTLD_DEFAULT, "__libc_cfree");
  libc_free(p);
  libc_free(c);
  libc_free(m);
  libc_cfree(v);
  libc_cfree(pv);
  libc_free(pm);
}

/* RTLD_NEXT from the program: the next object in the lookup order is the
   preloaded (or first linked) library, ahead of the C library */
static void test_libc_malloc_rtld_next_block_ours(void** state) {
  (void)state;
  void* p = ((malloc_fn)lookup(RTLD_NEXT, "__libc_malloc"))(64);
  assert_true(ours(p));
  ((free_fn)lookup(RTLD_NEXT, "__libc_free"))(p);
}

static void test_bsd_names_blocks_ours_sizes_usable(void** state) {
  (void)state;
  size_of_fn malloc_size = (size_of_fn)lookup(RTLD_DEFAULT, "malloc_size");
  size_of_fn usable = (size_of_fn)lookup(RTLD_DEFAULT, "mi_usable_size");
  void* p = ((realloc_fn)lookup(RTLD_DEFAULT, "reallocf"))(NULL, 300);
  assert_true(ours(p));
  assert_int_equal(malloc_size(p), usable(p));
  assert_true(malloc_size(p) >= 300);
  good_size_fn good = (good_size_fn)lookup(RTLD_DEFAULT, "malloc_good_size");
  assert_true(good(300) >= 300);
  void* a = ((reallocarray_fn)lookup(RTLD_DEFAULT, "reallocarray"))(NULL, 10, 40);
  assert_true(ours(a));
  void* arr = NULL;
  assert_int_equal(((reallocarr_fn)lookup(RTLD_DEFAULT, "reallocarr"))(&arr, 20, 50), 0);
  assert_true(ours(arr));
  /* reallocf frees the block it cannot grow */
  errno = 0;
  assert_null(((realloc_fn)lookup(RTLD_DEFAULT, "reallocf"))(a, SIZE_MAX / 2));
  assert_int_equal(errno, ENOMEM);
  free_fn vfree = (free_fn)lookup(RTLD_DEFAULT, "vfree");
  vfree(p);
  vfree(arr);
}

static void test_string_duplicates_called_directly_blocks_ours(void** state) {
  (void)state;
  char* s = strdup("duplicated");
  assert_true(ours(s));
  assert_string_equal(s, "duplicated");
  char* n = strndup("duplicated", 3);
  assert_true(ours(n));
  assert_string_equal(n, "dup");
  char* r = realpath("/", NULL);
  assert_true(ours(r));
  assert_string_equal(r, "/");
  char buf[PATH_MAX];
  assert_ptr_equal(realpath("/usr/../", buf), buf); /* the caller's buffer: filled, nothing allocated */
  assert_string_equal(buf, "/");
  errno = 0;
  assert_null(realpath("/no/such/path/here", NULL));
  assert_int_equal(errno, ENOENT);
  lookup(RTLD_DEFAULT, "strdup");
  lookup(RTLD_DEFAULT, "strndup");
  lookup(RTLD_DEFAULT, "realpath");
  free(s);
  free(n);
  free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_libc_internal_names_rtld_default_blocks_ours),
      cmocka_unit_test(test_libc_malloc_rtld_next_block_ours),
      cmocka_unit_test(test_bsd_names_blocks_ours_sizes_usable),
      cmocka_unit_test(test_string_duplicates_called_directly_blocks_ours),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
