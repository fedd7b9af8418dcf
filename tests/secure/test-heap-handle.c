#define _GNU_SOURCE
/* Secure mode: a heap handle is checked on every call that takes one. A
   handle to a heap destroyed, deleted or gone with its thread, or one that
   was never a heap (random bytes, a stack buffer, a copy of a live heap),
   is reported (`invalid heap detected at 0x... (size N)`) before anything
   of it is followed; a destroyed heap's address is not given to the next
   heaps, so a stale handle is not taken for a live heap (src/os/meta.c).
   The blocks a destroyed heap still held are fenced off with its pages: a
   read or write through a stale pointer faults, and is reported, at once.
   Each case runs in a child; its control, the same program without the
   misuse, must exit 0 with no report. Built only with MI_SECURE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <mimalloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../child.h"

#define INVALID_HEAP "invalid heap detected at"
#define DESTROYED_BLOCK "use-after-free detected in destroyed heap's block at"

static void* volatile sink;
static volatile bool bool_sink;

/* ---- One call through a heap handle, by number ------------------------------- */

static bool visit_nothing(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap, (void)area, (void)block, (void)size, (void)arg;
  return true;
}

enum {
  OP_MALLOC,
  OP_ZALLOC,
  OP_CALLOC,
  OP_MALLOC_SMALL,
  OP_REALLOC_NULL,
  OP_MALLOC_ALIGNED,
  OP_ZALLOC_ALIGNED_AT,
  OP_STRDUP,
  OP_ALLOC_NEW,
  OP_DESTROY,
  OP_DELETE,
  OP_COLLECT,
  OP_VISIT,
  OP_SET_DEFAULT,
  OP_CHECK_OWNED,
  OP_CONTAINS_BLOCK,
  OP_COUNT
};

static void heap_call(mi_heap_t* heap, int op) {
  switch (op) {
    case OP_MALLOC: sink = mi_heap_malloc(heap, 32); break;
    case OP_ZALLOC: sink = mi_heap_zalloc(heap, 100); break;
    case OP_CALLOC: sink = mi_heap_calloc(heap, 4, 40); break;
    case OP_MALLOC_SMALL: sink = mi_heap_malloc_small(heap, 16); break;
    case OP_REALLOC_NULL: sink = mi_heap_realloc(heap, NULL, 64); break;
    case OP_MALLOC_ALIGNED: sink = mi_heap_malloc_aligned(heap, 64, 256); break;
    case OP_ZALLOC_ALIGNED_AT: sink = mi_heap_zalloc_aligned_at(heap, 64, 128, 16); break;
    case OP_STRDUP: sink = mi_heap_strdup(heap, "stale"); break;
    case OP_ALLOC_NEW: sink = mi_heap_alloc_new(heap, 48); break;
    case OP_DESTROY: mi_heap_destroy(heap); break;
    case OP_DELETE: mi_heap_delete(heap); break;
    case OP_COLLECT: mi_heap_collect(heap, true); break;
    case OP_VISIT: bool_sink = mi_heap_visit_blocks(heap, true, &visit_nothing, NULL); break;
    case OP_SET_DEFAULT: sink = mi_heap_set_default(heap); break;
    case OP_CHECK_OWNED: bool_sink = mi_heap_check_owned(heap, (void*)&sink); break;
    case OP_CONTAINS_BLOCK: bool_sink = mi_heap_contains_block(heap, (void*)&sink); break;
    default: break;
  }
}

/* The case's parameters, set before each child is forked. */
static int case_op;

/* A heap with a few blocks of several sizes. */
static mi_heap_t* heap_with_blocks(void) {
  mi_heap_t* heap = mi_heap_new();
  for (int i = 0; i < 20; i++) memset(mi_heap_malloc(heap, 16 + (size_t)i * 700), 1, 16);
  return heap;
}

/* ---- Stale handles ------------------------------------------------------------- */

static void case_call_after_destroy(bool misuse) {
  mi_heap_t* heap = heap_with_blocks();
  mi_heap_destroy(heap);
  if (misuse) heap_call(heap, case_op);
}

static void case_call_after_delete(bool misuse) {
  mi_heap_t* heap = heap_with_blocks();
  void* p = mi_heap_malloc(heap, 64);
  mi_heap_delete(heap);
  if (misuse) heap_call(heap, case_op);
  mi_free(p);
}

static void for_every_op(mi_case_fn fn) {
  for (case_op = 0; case_op < OP_COUNT; case_op++) expect(fn, SIGABRT, INVALID_HEAP);
}

static void test_heap_call_after_destroy_reported(void** state) {
  (void)state;
  for_every_op(&case_call_after_destroy);
}

static void test_heap_call_after_delete_reported(void** state) {
  (void)state;
  for_every_op(&case_call_after_delete);
}

