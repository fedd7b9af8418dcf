/* The pprof sampler's calls and the life of a sample: start and stop, the
   statistics' versions, exact counts at interval 1 (every allocation
   sampled), frees from other threads, realloc in place and moved, aligned
   blocks, heap destroy, visitors, the text dump's header and records, fork,
   and the environment's exit dump (its format switch really switching).
   Windows (MinGW, under Wine): the same, but the fork case is skipped (no
   fork) and the signal case checks that MIMALLOC_PROF_SIGNAL is refused
   with one warning and no dump (no signals); children are this program
   started again (tests/win/spawn.h). */
#define _GNU_SOURCE
#include "prof-test.h"
#if defined(_WIN32)
#include "spawn.h" /* no fork: the child is this program started again */
#else
#include "child-env.h"
#include <signal.h>
#include <sys/wait.h>
#endif

#include <pthread.h>

#ifndef MAX_PATH
#define MAX_PATH 260
#endif

/* A file in the temporary directory: /tmp, or Windows' (GetTempPath). */
static void tmp_path(char* buf, size_t size, const char* name) {
#if defined(_WIN32)
  char dir[MAX_PATH];
  DWORD n = GetTempPathA(sizeof(dir), dir);
  if (n == 0 || n >= sizeof(dir)) snprintf(dir, sizeof(dir), ".\\");
  snprintf(buf, size, "%s%s", dir, name);
#else
  snprintf(buf, size, "/tmp/%s", name);
#endif
}

#if defined(_WIN32)
/* The child: this program again with "--child MODE", the MIMALLOC_* of
   this run unset for it and `extra` set; its exit code, with its stderr
   and stdout in `out`. */
static int run_self_env(const char* mode, const char* const* extra, char* out, size_t outsize) {
  static char unset[8][128];
  const char* env[16];
  int k = 0;
  LPCH block = GetEnvironmentStringsA();
  for (LPCH e = block; e != NULL && *e != 0 && k < 8; e += strlen(e) + 1) {
    const char* eq = strchr(e, '=');
    if (strncmp(e, "MIMALLOC_", 9) != 0 || eq == NULL || (size_t)(eq - e) + 2 > sizeof(unset[0])) continue;
    bool set_by_extra = false;
    for (int i = 0; extra[i] != NULL; i++)
      set_by_extra = set_by_extra || strncmp(extra[i], e, (size_t)(eq - e) + 1) == 0;
    if (set_by_extra) continue;
    memcpy(unset[k], e, (size_t)(eq - e) + 1);
    unset[k][eq - e + 1] = 0;
    env[k] = unset[k];
    k++;
  }
  if (block != NULL) FreeEnvironmentStringsA(block);
  for (int i = 0; extra[i] != NULL && k < 15; i++) env[k++] = extra[i];
  env[k] = NULL;
  char args[64];
  snprintf(args, sizeof(args), "--child %s", mode);
  int rc = mi_spawn_self(args, env, true, true, out, outsize, 120000);
  size_t k2 = 0; /* the child's text mode writes "\r\n": lines as on POSIX */
  for (size_t i = 0; out[i] != 0; i++) {
    if (out[i] != '\r') out[k2++] = out[i];
  }
  out[k2] = 0;
  return rc;
}
#endif

static void start_exact(void) {
  mi_prof_stop();
  assert_true(mi_prof_start_seeded(1, 7)); /* interval 1: every allocation */
}

static void test_prof_start_twice_second_false_stop_clears(void** state) {
  (void)state;
  start_exact();
  assert_true(mi_prof_is_enabled());
  assert_false(mi_prof_start(4096));
  void* p = mi_malloc(100);
  assert_int_equal(stats_now().live_samples, 1);
  mi_prof_stop();
  assert_false(mi_prof_is_enabled());
  mi_prof_stats_t st = stats_now();
  assert_int_equal(st.live_samples, 0);
  assert_int_equal(st.live_bytes, 0);
  assert_int_equal(st.unique_stacks, 0);
  mi_free(p);
}

