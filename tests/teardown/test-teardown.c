/* The teardown protocol (docs/teardown-protocol.md), one forced interleaving
   per case. Each case runs in a forked child under a watchdog; the threads
   of a case meet at the allocator's schedule points (MI_FAULT builds), where
   the hook below makes a thread announce that it got there and wait until
   another thread has done its step, so the interleaving the case names is
   the one that runs, every time.

   Every case ends with the same checks: each block it allocated was freed
   exactly once (pages, segments, abandoned segments and large blocks are
   back to where they were before the case: a lost free leaves a page in
   use, a double free wraps its count), and no block was handed out twice
   while live (blocks carry a tag that is checked when they are freed, and
   the live blocks of a case are checked pairwise distinct).

   Usage: test-teardown CASE [--expect-failure [EXIT | MESSAGE]]   (test-teardown --list) */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mimalloc.h>
#include <mimalloc/fault.h>

#include "../../src/internal.h"

/* ---- Checks (inside the child: print and exit 1) --------------------------- */

#define CHECK(cond) \
  do { \
    if (!(cond)) { \
      fprintf(stderr, "test-teardown: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      fflush(stderr); \
      _exit(1); \
    } \
  } while (0)

/* ---- Gates: a thread in a role, reaching a point, posts one semaphore and
   waits on another (each rule fires once) ------------------------------------ */

#define ROLES 8
#define SEMS 8
static _Thread_local int my_role; /* 0: not scripted */
static sem_t sems[SEMS];

typedef struct rule_s {
  mi_sched_point_t point;
  int role;
  int post; /* -1: none */
  int wait; /* -1: none */
  _Atomic(int) fired;
} rule_t;

static rule_t rules[8];
static _Atomic(int) rule_count;
static _Atomic(int) stress_delays; /* stress: random delays at every point */

static void sem_wait_or_die(int i) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 10;
  while (sem_timedwait(&sems[i], &ts) != 0) {
    if (errno == EINTR) continue;
    fprintf(stderr, "test-teardown: role %d: gate %d never opened (interleaving not reached)\n", my_role, i);
    _exit(2);
  }
}

static void gate_post(int i) {
  sem_post(&sems[i]);
}

static uint64_t stress_rng(void) {
  static _Thread_local uint64_t x;
  if (x == 0) x = (uint64_t)(uintptr_t)&x * 0x9E3779B97F4A7C15ULL + (uint64_t)time(NULL);
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}

static void hook(mi_sched_point_t point, void* arg) {
  (void)arg;
  int n = atomic_load(&rule_count);
  for (int i = 0; i < n; i++) {
    rule_t* r = &rules[i];
    if (r->point != point || r->role != my_role) continue;
    if (atomic_exchange(&r->fired, 1) != 0) continue;
    if (r->post >= 0) gate_post(r->post);
    if (r->wait >= 0) sem_wait_or_die(r->wait);
  }
  if (atomic_load_explicit(&stress_delays, memory_order_relaxed)) {
    uint64_t r = stress_rng();
    if ((r & 7) == 0) sched_yield();
    else if ((r & 63) == 1) usleep((useconds_t)((r >> 8) % 200));
  }
}

static void rule(mi_sched_point_t point, int role, int post, int wait) {
  int i = atomic_load(&rule_count);
  rules[i].point = point;
  rules[i].role = role;
  rules[i].post = post;
  rules[i].wait = wait;
  atomic_store(&rules[i].fired, 0);
  atomic_store(&rule_count, i + 1);
}

static void rules_all_fired(void) {
  for (int i = 0; i < atomic_load(&rule_count); i++) {
    if (!atomic_load(&rules[i].fired)) {
      fprintf(stderr, "test-teardown: rule %d (%s, role %d) never fired\n", i, mi_sched_point_name(rules[i].point),
              rules[i].role);
      _exit(1);
    }
  }
}

/* ---- Blocks: tagged, so a block handed out twice is seen when freed -------- */

#define BSIZE 48

static void* tagged_alloc_sz(mi_heap_t* heap, size_t size, uintptr_t tag) {
  uintptr_t* p = (uintptr_t*)(heap != NULL ? mi_heap_malloc(heap, size) : mi_malloc(size));
  CHECK(p != NULL);
  p[0] = tag;
  p[1] = ~tag;
  return p;
}

static void* tagged_alloc(mi_heap_t* heap, uintptr_t tag) {
  return tagged_alloc_sz(heap, BSIZE, tag);
}

static void tagged_free(void* block, uintptr_t tag) {
  uintptr_t* p = (uintptr_t*)block;
  CHECK(p[0] == tag && p[1] == ~tag);
  mi_free(p);
}

static int cmp_ptr(const void* a, const void* b) {
  uintptr_t x = *(const uintptr_t*)a, y = *(const uintptr_t*)b;
  return (x < y ? -1 : x > y);
}

static void check_distinct(void** blocks, size_t n) {
  void** copy = (void**)malloc(n * sizeof(void*)); /* the test's own malloc is the C library's */
  CHECK(copy != NULL);
  memcpy(copy, blocks, n * sizeof(void*));
  qsort(copy, n, sizeof(void*), &cmp_ptr);
  for (size_t i = 1; i < n; i++) CHECK(copy[i] != copy[i - 1]);
  free(copy);
}

static mi_page_t* page_of(const void* p) {
  mi_segment_t* segment = _mi_ptr_segment(p);
  return _mi_segment_page_of(segment, p);
}

/* ---- Accounting ------------------------------------------------------------ */

typedef struct baseline_s {
  int64_t pages, segments, abandoned, large, reclaimed;
} baseline_t;

static baseline_t base;

static baseline_t snapshot(void) {
  baseline_t b;
  b.pages = atomic_load(&_mi_stats.pages.current);
  b.segments = atomic_load(&_mi_stats.segments.current);
  b.abandoned = atomic_load(&_mi_stats.abandoned.current);
  b.large = atomic_load(&_mi_stats.large.current);
  b.reclaimed = atomic_load(&_mi_stats.reclaimed);
  return b;
}

/* Everything the case allocated is back: collect (adopting what exited
   threads left) and compare with the start. */
static void check_baseline(void) {
  mi_collect(true);
  baseline_t now = snapshot();
  if (now.pages != base.pages || now.segments != base.segments || now.abandoned != base.abandoned ||
      now.large != base.large) {
    fprintf(stderr,
            "test-teardown: accounting off: pages %lld/%lld segments %lld/%lld abandoned %lld/%lld large %lld/%lld\n",
            (long long)now.pages, (long long)base.pages, (long long)now.segments, (long long)base.segments,
            (long long)now.abandoned, (long long)base.abandoned, (long long)now.large, (long long)base.large);
    _exit(1);
  }
}

static pthread_t spawn(void* (*fn)(void*), void* arg) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, fn, arg) == 0);
  return t;
}

