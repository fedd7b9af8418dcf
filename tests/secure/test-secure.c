#define _GNU_SOURCE
/* Secure mode: every class of misuse is committed in a child process, which
   must die of the expected signal with the expected one-line report; the same
   case without the misuse (its control) must exit 0. Built only with MI_SECURE. */
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
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../child.h"

static void* volatile sink;
static void touch_free(void* p) {
  sink = p;
  mi_free(p);
}

/* ---- Double free ---------------------------------------------------------- */

static void case_double_free_small(bool misuse) {
  void* p = mi_malloc(48);
  touch_free(p);
  if (misuse) mi_free(p);
}
static void case_double_free_large(bool misuse) {
  void* p = mi_malloc(300 * 1024);
  touch_free(p);
  if (misuse) mi_free(p);
}
static void case_double_free_huge(bool misuse) {
  void* p = mi_malloc(40 * 1024 * 1024);
  touch_free(p);
  if (misuse) mi_free(p);
}
static void case_double_free_aligned_past_segment(bool misuse) {
  void* p = mi_malloc_aligned(1000, 64 << 20);
  touch_free(p);
  if (misuse) mi_free(p);
}
/* the block's segment goes back to the OS at the first free (the segment
   cache is full), so the second free finds no segment of ours there (found
   by the fuzz harness: was reported as an invalid free) */
static void case_double_free_segment_released(bool misuse) {
  void* large[40];
  for (int i = 0; i < 40; i++) large[i] = mi_malloc(5 * 1024 * 1024);
  for (int i = 0; i < 40; i++) mi_free(large[i]);
  void* p = mi_malloc(20000);
  touch_free(p);
  if (misuse) mi_free(p);
}
/* the block's segment waits in the cache, which purges it whole, header
   included: the second free finds a segment of ours that reads as zero
   (found by the fuzz harness, under load: was reported as an invalid free) */
static void case_double_free_large_purged(bool misuse) {
  void* p = mi_malloc(300 * 1024);
  touch_free(p);
  mi_collect(true); /* purges the cache now rather than after the delay */
  if (misuse) mi_free(p);
}
static void* free_in_thread(void* p) {
  mi_free(p);
  return NULL;
}
/* freed by its owner, then again by another thread */
static void case_double_free_other_thread(bool misuse) {
  void* p = mi_malloc(64);
  touch_free(p);
  if (misuse) {
    pthread_t t;
    pthread_create(&t, NULL, &free_in_thread, p);
    pthread_join(t, NULL);
  } else {
    p = mi_malloc(64);
    pthread_t t;
    pthread_create(&t, NULL, &free_in_thread, p);
    pthread_join(t, NULL);
  }
}
/* freed by another thread, then again by its owner */
static void case_double_free_after_remote(bool misuse) {
  void* p = mi_malloc(64);
  pthread_t t;
  pthread_create(&t, NULL, &free_in_thread, p);
  pthread_join(t, NULL);
  if (misuse) mi_free(p);
}
/* the same with an aligned pointer inside its block (p + 3 aligned: p is
   never a block start, and its tag sits at an odd address): the remote free
   zeroed the tag before it (found by the fuzz harness: was reported as an
   interior pointer) */
static void case_double_free_aligned_after_remote(bool misuse) {
  void* p = mi_malloc_aligned_at(100, 64, 3);
  pthread_t t;
  pthread_create(&t, NULL, &free_in_thread, p);
  pthread_join(t, NULL);
  if (misuse) mi_free(p);
}

/* ---- Invalid free ----------------------------------------------------------- */

static char global_buffer[64];

static void case_free_interior(bool misuse) {
  char* p = (char*)mi_malloc(64);
  sink = p;
  mi_free(misuse ? p + 16 : p);
}
static void case_free_stack(bool misuse) {
  char local[64];
  sink = local;
  void* p = mi_malloc(8);
  mi_free(misuse ? (void*)local : p);
}
static void case_free_global(bool misuse) {
  void* p = mi_malloc(8);
  mi_free(misuse ? (void*)global_buffer : p);
}
static void case_free_mmap(bool misuse) {
  void* m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* p = mi_malloc(8);
  mi_free(misuse ? m : p);
}
/* the pointer lies in a later 4 MiB chunk than the block's segment start
   (found by the fuzz harness: was reported as a pointer not ours) */
static void case_free_huge_interior(bool misuse) {
  char* p = (char*)mi_malloc(12 * 1024 * 1024);
  sink = p;
  mi_free(misuse ? p + 10 * 1024 * 1024 + 7 : p);
}
/* into the segment header before a live block: metadata is never a block,
   even where the page that spans it is not in use (found by the fuzz
   harness: was reported as a double free). A new thread's medium blocks of
   one size fill the first 512 KiB page of a fresh segment (25 to a page) and
   start the second; all but the last are freed, and medium pages are not
   kept, so the first page, which spans the header, is out of use: checked
   through the heap's visit (no in-use page starts there), so that the case
   cannot pass without reaching that path. */
typedef struct page_probe_s {
  uintptr_t lo, hi;
  bool in_use;
} page_probe_t;
static bool probe_area(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap, (void)block, (void)size;
  page_probe_t* probe = (page_probe_t*)arg;
  if ((uintptr_t)area->blocks >= probe->lo && (uintptr_t)area->blocks < probe->hi) probe->in_use = true;
  return true;
}
static void* free_segment_header_thread(void* arg) {
  bool misuse = (arg != NULL);
  void* blocks[40];
  for (int i = 0; i < 40; i++) blocks[i] = mi_malloc(20000);
  char* keep = (char*)blocks[39];
  for (int i = 0; i < 39; i++) mi_free(blocks[i]);
  uintptr_t segment = (uintptr_t)keep & ~(uintptr_t)((4u << 20) - 1);
  page_probe_t probe = {segment, segment + (512u << 10), false};
  mi_heap_visit_blocks(mi_heap_get_default(), false, &probe_area, &probe);
  if (probe.in_use || (uintptr_t)keep - segment < (512u << 10)) {
    fprintf(stderr, "free_segment_header: the segment's first page is still in use: the case would test nothing\n");
    _exit(4);
  }
  sink = keep;
  mi_free(misuse ? (void*)(segment + 16) : keep);
  return NULL;
}
static void case_free_segment_header(bool misuse) {
  pthread_t t;
  if (pthread_create(&t, NULL, &free_segment_header_thread, misuse ? (void*)1 : NULL) != 0) _exit(5);
  pthread_join(t, NULL);
}
static void case_free_aligned_interior(bool misuse) {
  char* p = (char*)mi_malloc_aligned(100, 256);
  sink = p;
  mi_free(misuse ? p + 32 : p);
}

/* The start of the block behind an aligned pointer was never handed out: an
   aligned allocation with an offset (the pointer plus 8 is aligned) always
   lies at least 16 bytes inside its block. The block's start is found
   through the heap's visit, which must itself accept it. */
