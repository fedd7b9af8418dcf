/* mi_purge_all from any thread (docs/memory-return.md). Four workers split
   the seed's workload (a quarter each of 150k x 512 B, 100k x 1 KiB, 50k x
   2 KiB, touched; a scattered 1 in 20 kept and filled, the rest freed):
   - busy (they go on allocating and freeing, never idle): the main thread's
     forced purges, every 100 ms, say PARTIAL with the 4 workers pending,
     and the report adds up;
   - parked (mi_on_thread_idle_start, then blocked on a condition variable):
     one forced purge says OK with every thread reached and gives at least
     60% of the peak back; the workers take their heaps back
     (mi_on_thread_idle_end) and find every kept byte intact;
   - a purge called from inside a purge (a deferred-free callback) is BUSY
     and does nothing;
   - a worker that exits with its kept blocks live: a purge from the main
     thread sweeps the holes of its abandoned pages (none with hole purge
     off, the control), and the kept blocks are intact.
   Each case runs in a child process (its RSS its own), under a watchdog:
   a deadlock fails the case instead of hanging it. */
#define _GNU_SOURCE
#include "../testutil.h"
#include "../child.h"
#include "purge-child.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 4
#define N_BLOCKS (300000 / WORKERS)
#define KEEP_EVERY 20

typedef struct worker_s {
  size_t id;
  uint8_t* blocks[N_BLOCKS];
  int bad;
} worker_t;