static void join(pthread_t t) {
  CHECK(pthread_join(t, NULL) == 0);
}

/* ---- Shared state of a case ------------------------------------------------ */

#define N 64
static void* blocks[N];
static mi_heap_t* shared_heap;

static void* owner_alloc_then_wait_exit(void* arg) { /* role 1: allocate, hand over, exit at gate 0 */
  (void)arg;
  my_role = 1;
  for (size_t i = 0; i < N; i++) blocks[i] = tagged_alloc(NULL, i);
  gate_post(7);       /* the blocks are there */
  sem_wait_or_die(0); /* the freer has read the list head */
  return NULL;        /* thread exit: abandon */
}

static void* freer_all(void* arg) { /* role 2: free every block from another thread */
  (void)arg;
  my_role = 2;
  sem_wait_or_die(7);
  for (size_t i = 0; i < N; i++) tagged_free(blocks[i], i);
  return NULL;
}

/* free vs owner exit: the freer reads the list head of a page, the owner
   exits and abandons the page's segment, then the freer's CAS lands. The
   block is collected by whoever holds the page after the race (here the
   main thread's mi_collect, which adopts the segment). */
static void case_free_vs_owner_exit(void) {
  rule(MI_SCHED_FREE_REMOTE_READ, 2, 0, 1);
  rule(MI_SCHED_ABANDON_PUSHED, 1, 1, -1);
  pthread_t f = spawn(&freer_all, NULL);
  pthread_t o = spawn(&owner_alloc_then_wait_exit, NULL);
  join(o);
  join(f);
  rules_all_fired();
  CHECK(snapshot().abandoned == base.abandoned + 1); /* the segment waits, its page holds the frees */
  check_baseline();
  CHECK(snapshot().reclaimed == base.reclaimed + 1);
}

/* free vs abandon-then-claim: the freer reads the head; the owner exits;
   the main thread adopts the segment and collects its pages; only then does
   the freer's CAS land, on a page that now has a new owner. The page must
   still be in use (the block in flight is counted), and the new owner
   collects the block later. */
static void* freer_first_gated(void* arg) {
  (void)arg;
  my_role = 2;
  sem_wait_or_die(7);
  tagged_free(blocks[0], 0);
  return NULL;
}

static void case_free_vs_claim(void) {
  rule(MI_SCHED_FREE_REMOTE_READ, 2, 0, 1);
  my_role = 3;
  rule(MI_SCHED_RECLAIM_CLAIMED, 3, -1, -1);
  pthread_t f = spawn(&freer_first_gated, NULL);
  pthread_t o = spawn(&owner_alloc_then_wait_exit, NULL);
  join(o);
  mi_collect(true); /* claims the abandoned segment */
  mi_page_t* page = page_of(blocks[0]);
  CHECK(atomic_load(&page->state) == MI_PAGE_IN_USE);
  CHECK(atomic_load(&_mi_ptr_segment(blocks[0])->thread_id) == _mi_thread_id());
  gate_post(1); /* now the freer's CAS */
  join(f);
  rules_all_fired();
  for (size_t i = 1; i < N; i++) tagged_free(blocks[i], i); /* local frees of the adopted blocks */
  check_baseline();
}

/* two claimers: two threads adopt at once; the first holds its claimed
   segment while the second runs a whole forced collection. Each abandoned
   segment is adopted exactly once, by one of them. */
#define CLAIM_THREADS 2
static void* claim_blocks[CLAIM_THREADS][N];
static _Atomic(uintptr_t) claimer_ids[2];
static void* more_blocks[2][N];

static void* exiter(void* arg) {
  size_t k = (size_t)(uintptr_t)arg;
  for (size_t i = 0; i < N; i++) claim_blocks[k][i] = tagged_alloc(NULL, k * 1000 + i);
  /* exit only when all have allocated: a thread that needs a segment
     adopts an abandoned one first */
  gate_post(5);
  sem_wait_or_die(6);
  return NULL;
}

static _Atomic(int) claimers_ready;

static void* claimer(void* arg) {
  size_t k = (size_t)(uintptr_t)arg;
  my_role = 4 + (int)k;
  mi_thread_init(); /* mi_collect adopts only into an initialised thread */
  atomic_store(&claimer_ids[k], _mi_thread_id());
  if (k == 1) sem_wait_or_die(0); /* the first claimer holds its segment */
  mi_collect(true);
  if (k == 1) gate_post(1);
  for (size_t i = 0; i < N; i++) more_blocks[k][i] = tagged_alloc(NULL, 5000 + k * 1000 + i);
  atomic_fetch_add(&claimers_ready, 1);
  sem_wait_or_die(2 + (int)k); /* stay alive until the main thread has looked */
  for (size_t i = 0; i < N; i++) tagged_free(more_blocks[k][i], 5000 + k * 1000 + i);
  return NULL;
}

static void case_two_claimers(void) {
  pthread_t e[CLAIM_THREADS];
  for (size_t k = 0; k < CLAIM_THREADS; k++) e[k] = spawn(&exiter, (void*)(uintptr_t)k);
  for (size_t k = 0; k < CLAIM_THREADS; k++) sem_wait_or_die(5);
  for (size_t k = 0; k < CLAIM_THREADS; k++) gate_post(6);
  for (size_t k = 0; k < CLAIM_THREADS; k++) join(e[k]);
  CHECK(snapshot().abandoned == base.abandoned + CLAIM_THREADS);
  rule(MI_SCHED_RECLAIM_CLAIMED, 4, 0, 1);
  pthread_t c0 = spawn(&claimer, (void*)0);
  pthread_t c1 = spawn(&claimer, (void*)1);
  /* wait until both have allocated (their blocks come from adopted pages) */
  while (atomic_load(&claimers_ready) < 2) sched_yield();
  rules_all_fired();
  CHECK(snapshot().reclaimed == base.reclaimed + CLAIM_THREADS);
  CHECK(snapshot().abandoned == base.abandoned);
  size_t owned[2] = {0, 0};
  for (size_t k = 0; k < CLAIM_THREADS; k++) {
    uintptr_t id = atomic_load(&_mi_ptr_segment(claim_blocks[k][0])->thread_id);
    CHECK(id == atomic_load(&claimer_ids[0]) || id == atomic_load(&claimer_ids[1]));
    owned[id == atomic_load(&claimer_ids[1])]++;
  }
  CHECK(owned[0] == 1 && owned[1] == 1); /* the second claimer got the other one */
  void* all[4 * N];
  size_t n = 0;
  for (size_t k = 0; k < 2; k++) {
    for (size_t i = 0; i < N; i++) all[n++] = claim_blocks[k][i];
    for (size_t i = 0; i < N; i++) all[n++] = more_blocks[k][i];
  }
  check_distinct(all, n);
  gate_post(2);
  gate_post(3);
  join(c0);
  join(c1);
  for (size_t k = 0; k < CLAIM_THREADS; k++) {
    for (size_t i = 0; i < N; i++) tagged_free(claim_blocks[k][i], k * 1000 + i);
  }
  check_baseline();
}