typedef struct block_probe_s {
  uintptr_t target;
  void* start;
  size_t block_size;
} block_probe_t;
static bool probe_block(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap, (void)size;
  block_probe_t* probe = (block_probe_t*)arg;
  if (block != NULL && probe->target >= (uintptr_t)block && probe->target < (uintptr_t)block + area->block_size) {
    probe->start = block;
    probe->block_size = area->block_size;
  }
  return true;
}
static size_t probed_block_size; /* of the block aligned_block_start found */
static char* aligned_block_start(char* p) {
  block_probe_t probe = {(uintptr_t)p, NULL, 0};
  mi_heap_visit_blocks(mi_heap_get_default(), true, &probe_block, &probe);
  if (probe.start == NULL || (char*)probe.start == p) {
    fprintf(stderr, "aligned_block_start: %p is not inside a block: the case would test nothing\n", (void*)p);
    _exit(4);
  }
  probed_block_size = probe.block_size;
  return (char*)probe.start;
}
static void case_free_aligned_block_start(bool misuse) {
  char* p = (char*)mi_malloc_aligned_at(64, 128, 8);
  mi_free(misuse ? aligned_block_start(p) : p);
}
static void case_usable_size_aligned_block_start(bool misuse) {
  char* p = (char*)mi_malloc_aligned_at(64, 128, 8);
  sink = (void*)(uintptr_t)mi_usable_size(misuse ? aligned_block_start(p) : p);
}
/* a block of size 0 behind its aligned pointer: its data ends where the
   pointer lies */
static void case_free_aligned_block_start_size0(bool misuse) {
  char* p = (char*)mi_malloc_aligned_at(0, 128, 8);
  mi_free(misuse ? aligned_block_start(p) : p);
}
/* With the large quarantine off, a large block's segment is cached when it
   is freed, not discarded: the next large block of the same size lies where
   the last one did, and an aligned pointer into the old one still has its
   tag before it. Freed again, it is not the pointer the new block was
   handed out at. */
static void case_double_free_large_aligned_reused(bool misuse) {
  mi_option_set(mi_option_large_quarantine, 0);
  char* p = (char*)mi_malloc_aligned_at(300000, 4096, 8);
  memset(p, 1, 300000);
  mi_free(p);
  char* q = (char*)mi_malloc(300000 + 4095 + 16 + 4096); /* the block size the aligned one had */
  uintptr_t segment_mask = ~(uintptr_t)((4u << 20) - 1);
  if (((uintptr_t)p & segment_mask) != ((uintptr_t)q & segment_mask)) {
    fprintf(stderr, "double_free_large_aligned_reused: the segment was not reused: the case would test nothing\n");
    _exit(4);
  }
  mi_free(misuse ? p : q);
}
static void case_free_large_aligned_block_start(bool misuse) {
  char* p = (char*)mi_malloc_aligned_at(300 * 1024, 4096, 8);
  mi_free(misuse ? aligned_block_start(p) : p);
}

/* An alignment of 4 MiB with an offset just under it puts the pointer 8
   bytes into a chunk: past the chunk of its segment's header. */
static char* aligned_at_chunk_start(void) {
  return (char*)mi_malloc_aligned_at(100, 4u << 20, (4u << 20) - 8);
}
static void case_double_free_aligned_at_chunk_start(bool misuse) {
  char* p = aligned_at_chunk_start();
  touch_free(p);
  if (misuse) mi_free(p);
}
static void case_free_aligned_at_chunk_start_block_start(bool misuse) {
  char* p = aligned_at_chunk_start();
  mi_free(misuse ? aligned_block_start(p) : p);
}
/* The pointer placed just past a segment's header (its guard page) lies
   under 16 bytes into its block: no room for a tag, its page names it
   alone. Found among the places 1 byte past each 4 KiB of a chunk. */
static char* aligned_untagged(void) {
  for (size_t place = 4096 + 1; place < 256 * 1024; place += 4096) {
    char* p = (char*)mi_malloc_aligned_at(100, 4u << 20, (4u << 20) - place);
    char* start = aligned_block_start(p);
    if (p - start < 16) return p;
    mi_free(p);
  }
  fprintf(stderr, "aligned_untagged: no pointer under 16 bytes into its block: the case would test nothing\n");
  _exit(4);
}
static void case_double_free_aligned_untagged(bool misuse) {
  char* p = aligned_untagged();
  touch_free(p);
  if (misuse) mi_free(p);
}
static void case_free_aligned_untagged_block_start(bool misuse) {
  char* p = aligned_untagged();
  mi_free(misuse ? aligned_block_start(p) : p);
}
static void case_free_aligned_untagged_interior(bool misuse) {
  char* p = aligned_untagged();
  mi_free(misuse ? p + 1 : p);
}

/* ---- Overflow ------------------------------------------------------------------ */

/* The overflow flips the bytes past the end: a write that leaves a byte as
   it was cannot be seen by any canary (the canary byte is random per block,
   so a fixed value would match it one run in 255). */
static void overflow_bytes(char* p, size_t by) {
  for (size_t i = 0; i < by; i++) p[i] = (char)~p[i];
}
static void overflow_and_free(char* p, size_t size, size_t by, bool misuse) {
  memset(p, 'a', size);
  if (misuse) overflow_bytes(p + size, by);
  mi_free(p);
}
static void case_overflow_1_small(bool misuse) {
  overflow_and_free((char*)mi_malloc(24), 24, 1, misuse);
}
static void case_overflow_1_exact_class(bool misuse) {
  /* no slack in the size class: the write lands on the trailer */
  overflow_and_free((char*)mi_malloc(40), 40, 1, misuse);
}
/* the classic off-by-one: a NUL terminator one past the end, into the canary
   (never zero), so it is caught in every run, whatever the canary byte */
static void case_overflow_nul(bool misuse) {
  char* p = (char*)mi_malloc(20);
  memset(p, 'a', 20);
  if (misuse) p[20] = 0;
  mi_free(p);
}
static void case_overflow_16_small(bool misuse) {
  overflow_and_free((char*)mi_malloc(100), 100, 16, misuse);
}
static void case_overflow_1_medium(bool misuse) {
  overflow_and_free((char*)mi_malloc(20000), 20000, 1, misuse);
}
/* 128 KiB, with its trailer, fills the secure builds' last medium bin */
static void case_overflow_1_128k(bool misuse) {
  overflow_and_free((char*)mi_malloc(128 * 1024), 128 * 1024, 1, misuse);
}
static void case_overflow_1_large(bool misuse) {
  overflow_and_free((char*)mi_malloc(300000), 300000, 1, misuse);
}
static void case_overflow_16_large(bool misuse) {
  overflow_and_free((char*)mi_malloc(300000), 300000, 16, misuse);
}
static void case_overflow_after_realloc(bool misuse) {
  char* p = (char*)mi_malloc(10);
  p = (char*)mi_realloc(p, 100);
  overflow_and_free(p, 100, 1, misuse);
}
static void case_overflow_after_shrink(bool misuse) {
  char* p = (char*)mi_malloc(100);
  p = (char*)mi_realloc(p, 60);
  overflow_and_free(p, 60, 1, misuse);
}
static void case_overflow_aligned(bool misuse) {
  overflow_and_free((char*)mi_malloc_aligned(100, 64), 100, 1, misuse);
}
/* aligned past half a segment: a sparse segment of its own, the block
   from the pointer's page to the guard page */
