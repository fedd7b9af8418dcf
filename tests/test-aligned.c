/* Aligned allocation: mi_*_aligned(_at), posix_memalign, aligned_alloc, memalign, valloc, pvalloc */
#define _GNU_SOURCE
#include "testutil.h"

static const size_t sizes[] = {0, 1, 7, 16, 100, 4096, 70000, 300000, 5 * MiB};
/* alignments up to here are served inside a segment's first chunk; larger
   ones by a sparse segment of their own (test_aligned_past_segment_*) */
#define ALIGN_IN_SEGMENT_MAX (2 * MiB)
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

static void check_block(void* p, size_t size, size_t align, size_t offset, const char* what) {
  if (p == NULL) fail_msg("%s(size=%zu, align=%zu, offset=%zu) returned NULL", what, size, align, offset);
  if (!tu_is_aligned((uint8_t*)p + offset, align))
    fail_msg("%s(size=%zu, align=%zu, offset=%zu) = %p: not aligned", what, size, align, offset, p);
  if (mi_usable_size(p) < size)
    fail_msg("%s(size=%zu, align=%zu, offset=%zu): usable size %zu too small", what, size, align, offset,
             mi_usable_size(p));
}

/* touch the whole requested range: first, last and one byte per page */
static void touch(void* p, size_t size, uint8_t seed) {
  uint8_t* b = (uint8_t*)tu_launder(p);
  if (size == 0) return;
  for (size_t i = 0; i < size; i += 4096) b[i] = (uint8_t)(seed + i / 4096);
  b[size - 1] = seed;
}

static void test_aligned_allocs_aligned_sized_and_zeroed(void** state) {
  (void)state;
  size_t count = 0;
  for (size_t align = 1; align <= ALIGN_IN_SEGMENT_MAX; align *= 2) {
    for (size_t si = 0; si < N_SIZES; si++) {
      size_t size = sizes[si];
      void* p = mi_malloc_aligned(size, align);
      check_block(p, size, align, 0, "mi_malloc_aligned");
      memset(tu_launder(p), 0xAB, size);
      mi_free(p);

      p = mi_zalloc_aligned(size, align);
      check_block(p, size, align, 0, "mi_zalloc_aligned");
      if (!tu_all_bytes(p, size, 0)) fail_msg("mi_zalloc_aligned(%zu,%zu) not zeroed", size, align);
      memset(tu_launder(p), 0xCD, size);
      mi_free(p);

      p = mi_calloc_aligned(1, size, align);
      check_block(p, size, align, 0, "mi_calloc_aligned");
      if (!tu_all_bytes(p, size, 0)) fail_msg("mi_calloc_aligned(1,%zu,%zu) not zeroed", size, align);
      touch(p, size, 1);
      mi_free(p);

      if (size % 4 == 0) {
        p = mi_calloc_aligned(size / 4, 4, align);
        check_block(p, size, align, 0, "mi_calloc_aligned");
        if (!tu_all_bytes(p, size, 0)) fail_msg("mi_calloc_aligned(%zu,4,%zu) not zeroed", size / 4, align);
        mi_free(p);
      }

      /* _at variants with a few offsets inside the block */
      static const size_t offsets[] = {0, 8, 16, 24, 64, 1000};
      for (size_t oi = 0; oi < sizeof(offsets) / sizeof(offsets[0]); oi++) {
        size_t off = offsets[oi];
        if (off != 0 && off >= size) continue;
        p = mi_malloc_aligned_at(size, align, off);
        check_block(p, size, align, off, "mi_malloc_aligned_at");
        touch(p, size, 2);
        mi_free(p);
        p = mi_zalloc_aligned_at(size, align, off);
        check_block(p, size, align, off, "mi_zalloc_aligned_at");
        if (!tu_all_bytes(p, size, 0)) fail_msg("mi_zalloc_aligned_at(%zu,%zu,%zu) not zeroed", size, align, off);
        touch(p, size, 3);
        mi_free(p);
        p = mi_calloc_aligned_at(1, size, align, off);
        check_block(p, size, align, off, "mi_calloc_aligned_at");
        if (!tu_all_bytes(p, size, 0)) fail_msg("mi_calloc_aligned_at(%zu,%zu,%zu) not zeroed", size, align, off);
        mi_free(p);
        count += 3;
      }
      count += 4;
    }
  }
  print_message("checked %zu aligned allocations\n", count);
}