/* The next heaps do not take the destroyed one's address: a stale destroy
   is reported as such, not carried out on a live heap (whose owner's
   correct free was then reported as a double free). */
static void case_stale_destroy_after_new_heaps(bool misuse) {
  mi_heap_t* stale = heap_with_blocks();
  mi_heap_destroy(stale);
  mi_heap_t* live[4];
  void* p[4];
  for (int i = 0; i < 4; i++) {
    live[i] = mi_heap_new();
    p[i] = mi_heap_malloc(live[i], 32);
    memset(p[i], 2, 32);
  }
  if (misuse) mi_heap_destroy(stale);
  for (int i = 0; i < 4; i++) {
    mi_free(p[i]);
    mi_heap_delete(live[i]);
  }
}

static void test_stale_destroy_after_new_heaps_reported(void** state) {
  (void)state;
  expect(&case_stale_destroy_after_new_heaps, SIGABRT, INVALID_HEAP);
}

/* Many heaps come and go after it (and threads, whose heaps share the
   slots): still told apart from every live one. */
static void* heaps_in_thread(void* arg) {
  (void)arg;
  for (int i = 0; i < 8; i++) {
    mi_heap_t* heap = mi_heap_new();
    sink = mi_heap_malloc(heap, 100);
    if (i % 2) mi_heap_destroy(heap);
    else mi_heap_delete(heap);
  }
  return NULL;
}

static void case_stale_malloc_after_many_heaps(bool misuse) {
  mi_heap_t* stale = heap_with_blocks();
  mi_heap_destroy(stale);
  for (int i = 0; i < 100; i++) {
    mi_heap_t* heap = mi_heap_new();
    sink = mi_heap_malloc(heap, 24);
    if (i % 3 == 0) mi_heap_delete(heap);
    else mi_heap_destroy(heap);
  }
  for (int i = 0; i < 4; i++) {
    pthread_t t;
    pthread_create(&t, NULL, &heaps_in_thread, NULL);
    pthread_join(t, NULL);
  }
  mi_heap_t* live = mi_heap_new();
  void* p = mi_heap_malloc(live, 40);
  if (misuse) sink = mi_heap_malloc(stale, 40);
  mi_free(p);
  mi_heap_destroy(live);
}

static void test_stale_malloc_after_many_heaps_reported(void** state) {
  (void)state;
  expect(&case_stale_malloc_after_many_heaps, SIGABRT, INVALID_HEAP);
}

/* A heap its thread did not delete goes with the thread. */
static void* heap_left_in_thread(void* arg) {
  (void)arg;
  mi_heap_t* heap = mi_heap_new();
  sink = mi_heap_malloc(heap, 100);
  return heap;
}

static void case_heap_of_exited_thread(bool misuse) {
  pthread_t t;
  void* heap = NULL;
  pthread_create(&t, NULL, &heap_left_in_thread, NULL);
  pthread_join(t, &heap);
  if (misuse) sink = mi_heap_malloc((mi_heap_t*)heap, 16);
}

static void test_heap_of_exited_thread_reported(void** state) {
  (void)state;
  expect(&case_heap_of_exited_thread, SIGABRT, INVALID_HEAP);
}

/* ---- Forged handles ------------------------------------------------------------ */

#define FORGED_BYTES 8192

static void fill_random(uint8_t* p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    p[i] = (uint8_t)(seed >> 56);
  }
}

static void case_forged_zero_stack_buffer(bool misuse) {
  _Alignas(64) uint8_t buf[FORGED_BYTES];
  memset(buf, 0, sizeof(buf));
  if (misuse) heap_call((mi_heap_t*)buf, case_op);
}

static void case_forged_random_block(bool misuse) {
  uint8_t* buf = (uint8_t*)mi_malloc(FORGED_BYTES);
  fill_random(buf, FORGED_BYTES, 42 + (uint64_t)case_op);
  if (misuse) heap_call((mi_heap_t*)buf, case_op);
  mi_free(buf);
}

/* A byte-for-byte copy of a live heap is not that heap. */
static void case_forged_copy_of_live_heap(bool misuse) {
  mi_heap_t* heap = heap_with_blocks();
  uint8_t* copy = (uint8_t*)mi_malloc(FORGED_BYTES);
  memcpy(copy, heap, 2048); /* the heap's first bytes, where its check lies */
  if (misuse) heap_call((mi_heap_t*)copy, case_op);
  mi_free(copy);
  mi_heap_destroy(heap);
}

static void test_forged_zero_stack_buffer_reported(void** state) {
  (void)state;
  for_every_op(&case_forged_zero_stack_buffer);
}

static void test_forged_random_block_reported(void** state) {
  (void)state;
  for_every_op(&case_forged_random_block);
}

static void test_forged_copy_of_live_heap_reported(void** state) {
  (void)state;
  for_every_op(&case_forged_copy_of_live_heap);
}