static void case_overflow_aligned_past_segment(bool misuse) {
  overflow_and_free((char*)mi_malloc_aligned(100, 8 << 20), 100, 1, misuse);
}
/* a huge block's guard page lies past its segment's first chunk */
static void case_overflow_huge_to_guard(bool misuse) {
  size_t size = 40 << 20;
  char* p = (char*)mi_malloc(size);
  p[size - 1] = 'a';
  char* guard = (char*)(((uintptr_t)p + size + 8 + 4095) & ~(uintptr_t)4095); /* past the trailer's page */
  if (misuse) *guard = 'x';
  mi_free(p);
}
static void case_overflow_aligned_past_segment_to_guard(bool misuse) {
  char* p = (char*)mi_malloc_aligned(4096 - 8 - 64, 16 << 20);
  memset(p, 'a', 4096 - 8 - 64);
  if (misuse) p[4096] = 'x'; /* past the canary and the trailer, on the guard page */
  mi_free(p);
}
/* A zero-filling overrun (memset, a struct copied one too far) leaves the
   trailer zero, as a block freed by another thread has it: with data in the
   block, and with none (a zeroed block), it is still an overflow. */
static void case_overflow_zeros(bool misuse) {
  char* p = (char*)mi_malloc(24); /* with the trailer, a 32-byte block */
  memset(p, 0, misuse ? 32 : 24);
  p[0] = 'a';
  mi_free(p);
}
static void case_overflow_zeros_zeroed(bool misuse) {
  char* p = (char*)mi_zalloc(24);
  memset(p, 0, misuse ? 32 : 24);
  mi_free(p);
}
static void case_overflow_zeros_realloc(bool misuse) {
  char* p = (char*)mi_malloc(1000);
  memset(p, 0, misuse ? 1024 : 1000);
  sink = mi_realloc(p, 2000);
}
static void case_overflow_checked_by_realloc(bool misuse) {
  char* p = (char*)mi_malloc(32);
  memset(p, 'a', 32);
  if (misuse) overflow_bytes(p + 32, 1);
  p = (char*)mi_realloc(p, 4000);
  mi_free(p);
}
/* Visiting a heap validates each live block it reports: an overrun is seen
   there too, over a canary, and over an aligned block's trailer (which also
   keeps where its pointer lies, and which a visit reads from the block's
   start). */
static bool visit_nothing(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap, (void)area, (void)block, (void)size, (void)arg;
  return true;
}
static void case_overflow_seen_by_visit(bool misuse) {
  char* p = (char*)mi_malloc(24);
  memset(p, 'a', 24);
  if (misuse) overflow_bytes(p + 24, 1);
  sink = p; /* kept: the compiler may drop stores to a block that never escapes */
  mi_heap_visit_blocks(mi_heap_get_default(), true, &visit_nothing, NULL);
  exit(0); /* before any free could see it */
}
static void case_trailer_seen_by_visit(bool misuse) {
  char* p = (char*)mi_malloc_aligned_at(40, 128, 8);
  char* start = aligned_block_start(p);
  if (misuse) overflow_bytes(start + probed_block_size - 1, 1); /* the trailer's top byte */
  sink = p;
  mi_heap_visit_blocks(mi_heap_get_default(), true, &visit_nothing, NULL);
  exit(0);
}
/* A correct program: the owner visits its heap while another thread frees
   blocks of it. Such a block keeps its bit until the owner collects it, and
   the other thread zeroes it (or, with zero on free off, links it over a
   short block's canary) as the visit reads it: the visit must skip it, not
   report it (it aborted in 5 runs of 5 before the freeing mark). Sizes
   across the classes: canaries in the link's word, blocks zeroed with
   stores that bypass the cache. The rounds are counted, not timed. */
#define VISIT_RACE_BLOCKS 512
#define VISIT_RACE_ROUNDS 300
static void* visit_race_blocks[VISIT_RACE_BLOCKS];
static _Atomic(int) visit_race_round, visit_race_done;
static void* visit_race_freer(void* arg) {
  (void)arg;
  for (int r = 1; r <= VISIT_RACE_ROUNDS; r++) {
    while (atomic_load(&visit_race_round) != r) {
    }
    for (int i = 0; i < VISIT_RACE_BLOCKS; i++) mi_free(visit_race_blocks[i]);
    atomic_store(&visit_race_done, r);
  }
  return NULL;
}
static bool visit_count(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap, (void)area, (void)size;
  if (block != NULL) (*(size_t*)arg)++;
  return true;
}
static void case_visit_racing_remote_frees(bool misuse) {
  (void)misuse;
  static const size_t sizes[] = {0, 1, 5, 7, 8, 24, 100, 1000, 5000, 9000, 20000, 70000};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, &visit_race_freer, NULL), 0);
  for (int r = 1; r <= VISIT_RACE_ROUNDS; r++) {
    for (int i = 0; i < VISIT_RACE_BLOCKS; i++) {
      size_t size = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
      visit_race_blocks[i] = mi_malloc(size);
      memset(visit_race_blocks[i], 0xAB, size);
    }
    atomic_store(&visit_race_round, r);
    size_t seen = 0;
    while (atomic_load(&visit_race_done) != r) mi_heap_visit_blocks(mi_heap_get_default(), true, &visit_count, &seen);
  }
  pthread_join(t, NULL);
}
static void case_visit_racing_remote_frees_unzeroed(bool misuse) {
  mi_option_set(mi_option_zero_on_free, 0);
  case_visit_racing_remote_frees(misuse);
}
static void test_visit_racing_remote_frees_no_report(void** state) {
  (void)state;
  expect_clean_exit(&case_visit_racing_remote_frees);
  expect_clean_exit(&case_visit_racing_remote_frees_unzeroed);
}
/* With zero on free off a block freed by another thread keeps its contents
   until collected; freed twice before that, the second free finds the
   freeing mark in its trailer. */
static void case_double_free_after_remote_unzeroed(bool misuse) {
  mi_option_set(mi_option_zero_on_free, 0);
  void* keep = mi_malloc(64);
  void* p = mi_malloc(64);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, &free_in_thread, p), 0);
  pthread_join(t, NULL);
  if (misuse) mi_free(p);
  mi_free(keep);
}

/* A freed large block is fenced off and held (secure-large.c): a read or a
   write through a stale pointer faults at once, also after its heap was
   destroyed, and the next block of its size lies elsewhere. */
#define LARGE_UAF_SIZE (300 * 1024)
static void case_uaf_read_large(bool misuse) {
  char* p = (char*)mi_malloc(LARGE_UAF_SIZE);
  memset(p, 'S', LARGE_UAF_SIZE);
  sink = p;
  mi_free(p);
  char* q = (char*)mi_malloc(LARGE_UAF_SIZE);
  memset(q, 'T', LARGE_UAF_SIZE);
  if (misuse) sink = (void*)(uintptr_t)((volatile char*)p)[LARGE_UAF_SIZE / 2];
  mi_free(q);
}
static void case_uaf_write_large_after_heap_destroy(bool misuse) {
  mi_heap_t* heap = mi_heap_new();
  char* p = (char*)mi_heap_malloc(heap, LARGE_UAF_SIZE);
  memset(p, 'S', LARGE_UAF_SIZE);
  sink = p;
  mi_heap_destroy(heap);
  if (misuse) ((volatile char*)p)[10] = 1;
}
/* Every large block handed out reads zero, also once the segments of freed
   ones come back from the quarantine through the cache: their contents went
   with their pages (cached as they were, the next block began with the last
   one's data). */