/* many live aligned blocks at once don't overlap */
static void test_aligned_live_blocks_do_not_overlap(void** state) {
  (void)state;
  enum { N = 300 };
  void* blocks[N];
  size_t bsize[N];
  uint64_t rng = 7;
  for (int i = 0; i < N; i++) {
    size_t align = (size_t)1 << (tu_rand(&rng) % 17); /* up to 64 KiB */
    bsize[i] = (size_t)(tu_rand(&rng) % 20000);
    blocks[i] = mi_malloc_aligned(bsize[i], align);
    check_block(blocks[i], bsize[i], align, 0, "mi_malloc_aligned");
    tu_fill(blocks[i], bsize[i], (uint8_t)i);
  }
  for (int i = 0; i < N; i++) {
    assert_true(tu_check(blocks[i], bsize[i], (uint8_t)i));
    mi_free(blocks[i]);
  }
}

static void test_realloc_aligned_keeps_alignment_and_contents(void** state) {
  (void)state;
  static const size_t chain[] = {1, 100, 4096, 70000, 300000, 5 * MiB, 70000, 16, 300000, 7};
  const size_t nchain = sizeof(chain) / sizeof(chain[0]);
  for (size_t align = 1; align <= ALIGN_IN_SEGMENT_MAX; align *= 2) {
    /* realloc_aligned */
    uint8_t* p = (uint8_t*)mi_malloc_aligned(chain[0], align);
    check_block(p, chain[0], align, 0, "mi_malloc_aligned");
    tu_fill(p, chain[0], (uint8_t)align);
    size_t cur = chain[0];
    for (size_t i = 1; i < nchain; i++) {
      size_t next = chain[i];
      p = (uint8_t*)mi_realloc_aligned(p, next, align);
      check_block(p, next, align, 0, "mi_realloc_aligned");
      size_t keep = cur < next ? cur : next;
      if (!tu_check(p, keep, (uint8_t)align))
        fail_msg("mi_realloc_aligned %zu -> %zu (align %zu) lost contents", cur, next, align);
      tu_fill(p, next, (uint8_t)align);
      cur = next;
    }
    mi_free(p);

    /* realloc_aligned_at with an offset */
    size_t off = 16;
    p = (uint8_t*)mi_malloc_aligned_at(100, align, off);
    check_block(p, 100, align, off, "mi_malloc_aligned_at");
    tu_fill(p, 100, 5);
    cur = 100;
    for (size_t i = 1; i < nchain; i++) {
      size_t next = chain[i] < 32 ? 32 : chain[i];
      p = (uint8_t*)mi_realloc_aligned_at(p, next, align, off);
      check_block(p, next, align, off, "mi_realloc_aligned_at");
      size_t keep = cur < next ? cur : next;
      if (!tu_check(p, keep, 5))
        fail_msg("mi_realloc_aligned_at %zu -> %zu (align %zu) lost contents", cur, next, align);
      tu_fill(p, next, 5);
      cur = next;
    }
    mi_free(p);

    /* realloc_aligned(NULL) allocates */
    p = (uint8_t*)mi_realloc_aligned(NULL, 1000, align);
    check_block(p, 1000, align, 0, "mi_realloc_aligned(NULL)");
    mi_free(p);

    /* a block from mi_malloc_aligned_at with an odd offset is not aligned
       itself: reallocated aligned, it moves (found by the fuzz harness:
       returned in place for alignments up to 16) */
    p = (uint8_t*)mi_malloc_aligned_at(100, 64, 7);
    tu_fill(p, 100, 6);
    p = (uint8_t*)mi_realloc_aligned(p, 100, align);
    check_block(p, 100, align, 0, "mi_realloc_aligned of an offset block");
    if (!tu_check(p, 100, 6)) fail_msg("mi_realloc_aligned of an offset block (align %zu) lost contents", align);
    mi_free(p);
  }

  /* aligned recalloc keeps contents and zeroes the extension of a zeroed block */
  for (size_t align = 8; align <= 64 * KiB; align *= 4) {
    uint8_t* p = (uint8_t*)mi_calloc_aligned(10, 10, align);
    check_block(p, 100, align, 0, "mi_calloc_aligned");
    tu_fill(p, 100, 9);
    p = (uint8_t*)mi_aligned_recalloc(p, 1000, 10, align);
    check_block(p, 10000, align, 0, "mi_aligned_recalloc");
    assert_true(tu_check(p, 100, 9));
    assert_true(tu_all_bytes(p + 100, 10000 - 100, 0));
    mi_free(p);

    p = (uint8_t*)mi_calloc_aligned_at(10, 10, align, 16);
    check_block(p, 100, align, 16, "mi_calloc_aligned_at");
    tu_fill(p, 100, 9);
    p = (uint8_t*)mi_aligned_offset_recalloc(p, 1000, 10, align, 16);
    check_block(p, 10000, align, 16, "mi_aligned_offset_recalloc");
    assert_true(tu_check(p, 100, 9));
    assert_true(tu_all_bytes(p + 100, 10000 - 100, 0));
    mi_free(p);
  }
}