/* free vs mi_heap_delete: the freer reads the head of a page of heap H; the
   owner deletes H (its pages move to the backing heap, its slot is freed);
   the CAS lands and the backing heap collects the block. */
static void* heap_owner(void* arg) {
  (void)arg;
  my_role = 1;
  shared_heap = mi_heap_new();
  CHECK(shared_heap != NULL);
  for (size_t i = 0; i < N; i++) blocks[i] = tagged_alloc(shared_heap, i);
  gate_post(7);
  sem_wait_or_die(0);
  mi_heap_delete(shared_heap); /* HEAP_FREED opens gate 1 */
  mi_heap_t* backing = mi_heap_get_backing();
  CHECK(mi_heap_contains_block(backing, blocks[1]));
  sem_wait_or_die(2); /* the freer is done */
  mi_collect(true);
  return NULL;
}

static void* freer_all_then_post(void* arg) {
  freer_all(arg);
  gate_post(2);
  return NULL;
}

static void case_free_vs_heap_delete(void) {
  rule(MI_SCHED_FREE_REMOTE_READ, 2, 0, 1);
  rule(MI_SCHED_HEAP_FREED, 1, 1, -1);
  pthread_t f = spawn(&freer_all_then_post, NULL);
  pthread_t o = spawn(&heap_owner, NULL);
  join(f);
  join(o);
  rules_all_fired();
  check_baseline();
}

/* mi_heap_destroy vs claim: a thread destroys its heap H, and halfway
   through (between two of H's pages) another thread adopts the segment of
   an exited thread and allocates from its pages; then the destroying
   thread's backing heap takes H's freed page slots. Nobody gets a block
   that another holds. */
static void* destroyer(void* arg) {
  (void)arg;
  my_role = 1;
  mi_heap_t* backing = mi_heap_get_backing();
  void* mine[N];
  for (size_t i = 0; i < N; i++) mine[i] = tagged_alloc(backing, 7000 + i);
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  for (size_t i = 0; i < 4 * N; i++) CHECK(mi_heap_malloc(h, (i & 1) ? 32 : 200) != NULL); /* two pages */
  gate_post(5); /* set up before the other thread exits: it would adopt that segment */
  sem_wait_or_die(6);
  mi_heap_destroy(h); /* the first HEAP_DESTROY_PAGE waits for the claimer */
  void* all[3 * N];
  memcpy(all, mine, sizeof(mine));
  for (size_t i = 0; i < 2 * N; i++) {
    all[N + i] = tagged_alloc_sz(backing, (i & 1) ? 32 : 200, 8000 + i); /* H's slots, taken again */
  }
  check_distinct(all, 3 * N);
  for (size_t i = 0; i < N; i++) tagged_free(mine[i], 7000 + i);
  for (size_t i = 0; i < 2 * N; i++) tagged_free(all[N + i], 8000 + i);
  return NULL;
}

static void* claim_and_alloc(void* arg) {
  (void)arg;
  my_role = 2;
  mi_thread_init();
  sem_wait_or_die(0);
  mi_collect(true); /* adopts the exited thread's segment */
  for (size_t i = 0; i < N; i++) more_blocks[0][i] = tagged_alloc(NULL, 9000 + i);
  gate_post(1);
  sem_wait_or_die(3);
  for (size_t i = 0; i < N; i++) tagged_free(more_blocks[0][i], 9000 + i);
  for (size_t i = 0; i < N; i++) tagged_free(claim_blocks[0][i], i); /* local: adopted */
  return NULL;
}

static void* exiter_plain(void* arg) {
  (void)arg;
  for (size_t i = 0; i < N; i++) claim_blocks[0][i] = tagged_alloc(NULL, i);
  return NULL;
}

static void case_destroy_vs_claim(void) {
  rule(MI_SCHED_HEAP_DESTROY_PAGE, 1, 0, 1);
  rule(MI_SCHED_RECLAIM_CLAIMED, 2, -1, -1);
  pthread_t c = spawn(&claim_and_alloc, NULL);
  pthread_t d = spawn(&destroyer, NULL);
  sem_wait_or_die(5);
  join(spawn(&exiter_plain, NULL));
  CHECK(snapshot().abandoned == base.abandoned + 1);
  gate_post(6);
  join(d);
  rules_all_fired();
  void* all[2 * N];
  memcpy(all, claim_blocks[0], sizeof(claim_blocks[0]));
  memcpy(all + N, more_blocks[0], sizeof(more_blocks[0]));
  check_distinct(all, 2 * N);
  gate_post(3);
  join(c);
  check_baseline();
}

/* A heap destroyed and a new heap created at the same address while a
   cross-thread free still holds the owner it read: the freer reads the head
   of a page of the owner's backing heap; the owner destroys heap H (whose
   pages share the segment), creates H2, which gets H's slot (same address)
   and H's freed page slot; then the CAS lands. The block goes to the page
   it belongs to (the backing heap's), never to H2. */
