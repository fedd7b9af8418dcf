/* Transparent huge pages for large blocks (src/os/os-thp.c): asked for while
   the program's freed large blocks were mostly resident, not while they
   were touched a byte here and there, withdrawn from a segment once that
   changes, never with the option off. Whether a segment asked is read from
   the kernel (the `hg` flag of its mapping in /proc/self/smaps), not from
   the allocator. Each case first frees enough blocks of its kind to bring
   the running mean where it wants it, from wherever the cases before left
   it. Linux with transparent huge pages only; elsewhere the cases skip. */
#define _GNU_SOURCE
#include "testutil.h"

#include "internal.h" /* _mi_os_thp_density */

#define BLOCK (8 * MiB) /* a segment past MI_SEGMENT_SIZE: one that may ask */
#define PROBE_EVERY 16  /* os-thp.c: in dense use, a probe every 16 blocks on fresh memory */
#define DENSE 128       /* os-thp.c: the threshold, in 256ths */

static bool thp_available(void) {
  FILE* f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f == NULL) return false;
  char line[128] = {0};
  bool ok = (fgets(line, sizeof(line), f) != NULL && strstr(line, "[never]") == NULL);
  fclose(f);
  return ok;
}

/* The VmFlags of the mapping holding p contain "hg" (MADV_HUGEPAGE). */
static bool mapping_asks_huge(const void* p) {
  FILE* f = fopen("/proc/self/smaps", "r");
  assert_non_null(f);
  char line[512];
  bool inside = false, found = false, hg = false;
  uintptr_t a = (uintptr_t)p;
  while (fgets(line, sizeof(line), f) != NULL) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      inside = (a >= lo && a < hi);
      continue;
    }
    if (inside && strncmp(line, "VmFlags:", 8) == 0) {
      found = true;
      hg = (strstr(line, " hg") != NULL);
      inside = false;
    }
  }
  fclose(f);
  assert_true(found);
  return hg;
}

/* Free `rounds` blocks of `size`, each written every `stride` bytes, each
   on memory that is not resident (the cache purged before it), so that each
   may be a probe. */
static void free_blocks_touched(int rounds, size_t size, size_t stride) {
  for (int i = 0; i < rounds; i++) {
    mi_collect(true);
    uint8_t* p = (uint8_t*)mi_malloc(size);
    assert_non_null(p);
    for (size_t j = 0; j < size; j += stride) p[j] = (uint8_t)j;
    mi_free(tu_launder(p));
  }
}

/* Enough dense blocks to bring the mean over its threshold from anywhere:
   at least 4 probes, each moving it a quarter of the way to 256. */
static void make_dense(void) {
  free_blocks_touched(4 * PROBE_EVERY, BLOCK, 4 * KiB);
  assert_true(_mi_os_thp_density() >= DENSE);
}

static void test_thp_dense_blocks_segment_asks(void** state) {
  (void)state;
  if (!thp_available()) skip();
  make_dense();
  /* of PROBE_EVERY blocks on fresh memory, one is a probe: the others ask */
  mi_collect(true);
  void* p[PROBE_EVERY];
  int asking = 0;
  for (int i = 0; i < PROBE_EVERY; i++) {
    p[i] = mi_malloc(BLOCK);
    assert_non_null(p[i]);
    asking += mapping_asks_huge(p[i]);
  }
  assert_int_equal(asking, PROBE_EVERY - 1);
  for (int i = 0; i < PROBE_EVERY; i++) mi_free(p[i]);
}

static void test_thp_sparse_blocks_segment_does_not_ask(void** state) {
  (void)state;
  if (!thp_available()) skip();
  make_dense();
  void* kept = NULL; /* a block whose segment asked, held through what follows */
  void* probes[PROBE_EVERY];
  int n = 0;
  mi_collect(true);
  while (kept == NULL && n < PROBE_EVERY) {
    void* p = mi_malloc(BLOCK);
    assert_non_null(p);
    if (mapping_asks_huge(p)) kept = p;
    else probes[n++] = p;
  }
  assert_non_null(kept);
  for (int i = 0; i < n; i++) mi_free(probes[i]);
  /* sparse use, in blocks of another size: enough probes to bring the mean
     down from anywhere (8 probes: 256 * (3/4)^8 < 128) */
  free_blocks_touched(8 * PROBE_EVERY, 2 * BLOCK, 256 * KiB);
  assert_true(_mi_os_thp_density() < DENSE);
  /* the segment that asked, cached as it is, takes it back when reused (or
     when purged, if the background thread got to it first) */
  mi_free(kept);
  void* p = mi_malloc(BLOCK);
  assert_non_null(p);
  assert_false(mapping_asks_huge(p));
  mi_free(p);
  /* new blocks do not ask either */
  mi_collect(true);
  p = mi_malloc(BLOCK);
  assert_non_null(p);
  assert_false(mapping_asks_huge(p));
  mi_free(p);
}

static void test_thp_option_off_never_asks(void** state) {
  (void)state;
  if (!thp_available()) skip();
  make_dense();
  mi_option_set(mi_option_allow_thp, 0);
  int before = _mi_os_thp_density();
  free_blocks_touched(2 * PROBE_EVERY, 2 * BLOCK, 256 * KiB); /* not measured */
  assert_int_equal(_mi_os_thp_density(), before);
  mi_collect(true);
  void* p = mi_malloc(BLOCK);
  assert_non_null(p);
  assert_false(mapping_asks_huge(p));
  mi_free(p);
  mi_option_set(mi_option_allow_thp, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thp_dense_blocks_segment_asks),
      cmocka_unit_test(test_thp_sparse_blocks_segment_does_not_ask),
      cmocka_unit_test(test_thp_option_off_never_asks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