/* ---- Blocks of a destroyed heap --------------------------------------------- */

static size_t case_size;

/* A write (or a read) into a block the destroyed heap held, with blocks of
   the same size allocated after it: it faults at once, named. */
static void case_write_into_destroyed_block(bool misuse) {
  mi_heap_t* heap = mi_heap_new();
  uint8_t* p = (uint8_t*)mi_heap_malloc(heap, case_size);
  for (int i = 0; i < 10; i++) sink = mi_heap_malloc(heap, case_size);
  memset(p, 1, case_size);
  mi_heap_destroy(heap);
  void** keep = (void**)mi_malloc(2000 * sizeof(void*));
  for (int i = 0; i < 2000; i++) keep[i] = mi_malloc(case_size);
  if (misuse) ((volatile uint8_t*)p)[case_size / 2] = 7;
  for (int i = 0; i < 2000; i++) keep[i] = mi_malloc(case_size);
  mi_collect(true);
  for (int i = 0; i < 2000; i++) mi_free(keep[i]);
  mi_free(keep);
}

static void case_read_destroyed_block(bool misuse) {
  mi_heap_t* heap = mi_heap_new();
  uint8_t* p = (uint8_t*)mi_heap_malloc(heap, case_size);
  memset(p, 1, case_size);
  mi_heap_destroy(heap);
  void* q = mi_malloc(case_size);
  if (misuse) sink = (void*)(uintptr_t)((volatile uint8_t*)p)[0];
  mi_free(q);
}

static const size_t destroyed_sizes[] = {16, 100, 1000, 8000, 60000};

static void test_write_into_destroyed_heap_block_faults(void** state) {
  (void)state;
  for (size_t i = 0; i < sizeof(destroyed_sizes) / sizeof(destroyed_sizes[0]); i++) {
    case_size = destroyed_sizes[i];
    expect(&case_write_into_destroyed_block, SIGSEGV, DESTROYED_BLOCK);
  }
}

static void test_read_of_destroyed_heap_block_faults(void** state) {
  (void)state;
  case_size = 256;
  expect(&case_read_destroyed_block, SIGSEGV, DESTROYED_BLOCK);
}

/* ---- Correct programs --------------------------------------------------------- */

/* Heaps created, used, destroyed and deleted in a loop, their handles
   checked on every call; memory stays bounded. */
static void case_heaps_in_a_loop(bool misuse) {
  (void)misuse;
  for (int round = 0; round < 3000; round++) {
    mi_heap_t* heap = mi_heap_new();
    for (int op = 0; op < OP_DESTROY; op++) heap_call(heap, op);
    void* p = mi_heap_malloc(heap, 16 + (size_t)(round % 50) * 40);
    bool_sink = mi_heap_check_owned(heap, p) && mi_heap_contains_block(heap, p);
    bool_sink = mi_heap_visit_blocks(heap, true, &visit_nothing, NULL);
    mi_heap_collect(heap, round % 100 == 0);
    if (round % 2) {
      mi_heap_destroy(heap);
    } else {
      mi_heap_delete(heap);
      mi_free(p); /* a deleted heap's blocks live on */
    }
  }
}

static void test_heaps_in_a_loop_clean(void** state) {
  (void)state;
  expect_clean_exit(&case_heaps_in_a_loop);
}

/* Threads make heaps at once; blocks of one thread's heap are freed by
   another; another thread asks whether a heap owns a block. */
#define CLEAN_THREADS 6

typedef struct handoff_s {
  mi_heap_t* heap;
  void* blocks[64];
} handoff_t;

static void* free_handoff(void* arg) {
  handoff_t* h = (handoff_t*)arg;
  for (int i = 0; i < 64; i++) {
    bool_sink = mi_heap_check_owned(h->heap, h->blocks[i]);
    mi_free(h->blocks[i]);
  }
  return NULL;
}

static void* heaps_and_handoffs(void* arg) {
  (void)arg;
  for (int round = 0; round < 100; round++) {
    handoff_t h;
    h.heap = mi_heap_new();
    for (int i = 0; i < 64; i++) h.blocks[i] = mi_heap_malloc(h.heap, 32 + (size_t)i * 8);
    pthread_t t;
    pthread_create(&t, NULL, &free_handoff, &h);
    pthread_join(t, NULL);
    sink = mi_heap_malloc(h.heap, 100);
    if (round % 2) mi_heap_destroy(h.heap);
    else mi_heap_delete(h.heap);
  }
  mi_heap_t* backing = mi_heap_get_backing();
  mi_free(mi_heap_malloc(backing, 50));
  mi_free(mi_heap_malloc(mi_heap_get_default(), 50));
  return NULL;
}

