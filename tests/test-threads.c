/* Thread churn: thousands of short-lived threads that allocate a little and
   leave blocks behind that are freed after their owner exited; commit must
   stay flat. Heaps created/used/deleted/destroyed by several threads at once. */
#define _GNU_SOURCE
#include "testutil.h"

#include <pthread.h>

#define WAVES 400
#define WAVE_SIZE 8 /* 3200 threads in total */
#define LEFT_PER_THREAD 3
#define COOKIE 0x7e57b10cda7a5eedULL

/* a block records its size and a cookie in its first 16 bytes and a pattern
   in (up to) the next 240 bytes and its last byte */
static void mark(uint8_t* p, size_t size) {
  uint64_t hdr[2] = {(uint64_t)size, (uint64_t)(uintptr_t)p ^ (uint64_t)size ^ COOKIE};
  memcpy(p, hdr, sizeof(hdr));
  size_t lim = size - 1 < 256 ? size - 1 : 256;
  for (size_t i = 16; i < lim; i++) p[i] = (uint8_t)((uintptr_t)p + i);
  p[size - 1] = (uint8_t)(size * 3 + 1);
}

static bool verify(const uint8_t* p) {
  uint64_t hdr[2];
  memcpy(hdr, p, sizeof(hdr));
  size_t size = (size_t)hdr[0];
  if ((hdr[1] ^ COOKIE ^ (uint64_t)size) != (uint64_t)(uintptr_t)p) {
    fprintf(stderr, "block %p: corrupt header\n", (const void*)p);
    return false;
  }
  size_t lim = size - 1 < 256 ? size - 1 : 256;
  for (size_t i = 16; i < lim; i++)
    if (p[i] != (uint8_t)((uintptr_t)p + i)) {
      fprintf(stderr, "block %p (size %zu): corrupt at %zu\n", (const void*)p, size, i);
      return false;
    }
  if (p[size - 1] != (uint8_t)(size * 3 + 1)) {
    fprintf(stderr, "block %p (size %zu): corrupt last byte\n", (const void*)p, size);
    return false;
  }
  if (mi_usable_size(p) < size) {
    fprintf(stderr, "block %p (size %zu): usable size is %zu\n", (const void*)p, size, mi_usable_size(p));
    return false;
  }
  return true;
}

static void checked_free(void* p) {
  if (p == NULL) return;
  TU_CHECK(verify((const uint8_t*)p));
  mi_free(p);
}

static size_t small_rand_size(uint64_t* rng) {
  uint64_t r = tu_rand(rng) % 100;
  if (r < 85) return 17 + (size_t)(tu_rand(rng) % 1000); /* > 16: header + last byte */
  if (r < 99) return 1024 + (size_t)(tu_rand(rng) % (63 * 1024));
  return 128 * 1024 + (size_t)(tu_rand(rng) % (256 * 1024));
}

/* ---------------------------------------------------------------------------- */
/* leftovers[w % 2][t][k]: blocks left behind by thread t of wave w */
static void* leftovers[2][WAVE_SIZE][LEFT_PER_THREAD];

typedef struct churn_arg_s {
  int wave, t;
} churn_arg_t;

static void* churn_thread(void* argp) {
  churn_arg_t* a = (churn_arg_t*)argp;
  uint64_t rng = (uint64_t)a->wave * 1000003u + (uint64_t)a->t;
  /* free the blocks that the same slot of the previous wave left (its owner exited) */
  if (a->wave > 0) {
    void** prev = leftovers[(a->wave - 1) % 2][a->t];
    for (int k = 0; k < LEFT_PER_THREAD; k += 2) { /* the others are freed by the main thread */
      checked_free(prev[k]);
      prev[k] = NULL;
    }
  }
  enum { N = 40 };
  void* blocks[N];
  for (int i = 0; i < N; i++) {
    size_t size = small_rand_size(&rng);
    if (a->t == 0 && a->wave % 50 == 7 && i == 0) size = 1 * MiB + 12345; /* an occasional large one */
    blocks[i] = (i % 7 == 3) ? mi_zalloc(size) : mi_malloc(size);
    TU_CHECK(blocks[i] != NULL);
    if (blocks[i] == NULL) return NULL;
    mark((uint8_t*)blocks[i], size);
  }
  /* free most of them (in a scrambled order), leave a few behind */
  for (int i = 0; i < N; i++) {
    int j = (i * 17) % N;
    if (j < LEFT_PER_THREAD) continue;
    checked_free(blocks[j]);
  }
  for (int k = 0; k < LEFT_PER_THREAD; k++) leftovers[a->wave % 2][a->t][k] = blocks[k];
  return NULL;
}

