/* Arenas by id: memory the program hands over (mi_manage_os_memory), heaps
   that allocate only in one arena (mi_heap_new_in_arena, mi_heap_new_ex),
   exclusive arenas, the arena listing, and huge OS page reservations that
   say what they really reserved. */
#define _GNU_SOURCE
#include "testutil.h"

#include <sys/mman.h>

static bool inside(const void* p, const void* start, size_t size) {
  return ((const uint8_t*)p >= (const uint8_t*)start && (const uint8_t*)p < (const uint8_t*)start + size);
}

/* An anonymous mapping of `size` bytes the test owns. */
static void* map(size_t size) {
  void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(p != MAP_FAILED);
  return p;
}

typedef struct region_s {
  uint8_t* start;
  size_t size;
  mi_arena_id_t id;
} region_t;

/* 24 MiB of the test's own memory, given as an exclusive arena: whole
   4 MiB chunks of it at least 16 MiB. The mapping is never unmapped: the
   arena table keeps it. */
static region_t managed_exclusive(void) {
  region_t r = {NULL, 24 * MiB, 0};
  r.start = (uint8_t*)map(r.size);
  assert_true(mi_manage_os_memory_ex(r.start, r.size, true, false, true, -1, true, &r.id));
  assert_true(r.id > 0);
  return r;
}

static void test_manage_os_memory_heap_in_arena_blocks_inside_region(void** state) {
  (void)state;
  region_t r = managed_exclusive();
  size_t asize = 0;
  uint8_t* area = (uint8_t*)mi_arena_area(r.id, &asize);
  assert_non_null(area);
  assert_true(area >= r.start && area + asize <= r.start + r.size);
  assert_true(asize >= 16 * MiB);
  mi_heap_t* heap = mi_heap_new_in_arena(r.id);
  assert_non_null(heap);
  const size_t sizes[] = {16, 1000, 20 * KiB, 100 * KiB, MiB, 3 * MiB};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    uint8_t* p = (uint8_t*)mi_heap_malloc(heap, sizes[i]);
    assert_non_null(p);
    if (!inside(p, area, asize))
      fail_msg("a block of %zu bytes at %p is outside the arena %p + %zu", sizes[i], p, area, asize);
    tu_fill(p, sizes[i], (uint8_t)i);
    assert_true(tu_check(p, sizes[i], (uint8_t)i));
  }
  /* the default heap does not take from an exclusive arena */
  void* q = mi_malloc(1000);
  void* big = mi_malloc(MiB);
  assert_false(inside(q, area, asize));
  assert_false(inside(big, area, asize));
  mi_free(q);
  mi_free(big);
  mi_heap_destroy(heap);
  mi_collect(true);
  /* still mapped: nothing of ours unmaps the caller's memory (msync fails
     with ENOMEM on a range that is not) */
  assert_int_equal(msync(r.start, r.size, MS_ASYNC), 0);
}

static void test_heap_in_arena_full_fails_enomem(void** state) {
  (void)state;
  mi_arena_id_t id = 0;
  assert_int_equal(mi_reserve_os_memory_ex(8 * MiB, false, false, true, &id), 0);
  size_t asize = 0;
  void* area = mi_arena_area(id, &asize);
  assert_int_equal(asize, 8 * MiB);
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  assert_non_null(heap);
  size_t n = 0;
  errno = 0;
  for (; n < 64; n++) {
    void* p = mi_heap_malloc(heap, MiB);
    if (p == NULL) break;
    assert_true(inside(p, area, asize));
  }
  assert_true(n >= 1 && n < 8); /* a 1 MiB block takes a 4 MiB chunk (more with secure guard pages) */
  assert_int_equal(errno, ENOMEM);
  mi_heap_destroy(heap);
}

/* An alignment past what a segment's first chunk can give takes a sparse
   segment of OS memory: never for a heap of an arena */
static void test_heap_in_arena_huge_alignment_enomem(void** state) {
  (void)state;
  region_t r = managed_exclusive();
  mi_heap_t* heap = mi_heap_new_in_arena(r.id);
  assert_non_null(heap);
  errno = 0;
  assert_null(mi_heap_malloc_aligned(heap, 100, 8 * MiB));
  assert_int_equal(errno, ENOMEM);
  /* the control: the default heap gets it from the OS */
  void* p = mi_malloc_aligned(100, 8 * MiB);
  assert_non_null(p);
  assert_true(tu_is_aligned(p, 8 * MiB));
  mi_free(p);
  mi_heap_delete(heap);
}

static void test_heap_new_in_arena_invalid_id_einval(void** state) {
  (void)state;
  errno = 0;
  assert_null(mi_heap_new_in_arena(0));
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(mi_heap_new_in_arena(1000));
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(mi_heap_new_ex(0, true, -3));
  assert_int_equal(errno, EINVAL);
}