static void* aba_owner(void* arg) {
  (void)arg;
  my_role = 1;
  mi_heap_t* backing = mi_heap_get_backing();
  for (size_t i = 0; i < N; i++) blocks[i] = tagged_alloc(backing, i);
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  void* old = tagged_alloc_sz(h, 200, 1);
  for (size_t i = 0; i < N; i++) CHECK(mi_heap_malloc(h, 200) != NULL);
  gate_post(7);
  sem_wait_or_die(0); /* the freer holds the head it read */
  mi_heap_destroy(h);
#if MI_SECURE
  /* secure builds hold a destroyed heap's pages (src/page/page.c): let them go
     now, as the bound or a forced collect would later */
  _mi_secure_pages_held_release(mi_heap_get_backing()->tld, 0, 0);
  /* and retire a gone heap's slot (heap/secure-heap-handles.c): let it go too */
  _mi_secure_heap_slots_release();
#endif
  mi_heap_t* h2 = mi_heap_new();
  CHECK(h2 == h); /* the same slot: the address the freer's world knew */
  void* nb[N];
  for (size_t i = 0; i < N; i++) nb[i] = tagged_alloc_sz(h2, 200, 100 + i);
  CHECK(page_of(nb[0]) == page_of(old)); /* ... and the same page slot, reused */
  CHECK(_mi_ptr_segment(nb[0]) == _mi_ptr_segment(blocks[0]));
  gate_post(1);
  sem_wait_or_die(2); /* the freer is done */
  CHECK(page_of(blocks[0])->heap == backing);
  CHECK(atomic_load(&page_of(blocks[0])->state) == MI_PAGE_IN_USE);
  CHECK(!mi_heap_contains_block(h2, blocks[0]) && mi_heap_contains_block(h2, nb[0]));
  void* all[2 * N];
  memcpy(all, blocks, sizeof(blocks));
  memcpy(all + N, nb, sizeof(nb));
  check_distinct(all, 2 * N);
  for (size_t i = 0; i < N; i++) tagged_free(nb[i], 100 + i);
  mi_heap_delete(h2);
  mi_collect(true);
  return NULL;
}

static void case_heap_aba(void) {
  rule(MI_SCHED_FREE_REMOTE_READ, 2, 0, 1);
  rule(MI_SCHED_PAGE_CLAIM_SLOT, 1, -1, -1);
  pthread_t f = spawn(&freer_all_then_post, NULL);
  pthread_t o = spawn(&aba_owner, NULL);
  join(f);
  join(o);
  rules_all_fired();
  check_baseline();
}

/* free vs purge: the purger holds a free page of a segment PURGING while
   the segment's owner frees its last block, which releases the segment: the
   release waits for the purge. */
static void* purger(void* arg) {
  (void)arg;
  my_role = 2;
  mi_collect(true); /* forced purge of every dirty page */
  return NULL;
}

/* a medium segment with two pages: one holds `keep`, the other is free and dirty */
static void* two_pages(void) {
  void* keep = mi_malloc(20000);
  void* other = mi_malloc(40000);
  CHECK(keep != NULL && other != NULL);
  CHECK(_mi_ptr_segment(keep) == _mi_ptr_segment(other) && page_of(keep) != page_of(other));
  mi_free(other);
  CHECK(atomic_load(&page_of(other)->state) == MI_PAGE_FREE_DIRTY);
  return keep;
}

static void case_free_vs_purge(void) {
  my_role = 1;
  void* keep = two_pages();
  rule(MI_SCHED_PURGE_CLAIMED, 2, 0, 1);
  rule(MI_SCHED_SEGMENT_UNLINK, 1, 1, -1);
  int64_t purged = atomic_load(&_mi_stats.purge_calls);
  pthread_t p = spawn(&purger, NULL);
  sem_wait_or_die(0);
  mi_free(keep); /* the segment goes: waits for the purge under way */
  join(p);
  rules_all_fired();
  CHECK(atomic_load(&_mi_stats.purge_calls) > purged);
  check_baseline();
}

/* free vs purge, refused: the OS refuses the purge; the purger gives the
   page back FREE_DIRTY and the owner releases the segment right then. The
   purger must not list the released segment again (the race this build's
   MI_TEARDOWN_PLANT_PURGE_RACE puts back: it then reads the unmapped
   segment). */
static void case_free_vs_purge_refused(void) {
  my_role = 1;
  void* keep = two_pages();
  mi_fault_policy_t policy = {mi_fault_purge, 1, 1, 0.0, 0, mi_fault_error_other, false};
  mi_fault_set_policy(&policy);
  rule(MI_SCHED_PURGE_SETTLED, 2, 0, 1);
  rule(MI_SCHED_SEGMENT_UNLINK, 1, -1, -1);
  pthread_t p = spawn(&purger, NULL);
  sem_wait_or_die(0);
  mi_free(keep); /* the segment goes */
  gate_post(1);
  join(p);
  rules_all_fired();
  mi_fault_counters_t c;
  mi_fault_get_counters(&c);
  CHECK(c.injected[mi_fault_purge] == 1);
  mi_fault_set_policy(NULL);
  check_baseline();
  mi_collect(true); /* the purge list must hold no released segment */
}

/* page free vs a neighbour's release: the main thread's segment S follows
   another thread's segment N on the purge list (S's purge link is N). The
   main thread frees S's last page and is held just before it takes the
   purge lock to list the page, where the secure build checks S's purge
   links; meanwhile N's owner frees N's last block, which unlists N and
   unmaps it (no segment cache in these children). The links read under the
   lock are the ones N's unlink rewrote: no report. Read before the lock
   (MI_TEARDOWN_PLANT_STALE_LINKS) the link still names N, gone from the
   segment map: the false alarm "corrupted segment header". */
static mi_segment_t* _Atomic neighbour;

static void* neighbour_release(void* arg) { /* role 2 */
  (void)arg;
  my_role = 2;
  void* keep = two_pages(); /* N listed first */
  atomic_store(&neighbour, _mi_ptr_segment(keep));
  gate_post(2);
  sem_wait_or_die(0);
  mi_free(keep); /* N's last page: N leaves the list and is unmapped */
  gate_post(1);
  return NULL;
}

static void case_free_vs_neighbour_release(void) {
  my_role = 1;
  pthread_t t = spawn(&neighbour_release, NULL);
  sem_wait_or_die(2);
  void* keep = two_pages(); /* S listed in front of N */
  mi_segment_t* segment = _mi_ptr_segment(keep);
  CHECK(segment->purge_next == atomic_load(&neighbour));
  rule(MI_SCHED_PAGE_FREE_LISTING, 1, 0, 1);
  mi_free(keep);
  join(t);
  rules_all_fired();
  check_baseline();
}