static void test_large_freed_contents_gone(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  for (int i = 0; i < 100; i++) {
    char* p = (char*)mi_malloc(LARGE_UAF_SIZE);
    assert_non_null(p);
    for (size_t j = 0; j < LARGE_UAF_SIZE; j += 512) {
      if (p[j] != 0) fail_msg("large block %d: byte %zu reads %d", i, j, p[j]);
    }
    memset(p, 'S', LARGE_UAF_SIZE);
    mi_free(p);
  }
}

/* One byte of the canary or the trailer of a block of canary_size bytes. */
static size_t canary_size, canary_flip;
static void case_canary_byte(bool misuse) {
  char* p = (char*)mi_malloc(canary_size);
  memset(p, 'a', canary_size);
  if (misuse) overflow_bytes(p + canary_size + canary_flip, 1);
  mi_free(p);
}
/* the canary follows the data of a large block grown into its room */
static void case_overflow_large_realloc_room(bool misuse) {
  char* p = (char*)mi_malloc(200000);
  p = (char*)mi_realloc(p, 204800);
  p = (char*)mi_realloc(p, 250000);
  overflow_and_free(p, 250000, 1, misuse);
}
/* A changed low byte of the trailer, in a block whose data all equal the
   canary byte: the trailer alone must catch it (decoded with a plain xor it
   moved the data's end inside the block, where the data looked like canary). */
static void case_trailer_low_byte(bool misuse) {
  char* p = (char*)mi_malloc(249); /* a 288-byte block: the trailer at 280 */
  memset(p, p[249], 249);
  if (misuse) overflow_bytes(p + 280, 1);
  mi_free(p);
}
/* a write just before a block lands in the trailer of the block before it */
static void case_underflow(bool misuse) {
  enum { N = 64, SIZE = 48 };
  char* blocks[N];
  for (int i = 0; i < N; i++) blocks[i] = (char*)mi_malloc(SIZE);
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < N; j++) {
      if (blocks[j] + mi_good_size(SIZE) + 8 == blocks[i] || blocks[j] + 64 == blocks[i]) {
        if (misuse) overflow_bytes(blocks[i] - 1, 1);
        for (int k = 0; k < N; k++) mi_free(blocks[k]);
        return;
      }
    }
  }
  fprintf(stderr, "no adjacent blocks found\n");
  exit(3);
}
/* a linear overflow off the end of a large block runs into its guard page */
static void case_guard_page_large(bool misuse) {
  char* p = (char*)mi_malloc(300000);
  volatile char* v = p; /* the compiler must not reason about the overflow */
  for (size_t i = 0; i < 300000; i++) v[i] = 'a';
  if (misuse) {
    for (size_t i = 300000; i < 300000 + 2 * 4096; i++) v[i] = 'b';
  }
  mi_free(p);
}

/* ---- Use after free, corrupted links ------------------------------------------ */

static void case_uaf_write(bool misuse) {
  char* p = (char*)mi_malloc(32);
  mi_free(p);
  if (misuse) p[12] = 'u';
  for (int i = 0; i < 100000; i++) {
    void* q = mi_malloc(32);
    sink = q;
    mi_free(q);
  }
}
/* The first word, where the free-list link goes when the block leaves the
   quarantine: a write to it before then is a write after free too. */
static void case_uaf_write_link_word(bool misuse) {
  uint64_t* p = (uint64_t*)mi_malloc(32);
  mi_free(p);
  if (misuse) p[0] = 0x4141414141414141ULL;
  for (int i = 0; i < 100000; i++) {
    void* q = mi_malloc(32);
    sink = q;
    mi_free(q);
  }
}
static void case_corrupt_link(bool misuse) {
  void* keep = mi_malloc(32);
  char* p = (char*)mi_malloc(32);
  mi_free(p);
  mi_collect(true); /* out of the quarantine, onto the free list */
  if (misuse) memset(p, 0x41, sizeof(void*));
  for (int i = 0; i < 4; i++) sink = mi_malloc(32);
  mi_free(keep);
}

/* ---- Other entry points validate their pointer ------------------------------- */

static void case_realloc_freed(bool misuse) {
  void* p = mi_malloc(64);
  void* q = mi_malloc(64);
  mi_free(p);
  q = mi_realloc(misuse ? p : q, 128);
  sink = q;
}
static void case_realloc_interior(bool misuse) {
  char* p = (char*)mi_malloc(64);
  sink = mi_realloc(misuse ? p + 8 : p, 128);
}
static void case_usable_size_freed(bool misuse) {
  void* p = mi_malloc(64);
  void* q = mi_malloc(64);
  mi_free(p);
  sink = (void*)(uintptr_t)mi_usable_size(misuse ? p : q);
}
static void case_expand_foreign(bool misuse) {
  char local[32];
  void* q = mi_malloc(64);
  sink = mi_expand(misuse ? (void*)local : q, 16);
}
static void case_realloc_aligned_freed(bool misuse) {
  void* p = mi_malloc_aligned(64, 128);
  void* q = mi_malloc_aligned(64, 128);
  mi_free(p);
  sink = mi_realloc_aligned(misuse ? p : q, 256, 128);
}

/* A size that cannot be had does not skip the pointer's validation (read
   through a volatile: the compiler would refuse the constant). */
static volatile size_t huge_size = (size_t)PTRDIFF_MAX + 1;
static void case_realloc_freed_huge_size(bool misuse) {
  void* p = mi_malloc(64);
  void* q = mi_malloc(64);
  mi_free(p);
  sink = mi_realloc(misuse ? p : q, huge_size);
  if (sink != NULL) _exit(4);
}
static void case_reallocarray_freed_overflow(bool misuse) {
  void* p = mi_malloc(64);
  void* q = mi_malloc(64);
  mi_free(p);
  sink = mi_reallocarray(misuse ? p : q, huge_size, 3);
  if (sink != NULL) _exit(4);
}
/* A medium block alone in its page: freed, the page goes back to its
   segment, and the other entry points name a freed block as free does. */
static void case_realloc_freed_page_gone(bool misuse) {
  void* p = mi_malloc(20000);
  void* q = mi_malloc(64);
  mi_free(p);
  sink = mi_realloc(misuse ? p : q, 10);
}
static void case_usable_size_freed_page_gone(bool misuse) {
  void* p = mi_malloc(20000);
  void* q = mi_malloc(64);
  mi_free(p);
  sink = (void*)(uintptr_t)mi_usable_size(misuse ? p : q);
}

/* ---- The error callback sees the violation first ----------------------------- */

static void on_error(int err, void* arg) {
  (void)arg;
  char buf[64];
  snprintf(buf, sizeof(buf), "error callback: %d\n", err);
  if (write(2, buf, strlen(buf)) < 0) _exit(4);
}
static void case_error_callback(bool misuse) {
  mi_register_error(&on_error, NULL);
  case_double_free_small(misuse);
}

MI_CHILD_TEST(test_double_free_small_reported, double_free_small, SIGABRT, "double free detected of block")
MI_CHILD_TEST(test_double_free_large_reported, double_free_large, SIGABRT, "double free detected of block")
MI_CHILD_TEST(test_double_free_huge_reported, double_free_huge, SIGABRT, "double free detected of block")
MI_CHILD_TEST(test_double_free_aligned_past_segment_reported, double_free_aligned_past_segment, SIGABRT,
              "double free detected of block")
MI_CHILD_TEST(test_double_free_segment_released_reported, double_free_segment_released, SIGABRT,
              "double free detected of block")