static void test_prof_stats_three_versions_accepted_others_rejected(void** state) {
  (void)state;
  start_exact();
  void* p = mi_malloc(40);
  mi_prof_stats_t st;
  memset(&st, 0xAB, sizeof(st));
  st.size = offsetof(mi_prof_stats_t, dropped_samples);
  st.version = 1;
  assert_true(mi_prof_stats_get(&st));
  assert_int_equal(st.live_samples, 1);
  assert_int_equal(st.live_bytes, 40);
  /* a v1 caller's struct ends before dropped_samples: nothing written past it */
  assert_int_equal(((unsigned char*)&st.dropped_samples)[0], 0xAB);
  st.size = offsetof(mi_prof_stats_t, heap_committed);
  st.version = 2;
  assert_true(mi_prof_stats_get(&st));
  st.size = sizeof(st);
  st.version = 3;
  assert_true(mi_prof_stats_get(&st));
  assert_true(st.heap_committed > 0);
  st.version = 2; /* the size of v3 with version 2 */
  assert_false(mi_prof_stats_get(&st));
  st.size = 12;
  st.version = 1;
  assert_false(mi_prof_stats_get(&st));
  assert_false(mi_prof_stats_get(NULL));
  mi_free(p);
  mi_prof_stop();
}

static void test_prof_exact_interval_counts_equal_truth(void** state) {
  (void)state;
  start_exact();
  enum { N = 1000 };
  void* blocks[N];
  size_t total = 0;
  for (int i = 0; i < N; i++) {
    size_t size = (size_t)(i % 50) * 24; /* 0 counts as 1 byte */
    blocks[i] = mi_malloc(size);
    total += (size == 0 ? 1 : size);
  }
  mi_prof_stats_t st = stats_now();
  assert_int_equal(st.live_samples, N);
  assert_int_equal(st.live_bytes, total);
  for (int i = 0; i < N; i += 2) mi_free(blocks[i]);
  st = stats_now();
  assert_int_equal(st.live_samples, N / 2);
  for (int i = 1; i < N; i += 2) mi_free(blocks[i]);
  st = stats_now();
  assert_int_equal(st.live_samples, 0);
  assert_int_equal(st.live_bytes, 0);
  mi_prof_stop();
}

/* A thread whose heap counted down under an earlier start, to a sample
   point far away: a new start must reach it (its heap's count set anew at
   its next page refill, within a page's worth of blocks), in the secure
   build too, where malloc counts the heap's countdown while the sampler
   alone runs. */
static pthread_barrier_t restart_barrier;
static size_t restart_samples_seen;

static void* allocate_across_restart(void* arg) {
  (void)arg;
  void* first = mi_malloc(64);            /* counted under the first start: its point 2^40 bytes away */
  pthread_barrier_wait(&restart_barrier); /* main restarts at interval 1 */
  pthread_barrier_wait(&restart_barrier);
  enum { N = 10000 };
  static void* blocks[N];
  for (int i = 0; i < N; i++) blocks[i] = mi_malloc(64);
  restart_samples_seen = stats_now().live_samples;
  for (int i = 0; i < N; i++) mi_free(blocks[i]);
  mi_free(first);
  return NULL;
}

static void test_prof_restart_thread_counted_before_samples_after_refill(void** state) {
  (void)state;
  mi_prof_stop();
  assert_true(mi_prof_start_seeded((size_t)1 << 40, 7));
  assert_int_equal(pthread_barrier_init(&restart_barrier, NULL, 2), 0);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, &allocate_across_restart, NULL), 0);
  pthread_barrier_wait(&restart_barrier);
  start_exact();
  pthread_barrier_wait(&restart_barrier);
  assert_int_equal(pthread_join(t, NULL), 0);
  pthread_barrier_destroy(&restart_barrier);
  /* all but those served from the page it held at the restart (a page of
     64 KiB holds at most 1024 blocks of 64 bytes) */
  assert_true(restart_samples_seen >= 10000 - 1024);
  mi_prof_stop();
}

/* Two call sites of their own. A sample's stack comes from the capture's
   cache of the site (its hint) while the stack table is the one the hint
   was filled from; a restart empties the table, and a site sampled before
   it must be counted at a stack of its own again, not at the number its
   hint held (which the restart gave another site's stack). */
static volatile int site_side; /* written after each call: no tail call */
static __attribute__((noinline)) void* site_before_restart(size_t n) {
  void* p = mi_malloc(n);
  site_side = 1;
  return p;
}
static __attribute__((noinline)) void* site_after_restart(size_t n) {
  void* p = mi_malloc(n);
  site_side = 2;
  return p;
}

