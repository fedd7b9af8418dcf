/* Memory events (include/mimalloc/memory-events.h, docs/memory-events.md):
   each operation is exactly one event of the right kind, delta, total and
   request size (an allocation, a free, a reallocation that moves or stays,
   an aligned or guarded over-allocation), none for a failure or a double
   free; the counts balance over 8 threads and across threads' frees; a
   handler's own operations are suppressed; the snapshot, the switch (and
   what a gap in it leaves uncounted), the live visit, a destroyed heap,
   the mi_unwrapped_* family, and the events exact while DHAT and the pprof
   sampler run at the same sites.

   The usable bytes an event must carry are found apart from the events:
   the block's size class as a visit of the heap reports it (its area's
   block size), less the secure build's 8-byte trailer (none for a guarded
   block, and a zero-size slot holds none).

   Run with --env-enabled-check under MIMALLOC_MEMORY_EVENTS=1, it checks
   the environment switched counting on, and that a call still wins. */
#define _GNU_SOURCE
#include "../testutil.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <mimalloc-stats.h>
#include <mimalloc/dhat.h>
#include <mimalloc/memory-events.h>
#include <mimalloc/profile.h>

#ifndef MI_TEST_SECURE
#define MI_TEST_SECURE 0
#endif
#ifndef MI_GUARDED
#define MI_GUARDED 0
#endif
#ifndef MI_DHAT
#define MI_DHAT 0
#endif
#ifndef MI_PPROF
#define MI_PPROF 0
#endif
#ifndef MI_MEMORY_EVENTS
#define MI_MEMORY_EVENTS 0
#endif
#define TRAILER (MI_TEST_SECURE ? 8 : 0)

#if MI_MEMORY_EVENTS
/* ---- What the handlers saw ------------------------------------------------------ */

#define MAX_EVENTS 4096
typedef struct ev_s {
  mi_memory_change_kind_t kind;
  uint64_t total;
  int64_t delta;
  uint64_t request;
} ev_t;
static ev_t evs[MAX_EVENTS];
static size_t nevs;
static pthread_t recording_thread; /* only the test's own thread records */
static _Atomic(int64_t) delta_sum; /* every thread's events */
static _Atomic(long) kind_count[MI_MEMORY_CHANGE_COUNT];
static bool reenter;       /* T8: the handler allocates, reallocates and frees */
static void* reenter_kept; /* ... and keeps one block */

static void on_change(const mi_memory_change_t* c, void* arg) {
  (void)arg;
  atomic_fetch_add(&delta_sum, c->delta_bytes);
  atomic_fetch_add(&kind_count[c->kind], 1);
  if (!pthread_equal(pthread_self(), recording_thread)) return;
  if (nevs < MAX_EVENTS) evs[nevs] = (ev_t){c->kind, c->total_bytes, c->delta_bytes, c->request_size};
  nevs++;
  if (reenter) {
    void* q = mi_malloc(64);
    q = mi_realloc(q, 4000);
    mi_free(q);
    if (reenter_kept == NULL) reenter_kept = mi_malloc(200);
  }
}

static void reset_events(void) {
  nevs = 0;
  atomic_store(&delta_sum, 0);
  for (int k = 0; k < MI_MEMORY_CHANGE_COUNT; k++) atomic_store(&kind_count[k], 0);
}

static void install_handlers(void) {
  mi_memory_callbacks_t cb;
  memset(&cb, 0, sizeof(cb));
  for (int k = 0; k < MI_MEMORY_CHANGE_COUNT; k++) cb.handlers[k] = &on_change;
  assert_true(mi_memory_set_callbacks(&cb));
}

static mi_memory_snapshot_t snap(void);
static mi_memory_snapshot_t base; /* at the test's start: the accumulated counts never restart */

static int setup(void** state) {
  (void)state;
  recording_thread = pthread_self();
  reenter = false;
  install_handlers();
  assert_true(mi_memory_tracking_set_enabled(true));
  reset_events();
  base = snap();
  return 0;
}

static int teardown(void** state) {
  (void)state;
  assert_true(mi_memory_tracking_set_enabled(false));
  assert_true(mi_memory_set_callbacks(NULL));
  return 0;
}

static mi_memory_snapshot_t snap(void) {
  mi_memory_snapshot_t_decl(s);
  assert_true(mi_memory_snapshot(&s));
  return s;
}

/* the accumulated counts since the test started */
static uint64_t accum_count(void) {
  return snap().accum_count - base.accum_count;
}
static uint64_t accum_bytes(void) {
  return snap().accum_bytes - base.accum_bytes;
}

/* ---- The oracle: a block's usable bytes, by a visit of the heap -------------------- */

typedef struct find_s {
  const uint8_t* p;
  size_t block_size;
  bool found;
} find_t;

static bool find_block(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap, (void)size;
  find_t* f = (find_t*)arg;
  if (block == NULL) return true;
  const uint8_t* b = (const uint8_t*)block;
  size_t bs = area->block_size;
  if (f->p == b || (f->p > b && f->p < b + bs)) {
    f->block_size = bs;
    f->found = true;
    return false;
  }
  return true;
}

/* p's usable bytes: its size class, less the secure trailer (`guarded`: a
   guarded block has none) */