static void test_thread_churn_blocks_intact_commit_flat(void** state) {
  (void)state;
  size_t commit_w100 = 0, rss_w100 = 0;
  for (int w = 0; w < WAVES; w++) {
    pthread_t th[WAVE_SIZE];
    churn_arg_t args[WAVE_SIZE];
    for (int t = 0; t < WAVE_SIZE; t++) {
      args[t].wave = w;
      args[t].t = t;
      assert_int_equal(pthread_create(&th[t], NULL, churn_thread, &args[t]), 0);
    }
    for (int t = 0; t < WAVE_SIZE; t++) assert_int_equal(pthread_join(th[t], NULL), 0);
    /* the main thread frees the remaining leftovers of the previous wave */
    if (w > 0) {
      for (int t = 0; t < WAVE_SIZE; t++)
        for (int k = 1; k < LEFT_PER_THREAD; k += 2) {
          checked_free(leftovers[(w - 1) % 2][t][k]);
          leftovers[(w - 1) % 2][t][k] = NULL;
        }
    }
    if (atomic_load(&tu_failures) != 0) fail_msg("wave %d: %ld checks failed", w, atomic_load(&tu_failures));
    if (w == 100) {
      mi_collect(true);
      commit_w100 = tu_commit();
      rss_w100 = tu_rss();
    }
  }
  mi_collect(true);
  const size_t commit_end = tu_commit();
  const size_t rss_end = tu_rss();
  /* free the last wave's leftovers */
  for (int t = 0; t < WAVE_SIZE; t++)
    for (int k = 0; k < LEFT_PER_THREAD; k++) {
      checked_free(leftovers[(WAVES - 1) % 2][t][k]);
      leftovers[(WAVES - 1) % 2][t][k] = NULL;
    }
  assert_int_equal(atomic_load(&tu_failures), 0);
  print_message("%d threads: commit after wave 100: %zu KiB, after wave %d: %zu KiB; rss %zu KiB -> %zu KiB\n",
                WAVES * WAVE_SIZE, commit_w100 / KiB, WAVES, commit_end / KiB, rss_w100 / KiB, rss_end / KiB);
  if (commit_end > commit_w100 + 8 * MiB)
    fail_msg("commit grew from %zu KiB (wave 100) to %zu KiB (wave %d): memory of exited threads is not reused",
             commit_w100 / KiB, commit_end / KiB, WAVES);
}

/* ---------------------------------------------------------------------------- */
#define HEAP_THREADS 4
#define HEAP_ITERS 120
#define HEAP_BLOCKS 200
#define XSLOTS 256
static _Atomic(uintptr_t) xslots[XSLOTS];

static void* heap_thread(void* argp) {
  int id = (int)(intptr_t)argp;
  uint64_t rng = 0xabcdefu + (uint64_t)id * 31337u;
  void* blocks[HEAP_BLOCKS];
  for (int it = 0; it < HEAP_ITERS; it++) {
    mi_heap_t* h = mi_heap_new();
    TU_CHECK(h != NULL);
    if (h == NULL) return NULL;
    const bool as_default = (it % 4 == 1);
    mi_heap_t* prev = NULL;
    if (as_default) prev = mi_heap_set_default(h);
    for (int i = 0; i < HEAP_BLOCKS; i++) {
      size_t size = small_rand_size(&rng);
      if (i == 0 && it % 10 == 5) size = 4 * MiB + 100; /* huge */
      if (as_default) blocks[i] = (i % 2) ? mi_malloc(size) : mi_zalloc(size);
      else
        blocks[i] = (i % 3 == 0) ? mi_heap_zalloc(h, size)
                                 : (i % 3 == 1 ? mi_heap_malloc(h, size) : mi_heap_malloc_aligned(h, size, 64));
      TU_CHECK(blocks[i] != NULL);
      if (blocks[i] == NULL) return NULL;
      TU_CHECK(mi_heap_contains_block(h, blocks[i]));
      mark((uint8_t*)blocks[i], size);
    }
    if (as_default) TU_CHECK(mi_heap_set_default(prev) == h);
    /* free a third locally while the heap lives */
    for (int i = 0; i < HEAP_BLOCKS; i += 3) {
      checked_free(blocks[i]);
      blocks[i] = NULL;
    }
    /* some realloc within the heap */
    for (int i = 1; i < HEAP_BLOCKS; i += 9) {
      size_t nsize = small_rand_size(&rng);
      void* q = mi_heap_realloc(h, blocks[i], nsize);
      TU_CHECK(q != NULL);
      if (q == NULL) continue;
      mark((uint8_t*)q, nsize);
      blocks[i] = q;
    }
    if (it % 3 == 0) {
      /* destroy: everything goes at once (none of its blocks were handed out) */
      mi_heap_destroy(h);
      continue;
    }
    /* hand some blocks to other threads (freed there, possibly after the delete) */
    for (int i = 1; i < HEAP_BLOCKS; i += 4) {
      if (blocks[i] == NULL) continue;
      size_t j = (size_t)(tu_rand(&rng) % XSLOTS);
      uintptr_t got = atomic_exchange(&xslots[j], (uintptr_t)blocks[i]);
      blocks[i] = NULL;
      checked_free((void*)got);
    }
    mi_heap_collect(h, it % 2 == 0);
    mi_heap_delete(h);
    /* the remaining blocks stay valid after the delete */
    for (int i = 0; i < HEAP_BLOCKS; i++) {
      if (blocks[i] == NULL) continue;
      TU_CHECK(verify((const uint8_t*)blocks[i]));
      if (i % 2 == 0) {
        checked_free(blocks[i]);
        blocks[i] = NULL;
      }
    }
    /* the rest are freed while new heaps are in use */
    for (int i = 0; i < HEAP_BLOCKS; i++) checked_free(blocks[i]);
    if (atomic_load(&tu_failures) > 10) break;
  }
  return NULL;
}

static void test_heaps_under_load_blocks_intact_through_delete(void** state) {
  (void)state;
  pthread_t th[HEAP_THREADS];
  for (int t = 0; t < HEAP_THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, heap_thread, (void*)(intptr_t)t), 0);
  for (int t = 0; t < HEAP_THREADS; t++) assert_int_equal(pthread_join(th[t], NULL), 0);
  for (size_t j = 0; j < XSLOTS; j++) checked_free((void*)atomic_exchange(&xslots[j], 0));
  assert_int_equal(atomic_load(&tu_failures), 0);
  mi_collect(true);
}

int main(void) {
  mi_process_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thread_churn_blocks_intact_commit_flat),
      cmocka_unit_test(test_heaps_under_load_blocks_intact_through_delete),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