MI_CHILD_TEST(test_double_free_large_purged_reported, double_free_large_purged, SIGABRT,
              "double free detected of block")
MI_CHILD_TEST(test_double_free_after_remote_unzeroed_reported, double_free_after_remote_unzeroed, SIGABRT,
              "double free detected of block")
MI_CHILD_TEST_WHEN(mi_option_large_quarantine, test_uaf_read_large_faults, uaf_read_large, SIGSEGV,
                   "use-after-free detected in freed large block at")
MI_CHILD_TEST_WHEN(mi_option_large_quarantine, test_uaf_write_large_after_heap_destroy_faults,
                   uaf_write_large_after_heap_destroy, SIGSEGV, "use-after-free detected in freed large block at")
MI_CHILD_TEST(test_double_free_other_thread_reported, double_free_other_thread, SIGABRT,
              "double free detected of block")
MI_CHILD_TEST(test_double_free_after_remote_reported, double_free_after_remote, SIGABRT,
              "double free detected of block")
MI_CHILD_TEST(test_double_free_aligned_after_remote_reported, double_free_aligned_after_remote, SIGABRT,
              "double free detected of block")
MI_CHILD_TEST(test_free_interior_reported, free_interior, SIGABRT, "invalid free detected of interior pointer")
MI_CHILD_TEST(test_free_stack_reported, free_stack, SIGABRT, "invalid free detected of pointer")
MI_CHILD_TEST(test_free_global_reported, free_global, SIGABRT, "invalid free detected of pointer")
MI_CHILD_TEST(test_free_mmap_reported, free_mmap, SIGABRT, "invalid free detected of pointer")
MI_CHILD_TEST(test_free_aligned_interior_reported, free_aligned_interior, SIGABRT,
              "invalid free detected of interior pointer")
MI_CHILD_TEST(test_free_segment_header_reported, free_segment_header, SIGABRT, "invalid free detected of pointer")
MI_CHILD_TEST(test_free_huge_interior_reported, free_huge_interior, SIGABRT,
              "invalid free detected of interior pointer")
MI_CHILD_TEST(test_free_aligned_block_start_reported, free_aligned_block_start, SIGABRT,
              "invalid free detected of pointer")
MI_CHILD_TEST(test_usable_size_aligned_block_start_reported, usable_size_aligned_block_start, SIGABRT,
              "invalid usable_size detected of pointer")
MI_CHILD_TEST(test_free_large_aligned_block_start_reported, free_large_aligned_block_start, SIGABRT,
              "invalid free detected of pointer")
MI_CHILD_TEST(test_free_aligned_block_start_size0_reported, free_aligned_block_start_size0, SIGABRT,
              "invalid free detected of pointer")
MI_CHILD_TEST(test_double_free_aligned_at_chunk_start_reported, double_free_aligned_at_chunk_start, SIGABRT,
              "double free detected of block")
MI_CHILD_TEST(test_free_aligned_at_chunk_start_block_start_reported, free_aligned_at_chunk_start_block_start, SIGABRT,
              "invalid free detected of pointer")
MI_CHILD_TEST(test_double_free_aligned_untagged_reported, double_free_aligned_untagged, SIGABRT,
              "double free detected of block")
MI_CHILD_TEST(test_free_aligned_untagged_block_start_reported, free_aligned_untagged_block_start, SIGABRT,
              "invalid free detected of pointer")
MI_CHILD_TEST(test_free_aligned_untagged_interior_reported, free_aligned_untagged_interior, SIGABRT,
              "invalid free detected of interior pointer")
MI_CHILD_TEST(test_double_free_large_aligned_reused_reported_invalid, double_free_large_aligned_reused, SIGABRT,
              "invalid free detected of pointer")
MI_CHILD_TEST(test_overflow_1_small_reported, overflow_1_small, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_1_exact_class_reported, overflow_1_exact_class, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_nul_reported, overflow_nul, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_16_small_reported, overflow_16_small, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_1_medium_reported, overflow_1_medium, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_1_128k_reported, overflow_1_128k, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_1_large_reported, overflow_1_large, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_16_large_reported, overflow_16_large, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_after_realloc_reported, overflow_after_realloc, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_after_shrink_reported, overflow_after_shrink, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_aligned_reported, overflow_aligned, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_aligned_past_segment_reported, overflow_aligned_past_segment, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_huge_to_guard_faults, overflow_huge_to_guard, SIGSEGV,
              "heap buffer overflow into a guard page detected at")
MI_CHILD_TEST(test_overflow_aligned_past_segment_to_guard_faults, overflow_aligned_past_segment_to_guard, SIGSEGV,
              "heap buffer overflow into a guard page detected at")
MI_CHILD_TEST(test_overflow_reported_by_realloc, overflow_checked_by_realloc, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_seen_by_visit, overflow_seen_by_visit, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_trailer_seen_by_visit, trailer_seen_by_visit, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_zeros_reported, overflow_zeros, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_zeros_zeroed_reported, overflow_zeros_zeroed, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_zeros_realloc_reported, overflow_zeros_realloc, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_large_realloc_room_reported, overflow_large_realloc_room, SIGABRT,
              "heap buffer overflow detected in block")
MI_CHILD_TEST(test_trailer_low_byte_reported, trailer_low_byte, SIGABRT, "heap buffer overflow detected in block")
/* Every byte of the canary and of the trailer is watched, for every canary
   length: 0 to 16 bytes, and longer slack of which the first 16 bytes are
   canary. The canary's words are stored and checked without branches on its
   length, so each length is a case of its own. Blocks of 16, 64 and 288
   bytes (requests plus the 8-byte trailer round up to them; the last class
   is 32 bytes wide, so its slack reaches 31 bytes). */
static void test_overflow_every_canary_byte_reported(void** state) {
  (void)state;
  static const size_t classes[][2] = {{1, 8}, {41, 56}, {249, 280}}; /* request sizes; the last: the trailer's offset */
  for (size_t c = 0; c < sizeof(classes) / sizeof(classes[0]); c++) {
    size_t trailer_at = classes[c][1];
    for (size_t size = classes[c][0]; size <= trailer_at; size++) {
      size_t slack = trailer_at - size;
      for (size_t k = 0; k < slack + 8; k++) {
        if (k >= 16 && k < slack) continue; /* slack past the canary: not watched (docs/secure-mode.md) */
        canary_size = size;
        canary_flip = k;
        expect(&case_canary_byte, SIGABRT, "heap buffer overflow detected in block");
      }
    }
  }
}
/* A string over-read (strlen of a block filled to its size, unterminated)
   stops after at most two bytes, for every size of the small classes: one
   byte of canary, or of the trailer where the data ends at it, plus one of
   the trailer where one canary byte is left (the zero byte in the canary
   and the trailer, page/secure-block.h). It read 22-24 bytes past a 16-byte block
   before. Its twin, the NUL terminator written one past the data, is
   reported at every size. */