static void test_posix_memalign_bad_alignment_einval_good_aligned(void** state) {
  (void)state;
  void* sentinel = (void*)(uintptr_t)0x1234;
  static const size_t bad[] = {0, 3, 24, sizeof(void*) / 2, sizeof(void*) + 1, 48, 1000};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    void* p = sentinel;
    int rc = mi_posix_memalign(&p, bad[i], 100);
    if (rc != EINVAL) fail_msg("mi_posix_memalign(alignment=%zu) returned %d, expected EINVAL", bad[i], rc);
    assert_ptr_equal(p, sentinel); /* unchanged on failure */
  }
  for (size_t align = sizeof(void*); align <= MiB; align *= 2) {
    for (size_t si = 0; si < N_SIZES; si++) {
      void* p = NULL;
      int rc = mi_posix_memalign(&p, align, sizes[si]);
      if (rc != 0) fail_msg("mi_posix_memalign(%zu, %zu) returned %d", align, sizes[si], rc);
      if (sizes[si] > 0 || p != NULL) check_block(p, sizes[si], align, 0, "mi_posix_memalign");
      touch(p, sizes[si], 4);
      mi_free(p);
    }
  }
}

static void test_aligned_alloc_memalign_return_aligned_blocks(void** state) {
  (void)state;
  for (size_t align = 1; align <= ALIGN_IN_SEGMENT_MAX; align *= 2) {
    /* C11: size a multiple of the alignment */
    size_t sz = align * 3;
    void* p = mi_aligned_alloc(align, sz);
    check_block(p, sz, align, 0, "mi_aligned_alloc");
    touch(p, sz, 6);
    mi_free(p);
    /* size not a multiple: may fail, but if it succeeds it must be aligned */
    p = mi_aligned_alloc(align, 100);
    if (p != NULL) check_block(p, 100, align, 0, "mi_aligned_alloc");
    mi_free(p);

    p = mi_memalign(align, 1000);
    check_block(p, 1000, align, 0, "mi_memalign");
    touch(p, 1000, 7);
    mi_free(p);
  }
}

static void test_valloc_pvalloc_page_aligned_pvalloc_rounded(void** state) {
  (void)state;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  assert_true(page >= 4096);
  static const size_t vs[] = {0, 1, 100, 4095, 4096, 4097, 10000, 70000, 300000, 5 * MiB};
  for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
    size_t n = vs[i];
    void* p = mi_valloc(n);
    check_block(p, n, page, 0, "mi_valloc");
    touch(p, n, 8);
    mi_free(p);

    size_t rounded = (n + page - 1) / page * page;
    p = mi_pvalloc(n);
    check_block(p, rounded, page, 0, "mi_pvalloc");
    if (mi_usable_size(p) < rounded)
      fail_msg("mi_pvalloc(%zu): usable %zu < size rounded to page %zu", n, mi_usable_size(p), rounded);
    touch(p, rounded, 9); /* the whole rounded size is usable */
    mi_free(p);
  }
}