static size_t oracle_usable_in(mi_heap_t* heap, const void* p, bool guarded) {
  find_t f = {(const uint8_t*)p, 0, false};
  (void)mi_heap_visit_blocks(heap, true, &find_block, &f);
  if (!f.found) fail_msg("block %p not found by the heap's visit", p);
  if (f.block_size == 0) return 0; /* a zero-size slot (secure) */
  return f.block_size - (guarded ? 0 : TRAILER);
}

static size_t oracle_usable(const void* p) {
  return oracle_usable_in(mi_heap_get_default(), p, false);
}

static void expect_one(mi_memory_change_kind_t kind, int64_t delta, uint64_t total_before, uint64_t request) {
  if (nevs != 1) fail_msg("%zu events, expected one", nevs);
  assert_int_equal(evs[0].kind, kind);
  assert_int_equal(evs[0].delta, delta);
  assert_int_equal(evs[0].total, (uint64_t)((int64_t)total_before + delta));
  assert_int_equal(evs[0].request, request);
  assert_int_equal(snap().live_bytes, evs[0].total);
}

/* ---- Switching ----------------------------------------------------------------------- */

/* (the first test: nothing has switched counting on yet) */
static void test_tracking_default_off_nothing_counted(void** state) {
  (void)state;
  assert_false(mi_memory_tracking_is_enabled());
  void* p = mi_malloc(100);
  mi_free(p);
  mi_memory_snapshot_t s = snap();
  assert_int_equal(s.accum_count, 0);
  assert_int_equal(s.live_count, 0);
}

static void test_tracking_set_enabled_toggles_true_when_built_in(void** state) {
  (void)state;
  assert_true(mi_memory_tracking_set_enabled(true));
  assert_true(mi_memory_tracking_is_enabled());
  assert_true(mi_memory_tracking_set_enabled(false));
  assert_false(mi_memory_tracking_is_enabled());
  assert_true(mi_memory_tracking_set_enabled(false)); /* again: still off */
  assert_false(mi_memory_tracking_is_enabled());
}

/* Handlers set after a block was counted hear of its free; NULL removes
   them; the table is copied. */
static void test_callbacks_set_late_hear_later_events_table_copied(void** state) {
  (void)state;
  assert_true(mi_memory_set_callbacks(NULL));
  void* p = mi_malloc(300); /* counted, told to nobody */
  assert_int_equal(nevs, 0);
  assert_int_equal(snap().live_count, 1);
  mi_memory_callbacks_t cb;
  memset(&cb, 0, sizeof(cb));
  cb.handlers[MI_MEMORY_FREE] = &on_change;
  assert_true(mi_memory_set_callbacks(&cb));
  cb.handlers[MI_MEMORY_ALLOCATE] = &on_change; /* after the call: not seen */
  size_t usable = oracle_usable(p);
  void* q = mi_malloc(50);
  assert_int_equal(nevs, 0); /* no ALLOCATE handler */
  mi_free(p);
  expect_one(MI_MEMORY_FREE, -(int64_t)usable, snap().live_bytes + usable, 0);
  assert_true(mi_memory_set_callbacks(NULL));
  mi_free(q);
  assert_int_equal(nevs, 1);
  assert_int_equal(snap().live_count, 0);
}

/* ---- T5: one event each, exact ---------------------------------------------------------- */

static void test_alloc_one_event_exact_kind_delta_total_request(void** state) {
  (void)state;
  uint64_t before = snap().live_bytes;
  void* p = mi_malloc(100);
  assert_non_null(p);
  size_t usable = oracle_usable(p);
  assert_true(usable >= 100);
  expect_one(MI_MEMORY_ALLOCATE, (int64_t)usable, before, 100);
  assert_int_equal(snap().live_count, 1);
  assert_int_equal(accum_count(), 1);
  assert_int_equal(accum_bytes(), usable);
  mi_free(p);
}

static void test_free_one_event_exact_negative_delta_total(void** state) {
  (void)state;
  void* p = mi_malloc(1000);
  size_t usable = oracle_usable(p);
  reset_events();
  uint64_t before = snap().live_bytes;
  mi_free(p);
  expect_one(MI_MEMORY_FREE, -(int64_t)usable, before, 0);
  assert_int_equal(snap().live_count, 0);
  mi_free(NULL); /* no operation, no event */
  assert_int_equal(nevs, 1);
}

static void test_realloc_moving_grow_one_resize_exact(void** state) {
  (void)state;
  void* p = mi_malloc(100);
  tu_fill(p, 100, 3);
  size_t old_usable = oracle_usable(p);
  reset_events();
  uint64_t before = snap().live_bytes;
  void* q = mi_realloc(p, 20000);
  assert_non_null(q);
  assert_ptr_not_equal(q, p);
  assert_true(tu_check(q, 100, 3));
  size_t new_usable = oracle_usable(q);
  expect_one(MI_MEMORY_RESIZE, (int64_t)new_usable - (int64_t)old_usable, before, 20000);
  assert_int_equal(snap().live_count, 1);
  assert_int_equal(accum_count(), 1);          /* the allocation, not the move */
  assert_int_equal(accum_bytes(), new_usable); /* 100's block, then its growth */
  mi_free(q);
}