static void case_heaps_across_threads(bool misuse) {
  (void)misuse;
  pthread_t t[CLEAN_THREADS];
  for (int i = 0; i < CLEAN_THREADS; i++) pthread_create(&t[i], NULL, &heaps_and_handoffs, NULL);
  for (int i = 0; i < CLEAN_THREADS; i++) pthread_join(t[i], NULL);
}

static void test_heaps_across_threads_clean(void** state) {
  (void)state;
  expect_clean_exit(&case_heaps_across_threads);
}

/* A deleted heap's blocks are freed later, by their thread and others. */
static void* free_all_of(void* arg) {
  void** blocks = (void**)arg;
  for (int i = 0; i < 100; i++) mi_free(blocks[i]);
  return NULL;
}

static void case_delete_then_free_later(bool misuse) {
  (void)misuse;
  void* mine[100];
  void* theirs[100];
  mi_heap_t* heap = mi_heap_new();
  for (int i = 0; i < 100; i++) {
    mine[i] = mi_heap_malloc(heap, 24 + (size_t)i * 30);
    theirs[i] = mi_heap_malloc(heap, 24 + (size_t)i * 30);
  }
  mi_heap_delete(heap);
  for (int i = 0; i < 10; i++) mi_heap_destroy(heap_with_blocks());
  pthread_t t;
  pthread_create(&t, NULL, &free_all_of, theirs);
  pthread_join(t, NULL);
  for (int i = 0; i < 100; i++) mi_free(mine[i]);
}

static void test_delete_then_free_later_clean(void** state) {
  (void)state;
  expect_clean_exit(&case_delete_then_free_later);
}

/* The default heap set and put back; a heap destroyed while it is the
   default (the backing heap takes over). */
static void case_set_default_round_trips(bool misuse) {
  (void)misuse;
  mi_heap_t* main_heap = mi_heap_get_default();
  for (int round = 0; round < 200; round++) {
    mi_heap_t* heap = mi_heap_new();
    mi_heap_t* old = mi_heap_set_default(heap);
    if (old != main_heap) _exit(3);
    void* p = mi_malloc(64);
    if (!mi_heap_check_owned(heap, p)) _exit(4);
    if (mi_heap_set_default(old) != heap) _exit(5);
    mi_free(p);
    if (round % 2) {
      mi_heap_set_default(heap);
      mi_heap_destroy(heap); /* the default now: the backing heap takes its place */
      if (mi_heap_get_default() != mi_heap_get_backing()) _exit(6);
      mi_free(mi_heap_malloc(mi_heap_get_default(), 10));
    } else {
      mi_heap_delete(heap);
    }
  }
  mi_free(mi_heap_malloc(main_heap, 32));
}

static void test_set_default_round_trips_clean(void** state) {
  (void)state;
  expect_clean_exit(&case_set_default_round_trips);
}

/* Destroyed heaps' pages held and fenced, given back at a forced collect and
   at thread exit, reused after: nothing faults. */
static void* destroy_heaps_in_thread(void* arg) {
  (void)arg;
  for (int i = 0; i < 80; i++) mi_heap_destroy(heap_with_blocks());
  void** keep = (void**)mi_malloc(4000 * sizeof(void*));
  for (int i = 0; i < 4000; i++) memset(keep[i] = mi_malloc(16 + (size_t)(i % 300) * 30), 4, 16);
  for (int i = 0; i < 4000; i++) mi_free(keep[i]);
  mi_free(keep);
  return NULL;
}

static void case_destroyed_pages_reused(bool misuse) {
  (void)misuse;
  for (int round = 0; round < 4; round++) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, &destroy_heaps_in_thread, NULL);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    (void)destroy_heaps_in_thread(NULL);
    mi_collect(true);
  }
}

static void test_destroyed_pages_reused_clean(void** state) {
  (void)state;
  expect_clean_exit(&case_destroyed_pages_reused);
}

int main(void) {
  mi_child_save_signals();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_heap_call_after_destroy_reported),
      cmocka_unit_test(test_heap_call_after_delete_reported),
      cmocka_unit_test(test_stale_destroy_after_new_heaps_reported),
      cmocka_unit_test(test_stale_malloc_after_many_heaps_reported),
      cmocka_unit_test(test_heap_of_exited_thread_reported),
      cmocka_unit_test(test_forged_zero_stack_buffer_reported),
      cmocka_unit_test(test_forged_random_block_reported),
      cmocka_unit_test(test_forged_copy_of_live_heap_reported),
      cmocka_unit_test(test_write_into_destroyed_heap_block_faults),
      cmocka_unit_test(test_read_of_destroyed_heap_block_faults),
      cmocka_unit_test(test_heaps_in_a_loop_clean),
      cmocka_unit_test(test_heaps_across_threads_clean),
      cmocka_unit_test(test_delete_then_free_later_clean),
      cmocka_unit_test(test_set_default_round_trips_clean),
      cmocka_unit_test(test_destroyed_pages_reused_clean),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