static void test_invalid_alignments_return_null_keep_block(void** state) {
  (void)state;
  /* alignments past the address space: NULL with ENOMEM */
  static const size_t too_big[] = {(size_t)1 << 50, (size_t)1 << 62};
  for (size_t i = 0; i < sizeof(too_big) / sizeof(too_big[0]); i++) {
    size_t a = tu_opaque(too_big[i]);
    errno = 0;
    void* p = mi_malloc_aligned(100, a);
    if (p != NULL) {
      mi_free(p);
      fail_msg("mi_malloc_aligned(100, %zu) succeeded, expected NULL", a);
    }
    assert_int_equal(errno, ENOMEM);
    errno = 0;
    p = mi_zalloc_aligned(100, a);
    assert_null(p);
    assert_int_equal(errno, ENOMEM);
    errno = 0;
    p = mi_malloc_aligned_at(100, a, 16);
    assert_null(p);
    assert_int_equal(errno, ENOMEM);
    p = mi_aligned_alloc(a, a);
    assert_null(p);
    p = mi_memalign(a, 100);
    assert_null(p);
    void* q = NULL;
    int rc = mi_posix_memalign(&q, a, 100);
    assert_int_equal(rc, ENOMEM);
    assert_null(q);
    /* realloc_aligned with too big an alignment fails and keeps the block */
    uint8_t* b = (uint8_t*)mi_malloc(64);
    assert_non_null(b);
    tu_fill(b, 64, 1);
    void* r = mi_realloc_aligned(b, 128, a);
    assert_null(r);
    assert_true(tu_check(b, 64, 1));
    mi_free(b);
  }
  /* non-power-of-two alignments fail */
  static const size_t npot[] = {0, 3, 24, 48, 100, 4095, 4097, 3 * 4096};
  for (size_t i = 0; i < sizeof(npot) / sizeof(npot[0]); i++) {
    size_t a = tu_opaque(npot[i]);
    void* p = mi_malloc_aligned(100, a);
    if (p != NULL) {
      mi_free(p);
      fail_msg("mi_malloc_aligned(100, %zu) succeeded, expected NULL", a);
    }
    p = mi_zalloc_aligned(100, a);
    assert_null(p);
    p = mi_calloc_aligned(10, 10, a);
    assert_null(p);
    p = mi_malloc_aligned_at(100, a, 8);
    assert_null(p);
    p = mi_aligned_alloc(a, 100);
    assert_null(p);
  }
  /* huge size with valid alignment: NULL, no crash */
  errno = 0;
  void* p = mi_malloc_aligned(tu_opaque(SIZE_MAX - 100), 64);
  assert_null(p);
  assert_int_equal(errno, ENOMEM);
  /* the allocator keeps working */
  p = mi_malloc_aligned(100, 64);
  check_block(p, 100, 64, 0, "mi_malloc_aligned");
  mi_free(p);
}

/* ---- Alignments past half a segment: a sparse segment per block ------------ */

static const size_t huge_sizes[] = {0, 1, 100, 5000, 300000, 5 * MiB + 3};
#define N_HUGE_SIZES (sizeof(huge_sizes) / sizeof(huge_sizes[0]))

/* zero over the whole block, read a word per page past the first 256 KiB */
static bool zeroed(const void* p, size_t size) {
  const uint8_t* b = (const uint8_t*)p;
  size_t dense = (size < 256 * 1024 ? size : 256 * 1024);
  if (!tu_all_bytes(b, dense, 0)) return false;
  for (size_t i = dense; i < size; i += 4096) {
    if (b[i] != 0) return false;
  }
  return (size == 0 || b[size - 1] == 0);
}

static void check_huge(void* p, size_t size, size_t align, size_t offset, bool zero, const char* what) {
  check_block(p, size, align, offset, what);
  if (!mi_is_in_heap_region(p)) fail_msg("%s(size=%zu, align=%zu): %p not ours", what, size, align, p);
  if (zero && !zeroed(p, size)) fail_msg("%s(size=%zu, align=%zu, offset=%zu) not zeroed", what, size, align, offset);
  touch(p, size, (uint8_t)(align >> 20));
}