static void test_realloc_moving_shrink_one_resize_negative_delta(void** state) {
  (void)state;
  void* p = mi_malloc(20000);
  size_t old_usable = oracle_usable(p);
  reset_events();
  uint64_t before = snap().live_bytes;
  void* q = mi_realloc(p, 100);
  assert_ptr_not_equal(q, p);
  size_t new_usable = oracle_usable(q);
  assert_true(new_usable < old_usable);
  expect_one(MI_MEMORY_RESIZE, (int64_t)new_usable - (int64_t)old_usable, before, 100);
  assert_int_equal(accum_bytes(), old_usable); /* a shrink adds nothing */
  mi_free(q);
}

static void test_realloc_in_place_one_resize_delta_zero(void** state) {
  (void)state;
  void* p = mi_malloc(100);
  reset_events();
  uint64_t before = snap().live_bytes;
  void* q = mi_realloc(p, 90);
  assert_ptr_equal(q, p);
  expect_one(MI_MEMORY_RESIZE, 0, before, 90);
  /* mi_expand: a reallocation that stays */
  reset_events();
  assert_ptr_equal(mi_expand(p, 80), p);
  expect_one(MI_MEMORY_RESIZE, 0, before, 80);
  mi_free(q);
}

/* realloc(NULL, n) is an allocation; calloc, strdup, zalloc one each */
static void test_realloc_null_calloc_strdup_one_allocate_each(void** state) {
  (void)state;
  void* a = mi_realloc(NULL, 500);
  void* b = mi_calloc(10, 30);
  char* c = mi_strdup("memory events");
  void* d = mi_zalloc(70);
  assert_int_equal(nevs, 4);
  void* blocks[4] = {a, b, c, d};
  const uint64_t requests[4] = {500, 300, 14, 70};
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(evs[i].kind, MI_MEMORY_ALLOCATE);
    assert_int_equal(evs[i].delta, (int64_t)oracle_usable(blocks[i]));
    assert_int_equal(evs[i].request, requests[i]);
  }
  for (size_t i = 0; i < 4; i++) mi_free(blocks[i]);
  assert_int_equal(nevs, 8);
  assert_int_equal(snap().live_bytes, 0);
}

/* An alignment over-allocated inside a larger block, and one of a large
   block: one ALLOCATE each, of the whole block (its slack included); their
   reallocation one RESIZE. */
static void test_aligned_over_allocation_one_allocate_whole_block(void** state) {
  (void)state;
  const size_t aligns[3] = {64, 4096, 1 * MiB};
  for (size_t i = 0; i < 3; i++) {
    reset_events();
    uint64_t before = snap().live_bytes;
    void* p = mi_malloc_aligned(1000, aligns[i]);
    assert_non_null(p);
    assert_true(tu_is_aligned(p, aligns[i]));
    size_t usable = oracle_usable(p);
    assert_true(usable >= mi_usable_size(p));
    expect_one(MI_MEMORY_ALLOCATE, (int64_t)usable, before, 1000);
    reset_events();
    before = snap().live_bytes;
    void* q = mi_realloc_aligned(p, 50000, aligns[i]);
    assert_non_null(q);
    expect_one(MI_MEMORY_RESIZE, (int64_t)oracle_usable(q) - (int64_t)usable, before, 50000);
    reset_events();
    mi_free(q);
    assert_int_equal(nevs, 1);
    assert_int_equal(evs[0].kind, MI_MEMORY_FREE);
  }
  assert_int_equal(snap().live_count, 0);
  void* r = NULL;
  assert_int_equal(mi_posix_memalign(&r, 256, 3000), 0);
  assert_int_equal(nevs, 2);
  assert_int_equal(evs[1].kind, MI_MEMORY_ALLOCATE);
  assert_int_equal(evs[1].delta, (int64_t)oracle_usable(r));
  mi_free(r);
}

/* A zero-size allocation: in the default build a 16-byte block; in the
   secure build a slot no access reaches, of 0 usable bytes, still one
   block. */
static void test_zero_size_one_allocate_block_counted(void** state) {
  (void)state;
  void* p = mi_malloc(0);
  assert_non_null(p);
  expect_one(MI_MEMORY_ALLOCATE, MI_TEST_SECURE ? 0 : 16, 0, 0);
  assert_int_equal(snap().live_count, 1);
  reset_events();
  void* q = mi_realloc(p, 0);
  assert_int_equal(nevs, 1);
  assert_int_equal(evs[0].kind, MI_MEMORY_RESIZE);
  mi_free(q);
  assert_int_equal(snap().live_count, 0);
}

/* ---- T6: nothing for a failure or a double free --------------------------------------- */

static void test_failed_alloc_and_realloc_no_event_block_still_counted(void** state) {
  (void)state;
  mi_memory_snapshot_t s0 = snap();
  assert_null(mi_malloc(tu_opaque(PTRDIFF_MAX)));
  assert_null(mi_malloc_aligned(100, tu_opaque(3))); /* not a power of two */
  assert_null(mi_calloc(tu_opaque(SIZE_MAX / 2), 4));
  void* p = mi_malloc(100);
  size_t usable = oracle_usable(p);
  reset_events();
  assert_null(mi_realloc(p, tu_opaque(PTRDIFF_MAX)));
  assert_null(mi_realloc_aligned(p, tu_opaque(PTRDIFF_MAX), 64));
  assert_int_equal(nevs, 0);
  mi_memory_snapshot_t s1 = snap();
  assert_int_equal(s1.accum_count, s0.accum_count + 1);
  assert_int_equal(s1.live_count, 1);
  /* the block kept its record through the failures */
  mi_free(p);
  expect_one(MI_MEMORY_FREE, -(int64_t)usable, usable, 0);
}