/* claim on free vs claim and re-abandon (mi_option_abandoned_reclaim_on_free):
   a thread freeing into an abandoned segment reads its owner word
   (ABANDONED, g) and is held before its claim CAS; meanwhile another thread
   claims the segment under the lock, adopts it and exits, which abandons it
   again: (ABANDONED, g'). The held claim must fail on the generation: its
   block goes on the page's list as a cross-thread free, and the segment,
   abandoned once more, has been claimed once per abandonment. A CAS that
   compared the state alone (MI_TEARDOWN_PLANT_SKIP_TAG) succeeds here: the
   child then exits with STALE_CLAIM_EXIT. Then the main thread's own free
   claims the segment on a fresh reading, and frees the rest locally. */
#define STALE_CLAIM_EXIT 3
static _Atomic(int) stale_claimed;
static _Atomic(uintptr_t) reclaimer_id;

static void* reclaim_freer(void* arg) { /* role 2 */
  (void)arg;
  my_role = 2;
  mi_thread_init(); /* only an initialised thread claims on free */
  sem_wait_or_die(7);
  tagged_free(blocks[0], 0); /* FREE_CLAIM_READ: posts 0, waits for 1 */
  atomic_store(&stale_claimed, atomic_load(&_mi_ptr_segment(blocks[0])->thread_id) == _mi_thread_id());
  return NULL; /* if it did claim, its exit abandons the segment again */
}

static void* claim_then_exit(void* arg) { /* role 3: claim under the lock, adopt, exit */
  (void)arg;
  my_role = 3;
  mi_thread_init();
  mi_collect(true);
  atomic_store(&reclaimer_id, atomic_load(&_mi_ptr_segment(blocks[0])->thread_id));
  CHECK(atomic_load(&reclaimer_id) == _mi_thread_id());
  return NULL;
}

static void* alloc_then_exit(void* arg) { /* role 1 */
  (void)arg;
  my_role = 1;
  for (size_t i = 0; i < N; i++) blocks[i] = tagged_alloc(NULL, i);
  return NULL;
}

static uint64_t owner_word(const void* p) {
  return atomic_load(&_mi_ptr_segment(p)->owner);
}

static void case_claim_vs_reabandon(void) {
  mi_option_set(mi_option_abandoned_reclaim_on_free, 1);
  rule(MI_SCHED_FREE_CLAIM_READ, 2, 0, 1);
  rule(MI_SCHED_FREE_REMOTE_PUSHED, 2, -1, -1); /* the claim lost: the block went on the list */
  rule(MI_SCHED_RECLAIM_CLAIMED, 3, -1, -1);
  pthread_t f = spawn(&reclaim_freer, NULL);
  join(spawn(&alloc_then_exit, NULL));
  mi_segment_t* segment = _mi_ptr_segment(blocks[0]);
  CHECK(snapshot().abandoned == base.abandoned + 1);
  uint64_t seen = owner_word(blocks[0]);
  CHECK((seen & MI_OWNER_STATE_MASK) == MI_OWNER_ABANDONED);
  gate_post(7);
  sem_wait_or_die(0); /* the freer holds (ABANDONED, g) */
  join(spawn(&claim_then_exit, NULL));
  uint64_t now = owner_word(blocks[0]);
  CHECK((now & MI_OWNER_STATE_MASK) == MI_OWNER_ABANDONED && now != seen); /* abandoned again, a later generation */
  CHECK(snapshot().abandoned == base.abandoned + 1 && snapshot().reclaimed == base.reclaimed + 1);
  gate_post(1); /* now the held claim's CAS */
  join(f);
  if (atomic_load(&stale_claimed)) {
    fprintf(stderr,
            "test-teardown: a claim on a stale observation succeeded: owner word read 0x%llx, "
            "0x%llx when the CAS ran; segment %p claimed twice for one abandonment\n",
            (unsigned long long)seen, (unsigned long long)now, (void*)segment);
    fflush(stderr);
    _exit(STALE_CLAIM_EXIT);
  }
  rules_all_fired();
  CHECK(snapshot().reclaimed == base.reclaimed + 1);                            /* one claim per abandonment */
  CHECK(atomic_load(&segment->thread_id) == 0 && owner_word(blocks[0]) == now); /* the lost claim changed nothing */
  tagged_free(blocks[1], 1); /* a fresh reading: this thread claims it */
  CHECK(atomic_load(&segment->thread_id) == _mi_thread_id());
  CHECK((owner_word(blocks[0]) & MI_OWNER_STATE_MASK) == MI_OWNER_OWNED);
  CHECK(snapshot().reclaimed == base.reclaimed + 2 && snapshot().abandoned == base.abandoned);
  for (size_t i = 2; i < N; i++) tagged_free(blocks[i], i);
  check_baseline();
}

/* claim on free vs a claim under the lock: the freeing thread wins its CAS
   (CLAIMED) and is held before it takes the lock to unlink the segment;
   meanwhile another thread's mi_collect(true) walks the abandoned list,
   finds the segment CLAIMED and passes it by. Then the freer unlinks and
   adopts it and frees every block locally. One owner, one claim. */
static _Atomic(int) freer_owned;

static void* claiming_freer(void* arg) { /* role 2 */
  (void)arg;
  my_role = 2;
  mi_thread_init();
  sem_wait_or_die(7);
  tagged_free(blocks[0], 0); /* FREE_CLAIMED: posts 0, waits for 1 */
  atomic_store(&freer_owned, atomic_load(&_mi_ptr_segment(blocks[1])->thread_id) == _mi_thread_id());
  for (size_t i = 1; i < N; i++) tagged_free(blocks[i], i); /* local now */
  return NULL;
}

static void* collect_then_exit(void* arg) { /* role 3 */
  (void)arg;
  my_role = 3;
  mi_thread_init();
  mi_collect(true); /* must pass the CLAIMED segment by */
  return NULL;
}