typedef struct live_stacks_s {
  size_t count;
  size_t objects[8], bytes[8];
} live_stacks_t;

static bool visit_live_stacks(const mi_prof_sample_info_t* info, void* arg) {
  live_stacks_t* v = (live_stacks_t*)arg;
  if (info->live_objects == 0 || v->count == 8) return true;
  v->objects[v->count] = info->live_objects;
  v->bytes[v->count] = info->live_bytes;
  v->count++;
  return true;
}

static __attribute__((noinline)) void site_before_restart_blocks(void** out, int count) {
  /* one call instruction: clang -O2 unrolled the loop into four calls,
     four stacks, and the site was no longer one */
#if defined(__clang__)
#pragma clang loop unroll(disable)
#elif defined(__GNUC__)
#pragma GCC unroll 1
#endif
  for (int i = 0; i < count; i++) out[i] = tu_launder(site_before_restart(24));
  site_side = 3;
}

static void test_prof_restart_site_sampled_before_counted_at_own_stack(void** state) {
  (void)state;
  void* again[4];
  void* other = NULL;
  for (int round = 0; round < 2; round++) {
    start_exact(); /* the second: the table anew, the other site's stack its first */
    if (round == 1) other = tu_launder(site_after_restart(40));
    site_before_restart_blocks(again, 4); /* one call: one stack in both rounds */
    if (round == 0) {
      for (int i = 0; i < 4; i++) mi_free(again[i]);
    }
  }
  live_stacks_t v = {0};
  assert_true(mi_prof_visit(&visit_live_stacks, &v));
  bool other_alone = false, again_alone = false;
  for (size_t i = 0; i < v.count; i++) {
    other_alone = other_alone || (v.objects[i] == 1 && v.bytes[i] == 40);
    again_alone = again_alone || (v.objects[i] == 4 && v.bytes[i] == 4 * 24);
  }
  if (!other_alone || !again_alone) {
    for (size_t i = 0; i < v.count; i++)
      print_message("stack %zu: %zu objects, %zu bytes\n", i, v.objects[i], v.bytes[i]);
    fail_msg("the two sites not counted apart after the restart");
  }
  for (int i = 0; i < 4; i++) mi_free(again[i]);
  mi_free(other);
  mi_prof_stop();
}

static void* free_them(void* arg) {
  void** blocks = (void**)arg;
  for (int i = 0; i < 300; i++) mi_free(blocks[i]);
  return NULL;
}

static void test_prof_cross_thread_free_live_back_to_zero(void** state) {
  (void)state;
  start_exact();
  void* blocks[300];
  for (int i = 0; i < 300; i++) blocks[i] = mi_malloc(64 + (size_t)i);
  assert_int_equal(stats_now().live_samples, 300);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, &free_them, blocks), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  mi_collect(true);
  mi_prof_stats_t st = stats_now();
  assert_int_equal(st.live_samples, 0);
  assert_int_equal(st.live_bytes, 0);
  mi_prof_stop();
}

static void test_prof_realloc_in_place_size_follows_moved_old_freed(void** state) {
  (void)state;
  start_exact();
  char* p = (char*)mi_malloc(128);
  char* q = (char*)mi_realloc(p, 96); /* shrinks in place */
  assert_ptr_equal(p, q);
  mi_prof_stats_t st = stats_now();
  assert_int_equal(st.live_samples, 1);
  assert_int_equal(st.live_bytes, 96);
  char* r = (char*)mi_realloc(q, 100000); /* moves */
  assert_ptr_not_equal(q, r);
  st = stats_now();
  assert_int_equal(st.live_samples, 1);
  assert_int_equal(st.live_bytes, 100000);
  mi_free(r);
  assert_int_equal(stats_now().live_samples, 0);
  mi_prof_stop();
}

static void test_prof_aligned_blocks_tracked_and_freed(void** state) {
  (void)state;
  start_exact();
  void* a = mi_malloc_aligned(100, 256);
  void* b = mi_malloc_aligned_at(300, 4096, 8);
  void* c = mi_malloc_aligned(1000, 8 * MiB);
  assert_int_equal(stats_now().live_samples, 3);
  assert_int_equal(stats_now().live_bytes, 1400);
  mi_free(a);
  mi_free(b);
  mi_free(c);
  assert_int_equal(stats_now().live_samples, 0);
  mi_prof_stop();
}