static size_t nul_size;
static void case_nul_past_data(bool misuse) {
  char* p = (char*)mi_malloc(nul_size);
  memset(p, 'a', nul_size);
  if (misuse) p[nul_size] = 0;
  sink = p;
  mi_free(p);
}
static void test_string_overread_at_most_two_bytes(void** state) {
  (void)state;
  size_t most = 0;
  for (size_t size = 1; size <= 1100; size++) {
    char* p = (char*)mi_malloc(size);
    assert_int_equal(mi_usable_size(p), size);
    memset(p, 'a', size);
    size_t past = strlen(p) - size;
    if (past > 2) fail_msg("strlen read %zu bytes past a block of %zu", past, size);
    if (past > most) most = past;
    mi_free(p);
  }
  assert_int_equal(most, 2); /* the slack of one byte exists among these sizes */
  for (nul_size = 1; nul_size <= 100; nul_size++) {
    expect(&case_nul_past_data, SIGABRT, "heap buffer overflow detected in block");
  }
}
MI_CHILD_TEST(test_underflow_reported_as_overflow, underflow, SIGABRT, "heap buffer overflow detected in block")
MI_CHILD_TEST(test_overflow_into_large_guard_page_faults, guard_page_large, SIGSEGV,
              "heap buffer overflow into a guard page detected at")
MI_CHILD_TEST_WHEN(mi_option_zero_on_free, test_uaf_write_reported, uaf_write, SIGABRT,
                   "use-after-free write detected in block")
MI_CHILD_TEST_WHEN(mi_option_zero_on_free, test_uaf_write_link_word_reported, uaf_write_link_word, SIGABRT,
                   "use-after-free write detected in block")
MI_CHILD_TEST(test_corrupt_link_reported, corrupt_link, SIGABRT, "corrupted free list detected at")
MI_CHILD_TEST(test_realloc_freed_reported, realloc_freed, SIGABRT, "use of a freed block detected at")
MI_CHILD_TEST(test_realloc_interior_reported, realloc_interior, SIGABRT, "invalid realloc detected of pointer")
MI_CHILD_TEST(test_usable_size_freed_reported, usable_size_freed, SIGABRT, "use of a freed block detected at")
MI_CHILD_TEST(test_expand_foreign_reported, expand_foreign, SIGABRT, "invalid usable_size detected of pointer")
MI_CHILD_TEST(test_realloc_aligned_freed_reported, realloc_aligned_freed, SIGABRT, "use of a freed block detected at")
MI_CHILD_TEST(test_realloc_freed_huge_size_reported, realloc_freed_huge_size, SIGABRT,
              "use of a freed block detected at")
MI_CHILD_TEST(test_reallocarray_freed_overflow_reported, reallocarray_freed_overflow, SIGABRT,
              "use of a freed block detected at")
MI_CHILD_TEST(test_realloc_freed_page_gone_reported, realloc_freed_page_gone, SIGABRT,
              "use of a freed block detected at")
MI_CHILD_TEST(test_usable_size_freed_page_gone_reported, usable_size_freed_page_gone, SIGABRT,
              "use of a freed block detected at")

static void test_error_callback_gets_efault_with_report(void** state) {
  (void)state;
  char err[4096];
  int status = run_child(&case_error_callback, true, err, sizeof(err));
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
  char* report = strstr(err, "mimalloc: error: double free detected of block");
  char* callback = strstr(err, "error callback: 14\n"); /* EFAULT */
  assert_non_null(report);
  assert_non_null(callback);
}

/* secure mode keeps the API: usable size is exactly the request */
static void test_usable_size_equals_request(void** state) {
  (void)state;
  for (size_t n = 1; n < 5000; n += 7) {
    void* p = mi_malloc(n);
    assert_int_equal(mi_usable_size(p), n);
    mi_free(p);
  }
}

/* A request of exactly 128 KiB plus the trailer is a medium block (the
   secure builds' extra bin), not a 4 MiB segment of its own: a medium page
   holds three, so of three such blocks two share a segment. */
static void test_128k_is_medium(void** state) {
  (void)state;
  void* p[3];
  for (int i = 0; i < 3; i++) {
    p[i] = mi_malloc(128 * 1024);
    assert_non_null(p[i]);
    assert_int_equal(mi_usable_size(p[i]), 128 * 1024);
  }
  int shared = 0;
  for (int i = 0; i < 3; i++) {
    for (int j = i + 1; j < 3; j++) shared += (((uintptr_t)p[i] >> 22) == ((uintptr_t)p[j] >> 22));
  }
  assert_true(shared > 0);
  for (int i = 0; i < 3; i++) mi_free(p[i]);
}

/* A large block grown by realloc gets room to grow in place (it sits against
   its guard page otherwise, and each growth past its last page copied it):
   after the first move, growing it further stays in place, with its size
   exact and its contents kept. */
static void test_realloc_large_grows_in_place_after_first_move(void** state) {
  (void)state;
  uint8_t* p = (uint8_t*)mi_malloc(200000);
  assert_non_null(p);
  for (size_t i = 0; i < 200000; i++) p[i] = (uint8_t)i;
  uint8_t* q = (uint8_t*)mi_realloc(p, 204800);
  assert_non_null(q);
  uint8_t* r = (uint8_t*)mi_realloc(q, 300000);
  assert_ptr_equal(r, q);
  assert_int_equal(mi_usable_size(r), 300000);
  for (size_t i = 0; i < 200000; i++) {
    if (r[i] != (uint8_t)i) fail_msg("byte %zu changed", i);
  }
  mi_free(r);
}

/* Zero on free: a freed block reads zero, but for its first word (the
   free-list link), on every zeroing path: inline (small), memset, and the
   non-temporal stores of blocks above 8 KiB. A second block of the size keeps
   the page in use and purging is off, so the memory is not zero merely
   because it went back to the OS. The control: with the option off, the
   contents stay. (Reads freed memory on purpose, through a volatile global.) */
static uint8_t* volatile freed_probe;
static size_t nonzero_after_free(size_t size) {
  uint8_t* keep = (uint8_t*)mi_malloc(size);
  freed_probe = (uint8_t*)mi_malloc(size);
  memset(freed_probe, 0xAB, size);
  mi_free(freed_probe);
  size_t nonzero = 0;
  for (size_t i = sizeof(void*); i < size; i++) nonzero += (freed_probe[i] != 0);
  mi_free(keep);
  return nonzero;
}
static const size_t zero_on_free_sizes[] = {100, 2000, 20000, 128 * 1024};
/* the control runs in a child: a block freed unzeroed and handed out again
   once the option is back on is rightly reported as written after its free,
   which in this process would fail a later test (it did, one run in 60) */
static void case_free_zero_on_free_off(bool misuse) {
  (void)misuse;
  mi_option_set(mi_option_purge_delay, -1);
  mi_option_set(mi_option_zero_on_free, 0);
  for (size_t k = 0; k < sizeof(zero_on_free_sizes) / sizeof(zero_on_free_sizes[0]); k++) {
    if (nonzero_after_free(zero_on_free_sizes[k]) == 0) exit(1);
  }
}
static void test_zero_on_free_freed_block_zeroed_only_when_on(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  long delay = mi_option_get(mi_option_purge_delay);
  mi_option_set(mi_option_purge_delay, -1);
  for (size_t k = 0; k < sizeof(zero_on_free_sizes) / sizeof(zero_on_free_sizes[0]); k++) {
    assert_int_equal(nonzero_after_free(zero_on_free_sizes[k]), 0);
  }
  mi_option_set(mi_option_purge_delay, delay);
  expect_clean_exit(&case_free_zero_on_free_off);
}

/* The old block of a reallocation that moved is zeroed as any freed block
   (in the cache, not with streaming stores: it was just copied from). */