static void case_free_claim_vs_collect(void) {
  mi_option_set(mi_option_abandoned_reclaim_on_free, 1);
  rule(MI_SCHED_FREE_CLAIMED, 2, 0, 1);
  rule(MI_SCHED_RECLAIM_CLAIMED, 2, -1, -1); /* the freer adopts it */
  pthread_t f = spawn(&claiming_freer, NULL);
  join(spawn(&alloc_then_exit, NULL));
  CHECK(snapshot().abandoned == base.abandoned + 1);
  gate_post(7);
  sem_wait_or_die(0); /* the freer's CAS won; the segment is still listed */
  CHECK((owner_word(blocks[0]) & MI_OWNER_STATE_MASK) == MI_OWNER_CLAIMED);
  join(spawn(&collect_then_exit, NULL));
  CHECK(snapshot().reclaimed == base.reclaimed);     /* passed by: no second claim */
  CHECK(snapshot().abandoned == base.abandoned + 1); /* and left listed for its claimer */
  CHECK(atomic_load(&_mi_ptr_segment(blocks[0])->thread_id) == 0);
  gate_post(1);
  join(f);
  rules_all_fired();
  CHECK(atomic_load(&freer_owned));
  CHECK(snapshot().reclaimed == base.reclaimed + 1 && snapshot().abandoned == base.abandoned);
  check_baseline();
}

/* ---- Randomized stress: every schedule point may yield or sleep ----------- */

#define STRESS_WORKERS 4
#define STRESS_ROUNDS 20
#define STRESS_ITERS 600
#define XCHG 256

typedef struct xblock_s {
  void* p;
  uintptr_t tag;
} xblock_t;

static pthread_mutex_t xchg_lock = PTHREAD_MUTEX_INITIALIZER;
static xblock_t xchg[XCHG];
static size_t xchg_count;
static _Atomic(uintptr_t) next_tag = 1;

static size_t stress_size(uint64_t r) {
  switch (r % 32) {
    case 0: return 20000 + (size_t)(r >> 8) % 60000;    /* medium */
    case 1: return ((r >> 8) % 8 == 0 ? 300000 : 3000); /* now and then a large block */
    default: return 16 + (size_t)(r >> 8) % 1000;
  }
}

static void stress_free(xblock_t b) {
  tagged_free(b.p, b.tag);
}

static void* stress_worker(void* arg) {
  (void)arg;
  xblock_t own[64];
  size_t n_own = 0;
  for (int it = 0; it < STRESS_ITERS; it++) {
    uint64_t r = stress_rng();
    mi_heap_t* heap = NULL;
    bool shareable = true;
    if (r % 16 == 0) {
      heap = mi_heap_new();
      shareable = ((r >> 4) & 1) != 0; /* blocks of a heap that is destroyed must not escape */
    }
    for (int k = 0; k < 16; k++) {
      uint64_t q = stress_rng();
      uintptr_t tag = atomic_fetch_add(&next_tag, 1);
      void* p = tagged_alloc_sz(heap, stress_size(q), tag);
      xblock_t b = {p, tag};
      if (heap != NULL && !shareable) {
        stress_free(b);
        continue;
      }
      if ((q >> 20) & 1) { /* hand it to another thread */
        pthread_mutex_lock(&xchg_lock);
        if (xchg_count < XCHG) {
          xchg[xchg_count++] = b;
          b.p = NULL;
        }
        pthread_mutex_unlock(&xchg_lock);
      }
      if (b.p != NULL) {
        if (n_own == 64) stress_free(own[--n_own]);
        own[n_own++] = b;
      }
    }
    if (heap != NULL) {
      if (shareable) mi_heap_delete(heap); /* its blocks live on in the backing heap */
      else mi_heap_destroy(heap);
    }
    /* free a few that other threads allocated */
    for (int k = 0; k < 12; k++) {
      xblock_t b = {NULL, 0};
      pthread_mutex_lock(&xchg_lock);
      if (xchg_count > 0) {
        size_t i = (size_t)(stress_rng() % xchg_count);
        b = xchg[i];
        xchg[i] = xchg[--xchg_count];
      }
      pthread_mutex_unlock(&xchg_lock);
      if (b.p != NULL) stress_free(b);
    }
    while (n_own > 32) stress_free(own[--n_own]);
    if (r % 64 == 1) mi_collect(true);
    else if (r % 16 == 2) mi_collect(false);
  }
  /* exit with live blocks handed on: the segments are abandoned */
  pthread_mutex_lock(&xchg_lock);
  while (n_own > 0 && xchg_count < XCHG) xchg[xchg_count++] = own[--n_own];
  pthread_mutex_unlock(&xchg_lock);
  while (n_own > 0) stress_free(own[--n_own]);
  return NULL;
}

static void case_stress(void) {
  mi_option_set(mi_option_purge_delay, 0); /* purges on the allocation path, racing reuse */
  atomic_store(&stress_delays, 1);
  for (int round = 0; round < STRESS_ROUNDS; round++) {
    pthread_t t[STRESS_WORKERS];
    for (int i = 0; i < STRESS_WORKERS; i++) t[i] = spawn(&stress_worker, NULL);
    for (int i = 0; i < STRESS_WORKERS; i++) join(t[i]);
  }
  atomic_store(&stress_delays, 0);
  for (size_t i = 0; i < xchg_count; i++) stress_free(xchg[i]);
  xchg_count = 0;
  CHECK(mi_sched_hits(MI_SCHED_FREE_REMOTE_READ) > 0 && mi_sched_hits(MI_SCHED_ABANDON_PUSHED) > 0 &&
        mi_sched_hits(MI_SCHED_RECLAIM_CLAIMED) > 0 && mi_sched_hits(MI_SCHED_PURGE_CLAIMED) > 0);
  if (mi_option_is_enabled(mi_option_abandoned_reclaim_on_free)) {
    fprintf(stderr, "test-teardown: stress: %llu claims on free tried\n", mi_sched_hits(MI_SCHED_FREE_CLAIM_READ));
    CHECK(mi_sched_hits(MI_SCHED_FREE_CLAIM_READ) > 0);
  }
  check_baseline();
}

/* ---- A starting thread takes over an exited thread's empty pages ------------ */

static void* alloc_one_then_exit(void* arg) { /* its segment is abandoned: the block lives on */
  (void)arg;
  blocks[0] = tagged_alloc(NULL, 0);
  return NULL;
}

typedef struct taker_s {
  size_t size;
  mi_page_t* page; /* where its block came from */
} taker_t;

static void* alloc_free_then_exit(void* arg) {
  taker_t* taker = (taker_t*)arg;
  void* p = tagged_alloc_sz(NULL, taker->size, 1);
  taker->page = page_of(p);
  tagged_free(p, 1);
  return NULL;
}

/* A new thread's first allocation of `size` comes from `page`, and no page
   was set up for it. */
static void check_new_thread_takes(mi_page_t* page, size_t size) {
  int64_t set_up = atomic_load(&_mi_stats.pages.total);
  taker_t taker = {size, NULL};
  join(spawn(&alloc_free_then_exit, &taker));
  CHECK(taker.page == page);
  CHECK(atomic_load(&_mi_stats.pages.total) == set_up);
}