static void test_prof_heap_destroy_samples_retired(void** state) {
  (void)state;
  start_exact();
  mi_heap_t* heap = mi_heap_new();
  assert_non_null(heap);
  for (int i = 0; i < 100; i++) assert_non_null(mi_heap_malloc(heap, 48));
  assert_non_null(mi_heap_malloc(heap, 300000));
  assert_int_equal(stats_now().live_samples, 101);
  mi_heap_destroy(heap);
  mi_prof_stats_t st = stats_now();
  assert_int_equal(st.live_samples, 0);
  assert_int_equal(st.live_bytes, 0);
  mi_prof_stop();
}

static bool visit_count(const mi_prof_sample_info_t* info, void* arg) {
  size_t* n = (size_t*)arg;
  n[0] += info->live_objects;
  n[1] += info->live_bytes;
  n[2] += (info->depth > 0 && info->stack[0] != NULL);
  n[3] += mi_prof_start(4096); /* a profiler call from a visitor fails */
  return true;
}

static void test_prof_visit_sums_match_stats_and_reentry_fails(void** state) {
  (void)state;
  start_exact();
  void* p = mi_malloc(10);
  void* q = mi_malloc(20);
  size_t n[4] = {0, 0, 0, 0};
  assert_true(mi_prof_visit(&visit_count, n));
  assert_int_equal(n[0], 2);
  assert_int_equal(n[1], 30);
  assert_true(n[2] >= 1);
  assert_int_equal(n[3], 0);
  mi_prof_snapshot_t* snap = mi_prof_snapshot_new();
  assert_non_null(snap);
  mi_free(p); /* the snapshot is a copy */
  size_t m[4] = {0, 0, 0, 0};
  assert_true(mi_prof_snapshot_visit(snap, &visit_count, m));
  assert_int_equal(m[0], 2);
  mi_prof_snapshot_free(snap);
  mi_free(q);
  mi_prof_stop();
}

/* The loaded modules: the program first, holding this file's code, under
   its own path (Windows: its image, at the base the loader says). */
typedef struct modules_s {
  size_t count;
  char first[1024];
  uintptr_t base;
  size_t size;
} modules_t;

static bool visit_module(const mi_prof_module_info_t* info, void* arg) {
  modules_t* m = (modules_t*)arg;
  if (m->count++ == 0) {
    snprintf(m->first, sizeof(m->first), "%s", info->path != NULL ? info->path : "(null)");
    m->base = info->base;
    m->size = info->size;
  }
  return true;
}

static void test_prof_modules_visit_program_first_holds_its_code(void** state) {
  (void)state;
  modules_t m;
  memset(&m, 0, sizeof(m));
  assert_true(mi_prof_modules_visit(&visit_module, &m));
  assert_true(m.count >= 2); /* the program and the C library (Windows: ntdll, kernel32, ...) */
  uintptr_t code = (uintptr_t)&stats_now;
  if (!(m.base <= code && code < m.base + m.size)) {
    fail_msg("the first module %s [%#llx, +%#llx) does not hold the program's code at %#llx", m.first,
             (unsigned long long)m.base, (unsigned long long)m.size, (unsigned long long)code);
  }
  char self[1024];
#if defined(_WIN32)
  DWORD n = GetModuleFileNameA(NULL, self, sizeof(self));
  assert_true(n > 0 && n < sizeof(self));
  self[n] = 0;
  assert_int_equal(m.base, (uintptr_t)GetModuleHandleW(NULL));
#else
  assert_non_null(realpath("/proc/self/exe", self));
#endif
  assert_string_equal(m.first, self);
}

typedef struct text_s {
  char buf[1 << 16];
  size_t len;
} text_t;

static void collect(void* arg, const char* buf, size_t len) {
  text_t* t = (text_t*)arg;
  size_t n = (len < sizeof(t->buf) - 1 - t->len ? len : sizeof(t->buf) - 1 - t->len);
  memcpy(t->buf + t->len, buf, n);
  t->len += n;
  t->buf[t->len] = 0;
}