static worker_t workers[WORKERS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;          /* workers done with their share (and parked, when parking) */
static bool go_on;         /* the main thread is done: workers may end */
static _Atomic(bool) stop; /* busy workers: stop churning */
static bool parking;

static size_t size_of(size_t i) {
  size_t k = i % 6;
  return (k < 3 ? 512 : k < 5 ? 1024 : 2048);
}

static bool kept(size_t id, size_t i) {
  uint64_t x = ((uint64_t)id * N_BLOCKS + i) * 0x9E3779B97F4A7C15ULL;
  return ((x >> 32) % KEEP_EVERY) == 0;
}

static inline uint8_t pattern(size_t id, size_t i, size_t j) {
  return (uint8_t)(id * 31u + i * 131u + j * 7u + 1u);
}

/* A worker's share of the workload: allocated and touched, then all but
   the kept blocks freed, those filled with their pattern. */
static void do_share(worker_t* w) {
  for (size_t i = 0; i < N_BLOCKS; i++) {
    w->blocks[i] = (uint8_t*)mi_malloc(size_of(i));
    memset(w->blocks[i], 0x5A, size_of(i));
  }
  for (size_t i = 0; i < N_BLOCKS; i++) {
    if (kept(w->id, i)) {
      for (size_t j = 0; j < size_of(i); j++) w->blocks[i][j] = pattern(w->id, i, j);
    } else {
      mi_free(w->blocks[i]);
      w->blocks[i] = NULL;
    }
  }
}

static void* worker_main(void* arg) {
  worker_t* w = (worker_t*)arg;
  do_share(w);
  bool parked = (parking && mi_on_thread_idle_start());
  pthread_mutex_lock(&mu);
  ready++;
  pthread_cond_broadcast(&cv);
  if (parking) {
    while (!go_on) pthread_cond_wait(&cv, &mu); /* blocked: no allocator call */
  }
  pthread_mutex_unlock(&mu);
  if (parked) mi_on_thread_idle_end();
  if (!parking) {
    uint64_t rng = w->id + 1;
    while (!atomic_load(&stop)) { /* never idle */
      void* p = mi_malloc(64 + (size_t)(tu_rand(&rng) % 2000));
      mi_free(p);
    }
  }
  for (size_t i = 0; i < N_BLOCKS; i++) {
    if (w->blocks[i] == NULL) continue;
    for (size_t j = 0; j < size_of(i); j++) w->bad += (w->blocks[i][j] != pattern(w->id, i, j));
    mi_free(w->blocks[i]);
  }
  return NULL;
}

static void start_workers(pthread_t* t, bool park) {
  parking = park;
  ready = 0;
  go_on = false;
  atomic_store(&stop, false);
  for (size_t i = 0; i < WORKERS; i++) {
    workers[i].id = i;
    workers[i].bad = 0;
    TU_CHECK(pthread_create(&t[i], NULL, &worker_main, &workers[i]) == 0);
  }
  pthread_mutex_lock(&mu);
  while (ready < WORKERS) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static int end_workers(pthread_t* t) {
  pthread_mutex_lock(&mu);
  go_on = true;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  atomic_store(&stop, true);
  int bad = 0;
  for (size_t i = 0; i < WORKERS; i++) {
    pthread_join(t[i], NULL);
    bad += workers[i].bad;
  }
  return bad;
}

static void check_report(const mi_purge_all_report_t* r, int status) {
  TU_CHECK(r->size == sizeof(*r));
  TU_CHECK(r->complete == (r->theaps_pending == 0 && r->theaps_orphaned == 0));
  TU_CHECK(status == (r->complete ? MI_PURGE_OK : MI_PURGE_PARTIAL));
  TU_CHECK(!r->gated);
}

/* ---- The cases, each in a child -------------------------------------------------- */

static void case_busy_workers_partial(void) {
  pthread_t t[WORKERS];
  start_workers(t, false);
  for (int round = 0; round < 10; round++) {
    mi_purge_holes_stats_t before, after;
    mi_purge_holes_stats_get(&before);
    mi_purge_all_report_t r;
    r.size = sizeof(r);
    int status = mi_purge_all_ex(MI_PURGE_FORCE, 20, &r);
    mi_purge_holes_stats_get(&after);
    check_report(&r, status);
    TU_CHECK(status == MI_PURGE_PARTIAL);
    TU_CHECK(r.theaps_pending == WORKERS); /* they never parked */
    TU_CHECK(r.theaps_swept == 1);         /* the caller */
    TU_CHECK(r.hole_bytes == after.purged_bytes_total - before.purged_bytes_total);
    usleep(100 * 1000);
  }
  TU_CHECK(end_workers(t) == 0);
}

static void case_parked_workers_ok(void) {
  prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
  mi_option_set(mi_option_allow_thp, 0);
  mi_collect(true);
  size_t base = tu_rss();
  pthread_t t[WORKERS];
  start_workers(t, true);
  /* the peak: the bytes the workers touched (the background thread may
     have swept a parked worker already by the time RSS could be read) */
  size_t touched = 0;
  for (size_t i = 0; i < N_BLOCKS; i++) touched += WORKERS * size_of(i);
  size_t peak = base + touched;
  mi_purge_all_report_t r;
  r.size = sizeof(r);
  int status = mi_purge_all_ex(MI_PURGE_FORCE, 5000, &r);
  size_t after = tu_rss();
  check_report(&r, status);
  TU_CHECK(status == MI_PURGE_OK);
  TU_CHECK(r.theaps_pending == 0);
  TU_CHECK(r.theaps_swept == WORKERS + 1);
  double returned = 1.0 - (double)(after > base ? after - base : 0) / (double)(peak - base);
  fprintf(stderr, "parked: RSS %zu MB -> %zu MB -> %zu MB (%.1f%% returned), holes %zu MB, arenas %zu MB\n", base >> 20,
          peak >> 20, after >> 20, 100.0 * returned, r.hole_bytes >> 20, r.arena_bytes >> 20);
#if !defined(MI_TEST_TRACK_ASAN)
  TU_CHECK(returned >= 0.60);
#endif
  TU_CHECK(end_workers(t) == 0); /* every kept byte intact */
}

static int nested_status = -1;
static void nested_purge(bool force, unsigned long long heartbeat, void* arg) {
  (void)force, (void)heartbeat, (void)arg;
  if (nested_status == -1) nested_status = mi_purge_all_ex(MI_PURGE_FORCE, 0, NULL);
}

static void case_nested_busy(void) {
  mi_free(mi_malloc(100)); /* the caller has a heap */
  mi_register_deferred_free(&nested_purge, NULL);
  mi_purge_all_report_t r;
  memset(&r, 0xEE, sizeof(r));
  r.size = offsetof(mi_purge_all_report_t, theaps_swept); /* an older, shorter report */
  int status = mi_purge_all_ex(MI_PURGE_FORCE, 0, &r);
  mi_register_deferred_free(NULL, NULL);
  TU_CHECK(status == MI_PURGE_OK);
  TU_CHECK(nested_status == MI_PURGE_BUSY);
  TU_CHECK(r.size == offsetof(mi_purge_all_report_t, theaps_swept));
  const uint8_t* tail = (const uint8_t*)&r.theaps_swept;
  for (size_t i = 0; i < sizeof(r) - offsetof(mi_purge_all_report_t, theaps_swept); i++) TU_CHECK(tail[i] == 0xEE);
  /* after it, a purge is possible again */
  TU_CHECK(mi_purge_all_ex(0, 0, NULL) == MI_PURGE_OK);
}

/* A thread that parks and exits without taking its heaps back (a misuse
   the allocator survives): its exit waits for a sweep of its pages, and
   once it is gone no purge waits for it. */
static void* park_and_exit(void* arg) {
  (void)arg;
  for (int i = 0; i < 20000; i++) {
    void* p = mi_malloc(100 + (size_t)(i % 7) * 100);
    if (i % 20 != 0) mi_free(p);
  }
  TU_CHECK(mi_on_thread_idle_start());
  return NULL;
}

static void case_parked_thread_exits(void) {
  for (int round = 0; round < 20; round++) {
    pthread_t t;
    TU_CHECK(pthread_create(&t, NULL, &park_and_exit, NULL) == 0);
    mi_purge_all_report_t r;
    r.size = sizeof(r);
    (void)mi_purge_all_ex(MI_PURGE_FORCE, 0, &r); /* (races with its exit) */
    pthread_join(t, NULL);
    int status = mi_purge_all_ex(MI_PURGE_FORCE, 0, &r);
    check_report(&r, status);
    TU_CHECK(status == MI_PURGE_OK);
  }
}

/* A thread that did its share of the workload and exited with its kept
   blocks live: its segments are abandoned, and a purge from the main
   thread sweeps their pages' holes (hole purge off: none, the control). The
   main thread then frees the kept blocks, every byte intact. */
static void* share_and_exit(void* arg) {
  do_share((worker_t*)arg);
  return NULL;
}

static void abandoned_holes(bool holes) {
  prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
  mi_option_set(mi_option_allow_thp, 0);
  mi_option_set(mi_option_purge_thread, 0); /* no background cleanup: the purge's own sweep is measured */
  if (!holes) mi_option_set(mi_option_purge_holes, 0);
  mi_free(mi_malloc(16));
  size_t base = tu_rss();
  pthread_t t;
  workers[0].id = 0;
  TU_CHECK(pthread_create(&t, NULL, &share_and_exit, &workers[0]) == 0);
  pthread_join(t, NULL);
  size_t peak = tu_rss();
  mi_purge_all_report_t r;
  r.size = sizeof(r);
  int status = mi_purge_all_ex(MI_PURGE_FORCE, 0, &r);
  size_t after = tu_rss();
  check_report(&r, status);
  fprintf(stderr, "abandoned (holes %d): RSS %zu KiB -> %zu KiB -> %zu KiB, holes %zu KiB\n", holes, base >> 10,
          peak >> 10, after >> 10, r.hole_bytes >> 10);
  if (holes) {
    TU_CHECK(r.hole_bytes > (peak - base) / 2);
#if !defined(MI_TEST_TRACK_ASAN)
    TU_CHECK(peak - after >= r.hole_bytes / 2);
#endif
  } else {
    TU_CHECK(r.hole_bytes == 0);
  }
  worker_t* w = &workers[0];
  for (size_t i = 0; i < N_BLOCKS; i++) {
    if (w->blocks[i] == NULL) continue;
    for (size_t j = 0; j < size_of(i); j++) TU_CHECK(w->blocks[i][j] == pattern(w->id, i, j));
    mi_free(w->blocks[i]);
  }
}

static void case_abandoned_holes_swept(void) {
  abandoned_holes(true);
}

static void case_abandoned_holes_off_control(void) {
  abandoned_holes(false);
}

static void test_purge_all_busy_workers_partial_pending_counted(void** state) {
  (void)state;
  run_in_child(&case_busy_workers_partial);
}

static void test_purge_all_parked_workers_ok_most_returned_intact(void** state) {
  (void)state;
  run_in_child(&case_parked_workers_ok);
}

static void test_purge_all_nested_call_busy_short_report_kept(void** state) {
  (void)state;
  run_in_child(&case_nested_busy);
}

static void test_purge_all_parked_thread_exited_not_pending(void** state) {
  (void)state;
  run_in_child(&case_parked_thread_exits);
}

static void test_purge_all_exited_thread_pages_holes_swept_intact(void** state) {
  (void)state;
  run_in_child(&case_abandoned_holes_swept);
}

static void test_purge_all_exited_thread_holes_off_none_swept(void** state) {
  (void)state;
  run_in_child(&case_abandoned_holes_off_control);
}

int main(void) {
  mi_child_save_signals();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_purge_all_nested_call_busy_short_report_kept),
      cmocka_unit_test(test_purge_all_busy_workers_partial_pending_counted),
      cmocka_unit_test(test_purge_all_parked_workers_ok_most_returned_intact),
      cmocka_unit_test(test_purge_all_parked_thread_exited_not_pending),
      cmocka_unit_test(test_purge_all_exited_thread_pages_holes_swept_intact),
      cmocka_unit_test(test_purge_all_exited_thread_holes_off_none_swept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