/* The owner exits with one block live; the main thread frees it into the
   abandoned segment; a new thread's first allocation of that size adopts
   the segment and must take the page as it is (no page set up, the carved
   free list kept) rather than free it and set up another. */
static void case_new_thread_takes_over(void) {
  mi_option_set(mi_option_abandoned_reclaim_on_free, 0); /* the free must not claim the segment for main */
  join(spawn(&alloc_one_then_exit, NULL));
  CHECK(snapshot().abandoned == base.abandoned + 1);
  mi_page_t* page = page_of(blocks[0]);
  tagged_free(blocks[0], 0);
  check_new_thread_takes(page, BSIZE);
  CHECK(snapshot().reclaimed == base.reclaimed + 1);
  check_baseline();
}

#define OTHER_SIZE 200

static void* alloc_two_free_one_then_exit(void* arg) {
  blocks[0] = tagged_alloc(NULL, 0); /* lives on: the segment is abandoned */
  void* p = tagged_alloc_sz(NULL, OTHER_SIZE, 1);
  *(mi_page_t**)arg = page_of(p);
  tagged_free(p, 1); /* its page is empty at the exit */
  return NULL;
}

static bool page_in_use(mi_page_t* page) {
  return atomic_load(&page->state) == MI_PAGE_IN_USE;
}

/* The owner empties its page of one size and exits with a block of another
   size live: the empty page stays in the abandoned segment, still in use,
   and a new thread takes it over with no page set up. */
static void case_exit_keeps_empty_page(void) {
  mi_option_set(mi_option_abandoned_reclaim_on_free, 0);
  mi_page_t* emptied = NULL;
  join(spawn(&alloc_two_free_one_then_exit, &emptied));
  CHECK(snapshot().abandoned == base.abandoned + 1);
  CHECK(page_in_use(emptied) && emptied->used == 0);
  tagged_free(blocks[0], 0);
  check_new_thread_takes(emptied, OTHER_SIZE);
  check_baseline();
}

/* No thread takes the kept page over: the cleanup of abandoned segments
   frees it, and the segment once its last block is freed. It runs with what
   is due (here from a slow path's _mi_background_maybe, as with no background thread),
   and the exit makes it due only once the segment is on the abandoned list:
   a purge run between the keeping and the abandoning (forced here) would
   otherwise use up the due time and leave the page kept for good. A
   segment with no live block at the exit keeps nothing. */
static void* alloc_free_all_then_exit(void* arg) {
  (void)arg;
  tagged_free(tagged_alloc(NULL, 3), 3);
  tagged_free(tagged_alloc_sz(NULL, OTHER_SIZE, 4), 4);
  return NULL;
}

static void* exit_in_role_1(void* arg) {
  my_role = 1;
  return alloc_two_free_one_then_exit(arg);
}

static void case_exit_kept_page_cleaned(void) {
  mi_option_set(mi_option_abandoned_reclaim_on_free, 0);
  mi_option_set(mi_option_purge_delay, 0); /* due at once */
  join(spawn(&alloc_free_all_then_exit, NULL));
  CHECK(snapshot().pages == base.pages && snapshot().segments == base.segments); /* released at the exit */
  rule(MI_SCHED_ABANDON_BEGIN, 1, 0, 1);
  mi_page_t* emptied = NULL;
  pthread_t owner = spawn(&exit_in_role_1, &emptied);
  sem_wait_or_die(0);   /* the page is kept, the segment not yet abandoned */
  _mi_purge_run(false); /* a purge run in between */
  gate_post(1);
  join(owner);
  rules_all_fired();
  CHECK(page_in_use(emptied) && emptied->used == 0);
  int64_t pages = snapshot().pages;
  _mi_background_maybe();
  CHECK(!page_in_use(emptied));
  CHECK(snapshot().pages == pages - 1);
  CHECK(snapshot().abandoned == base.abandoned + 1); /* blocks[0] lives on */
  tagged_free(blocks[0], 0);
  _mi_segments_abandoned_cleanup();
  CHECK(snapshot().abandoned == base.abandoned);
  check_baseline();
}

/* A thread that took over kept pages gives back, at its heap's periodic
   heartbeat (every 64 slow-path allocations), those it left empty. */
static void* take_over_then_allocate_elsewhere(void* arg) {
  void* p = tagged_alloc(NULL, 5); /* takes the segment over: the page of OTHER_SIZE is kept */
  CHECK(page_in_use((mi_page_t*)arg));
  for (size_t i = 0; i < 128 && page_in_use((mi_page_t*)arg); i++) {
    tagged_free(tagged_alloc_sz(NULL, (size_t)256 << 10, 6), 6); /* large: each one a slow path */
  }
  CHECK(!page_in_use((mi_page_t*)arg));
  tagged_free(p, 5);
  return NULL;
}

static void case_kept_page_given_back(void) {
  mi_option_set(mi_option_abandoned_reclaim_on_free, 0);
  mi_page_t* emptied = NULL;
  join(spawn(&alloc_two_free_one_then_exit, &emptied));
  tagged_free(blocks[0], 0);
  join(spawn(&take_over_then_allocate_elsewhere, emptied));
  check_baseline();
}

/* Adoption takes only segments of the kind the page needs: a thread whose
   first allocation is small leaves an exited thread's medium segment (a
   live medium block in it) abandoned, for a thread that wants medium pages.
   And only a thread's backing heap takes over: a first-class heap's first
   allocation sets up its page (the kept page is freed on adoption). */
#define MEDIUM_SIZE ((size_t)16 << 10)

static void* alloc_medium_then_exit(void* arg) {
  (void)arg;
  blocks[0] = tagged_alloc_sz(NULL, MEDIUM_SIZE, 0);
  return NULL;
}

static void* alloc_small_check_abandoned(void* arg) {
  (void)arg;
  void* p = tagged_alloc(NULL, 1);
  CHECK(snapshot().abandoned == base.abandoned + 1); /* the medium segment is still there */
  tagged_free(p, 1);
  return NULL;
}