static void test_aligned_past_segment_every_entry_aligned_and_zeroed(void** state) {
  (void)state;
  /* the libc names reach us only where this program's malloc is ours */
  void* probe = calloc(1, 16);
  bool libc_is_ours = mi_is_in_heap_region(probe);
  free(probe);
  (void)libc_is_ours;
  size_t count = 0;
  for (size_t align = 4 * MiB; align <= GiB; align *= 2) {
    mi_heap_t* heap = mi_heap_new();
    assert_non_null(heap);
    for (size_t si = 0; si < N_HUGE_SIZES; si++) {
      size_t size = huge_sizes[si];
      void* p = mi_malloc_aligned(size, align);
      check_huge(p, size, align, 0, false, "mi_malloc_aligned");
      mi_free(p);
      p = mi_zalloc_aligned(size, align);
      check_huge(p, size, align, 0, true, "mi_zalloc_aligned");
      mi_free(p);
      p = mi_calloc_aligned(1, size, align);
      check_huge(p, size, align, 0, true, "mi_calloc_aligned");
      mi_free(p);
      p = mi_heap_malloc_aligned(heap, size, align);
      check_huge(p, size, align, 0, false, "mi_heap_malloc_aligned");
      mi_free(p);
      p = mi_heap_zalloc_aligned(heap, size, align);
      check_huge(p, size, align, 0, true, "mi_heap_zalloc_aligned");
      mi_free(p);
      p = mi_heap_calloc_aligned(heap, 1, size, align);
      check_huge(p, size, align, 0, true, "mi_heap_calloc_aligned");
      mi_free(p);
      p = mi_aligned_alloc(align, size);
      check_huge(p, size, align, 0, false, "mi_aligned_alloc");
      mi_free(p);
      p = mi_memalign(align, size);
      check_huge(p, size, align, 0, false, "mi_memalign");
      mi_free(p);
      p = NULL;
      assert_int_equal(mi_posix_memalign(&p, align, size), 0);
      check_huge(p, size, align, 0, false, "mi_posix_memalign");
      mi_free(p);
#if !defined(_WIN32)
      if (libc_is_ours) {
        p = aligned_alloc(align, size);
        check_huge(p, size, align, 0, false, "aligned_alloc");
        free(p);
        p = NULL;
        assert_int_equal(posix_memalign(&p, align, size), 0);
        check_huge(p, size, align, 0, false, "posix_memalign");
        free(p);
      }
#endif
      count += 9;
      /* offsets: inside the first page, past it, and past most of a segment */
      static const size_t offsets[] = {16, 4096 + 8, 3 * MiB + 16};
      for (size_t oi = 0; oi < sizeof(offsets) / sizeof(offsets[0]); oi++) {
        size_t off = offsets[oi];
        if (off >= size) continue;
        p = mi_malloc_aligned_at(size, align, off);
        check_huge(p, size, align, off, false, "mi_malloc_aligned_at");
        mi_free(p);
        p = mi_zalloc_aligned_at(size, align, off);
        check_huge(p, size, align, off, true, "mi_zalloc_aligned_at");
        mi_free(p);
        p = mi_calloc_aligned_at(1, size, align, off);
        check_huge(p, size, align, off, true, "mi_calloc_aligned_at");
        mi_free(p);
        p = mi_heap_malloc_aligned_at(heap, size, align, off);
        check_huge(p, size, align, off, false, "mi_heap_malloc_aligned_at");
        mi_free(p);
        count += 4;
      }
    }
    mi_heap_destroy(heap);
  }
  print_message("checked %zu allocations aligned past half a segment\n", count);
}