static text_t text;

static void test_prof_dump_text_header_equals_record_sums(void** state) {
  (void)state;
  start_exact();
  void* blocks[50];
  for (int i = 0; i < 50; i++) blocks[i] = mi_malloc(16 * (size_t)(i + 1));
  text.len = 0;
  assert_true(mi_prof_dump_writer(&collect, &text));
  unsigned long long io, ib, ao, ab;
  assert_int_equal(sscanf(text.buf, "heap profile: %llu: %llu [ %llu: %llu] @ heap_v2/1", &io, &ib, &ao, &ab), 4);
  assert_int_equal(io, 50);
  assert_int_equal(ib, 16 * 50 * 51 / 2);
  assert_int_equal(ao, 0); /* no cumulative counts without accum */
  unsigned long long so = 0, sb = 0;
  for (char* line = strchr(text.buf, '\n') + 1; line != NULL && *line != '#'; line = strchr(line, '\n')) {
    unsigned long long o, b;
    if (sscanf(line, " %llu: %llu [", &o, &b) == 2) {
      so += o;
      sb += b;
      for (const char* c = strchr(line, '@'); *c != '\n'; c++) assert_false(*c >= 'A' && *c <= 'F');
    }
    line++;
  }
  assert_int_equal(so, io);
  assert_int_equal(sb, ib);
  assert_non_null(strstr(text.buf, "\nMAPPED_LIBRARIES:\n"));
  for (int i = 0; i < 50; i++) mi_free(blocks[i]);
  mi_prof_stop();
}

static void test_prof_fork_child_allocates_and_dumps(void** state) {
  (void)state;
#if defined(_WIN32)
  printf("[   SKIP   ] test_prof_fork_child_allocates_and_dumps: Windows has no fork\n");
  skip();
#else
  start_exact();
  void* p = mi_malloc(77);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    void* q = mi_malloc(33);
    mi_prof_stats_t_decl(st);
    bool ok = mi_prof_stats_get(&st) && st.live_samples == 2 && st.live_bytes == 110;
    text.len = 0;
    ok = ok && mi_prof_dump_writer(&collect, &text) && strncmp(text.buf, "heap profile:", 13) == 0;
    mi_free(q);
    _exit(ok ? 0 : 3);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  mi_free(p);
  mi_prof_stop();
#endif
}

/* ---- Concurrency: 8 threads allocate and free (across threads, and by
   realloc) while another starts, resets, dumps, snapshots and stops ---------- */

#define RACE_THREADS 8
#define RACE_SLOTS 4096
static _Atomic(void*) race_slots[RACE_SLOTS];
static _Atomic(bool) race_churn_done;
static _Atomic(int) race_workers_left;

static void* race_worker(void* arg) {
  uint64_t rng = (uint64_t)(uintptr_t)arg * 7919 + 1;
  for (int i = 0; i < 60000 || !atomic_load(&race_churn_done); i++) {
    size_t slot = (size_t)(tu_rand(&rng) % RACE_SLOTS);
    void* p = atomic_exchange(&race_slots[slot], NULL); /* often another thread's block */
    uint64_t op = tu_rand(&rng) % 8;
    if (p != NULL && op == 0) p = mi_realloc(p, (size_t)(tu_rand(&rng) % 2000));
    else if (p != NULL) {
      mi_free(p);
      p = NULL;
    }
    if (p == NULL) p = mi_malloc((size_t)(tu_rand(&rng) % 3000));
    p = atomic_exchange(&race_slots[slot], p);
    mi_free(p);
    if (i > 1000000) break; /* (bounded even if the churn never ends: ctest's timeout says why) */
  }
  atomic_fetch_sub(&race_workers_left, 1);
  return NULL;
}

static void count_bytes(void* arg, const char* buf, size_t len) {
  size_t* n = (size_t*)arg;
  if (*n == 0 && (len < 13 || memcmp(buf, "heap profile:", 13) != 0)) *n = SIZE_MAX; /* not a profile */
  else if (*n != SIZE_MAX) *n += len;
}