static void test_manage_os_memory_less_than_a_chunk_einval(void** state) {
  (void)state;
  void* p = map(2 * MiB);
  errno = 0;
  assert_false(mi_manage_os_memory(p, 2 * MiB, true, false, true, -1));
  assert_int_equal(errno, EINVAL);
  munmap(p, 2 * MiB);
  errno = 0;
  mi_arena_id_t id = 7;
  assert_false(mi_manage_os_memory_ex(NULL, 64 * MiB, true, false, true, -1, false, &id));
  assert_int_equal(errno, EINVAL);
  assert_int_equal(id, 0);
}

static void test_arena_area_unknown_id_null(void** state) {
  (void)state;
  size_t size = 123;
  assert_null(mi_arena_area(0, &size));
  assert_int_equal(size, 0);
  assert_null(mi_arena_area(1000, NULL));
}

static bool visited_tag_seen;
static int visited_tag;
static bool visit_tag(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap;
  (void)block;
  (void)size;
  (void)arg;
  visited_tag_seen = true;
  visited_tag = area->heap_tag;
  return true;
}

static void test_heap_new_ex_tag_reported_in_areas(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new_ex(7, true, 0);
  assert_non_null(heap);
  void* p = mi_heap_malloc(heap, 100);
  assert_non_null(p);
  visited_tag_seen = false;
  assert_true(mi_heap_visit_blocks(heap, false, &visit_tag, NULL));
  assert_true(visited_tag_seen);
  assert_int_equal(visited_tag, 7);
  mi_heap_destroy(heap);
}

static char printed[8192];
static size_t printed_len;
static void collect(const char* msg, void* arg) {
  (void)arg;
  size_t n = strlen(msg);
  if (printed_len + n >= sizeof(printed)) return;
  memcpy(printed + printed_len, msg, n + 1);
  printed_len += n;
}

static void test_arenas_print_lists_exclusive_managed_arena(void** state) {
  (void)state;
  region_t r = managed_exclusive();
  char want[64];
  snprintf(want, sizeof(want), "arena %d: %p", r.id, mi_arena_area(r.id, NULL));
  printed_len = 0;
  printed[0] = 0;
  mi_register_output(&collect, NULL);
  mi_arenas_print();
  mi_register_output(NULL, NULL);
  if (strstr(printed, want) == NULL) fail_msg("'%s' not in:\n%s", want, printed);
  assert_non_null(strstr(printed, "exclusive"));
  assert_non_null(strstr(printed, "the caller's memory"));
  size_t before = printed_len;
  mi_register_output(&collect, NULL);
  mi_debug_show_arenas();
  mi_register_output(NULL, NULL);
  assert_true(printed_len > before);
}

/* 1 GiB pages free on this machine (0 if none or unknown). */
static long free_gib_pages(void) {
  FILE* f = fopen("/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages", "r");
  if (f == NULL) return 0;
  long n = 0;
  if (fscanf(f, "%ld", &n) != 1) n = 0;
  fclose(f);
  return n;
}

static void test_reserve_huge_os_pages_none_available_enomem_zero(void** state) {
  (void)state;
  if (free_gib_pages() > 0) skip(); /* a machine with 1 GiB pages: nothing to show here */
  size_t reserved = 99;
  assert_int_equal(mi_reserve_huge_os_pages(1, 0.5, &reserved), ENOMEM);
  assert_int_equal(reserved, 0);
  assert_int_equal(mi_reserve_huge_os_pages_at(1, 0, 100), ENOMEM);
  assert_int_equal(mi_reserve_huge_os_pages_interleave(1, 1, 100), ENOMEM);
  mi_arena_id_t id = 5;
  assert_int_equal(mi_reserve_huge_os_pages_at_ex(1, 0, 100, true, &id), ENOMEM);
  assert_int_equal(id, 0);
  /* nothing was reserved: no arena of 1 GiB appeared */
  for (mi_arena_id_t a = 1; a <= 16; a++) {
    size_t size = 0;
    if (mi_arena_area(a, &size) != NULL) assert_true(size < ((size_t)1 << 30));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_manage_os_memory_heap_in_arena_blocks_inside_region),
      cmocka_unit_test(test_heap_in_arena_full_fails_enomem),
      cmocka_unit_test(test_heap_in_arena_huge_alignment_enomem),
      cmocka_unit_test(test_heap_new_in_arena_invalid_id_einval),
      cmocka_unit_test(test_manage_os_memory_less_than_a_chunk_einval),
      cmocka_unit_test(test_arena_area_unknown_id_null),
      cmocka_unit_test(test_heap_new_ex_tag_reported_in_areas),
      cmocka_unit_test(test_arenas_print_lists_exclusive_managed_arena),
      cmocka_unit_test(test_reserve_huge_os_pages_none_available_enomem_zero),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
