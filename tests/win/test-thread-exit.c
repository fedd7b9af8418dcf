/* Thread exit on Windows: 10,000 threads (CreateThread) each allocate, free
   their own blocks and a block of a thread before them (a cross-thread
   free), leave one block for a thread after them, and exit. The
   allocator's thread-exit hook must run exactly once for each of them, so
   their heaps are given up and their segments reused: committed memory
   after the first 500 threads bounds committed memory at the end. Without
   the hook (the classic MinGW failure; planted with
   MI_WIN_PLANT_THREAD_LEAK) every thread strands its segments and the
   bound is crossed within a few hundred threads. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include <cmocka.h>

#include <mimalloc.h>

#include "../../src/prim/windows/path-count.h"

#define THREADS 10000
#define WAVE 4                  /* threads alive at once */
#define BASELINE_AT 500         /* committed memory measured after this many threads */
#define BOUND ((size_t)2 << 20) /* allowed growth after that */
#define OWN_BLOCKS 8

typedef struct slot_s {
  unsigned char* p; /* left by a thread of the previous wave, freed by this wave's thread */
  size_t size;
  unsigned char tag;
} slot_t;

static slot_t handover[2][WAVE];
static atomic_long failures;

static size_t block_size(unsigned seed, int i) {
  static const size_t sizes[OWN_BLOCKS] = {16, 40, 128, 1000, 4000, 9000, 40000, 100000};
  return sizes[(seed + (unsigned)i) % OWN_BLOCKS];
}

static bool filled(const unsigned char* p, size_t size, unsigned char tag) {
  return p[0] == tag && p[size / 2] == tag && p[size - 1] == tag;
}

typedef struct arg_s {
  int index;
  int wave;
  int pos;
} arg_t;

static DWORD WINAPI worker(LPVOID raw) {
  arg_t* a = (arg_t*)raw;
  unsigned char* own[OWN_BLOCKS];
  for (int i = 0; i < OWN_BLOCKS; i++) {
    size_t size = block_size((unsigned)a->index, i);
    own[i] = (unsigned char*)mi_malloc(size);
    if (own[i] == NULL) {
      atomic_fetch_add(&failures, 1);
      continue;
    }
    memset(own[i], (unsigned char)i, size);
  }
  /* the previous wave's block: freed here, by another thread than its owner */
  slot_t* in = &handover[(a->wave + 1) % 2][a->pos];
  if (in->p != NULL) {
    if (!filled(in->p, in->size, in->tag)) atomic_fetch_add(&failures, 1);
    mi_free(in->p);
    in->p = NULL;
  }
  for (int i = 0; i < OWN_BLOCKS; i++) {
    if (own[i] == NULL) continue;
    if (!filled(own[i], block_size((unsigned)a->index, i), (unsigned char)i)) atomic_fetch_add(&failures, 1);
    if (i != 5) mi_free(own[i]);
  }
  /* one block outlives its thread, for the next wave */
  slot_t* out = &handover[a->wave % 2][a->pos];
  out->p = own[5];
  out->size = block_size((unsigned)a->index, 5);
  out->tag = 5;
  return 0;
}

static size_t committed(void) {
  size_t commit = 0;
  mi_process_info(NULL, NULL, NULL, NULL, NULL, &commit, NULL, NULL);
  return commit;
}

static void test_thread_exit_keeps_commit_flat(void** state) {
  (void)state;
  mi_option_set(mi_option_purge_delay, 0); /* freed pages go back at once: the figure is what is in use */
  unsigned long long hooks_before = _mi_win_path_count(MI_WIN_THREAD_EXIT_HOOK);
  size_t baseline = 0, peak = 0;
  int started = 0;
  for (int w = 0; started < THREADS; w++) {
    HANDLE h[WAVE];
    arg_t args[WAVE];
    int n = 0;
    for (; n < WAVE && started < THREADS; n++, started++) {
      args[n].index = started;
      args[n].wave = w;
      args[n].pos = n;
      h[n] = CreateThread(NULL, 64 * 1024, &worker, &args[n], STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
      if (h[n] == NULL) fail_msg("CreateThread failed at thread %d (error %lu)", started, GetLastError());
    }
    assert_int_equal(WaitForMultipleObjects((DWORD)n, h, TRUE, INFINITE), WAIT_OBJECT_0);
    for (int i = 0; i < n; i++) CloseHandle(h[i]);
    if (atomic_load(&failures) != 0) fail_msg("%ld checks failed by thread %d", atomic_load(&failures), started);
    if (started % BASELINE_AT == 0) {
      mi_collect(true);
      size_t c = committed();
      if (started == BASELINE_AT) baseline = c;
      if (c > peak) peak = c;
      if (started > BASELINE_AT && c > baseline + BOUND) {
        fail_msg("after %d threads committed %zu bytes, more than %zu at %d threads + %zu", started, c, baseline,
                 BASELINE_AT, BOUND);
      }
    }
  }
  for (int i = 0; i < WAVE; i++) {
    for (int k = 0; k < 2; k++) {
      mi_free(handover[k][i].p);
      handover[k][i].p = NULL;
    }
  }
  mi_collect(true);
  size_t end = committed();
  unsigned long long hooks = _mi_win_path_count(MI_WIN_THREAD_EXIT_HOOK) - hooks_before;
  print_message(
      "thread-exit: %d threads; committed at %d threads %zu bytes, at the end %zu bytes, peak (per %d) %zu "
      "bytes; exit hook ran %llu times\n",
      THREADS, BASELINE_AT, baseline, end, BASELINE_AT, peak, hooks);
  assert_true(end <= baseline + BOUND);
  assert_int_equal(hooks, THREADS); /* once per thread, never twice */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thread_exit_keeps_commit_flat),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