static void* race_churn(void* arg) {
  (void)arg;
  for (int round = 0; round < 200; round++) {
    bool started = mi_prof_start_seeded((size_t)(round % 3 == 0 ? 1 : 512), (uint64_t)round + 1);
    assert_true(started || mi_prof_is_enabled()); /* false only when the last round left it running */
    mi_prof_reset();
    size_t n = 0;
    if (mi_prof_dump_writer(&count_bytes, &n)) assert_true(n != SIZE_MAX && n > 0);
    mi_prof_snapshot_t* snap = mi_prof_snapshot_new();
    mi_prof_snapshot_free(snap);
    if (round % 2 == 0) mi_prof_stop();
  }
  /* the last stretch runs with every allocation sampled */
  mi_prof_stop();
  assert_true(mi_prof_start_seeded(1, 99));
  atomic_store(&race_churn_done, true);
  return NULL;
}

static void test_prof_concurrent_churn_no_deadlock_samples_back_to_zero(void** state) {
  (void)state;
  mi_prof_stop();
  atomic_store(&race_churn_done, false);
  atomic_store(&race_workers_left, RACE_THREADS);
  pthread_t workers[RACE_THREADS], churn;
  for (int i = 0; i < RACE_THREADS; i++) {
    assert_int_equal(pthread_create(&workers[i], NULL, &race_worker, (void*)(uintptr_t)(i + 1)), 0);
  }
  assert_int_equal(pthread_create(&churn, NULL, &race_churn, NULL), 0);
  assert_int_equal(pthread_join(churn, NULL), 0);
  for (int i = 0; i < RACE_THREADS; i++) assert_int_equal(pthread_join(workers[i], NULL), 0);
  for (size_t i = 0; i < RACE_SLOTS; i++) mi_free(atomic_exchange(&race_slots[i], NULL));
  mi_collect(true);
  mi_prof_stats_t st = stats_now();
  assert_true(st.enabled);
  assert_int_equal(st.live_samples, 0);
  assert_int_equal(st.live_bytes, 0);
  mi_prof_stop();
}

/* ---- The environment (a fresh process each) ----------------------------------- */

static int child_main(const char* mode) {
  if (strcmp(mode, "alloc") == 0) {
    for (int i = 0; i < 1000; i++) tu_launder(mi_malloc(100)); /* live at exit, in the exit dump */
    printf("enabled=%d\n", mi_prof_is_enabled());
    printf("pid=%ld\n", (long)getpid()); /* what "%p" in a file name becomes */
    return 0;
  }
  if (strcmp(mode, "restart") == 0) {
    /* a second start reads the environment again (MIMALLOC_PROF_SIGNAL) */
    for (int i = 0; i < 100; i++) tu_launder(mi_malloc(1000));
    mi_prof_stop();
    bool again = mi_prof_start(0);
    printf("enabled=%d restarted=%d\n", mi_prof_is_enabled(), again);
    return 0;
  }
  if (strcmp(mode, "signal") == 0 || strcmp(mode, "interval") == 0) {
    /* the dumps of a running process: one on SIGUSR2, or one per 1 MB
       allocated; each waited for (the background thread writes them) */
    const char* prefix = getenv("TEST_PREFIX");
    for (int round = 1; round <= 2; round++) {
      for (int i = 0; i < 1200; i++) tu_launder(mi_malloc(1000)); /* 1.2 MB more, kept live */
#if !defined(_WIN32)
      if (strcmp(mode, "signal") == 0) raise(SIGUSR2);
#endif
      char path[256];
      snprintf(path, sizeof(path), "%s.%d.heap", prefix, round);
      bool found = false;
      for (int wait = 0; wait < 400 && !found; wait++) { /* up to 20 s: a loaded machine */
        FILE* f = fopen(path, "r");
        char text[1 << 12];
        size_t len = (f != NULL ? fread(text, 1, sizeof(text) - 1, f) : 0);
        if (f != NULL) fclose(f);
        text[len] = 0;
        found = (strncmp(text, "heap profile:", 13) == 0);
        if (!found) usleep(50000);
      }
      printf("%s %d %s\n", mode, round, found ? "written" : "missing");
    }
    return 0;
  }
  return 2;
}

static char out[1 << 14];

static size_t read_file(const char* path, unsigned char* buf, size_t size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return 0;
  size_t n = fread(buf, 1, size, f);
  fclose(f);
  return n;
}