static void test_realloc_aligned_past_segment_keeps_contents_and_alignment(void** state) {
  (void)state;
  static const size_t chain[] = {100, 300000, 5 * MiB, 64, 9 * MiB, 1000};
  for (size_t align = 4 * MiB; align <= GiB; align *= 4) {
    /* from an ordinary block to an aligned one, then through the sizes */
    uint8_t* p = (uint8_t*)mi_malloc(50);
    assert_non_null(p);
    tu_fill(p, 50, 9);
    p = (uint8_t*)mi_realloc_aligned(p, chain[0], align);
    check_block(p, chain[0], align, 0, "mi_realloc_aligned");
    assert_true(tu_check(p, 50, 9));
    tu_fill(p, chain[0], 10);
    size_t cur = chain[0];
    for (size_t i = 1; i < sizeof(chain) / sizeof(chain[0]); i++) {
      size_t next = chain[i];
      p = (uint8_t*)mi_realloc_aligned(p, next, align);
      check_block(p, next, align, 0, "mi_realloc_aligned");
      if (!tu_check(p, cur < next ? cur : next, 10))
        fail_msg("mi_realloc_aligned %zu -> %zu (align %zu) lost contents", cur, next, align);
      tu_fill(p, next, 10);
      cur = next;
    }
    /* plain realloc of an aligned block keeps its contents too */
    p = (uint8_t*)mi_realloc(p, 2 * cur);
    assert_non_null(p);
    assert_true(tu_check(p, cur, 10));
    mi_free(p);
    /* a zeroing recalloc of an aligned block: the grown part reads zero */
    p = (uint8_t*)mi_aligned_recalloc(NULL, 1, 100, align);
    check_block(p, 100, align, 0, "mi_aligned_recalloc");
    tu_fill(p, 100, 11);
    p = (uint8_t*)mi_aligned_recalloc(p, 1, 3 * MiB, align);
    check_block(p, 3 * MiB, align, 0, "mi_aligned_recalloc");
    assert_true(tu_check(p, 100, 11));
    assert_true(zeroed(p + 100, 3 * MiB - 100));
    mi_free(p);
    /* the re*alloc_aligned family, default and first-class heap */
    mi_heap_t* heap = mi_heap_new();
    assert_non_null(heap);
    p = (uint8_t*)mi_heap_rezalloc_aligned(heap, NULL, 100, align);
    check_block(p, 100, align, 0, "mi_heap_rezalloc_aligned");
    assert_true(zeroed(p, 100));
    assert_true(mi_heap_contains_block(heap, p));
    tu_fill(p, 100, 12);
    p = (uint8_t*)mi_heap_recalloc_aligned(heap, p, 2, MiB, align);
    check_block(p, 2 * MiB, align, 0, "mi_heap_recalloc_aligned");
    assert_true(tu_check(p, 100, 12));
    assert_true(zeroed(p + 100, 2 * MiB - 100));
    mi_free(p);
    mi_heap_delete(heap);
    p = (uint8_t*)mi_rezalloc_aligned_at(NULL, 200, align, 16);
    check_block(p, 200, align, 16, "mi_rezalloc_aligned_at");
    tu_fill(p, 200, 13);
    p = (uint8_t*)mi_recalloc_aligned_at(p, 3, MiB, align, 16);
    check_block(p, 3 * MiB, align, 16, "mi_recalloc_aligned_at");
    assert_true(tu_check(p, 200, 13));
    assert_true(zeroed(p + 200, 3 * MiB - 200));
    mi_free(p);
  }
}

/* ---- Every alignment with offsets up to the alignment ----------------------- */

/* Alignments 8 B .. 1 GiB, each with offsets from 0 to alignment - 1 (the
   pointer + offset is aligned), in every entry of the _at family: aligned,
   usable for its size, zeroed where asked, reallocated in place or moved
   with its contents, freed. Sizes stop at 16 MiB + 1 to keep the sweep's
   memory small (the alignment costs address space only). */
#define SWEEP_SIZE_CAP (16 * MiB)

static size_t sweep_failures;

static void sweep_fail(const char* what, size_t size, size_t align, size_t offset, const char* why) {
  if (sweep_failures++ < 40) print_error("%s(size=%zu, align=%zu, offset=%zu): %s\n", what, size, align, offset, why);
}

/* aligned at the offset, usable for its size, read back zero if it was
   zeroed; false (and reported) if NULL */