/* The child writes a byte per event to a pipe: A, F or R. */
static int child_fd = -1;
static void on_change_to_pipe(const mi_memory_change_t* c, void* arg) {
  (void)arg;
  char k = (c->kind == MI_MEMORY_ALLOCATE ? 'A' : c->kind == MI_MEMORY_FREE ? 'F' : 'R');
  if (write(child_fd, &k, 1) != 1) _exit(3);
}

/* Freed twice: one FREE. The secure build reports the second free and
   aborts before anything is told; the default build does not detect it,
   and its events count the block once (its record is gone). In a child:
   the default build's free list is corrupted by it. */
static void test_double_free_no_second_event(void** state) {
  (void)state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  int errfds[2];
  assert_int_equal(pipe(errfds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGABRT, SIG_DFL);
    close(fds[0]);
    close(errfds[0]);
    dup2(errfds[1], 2);
    child_fd = fds[1];
    mi_memory_callbacks_t cb;
    memset(&cb, 0, sizeof(cb));
    for (int k = 0; k < MI_MEMORY_CHANGE_COUNT; k++) cb.handlers[k] = &on_change_to_pipe;
    mi_memory_set_callbacks(&cb);
    void* p = mi_malloc(48);
    mi_free(p);
    mi_free(p);
    _exit(0);
  }
  close(fds[1]);
  close(errfds[1]);
  char got[64] = {0};
  size_t n = 0;
  ssize_t r;
  while (n + 1 < sizeof(got) && (r = read(fds[0], got + n, sizeof(got) - 1 - n)) > 0) n += (size_t)r;
  char err[4096] = {0};
  size_t m = 0;
  while (m + 1 < sizeof(err) && (r = read(errfds[0], err + m, sizeof(err) - 1 - m)) > 0) m += (size_t)r;
  close(fds[0]);
  close(errfds[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (strcmp(got, "AF") != 0) fail_msg("events in the child: \"%s\", expected \"AF\" (stderr: %s)", got, err);
  if (MI_TEST_SECURE) {
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    assert_non_null(strstr(err, "mimalloc: error: double free detected of block"));
  }
}

/* ---- T7: 8 threads ----------------------------------------------------------------------- */

#define T7_THREADS 8
#define T7_BLOCKS 2000
static void* t7_handoff[T7_THREADS][T7_BLOCKS]; /* each thread's blocks the next one frees */
static pthread_barrier_t t7_barrier;

static void* t7_worker(void* arg) {
  size_t id = (size_t)(uintptr_t)arg;
  uint64_t x = 0x9E3779B97F4A7C15ULL * (id + 1);
  void* own[T7_BLOCKS];
  for (size_t i = 0; i < T7_BLOCKS; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t size = (size_t)(x % 3000) + ((i % 97) == 0 ? 200000 : 0);
    own[i] = (i % 5 == 0 ? mi_malloc_aligned(size, 128) : mi_malloc(size));
    t7_handoff[id][i] = mi_malloc(size / 2 + 1);
  }
  for (size_t i = 0; i < T7_BLOCKS; i += 2) own[i] = mi_realloc(own[i], (i * 7) % 5000 + 1);
  pthread_barrier_wait(&t7_barrier);
  /* the neighbour's blocks: frees from a thread that does not own them */
  size_t from = (id + 1) % T7_THREADS;
  for (size_t i = 0; i < T7_BLOCKS; i++) mi_free(t7_handoff[from][i]);
  for (size_t i = 0; i < T7_BLOCKS; i++) mi_free(own[i]);
  return NULL;
}

static void test_threads_8_balanced_zero_live(void** state) {
  (void)state;
  pthread_t th[T7_THREADS];
  assert_int_equal(pthread_barrier_init(&t7_barrier, NULL, T7_THREADS), 0);
  for (size_t i = 0; i < T7_THREADS; i++) {
    assert_int_equal(pthread_create(&th[i], NULL, &t7_worker, (void*)(uintptr_t)i), 0);
  }
  for (size_t i = 0; i < T7_THREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  pthread_barrier_destroy(&t7_barrier);
  mi_memory_snapshot_t s = snap();
  long allocs = atomic_load(&kind_count[MI_MEMORY_ALLOCATE]);
  long frees = atomic_load(&kind_count[MI_MEMORY_FREE]);
  long resizes = atomic_load(&kind_count[MI_MEMORY_RESIZE]);
  print_message("T7: %ld allocations, %ld frees, %ld resizes, accumulated %llu bytes\n", allocs, frees, resizes,
                (unsigned long long)s.accum_bytes);
  assert_int_equal(allocs, 2 * T7_THREADS * T7_BLOCKS);
  assert_int_equal(frees, allocs);
  assert_int_equal(resizes, T7_THREADS * T7_BLOCKS / 2);
  assert_int_equal(atomic_load(&delta_sum), 0);
  assert_int_equal(s.live_count, 0);
  assert_int_equal(s.live_bytes, 0);
  assert_int_equal(accum_count(), (uint64_t)allocs);
}

/* A block freed by another thread: its FREE, told on that thread. */
static void* free_it(void* p) {
  mi_free(p);
  return NULL;
}

static void test_free_from_foreign_thread_one_free_exact(void** state) {
  (void)state;
  void* p = mi_malloc(777);
  size_t usable = oracle_usable(p);
  reset_events();
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, &free_it, p), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(nevs, 0); /* told on the other thread */
  assert_int_equal(atomic_load(&kind_count[MI_MEMORY_FREE]), 1);
  assert_int_equal(atomic_load(&delta_sum), -(int64_t)usable);
  mi_memory_snapshot_t s = snap();
  assert_int_equal(s.live_count, 0);
  assert_int_equal(s.live_bytes, 0);
}

/* ---- T8: a handler that allocates ------------------------------------------------------ */

static void test_handler_reentrant_alloc_suppressed(void** state) {
  (void)state;
  reenter = true;
  reenter_kept = NULL;
  void* p = mi_malloc(100);
  void* q = mi_realloc(p, 30000);
  mi_free(q);
  reenter = false;
  /* the three of the program, none of the handler's */
  assert_int_equal(nevs, 3);
  assert_int_equal(evs[0].kind, MI_MEMORY_ALLOCATE);
  assert_int_equal(evs[1].kind, MI_MEMORY_RESIZE);
  assert_int_equal(evs[2].kind, MI_MEMORY_FREE);
  mi_memory_snapshot_t s = snap();
  assert_int_equal(accum_count(), 1);
  assert_int_equal(s.live_count, 0);
  assert_int_equal(s.live_bytes, 0);
  /* the block the handler kept was never counted: its free tells nothing */
  assert_non_null(reenter_kept);
  mi_free(reenter_kept);
  assert_int_equal(nevs, 3);
  assert_int_equal(snap().live_count, 0);
}

/* ---- Counts ------------------------------------------------------------------------------ */

static void test_snapshot_counts_match_blocks(void** state) {
  (void)state;
  enum { N = 200 };
  void* blocks[N];
  uint64_t sum = 0, sum_freed = 0;
  for (size_t i = 0; i < N; i++) {
    size_t size = (i * 131) % 9000 + (i % 50 == 0 ? 300000 : 0);
    blocks[i] = (i % 7 == 0 ? mi_malloc_aligned(size, 256) : mi_malloc(size));
    sum += oracle_usable(blocks[i]);
  }
  mi_memory_snapshot_t s = snap();
  assert_int_equal(s.live_count, N);
  assert_int_equal(accum_count(), N);
  assert_int_equal(s.live_bytes, sum);
  assert_int_equal(accum_bytes(), sum);
  for (size_t i = 0; i < N; i += 2) {
    sum_freed += oracle_usable(blocks[i]);
    mi_free(blocks[i]);
  }
  s = snap();
  assert_int_equal(s.live_count, N / 2);
  assert_int_equal(s.live_bytes, sum - sum_freed);
  assert_int_equal(accum_bytes(), sum);
  for (size_t i = 1; i < N; i += 2) mi_free(blocks[i]);
  s = snap();
  assert_int_equal(s.live_count, 0);
  assert_int_equal(s.live_bytes, 0);
}

static void test_snapshot_null_size_or_version_mismatch_false(void** state) {
  (void)state;
  assert_false(mi_memory_snapshot(NULL));
  mi_memory_snapshot_t_decl(s);
  s.size = sizeof(s) - 8;
  assert_false(mi_memory_snapshot(&s));
  s.size = sizeof(s);
  s.version = MI_MEMORY_SNAPSHOT_VERSION + 1;
  assert_false(mi_memory_snapshot(&s));
  s.version = MI_MEMORY_SNAPSHOT_VERSION;
  assert_true(mi_memory_snapshot(&s));
}

/* Off, nothing is counted; on again, counting starts afresh: the live
   counts from zero, the blocks of before (their frees may have gone
   unseen) not subtracted; the accumulated counts skip the gap. */
static void test_disable_reenable_gap_skipped(void** state) {
  (void)state;
  void* a = mi_malloc(100);
  size_t ua = oracle_usable(a);
  assert_true(mi_memory_tracking_set_enabled(false));
  void* b = mi_malloc(200);
  mi_free(a);
  void* b2 = mi_realloc(b, 5000);
  assert_int_equal(nevs, 1); /* a's allocation */
  assert_true(mi_memory_tracking_set_enabled(true));
  mi_memory_snapshot_t s = snap();
  assert_int_equal(s.live_count, 0);
  assert_int_equal(s.live_bytes, 0);
  assert_int_equal(accum_count(), 1);
  assert_int_equal(accum_bytes(), ua);
  void* c = mi_malloc(300);
  size_t uc = oracle_usable(c);
  mi_free(b2); /* allocated in the gap: not counted, nothing told */
  assert_int_equal(nevs, 2);
  s = snap();
  assert_int_equal(s.live_count, 1);
  assert_int_equal(s.live_bytes, uc);
  assert_int_equal(accum_count(), 2);
  mi_free(c);
  assert_int_equal(nevs, 3);
  assert_int_equal(snap().live_bytes, 0);
}

/* ---- The live visit ---------------------------------------------------------------------- */

typedef struct visit_s {
  void* want[16];
  size_t usable[16];
  size_t seen[16];
  size_t visited;
  size_t stop_after;
} visit_t;

static bool visit_block(void* allocation, size_t usable_size, void* arg) {
  visit_t* v = (visit_t*)arg;
  v->visited++;
  for (size_t i = 0; i < 16; i++) {
    if (v->want[i] == allocation) {
      v->seen[i]++;
      assert_int_equal(usable_size, v->usable[i]);
    }
  }
  return (v->stop_after == 0 || v->visited < v->stop_after);
}

static visit_t* visit_in_handler_v;
static bool visit_in_handler_result = true;
static void on_change_visit(const mi_memory_change_t* c, void* arg) {
  (void)c, (void)arg;
  visit_in_handler_result = mi_memory_visit_live_allocations(&visit_block, visit_in_handler_v);
}

static void test_visit_live_allocations_each_block_once_usable(void** state) {
  (void)state;
  static visit_t v;
  memset(&v, 0, sizeof(v));
  mi_heap_t* heap = mi_heap_new(); /* a second heap of the thread: visited too */
  for (size_t i = 0; i < 16; i++) {
    size_t size = 40 + i * 700 + (i == 15 ? 400000 : 0);
    v.want[i] = (i < 12 ? mi_malloc(size) : mi_heap_malloc(heap, size));
    v.usable[i] = oracle_usable_in(i < 12 ? mi_heap_get_default() : heap, v.want[i], false);
  }
  assert_true(mi_memory_visit_live_allocations(&visit_block, &v));
  for (size_t i = 0; i < 16; i++) assert_int_equal(v.seen[i], 1);
  assert_true(v.visited >= 16);
  /* a visitor that stops: false */
  memset(v.seen, 0, sizeof(v.seen));
  v.visited = 0;
  v.stop_after = 3;
  assert_false(mi_memory_visit_live_allocations(&visit_block, &v));
  assert_int_equal(v.visited, 3);
  assert_false(mi_memory_visit_live_allocations(NULL, NULL));
  /* from inside a handler: false */
  mi_memory_callbacks_t cb;
  memset(&cb, 0, sizeof(cb));
  cb.handlers[MI_MEMORY_ALLOCATE] = &on_change_visit;
  assert_true(mi_memory_set_callbacks(&cb));
  v.stop_after = 0;
  visit_in_handler_v = &v;
  void* x = mi_malloc(10);
  assert_false(visit_in_handler_result);
  mi_free(x);
  for (size_t i = 0; i < 16; i++) mi_free(v.want[i]);
  mi_heap_delete(heap);
}

/* A destroyed heap's counted blocks leave the counts, one FREE each. */
static void test_heap_destroy_counted_blocks_one_free_each(void** state) {
  (void)state;
  mi_heap_t* heap = mi_heap_new();
  uint64_t sum = 0;
  for (size_t i = 0; i < 20; i++) {
    void* p = mi_heap_malloc(heap, 100 + i * 1000 + (i == 19 ? 500000 : 0));
    sum += oracle_usable_in(heap, p, false);
  }
  assert_int_equal(snap().live_bytes, sum);
  reset_events();
  mi_heap_destroy(heap);
  assert_int_equal(atomic_load(&kind_count[MI_MEMORY_FREE]), 20);
  assert_int_equal(atomic_load(&delta_sum), -(int64_t)sum);
  mi_memory_snapshot_t s = snap();
  assert_int_equal(s.live_count, 0);
  assert_int_equal(s.live_bytes, 0);
}

#endif

/* ---- mi_unwrapped_* -------------------------------------------------------------------------- */

static _Atomic(int) last_error;
static void on_error(int err, void* arg) {
  (void)arg;
  atomic_store(&last_error, err);
}

static void test_unwrapped_aligned_no_events_no_stats_contents_copied(void** state) {
  (void)state;
  mi_stats_t_decl(s0);
  assert_true(mi_stats_get(&s0));
#if MI_MEMORY_EVENTS
  uint64_t accum0 = snap().accum_count;
#endif
  const size_t aligns[4] = {0, 64, 4096, 1 * MiB};
  for (size_t i = 0; i < 4; i++) {
    uint8_t* p = (uint8_t*)mi_unwrapped_malloc(10000, aligns[i]);
    assert_non_null(p);
    assert_true(tu_is_aligned(p, aligns[i] == 0 ? sizeof(void*) : aligns[i]));
    assert_false(mi_is_in_heap_region(p));
    tu_fill(p, 10000, (uint8_t)i);
    uint8_t* q = (uint8_t*)mi_unwrapped_realloc(p, 30000, aligns[i]);
    assert_non_null(q);
    assert_true(tu_check(q, 10000, (uint8_t)i));
    q[29999] = 1;
    q = (uint8_t*)mi_unwrapped_realloc(q, 100, 0);
    assert_true(tu_check(q, 100, (uint8_t)i));
    mi_unwrapped_free(q);
  }
  void* z = mi_unwrapped_realloc(NULL, 0, 0);
  assert_non_null(z);
  mi_unwrapped_free(z);
  mi_unwrapped_free(NULL);
  assert_null(mi_unwrapped_malloc(10, tu_opaque(3)));
#if MI_MEMORY_EVENTS
  assert_int_equal(nevs, 0);
  assert_int_equal(snap().accum_count, accum0);
#endif
  mi_stats_t_decl(s1);
  assert_true(mi_stats_get(&s1));
  assert_int_equal(s1.reserved.current, s0.reserved.current);
  assert_int_equal(s1.committed.current, s0.committed.current);
}

/* Not one of its pointers: EINVAL, and nothing done (a heap block, a
   pointer on the stack, one at the start of a page after an unmapped one,
   one freed already). */
static void test_unwrapped_free_foreign_pointer_einval_ignored(void** state) {
  (void)state;
  mi_register_error(&on_error, NULL);
  void* heap_block = mi_malloc(64);
  atomic_store(&last_error, 0);
  mi_unwrapped_free(heap_block);
  assert_int_equal(atomic_load(&last_error), EINVAL);
  char local[32];
  atomic_store(&last_error, 0);
  mi_unwrapped_free(local + 16);
  assert_int_equal(atomic_load(&last_error), EINVAL);
  long psize = sysconf(_SC_PAGESIZE);
  uint8_t* two = (uint8_t*)mmap(NULL, (size_t)psize * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(two != MAP_FAILED);
  assert_int_equal(munmap(two, (size_t)psize), 0); /* the page below is not mapped */
  atomic_store(&last_error, 0);
  mi_unwrapped_free(two + psize);
  assert_int_equal(atomic_load(&last_error), EINVAL);
  atomic_store(&last_error, 0);
  assert_null(mi_unwrapped_realloc(two + psize, 100, 0));
  assert_int_equal(atomic_load(&last_error), EINVAL);
  munmap(two + psize, (size_t)psize);
  void* p = mi_unwrapped_malloc(100, 0);
  mi_unwrapped_free(p);
  atomic_store(&last_error, 0);
  mi_unwrapped_free(p);
  assert_int_equal(atomic_load(&last_error), EINVAL);
  mi_register_error(NULL, NULL);
  assert_true(mi_heap_check_owned(mi_heap_get_default(), heap_block));
  mi_free(heap_block);
}

#if MI_MEMORY_EVENTS
/* ---- With the profilers at the same hook sites -------------------------------------------- */

static void test_dhat_and_sampler_running_events_exact(void** state) {
  (void)state;
#if MI_DHAT
  assert_true(mi_dhat_start());
#endif
#if MI_PPROF
  assert_true(mi_prof_start(1)); /* every allocation a sample */
#endif
  reset_events();
  uint64_t before = snap().live_bytes;
  void* p = mi_malloc(100);
  size_t u1 = oracle_usable(p);
  expect_one(MI_MEMORY_ALLOCATE, (int64_t)u1, before, 100);
  reset_events();
  void* q = mi_realloc(p, 20000);
  size_t u2 = oracle_usable(q);
  expect_one(MI_MEMORY_RESIZE, (int64_t)u2 - (int64_t)u1, u1, 20000);
#if MI_PPROF
  mi_prof_stats_t_decl(ps);
  assert_true(mi_prof_stats_get(&ps));
  assert_true(ps.live_samples >= 1 && ps.live_bytes >= 20000); /* the sampler holds the block, resized */
#endif
  reset_events();
  mi_free(q);
  expect_one(MI_MEMORY_FREE, -(int64_t)u2, u2, 0);
#if MI_PPROF
  mi_prof_stop();
#endif
#if MI_DHAT
  char path[64];
  snprintf(path, sizeof(path), "/tmp/mi-events-dhat-%d.json", (int)getpid());
  assert_true(mi_dhat_dump(path));
  unlink(path);
  mi_dhat_stop();
#endif
  /* the profilers off: their bits cleared, the events' kept */
  reset_events();
  void* r = mi_malloc(10);
  mi_free(r);
  assert_int_equal(nevs, 2);
}

/* ---- Secure builds: guarded samples ----------------------------------------------------------- */

static void test_secure_guarded_sample_one_allocate_exact(void** state) {
  (void)state;
#if MI_TEST_SECURE && MI_GUARDED
  mi_heap_t* heap = mi_heap_new();
  mi_heap_guarded_set_sample_rate(heap, 1, 0); /* every allocation guarded */
  uint64_t before = snap().live_bytes;
  void* p = mi_heap_malloc(heap, 100);
  assert_non_null(p);
  size_t usable = oracle_usable_in(heap, p, true);
  assert_int_equal(usable, 112); /* to 16 bytes, no trailer */
  expect_one(MI_MEMORY_ALLOCATE, (int64_t)usable, before, 100);
  reset_events();
  void* q = mi_heap_realloc(heap, p, 60); /* a guarded block moves */
  assert_non_null(q);
  expect_one(MI_MEMORY_RESIZE, (int64_t)oracle_usable_in(heap, q, true) - (int64_t)usable, usable, 60);
  reset_events();
  void* a = mi_heap_malloc_aligned(heap, 200, 64);
  assert_non_null(a);
  assert_int_equal(nevs, 1);
  assert_int_equal(evs[0].kind, MI_MEMORY_ALLOCATE);
  mi_free(a);
  mi_free(q);
  assert_int_equal(nevs, 3);
  assert_int_equal(snap().live_count, 0);
  mi_heap_delete(heap);
#else
  skip();
#endif
}

#else
/* ---- Built without ------------------------------------------------------------------------- */

static bool visit_none(void* allocation, size_t usable_size, void* arg) {
  (void)allocation, (void)usable_size, (void)arg;
  return true;
}

static void test_built_out_calls_false(void** state) {
  (void)state;
  mi_memory_snapshot_t_decl(s);
  assert_false(mi_memory_tracking_set_enabled(true));
  assert_false(mi_memory_tracking_is_enabled());
  assert_false(mi_memory_set_callbacks(NULL));
  assert_false(mi_memory_snapshot(&s));
  assert_false(mi_memory_visit_live_allocations(&visit_none, NULL));
}
#endif

/* ---- MIMALLOC_MEMORY_EVENTS=1 ------------------------------------------------------------- */

static int env_enabled_check(void) {
  int failed = 0;
  if (!mi_memory_tracking_is_enabled()) {
    printf("FAIL: MIMALLOC_MEMORY_EVENTS=1 did not switch counting on\n");
    failed++;
  }
  void* p = mi_malloc(100);
  mi_memory_snapshot_t_decl(s);
  if (!mi_memory_snapshot(&s) || s.accum_count < 1 || s.live_count < 1) {
    printf("FAIL: an allocation was not counted (accum %llu, live %llu)\n", (unsigned long long)s.accum_count,
           (unsigned long long)s.live_count);
    failed++;
  }
  mi_free(p);
  mi_memory_tracking_set_enabled(false); /* the call wins over the environment */
  if (mi_memory_tracking_is_enabled()) {
    printf("FAIL: mi_memory_tracking_set_enabled(false) did not win\n");
    failed++;
  }
  printf("env-enabled-check: %s\n", failed == 0 ? "ok" : "FAILED");
  return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--env-enabled-check") == 0) return env_enabled_check();
  /* no guarded samples but the test's own: a sampled block has no trailer */
  mi_option_set(mi_option_guarded_sample_rate, 0);
  /* no background thread: it ends after a second with nothing to do and
     starts again when work comes, its thread data counted in `reserved`
     each time, which the unwrapped calls' test holds steady (on a loaded
     machine it once moved by 252 KiB in between) */
  mi_option_set(mi_option_purge_thread, 0);
#if MI_MEMORY_EVENTS
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tracking_default_off_nothing_counted),
      cmocka_unit_test(test_tracking_set_enabled_toggles_true_when_built_in),
      cmocka_unit_test_setup_teardown(test_callbacks_set_late_hear_later_events_table_copied, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alloc_one_event_exact_kind_delta_total_request, setup, teardown),
      cmocka_unit_test_setup_teardown(test_free_one_event_exact_negative_delta_total, setup, teardown),
      cmocka_unit_test_setup_teardown(test_realloc_moving_grow_one_resize_exact, setup, teardown),
      cmocka_unit_test_setup_teardown(test_realloc_moving_shrink_one_resize_negative_delta, setup, teardown),
      cmocka_unit_test_setup_teardown(test_realloc_in_place_one_resize_delta_zero, setup, teardown),
      cmocka_unit_test_setup_teardown(test_realloc_null_calloc_strdup_one_allocate_each, setup, teardown),
      cmocka_unit_test_setup_teardown(test_aligned_over_allocation_one_allocate_whole_block, setup, teardown),
      cmocka_unit_test_setup_teardown(test_zero_size_one_allocate_block_counted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failed_alloc_and_realloc_no_event_block_still_counted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_double_free_no_second_event, setup, teardown),
      cmocka_unit_test_setup_teardown(test_threads_8_balanced_zero_live, setup, teardown),
      cmocka_unit_test_setup_teardown(test_free_from_foreign_thread_one_free_exact, setup, teardown),
      cmocka_unit_test_setup_teardown(test_handler_reentrant_alloc_suppressed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_snapshot_counts_match_blocks, setup, teardown),
      cmocka_unit_test(test_snapshot_null_size_or_version_mismatch_false),
      cmocka_unit_test_setup_teardown(test_disable_reenable_gap_skipped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_visit_live_allocations_each_block_once_usable, setup, teardown),
      cmocka_unit_test_setup_teardown(test_heap_destroy_counted_blocks_one_free_each, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unwrapped_aligned_no_events_no_stats_contents_copied, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unwrapped_free_foreign_pointer_einval_ignored, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dhat_and_sampler_running_events_exact, setup, teardown),
      cmocka_unit_test_setup_teardown(test_secure_guarded_sample_one_allocate_exact, setup, teardown),
  };
#else
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_built_out_calls_false),
      cmocka_unit_test(test_unwrapped_aligned_no_events_no_stats_contents_copied),
      cmocka_unit_test(test_unwrapped_free_foreign_pointer_einval_ignored),
  };
#endif
  return cmocka_run_group_tests(tests, NULL, NULL);
}