static size_t nonzero_after_realloc_move(size_t size) {
  uint8_t* keep = (uint8_t*)mi_malloc(size);
  freed_probe = (uint8_t*)mi_malloc(size);
  memset(freed_probe, 0xAB, size);
  uint8_t* moved = (uint8_t*)mi_realloc(freed_probe, 3 * size);
  assert_non_null(moved);
  assert_true(moved != freed_probe);
  for (size_t i = 0; i < size; i++) assert_int_equal(moved[i], 0xAB);
  size_t nonzero = 0;
  for (size_t i = sizeof(void*); i < size; i++) nonzero += (freed_probe[i] != 0);
  mi_free(moved);
  mi_free(keep);
  return nonzero;
}
static const size_t realloc_move_sizes[] = {2000, 20000, 40000};
/* the control, in a child (blocks freed unzeroed would be reported when
   handed out with the option on again): the old contents stay */
static void case_realloc_move_zero_on_free_off(bool misuse) {
  (void)misuse;
  mi_option_set(mi_option_purge_delay, -1);
  mi_option_set(mi_option_zero_on_free, 0);
  for (size_t k = 0; k < sizeof(realloc_move_sizes) / sizeof(realloc_move_sizes[0]); k++) {
    if (nonzero_after_realloc_move(realloc_move_sizes[k]) == 0) exit(1);
  }
}
static void test_realloc_moved_old_block_reads_zero(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  long delay = mi_option_get(mi_option_purge_delay);
  mi_option_set(mi_option_purge_delay, -1);
  for (size_t k = 0; k < sizeof(realloc_move_sizes) / sizeof(realloc_move_sizes[0]); k++) {
    assert_int_equal(nonzero_after_realloc_move(realloc_move_sizes[k]), 0);
  }
  mi_option_set(mi_option_purge_delay, delay);
  expect_clean_exit(&case_realloc_move_zero_on_free_off);
}

/* With zero on free, a block handed out again reads zero up to its size:
   the free-list link its first word held is cleared too (it would show the
   program an encoded pointer, a clue to the page's keys). Blocks cycle
   through the quarantine and the free list first. */
static void test_handed_out_block_reads_zero(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  enum { N = 200 };
  static void* blocks[N];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++) {
      blocks[i] = mi_malloc(32);
      const uint8_t* b = (const uint8_t*)blocks[i];
      for (size_t k = 0; k < 32; k++) assert_int_equal(b[k], 0);
      memset(blocks[i], 0xAB, 32);
    }
    for (int i = 0; i < N; i++) mi_free(blocks[i]);
  }
}

/* Delayed reuse (MIMALLOC_SECURE_QUARANTINE, on at the full level): a small
   block its owner freed waits in the thread's quarantine, so the next
   allocation of its size is another block, however often it is tried (a
   block leaves the quarantine only when a later free takes its slot). With
   the option off (the light level) the block goes straight back to its
   page's free list, and the next allocation of its size is that block.
   (A heap of its own with no guarded samples: a sampled block is another.) */
static int freed_then_allocated_same(size_t size, int rounds) {
  mi_heap_t* heap = mi_heap_new();
  assert_non_null(heap);
  mi_heap_guarded_set_sample_rate(heap, 0, 0);
  int same = 0;
  for (int i = 0; i < rounds; i++) {
    void* p = mi_heap_malloc(heap, size);
    assert_non_null(p);
    mi_free(p);
    void* q = mi_heap_malloc(heap, size);
    assert_non_null(q);
    same += (q == p);
    mi_free(q);
  }
  mi_heap_delete(heap);
  return same;
}

static void test_quarantine_on_freed_block_not_handed_out_next(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_secure_quarantine);
  assert_int_equal(freed_then_allocated_same(40, 200), 0);
}

static void test_quarantine_off_freed_block_handed_out_next(void** state) {
  (void)state;
  long before = mi_option_get(mi_option_secure_quarantine);
  mi_collect(true); /* the quarantine empty: what comes back is the page's own list */
  mi_option_set(mi_option_secure_quarantine, 0);
  int same = freed_then_allocated_same(40, 200);
  mi_option_set(mi_option_secure_quarantine, before);
  assert_int_equal(same, 200);
}

/* A zeroing allocation of a reused block: with zero on free, the reuse check
   found it zero and it is handed out as it is; with zero on free off the
   block holds what its last user wrote, and must be zeroed. Both read zero,
   at sizes up to the checked 8 KiB and past them (sampled, so zeroed). */
static size_t nonzero_in_reused_zalloc(size_t size) {
  enum { N = 100 }; /* more than the quarantine holds: blocks come back */
  static void* blocks[N];
  size_t nonzero = 0;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++) {
      uint8_t* b = (uint8_t*)(round == 0 ? mi_malloc(size) : mi_zalloc(size));
      assert_non_null(b);
      if (round > 0) {
        for (size_t k = 0; k < size; k++) nonzero += (b[k] != 0);
      }
      memset(b, 0xAB, size);
      blocks[i] = b;
    }
    for (int i = 0; i < N; i++) mi_free(blocks[i]);
  }
  return nonzero;
}
static const size_t zalloc_sizes[] = {24, 100, 1000, 8000, 20000};
/* in a child: the blocks freed unzeroed stay on their pages' lists, and a
   later malloc with the option on again would report them */
static void case_zalloc_reused_zero_on_free_off(bool misuse) {
  (void)misuse;
  mi_option_set(mi_option_zero_on_free, 0);
  for (size_t k = 0; k < sizeof(zalloc_sizes) / sizeof(zalloc_sizes[0]); k++) {
    if (nonzero_in_reused_zalloc(zalloc_sizes[k]) != 0) exit(1);
  }
}
static void test_zalloc_reused_block_reads_zero(void** state) {
  (void)state;
  for (size_t k = 0; k < sizeof(zalloc_sizes) / sizeof(zalloc_sizes[0]); k++) {
    assert_int_equal(nonzero_in_reused_zalloc(zalloc_sizes[k]), 0);
  }
  expect_clean_exit(&case_zalloc_reused_zero_on_free_off);
}

/* Pages emptied while zero on free was off keep their blocks' contents; a
   page set up on that memory once the option is on again must start zeroed,
   or its blocks would be reported as written after free when handed out.
   One block stays live so the segment stays; the 48-byte pages go back to
   it as they empty, unpurged, and the pages of 1000-byte blocks set up next
   take their areas first (dirty memory before clean). Run in a child: a
   missing zeroing aborts it (seen with the memset in _mi_secure_page_init
   taken out). A forced collection would purge the areas and zero them. */
static void case_page_after_zero_on_free_off(bool misuse) {
  (void)misuse;
  enum { SMALL = 3000, BIG = 200 };
  static void* blocks[SMALL];
  mi_option_set(mi_option_purge_delay, -1); /* a purge would zero the area too */
  mi_option_set(mi_option_zero_on_free, 0);
  void* keep = mi_malloc(48);
  for (int i = 0; i < SMALL; i++) {
    blocks[i] = mi_malloc(48);
    memset(blocks[i], 0xAB, 48);
  }
  for (int i = 0; i < SMALL; i++) mi_free(blocks[i]);
  mi_option_set(mi_option_zero_on_free, 1);
  for (int i = 0; i < BIG; i++) blocks[i] = mi_malloc(1000); /* each checked to be zero */
  for (int i = 0; i < BIG; i++) mi_free(blocks[i]);
  mi_free(keep);
}
static void test_page_after_zero_on_free_off_starts_zeroed(void** state) {
  (void)state;
  MI_SKIP_UNLESS_ON(mi_option_zero_on_free);
  expect_clean_exit(&case_page_after_zero_on_free_off);
}