static bool sweep_check(void* p, size_t size, size_t align, size_t offset, bool zero, const char* what) {
  if (p == NULL) {
    sweep_fail(what, size, align, offset, "NULL");
    return false;
  }
  if (!tu_is_aligned((uint8_t*)p + offset, align)) sweep_fail(what, size, align, offset, "not aligned");
  if (mi_usable_size(p) < size) sweep_fail(what, size, align, offset, "usable size too small");
  if (zero && !zeroed(p, size)) sweep_fail(what, size, align, offset, "not zeroed");
  return true;
}

/* allocated, written over its size, freed */
static void sweep_alloc(void* p, size_t size, size_t align, size_t offset, bool zero, const char* what) {
  if (!sweep_check(p, size, align, offset, zero, what)) return;
  touch(p, size, (uint8_t)(offset + size));
  mi_free(p);
}

/* reallocated: aligned, the first `kept` bytes of pattern `seed` still there */
static bool sweep_realloc(uint8_t* q, size_t size, size_t align, size_t offset, size_t kept, uint8_t seed,
                          const char* what) {
  if (!sweep_check(q, size, align, offset, false, what)) return false;
  if (!tu_check(q, kept, seed)) sweep_fail(what, size, align, offset, "contents lost");
  return true;
}

static void sweep_one(mi_heap_t* heap, size_t size, size_t align, size_t offset) {
  sweep_alloc(mi_malloc_aligned_at(size, align, offset), size, align, offset, false, "mi_malloc_aligned_at");
  sweep_alloc(mi_zalloc_aligned_at(size, align, offset), size, align, offset, true, "mi_zalloc_aligned_at");
  sweep_alloc(mi_calloc_aligned_at(1, size, align, offset), size, align, offset, true, "mi_calloc_aligned_at");
  sweep_alloc(mi_heap_malloc_aligned_at(heap, size, align, offset), size, align, offset, false,
              "mi_heap_malloc_aligned_at");
  sweep_alloc(mi_heap_zalloc_aligned_at(heap, size, align, offset), size, align, offset, true,
              "mi_heap_zalloc_aligned_at");
  sweep_alloc(mi_heap_calloc_aligned_at(heap, 1, size, align, offset), size, align, offset, true,
              "mi_heap_calloc_aligned_at");
  /* reallocated to another size (from small to past 2 MiB, or from large
     down) and back a little bigger, its first bytes kept each time */
  uint8_t* q = (uint8_t*)mi_malloc_aligned_at(size, align, offset);
  if (!sweep_check(q, size, align, offset, false, "mi_malloc_aligned_at")) return;
  size_t kept = (size < 4096 ? size : 4096);
  tu_fill(q, kept, 21);
  size_t other = (size < MiB ? 2 * MiB + 3 : 100);
  q = (uint8_t*)mi_realloc_aligned_at(q, other, align, offset);
  kept = (kept < other ? kept : other);
  if (!sweep_realloc(q, other, align, offset, kept, 21, "mi_realloc_aligned_at")) return;
  q = (uint8_t*)mi_heap_realloc_aligned_at(heap, q, size + 64, align, offset);
  if (!sweep_realloc(q, size + 64, align, offset, kept, 21, "mi_heap_realloc_aligned_at")) return;
  touch(q, size + 64, 23);
  mi_free(q);
}

static void test_aligned_at_every_alignment_and_offset_served(void** state) {
  (void)state;
  size_t count = 0;
  sweep_failures = 0;
  mi_heap_t* heap = mi_heap_new();
  assert_non_null(heap);
  for (unsigned k = 3; k <= 30; k++) {
    size_t align = (size_t)1 << k;
    size_t big = (align < SWEEP_SIZE_CAP ? align : SWEEP_SIZE_CAP) + 1;
    const size_t sizes_k[] = {1, 100, 4096, MiB + 1, big};
    const size_t offsets_k[] = {0, 1, 8, 16, align / 2, align - 16, align - 8, align - 1};
    for (size_t oi = 0; oi < sizeof(offsets_k) / sizeof(offsets_k[0]); oi++) {
      size_t offset = offsets_k[oi];
      if (offset >= align) continue; /* align - 16 below 16 */
      for (size_t si = 0; si < sizeof(sizes_k) / sizeof(sizes_k[0]); si++) {
        sweep_one(heap, sizes_k[si], align, offset);
        count++;
      }
    }
  }
  mi_heap_delete(heap);
  print_message("swept %zu (size, alignment, offset) combinations\n", count);
  if (sweep_failures != 0) fail_msg("%zu failures", sweep_failures);
}