static void* alloc_in_new_heap_then_exit(void* arg) {
  (void)arg;
  mi_heap_t* heap = mi_heap_new();
  CHECK(heap != NULL);
  int64_t set_up = atomic_load(&_mi_stats.pages.total);
  void* p = tagged_alloc_sz(heap, OTHER_SIZE, 1);
  CHECK(atomic_load(&_mi_stats.pages.total) == set_up + 1); /* set up, not taken over */
  CHECK(page_of(p)->heap == heap && !(mi_page_flags(page_of(p)) & MI_PAGE_FLAG_KEPT));
  tagged_free(p, 1);
  mi_heap_delete(heap);
  return NULL;
}

static void case_take_over_kind_and_heap(void) {
  mi_option_set(mi_option_abandoned_reclaim_on_free, 0);
  join(spawn(&alloc_medium_then_exit, NULL));
  CHECK(snapshot().abandoned == base.abandoned + 1);
  join(spawn(&alloc_small_check_abandoned, NULL));
  tagged_free(blocks[0], 0);
  check_baseline();
  mi_page_t* emptied = NULL;
  join(spawn(&alloc_two_free_one_then_exit, &emptied));
  CHECK(page_in_use(emptied)); /* kept at the exit: a take-over would find it */
  tagged_free(blocks[0], 0);
  join(spawn(&alloc_in_new_heap_then_exit, NULL));
  check_baseline();
}

/* ---- Driver ---------------------------------------------------------------- */

typedef struct case_s {
  const char* name;
  void (*fn)(void);
} case_t;

static const case_t cases[] = {
    {"free-vs-owner-exit", &case_free_vs_owner_exit},
    {"free-vs-claim", &case_free_vs_claim},
    {"two-claimers", &case_two_claimers},
    {"free-vs-heap-delete", &case_free_vs_heap_delete},
    {"destroy-vs-claim", &case_destroy_vs_claim},
    {"heap-aba", &case_heap_aba},
    {"free-vs-purge", &case_free_vs_purge},
    {"free-vs-purge-refused", &case_free_vs_purge_refused},
    {"free-vs-neighbour-release", &case_free_vs_neighbour_release},
    {"claim-vs-reabandon", &case_claim_vs_reabandon},
    {"free-claim-vs-collect", &case_free_claim_vs_collect},
    {"stress", &case_stress},
    {"new-thread-takes-over", &case_new_thread_takes_over},
    {"exit-keeps-empty-page", &case_exit_keeps_empty_page},
    {"exit-kept-page-cleaned", &case_exit_kept_page_cleaned},
    {"kept-page-given-back", &case_kept_page_given_back},
    {"take-over-kind-and-heap", &case_take_over_kind_and_heap},
};
#define CASE_COUNT (sizeof(cases) / sizeof(cases[0]))

static void child_setup(void) {
  mi_option_set(mi_option_purge_thread, 0);
  mi_option_set(mi_option_purge_delay, -1);
  mi_option_set(mi_option_segment_cache, 0); /* released segments are unmapped: a late access faults */
  /* the cases place blocks in given pages and segments: no guarded sample
     (secure builds) may take one of them to a segment of its own */
  mi_option_set(mi_option_guarded_sample_rate, 0);
  mi_free(mi_malloc((size_t)5 << 20)); /* the segment map, out of the way */
  mi_collect(true);
  for (int i = 0; i < SEMS; i++) sem_init(&sems[i], 0, 0);
  mi_fault_reset();
  mi_sched_set_hook(&hook, NULL);
  base = snapshot();
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < CASE_COUNT; i++) printf("%s\n", cases[i].name);
    return 0;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: test-teardown CASE [--expect-failure [EXIT | MESSAGE]] | --list\n");
    return 2;
  }
  bool expect_failure = (argc >= 3 && strcmp(argv[2], "--expect-failure") == 0);
  /* after --expect-failure: an exit code, or a line the child must print on stderr; none: any failure */
  const char* expect_arg = (expect_failure && argc >= 4 ? argv[3] : NULL);
  bool expect_message = (expect_arg != NULL && (expect_arg[0] < '0' || expect_arg[0] > '9'));
  int expect_exit = (expect_arg != NULL && !expect_message ? atoi(expect_arg) : 0);
  const case_t* c = NULL;
  for (size_t i = 0; i < CASE_COUNT; i++) {
    if (strcmp(argv[1], cases[i].name) == 0) c = &cases[i];
  }
  if (c == NULL) {
    fprintf(stderr, "test-teardown: no case %s\n", argv[1]);
    return 2;
  }
  if (!mi_fault_available()) {
    printf("test-teardown: %s: skipped (no schedule points: build with MI_FAULT)\n", c->name);
    return 77;
  }
  fflush(NULL);
  int err_pipe[2] = {-1, -1};
  if (expect_message && pipe(err_pipe) != 0) return 2;
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    if (expect_message) {
      dup2(err_pipe[1], 2);
      close(err_pipe[0]);
      close(err_pipe[1]);
    }
    alarm(60); /* a wedged interleaving fails instead of hanging */
    child_setup();
    c->fn();
    _exit(0);
  }
  static char err_text[16384]; /* the beginning of the child's stderr, where its report is */
  size_t err_len = 0;
  if (expect_message) {
    close(err_pipe[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(err_pipe[0], buf, sizeof(buf))) != 0) {
      if (n < 0) {
        if (errno == EINTR) continue;
        break;
      }
      size_t keep = (size_t)n;
      if (keep > sizeof(err_text) - 1 - err_len) keep = sizeof(err_text) - 1 - err_len;
      memcpy(err_text + err_len, buf, keep);
      err_len += keep;
    }
    close(err_pipe[0]);
    err_text[err_len] = 0;
    fputs(err_text, stderr);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 2;
  bool ok = (WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (WIFSIGNALED(status)) printf("test-teardown: %s: child died with signal %d\n", c->name, WTERMSIG(status));
  else if (!ok) printf("test-teardown: %s: child failed (exit %d)\n", c->name, WEXITSTATUS(status));
  if (expect_failure) {
    /* with an exit code given, only that failure counts: another one would
       not show that the planted bug was seen */
    bool seen =
        !ok && (expect_message ? strstr(err_text, expect_arg) != NULL
                               : (expect_exit == 0 || (WIFEXITED(status) && WEXITSTATUS(status) == expect_exit)));
    printf("test-teardown: %s: %s\n", c->name,
           ok     ? "passed, but a failure was expected: the planted bug went unseen"
           : seen ? "failed as expected (positive control)"
                  : "failed, but not in the way expected (positive control)");
    return seen ? 0 : 1;
  }
  printf("test-teardown: %s: %s\n", c->name, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