/* The first small page of a segment is shortened by the segment header and
   may hold one block of the larger small sizes: such a block is zeroed too
   (found by the fuzz harness: its free-list link was left in it). A new
   thread's first allocation of a size takes a fresh page, usually the first
   of a segment. */
static void* zalloc_in_thread(void* arg) {
  size_t size = (size_t)(uintptr_t)arg;
  uint8_t* p = (uint8_t*)mi_zalloc(size);
  size_t nonzero = 0;
  for (size_t i = 0; i < size; i++) nonzero += (p[i] != 0);
  mi_free(p);
  return (void*)(uintptr_t)nonzero;
}
static void test_zalloc_one_block_page_reads_zero(void** state) {
  (void)state;
  static const size_t sizes[] = {4500, 5500, 6160, 7000, 8184};
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    pthread_t t;
    void* nonzero;
    assert_int_equal(pthread_create(&t, NULL, &zalloc_in_thread, (void*)(uintptr_t)sizes[k]), 0);
    pthread_join(t, &nonzero);
    assert_int_equal((uintptr_t)nonzero, 0);
  }
}

int main(void) {
  mi_child_save_signals();
  /* A sampled guard-page block reports an overflow past its slack on its
     guard page, as it happens (SIGSEGV, another report), not at free; and
     every child inherits the parent's sampling countdown, so one unlucky
     countdown failed several overflow cases in a row (when a guarded
     block's slack had no canary yet). The guarded blocks have their own
     tests (tests/guard). */
  mi_option_set(mi_option_guarded_sample_rate, 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_double_free_small_reported),
      cmocka_unit_test(test_double_free_large_reported),
      cmocka_unit_test(test_double_free_huge_reported),
      cmocka_unit_test(test_double_free_aligned_past_segment_reported),
      cmocka_unit_test(test_double_free_aligned_at_chunk_start_reported),
      cmocka_unit_test(test_free_aligned_at_chunk_start_block_start_reported),
      cmocka_unit_test(test_double_free_aligned_untagged_reported),
      cmocka_unit_test(test_free_aligned_untagged_block_start_reported),
      cmocka_unit_test(test_free_aligned_untagged_interior_reported),
      cmocka_unit_test(test_double_free_segment_released_reported),
      cmocka_unit_test(test_double_free_large_purged_reported),
      cmocka_unit_test(test_double_free_other_thread_reported),
      cmocka_unit_test(test_double_free_after_remote_reported),
      cmocka_unit_test(test_double_free_aligned_after_remote_reported),
      cmocka_unit_test(test_free_interior_reported),
      cmocka_unit_test(test_free_stack_reported),
      cmocka_unit_test(test_free_global_reported),
      cmocka_unit_test(test_free_mmap_reported),
      cmocka_unit_test(test_free_aligned_interior_reported),
      cmocka_unit_test(test_free_segment_header_reported),
      cmocka_unit_test(test_free_huge_interior_reported),
      cmocka_unit_test(test_free_aligned_block_start_reported),
      cmocka_unit_test(test_usable_size_aligned_block_start_reported),
      cmocka_unit_test(test_free_large_aligned_block_start_reported),
      cmocka_unit_test(test_free_aligned_block_start_size0_reported),
      cmocka_unit_test(test_double_free_large_aligned_reused_reported_invalid),
      cmocka_unit_test(test_overflow_1_small_reported),
      cmocka_unit_test(test_overflow_1_exact_class_reported),
      cmocka_unit_test(test_overflow_nul_reported),
      cmocka_unit_test(test_overflow_16_small_reported),
      cmocka_unit_test(test_overflow_1_medium_reported),
      cmocka_unit_test(test_overflow_1_128k_reported),
      cmocka_unit_test(test_overflow_1_large_reported),
      cmocka_unit_test(test_overflow_16_large_reported),
      cmocka_unit_test(test_overflow_after_realloc_reported),
      cmocka_unit_test(test_overflow_after_shrink_reported),
      cmocka_unit_test(test_overflow_aligned_reported),
      cmocka_unit_test(test_overflow_aligned_past_segment_reported),
      cmocka_unit_test(test_overflow_aligned_past_segment_to_guard_faults),
      cmocka_unit_test(test_overflow_huge_to_guard_faults),
      cmocka_unit_test(test_overflow_reported_by_realloc),
      cmocka_unit_test(test_overflow_seen_by_visit),
      cmocka_unit_test(test_visit_racing_remote_frees_no_report),
      cmocka_unit_test(test_double_free_after_remote_unzeroed_reported),
      cmocka_unit_test(test_uaf_read_large_faults),
      cmocka_unit_test(test_uaf_write_large_after_heap_destroy_faults),
      cmocka_unit_test(test_large_freed_contents_gone),
      cmocka_unit_test(test_trailer_seen_by_visit),
      cmocka_unit_test(test_overflow_zeros_reported),
      cmocka_unit_test(test_overflow_zeros_zeroed_reported),
      cmocka_unit_test(test_overflow_zeros_realloc_reported),
      cmocka_unit_test(test_overflow_every_canary_byte_reported),
      cmocka_unit_test(test_string_overread_at_most_two_bytes),
      cmocka_unit_test(test_overflow_large_realloc_room_reported),
      cmocka_unit_test(test_trailer_low_byte_reported),
      cmocka_unit_test(test_underflow_reported_as_overflow),
      cmocka_unit_test(test_overflow_into_large_guard_page_faults),
      cmocka_unit_test(test_uaf_write_reported),
      cmocka_unit_test(test_uaf_write_link_word_reported),
      cmocka_unit_test(test_corrupt_link_reported),
      cmocka_unit_test(test_realloc_freed_reported),
      cmocka_unit_test(test_realloc_interior_reported),
      cmocka_unit_test(test_usable_size_freed_reported),
      cmocka_unit_test(test_expand_foreign_reported),
      cmocka_unit_test(test_realloc_aligned_freed_reported),
      cmocka_unit_test(test_realloc_freed_huge_size_reported),
      cmocka_unit_test(test_reallocarray_freed_overflow_reported),
      cmocka_unit_test(test_realloc_freed_page_gone_reported),
      cmocka_unit_test(test_usable_size_freed_page_gone_reported),
      cmocka_unit_test(test_error_callback_gets_efault_with_report),
      cmocka_unit_test(test_usable_size_equals_request),
      cmocka_unit_test(test_zalloc_one_block_page_reads_zero),
      cmocka_unit_test(test_zalloc_reused_block_reads_zero),
      cmocka_unit_test(test_128k_is_medium),
      cmocka_unit_test(test_realloc_large_grows_in_place_after_first_move),
      cmocka_unit_test(test_zero_on_free_freed_block_zeroed_only_when_on),
      cmocka_unit_test(test_realloc_moved_old_block_reads_zero),
      cmocka_unit_test(test_page_after_zero_on_free_off_starts_zeroed),
      cmocka_unit_test(test_handed_out_block_reads_zero),
      cmocka_unit_test(test_quarantine_on_freed_block_not_handed_out_next),
      cmocka_unit_test(test_quarantine_off_freed_block_handed_out_next),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