/* An alignment of a chunk (4 MiB) or more fixes where in a chunk the
   pointer falls: 4 MiB - offset. Every such place in the first 128 KiB of a
   chunk, where the segment's header lies (its struct, in secure builds its
   guard page and the tag before the pointer), byte by byte around each
   4 KiB boundary: served, aligned, usable, freed. */
static void test_aligned_at_pointer_in_chunk_header_bytes_served(void** state) {
  (void)state;
  size_t count = 0;
  sweep_failures = 0;
  for (size_t align = 4 * MiB; align <= 8 * MiB; align *= 2) {
    for (size_t place = 0; place <= 128 * KiB; place++) {
      size_t in_page = place % (4 * KiB);
      if (in_page > 24 && in_page < 4 * KiB - 24 && place % 64 != 0) continue;
      size_t offset = (align - place) & (align - 1);
      sweep_alloc(mi_malloc_aligned_at(100, align, offset), 100, align, offset, false, "mi_malloc_aligned_at");
      count++;
    }
  }
  print_message("checked %zu places of the pointer in a chunk\n", count);
  if (sweep_failures != 0) fail_msg("%zu failures", sweep_failures);
}

/* The alignment costs address space only: eight live blocks aligned to
   1 GiB keep resident and committed memory to their headers and blocks. */
static void test_aligned_gigabyte_blocks_rss_and_commit_not_grown(void** state) {
  (void)state;
  enum { N = 8 };
  void* blocks[N];
  size_t rss0 = tu_rss();
  size_t commit0 = tu_commit();
  for (int i = 0; i < N; i++) {
    blocks[i] = (i % 2 == 0 ? mi_malloc_aligned(100, GiB) : mi_zalloc_aligned(100, GiB));
    check_block(blocks[i], 100, GiB, 0, "mi_malloc_aligned");
    memset(tu_launder(blocks[i]), i, 100);
  }
  size_t rss1 = tu_rss();
  size_t commit1 = tu_commit();
  print_message("8 blocks aligned to 1 GiB: rss +%zu KiB, committed +%zu KiB\n", (rss1 - rss0) / 1024,
                (commit1 - commit0) / 1024);
  if (rss1 > rss0 + 4 * MiB) fail_msg("resident memory grew by %zu KiB", (rss1 - rss0) / 1024);
  if (commit1 > commit0 + 4 * MiB) fail_msg("committed memory grew by %zu KiB", (commit1 - commit0) / 1024);
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < 100; j++) assert_int_equal(((uint8_t*)blocks[i])[j], (uint8_t)i);
    mi_free(blocks[i]);
  }
}

int main(void) {
  mi_process_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_aligned_allocs_aligned_sized_and_zeroed),
      cmocka_unit_test(test_aligned_live_blocks_do_not_overlap),
      cmocka_unit_test(test_realloc_aligned_keeps_alignment_and_contents),
      cmocka_unit_test(test_posix_memalign_bad_alignment_einval_good_aligned),
      cmocka_unit_test(test_aligned_alloc_memalign_return_aligned_blocks),
      cmocka_unit_test(test_valloc_pvalloc_page_aligned_pvalloc_rounded),
      cmocka_unit_test(test_invalid_alignments_return_null_keep_block),
      cmocka_unit_test(test_aligned_past_segment_every_entry_aligned_and_zeroed),
      cmocka_unit_test(test_realloc_aligned_past_segment_keeps_contents_and_alignment),
      cmocka_unit_test(test_aligned_gigabyte_blocks_rss_and_commit_not_grown),
      cmocka_unit_test(test_aligned_at_every_alignment_and_offset_served),
      cmocka_unit_test(test_aligned_at_pointer_in_chunk_header_bytes_served),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