static void test_prof_env_exit_dump_format_proto_written_as_proto(void** state) {
  (void)state;
  char name[64], path[MAX_PATH + 64], env_path[MAX_PATH + 96];
  snprintf(name, sizeof(name), "mi-prof-env-%d.pb", (int)getpid());
  tmp_path(path, sizeof(path), name);
  snprintf(env_path, sizeof(env_path), "MIMALLOC_PROF_DUMP_AT_EXIT=%s", path);
  unlink(path);
  const char* env[] = {"MIMALLOC_PROF=1", "MIMALLOC_PROF_SAMPLE_INTERVAL=1", env_path,
                       "MIMALLOC_PROF_DUMP_FORMAT=proto", NULL};
  assert_int_equal(run_self_env("alloc", env, out, sizeof(out)), 0);
  assert_non_null(strstr(out, "enabled=1"));
  unsigned char buf[64];
  size_t n = read_file(path, buf, sizeof(buf));
  assert_true(n > 8);
  assert_false(memcmp(buf, "heap profile:", 13) == 0);
  assert_int_equal(buf[0], 0x0a); /* field 1 (sample_type), length-delimited: a proto */
  unlink(path);
  /* control: without the format variable the same dump is text */
  const char* control[] = {"MIMALLOC_PROF=1", "MIMALLOC_PROF_SAMPLE_INTERVAL=1", env_path, NULL};
  assert_int_equal(run_self_env("alloc", control, out, sizeof(out)), 0);
  n = read_file(path, buf, sizeof(buf));
  assert_true(n > 13);
  assert_true(memcmp(buf, "heap profile:", 13) == 0);
  unlink(path);
}

static void test_prof_env_exit_path_pid_expanded(void** state) {
  (void)state;
  char pattern[MAX_PATH + 64], env_path[MAX_PATH + 96];
  tmp_path(pattern, sizeof(pattern), "mi-prof-pid-%p.heap");
  snprintf(env_path, sizeof(env_path), "MIMALLOC_PROF_DUMP_AT_EXIT=%s", pattern);
  const char* env[] = {"MIMALLOC_PROF=1", env_path, NULL};
  assert_int_equal(run_self_env("alloc", env, out, sizeof(out)), 0);
  /* the child said its pid: the file is the pattern with "%p" replaced by it */
  const char* said = strstr(out, "pid=");
  assert_non_null(said);
  long pid = strtol(said + 4, NULL, 10);
  assert_true(pid > 0);
  char file[64], name[MAX_PATH + 64];
  snprintf(file, sizeof(file), "mi-prof-pid-%ld.heap", pid);
  tmp_path(name, sizeof(name), file);
  unsigned char buf[32];
  assert_true(read_file(name, buf, sizeof(buf)) > 13);
  assert_true(memcmp(buf, "heap profile:", 13) == 0);
  unlink(name);
}

static void live_dumps(const char* mode, const char* const* extra) {
  char name[64], prefix[MAX_PATH + 64], env_prefix[MAX_PATH + 96];
  snprintf(name, sizeof(name), "mi-prof-live-%s-%d", mode, (int)getpid());
  tmp_path(prefix, sizeof(prefix), name);
  snprintf(env_prefix, sizeof(env_prefix), "MIMALLOC_PROF_DUMP_PREFIX=%s", prefix);
  char test_prefix[MAX_PATH + 96];
  snprintf(test_prefix, sizeof(test_prefix), "TEST_PREFIX=%s", prefix);
  const char* env[8] = {"MIMALLOC_PROF=1", "MIMALLOC_PROF_SAMPLE_INTERVAL=4096", env_prefix, test_prefix, NULL};
  int k = 4;
  for (int i = 0; extra[i] != NULL && k < 7; i++) env[k++] = extra[i];
  env[k] = NULL;
  assert_int_equal(run_self_env(mode, env, out, sizeof(out)), 0);
  char want[64];
  for (int round = 1; round <= 2; round++) {
    snprintf(want, sizeof(want), "%s %d written\n", mode, round);
    if (strstr(out, want) == NULL) fail_msg("%s: no dump %d: %s", mode, round, out);
    char path[MAX_PATH + 80];
    snprintf(path, sizeof(path), "%s.%d.heap", prefix, round);
    unlink(path);
  }
}

#if !defined(_WIN32)
static void test_prof_signal_each_signal_writes_next_numbered_dump(void** state) {
  (void)state;
  const char* extra[] = {"MIMALLOC_PROF_SIGNAL=SIGUSR2", NULL};
  live_dumps("signal", extra);
}
#else
/* No signals on Windows: the option is read and refused with one warning
   (over two starts), the profiler runs, and no dump is written. */
static void test_prof_signal_refused_on_windows_one_warning_no_dump(void** state) {
  (void)state;
  char name[64], prefix[MAX_PATH + 64], env_prefix[MAX_PATH + 96];
  snprintf(name, sizeof(name), "mi-prof-nosignal-%d", (int)getpid());
  tmp_path(prefix, sizeof(prefix), name);
  snprintf(env_prefix, sizeof(env_prefix), "MIMALLOC_PROF_DUMP_PREFIX=%s", prefix);
  const char* env[] = {"MIMALLOC_PROF=1",
                       "MIMALLOC_PROF_SAMPLE_INTERVAL=4096",
                       "MIMALLOC_PROF_SIGNAL=SIGUSR2",
                       "MIMALLOC_SHOW_ERRORS=1",
                       env_prefix,
                       NULL};
  assert_int_equal(run_self_env("restart", env, out, sizeof(out)), 0);
  if (strstr(out, "enabled=1 restarted=1\n") == NULL) fail_msg("the profiler did not run twice: %s", out);
  const char* warning =
      "mimalloc: warning: MIMALLOC_PROF_SIGNAL=SIGUSR2: no signals on Windows, no dump on a signal "
      "(MIMALLOC_PROF_DUMP_INTERVAL and the exit dump work)\n";
  const char* first = strstr(out, warning);
  if (first == NULL) fail_msg("no warning: %s", out);
  if (strstr(first + 1, warning) != NULL) fail_msg("warned more than once: %s", out);
  char path[MAX_PATH + 80];
  snprintf(path, sizeof(path), "%s.1.heap", prefix);
  FILE* f = fopen(path, "rb");
  if (f != NULL) fclose(f);
  assert_null(f);
}
#endif

static void test_prof_dump_interval_each_megabyte_writes_next_numbered_dump(void** state) {
  (void)state;
  const char* extra[] = {"MIMALLOC_PROF_DUMP_INTERVAL=1000000", NULL};
  live_dumps("interval", extra);
}

/* the signal case of the platform (the array has no #if: clang-format
   would indent it apart) */
#if defined(_WIN32)
#define SIGNAL_CASE cmocka_unit_test(test_prof_signal_refused_on_windows_one_warning_no_dump)
#else
#define SIGNAL_CASE cmocka_unit_test(test_prof_signal_each_signal_writes_next_numbered_dump)
#endif

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "--child") == 0) return child_main(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prof_start_twice_second_false_stop_clears),
      cmocka_unit_test(test_prof_stats_three_versions_accepted_others_rejected),
      cmocka_unit_test(test_prof_exact_interval_counts_equal_truth),
      cmocka_unit_test(test_prof_cross_thread_free_live_back_to_zero),
      cmocka_unit_test(test_prof_restart_thread_counted_before_samples_after_refill),
      cmocka_unit_test(test_prof_restart_site_sampled_before_counted_at_own_stack),
      cmocka_unit_test(test_prof_realloc_in_place_size_follows_moved_old_freed),
      cmocka_unit_test(test_prof_aligned_blocks_tracked_and_freed),
      cmocka_unit_test(test_prof_heap_destroy_samples_retired),
      cmocka_unit_test(test_prof_visit_sums_match_stats_and_reentry_fails),
      cmocka_unit_test(test_prof_dump_text_header_equals_record_sums),
      cmocka_unit_test(test_prof_modules_visit_program_first_holds_its_code),
      cmocka_unit_test(test_prof_fork_child_allocates_and_dumps),
      cmocka_unit_test(test_prof_concurrent_churn_no_deadlock_samples_back_to_zero),
      cmocka_unit_test(test_prof_env_exit_dump_format_proto_written_as_proto),
      cmocka_unit_test(test_prof_env_exit_path_pid_expanded),
      SIGNAL_CASE,
      cmocka_unit_test(test_prof_dump_interval_each_megabyte_writes_next_numbered_dump),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
