/* Fork storm: worker threads allocate and free continuously, with
   cross-thread frees, while the main thread forks again and again. Each
   child frees blocks the parent's workers allocated, allocates, reallocates
   and frees a few megabytes, checks every byte it wrote, and exits 0; a
   variant of each child forks again, starts threads, or execs this program.
   Every child runs under a watchdog (alarm, and a parent that waits with a
   deadline): a hang counts as a deadlock and fails the test, as does a
   crash, an abort (the lock-order checker's included) or a corrupted block.

   usage: fork-storm [forks]        (default 2000, or FORK_STORM_FORKS;
                                     FORK_STORM_VARIANT=plain|fork-again|
                                     threads|exec runs one variant only)
          fork-storm --exec-child   (what the exec variant runs)
   Prints one line of figures: forks, children ok, deadlocks, failures. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mimalloc.h"

#define MAX_WORKERS 8
#define SLOTS 256              /* blocks handed between threads (and to children) */
#define CHILD_WATCHDOG_S 20    /* a child that takes longer is hung */
#define WAIT_DEADLINE_MS 30000 /* the parent's deadline for a child */
#define PROGRESS_DEADLINE_S 60 /* the parent's own watchdog */

enum { V_PLAIN, V_FORK, V_THREADS, V_EXEC, V_COUNT };
static const char* const variant_names[V_COUNT] = {"plain", "fork-again", "threads", "exec"};

static _Atomic(uintptr_t) slots[SLOTS];
/* fork() copies the address space page by page while the other threads run
   on: without a lock taken around fork, a child could see a slot from
   before a hand-off and the block from after it was freed. Like any program
   whose children use data its threads share, the test quiesces the
   hand-off with its own atfork handlers (registered after the allocator's,
   so its prepare runs first and the worker holding it can still free). */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static void slots_prepare(void) {
  pthread_mutex_lock(&slots_lock);
}
static void slots_parent(void) {
  pthread_mutex_unlock(&slots_lock);
}
static void slots_child(void) {
  pthread_mutex_init(&slots_lock, NULL);
}
static atomic_bool stop;
static atomic_long worker_ops;
static atomic_long worker_failures;
static atomic_long progress;
static const char* self_path = "/proc/self/exe";

/* ---- Blocks that check themselves ------------------------------------------- */

/* A block starts with its size and a check word and carries a pattern up to
   256 bytes and in its last byte. */
static void mark(void* p, size_t size) {
  uint8_t* b = (uint8_t*)p;
  uint64_t hdr[2] = {(uint64_t)size, (uint64_t)(uintptr_t)p ^ (uint64_t)size ^ 0x5eedf00dULL};
  memcpy(b, hdr, sizeof(hdr));
  size_t lim = (size - 1 < 256 ? size - 1 : 256);
  for (size_t i = 16; i < lim; i++) b[i] = (uint8_t)((uintptr_t)b + i);
  b[size - 1] = (uint8_t)(size * 7 + 3);
}

/* The block at `p` holds what was marked at `origin` (the same block, or
   the one a realloc moved to `p`, of `avail` bytes now). */
static bool verify_at(const void* p, const void* origin, size_t avail) {
  const uint8_t* b = (const uint8_t*)p;
  uint64_t hdr[2];
  memcpy(hdr, b, sizeof(hdr));
  size_t size = (size_t)hdr[0];
  if (size < 17 || (hdr[1] ^ (uint64_t)size ^ 0x5eedf00dULL) != (uint64_t)(uintptr_t)origin) return false;
  size_t lim = (size - 1 < 256 ? size - 1 : 256);
  if (lim > avail) lim = avail;
  for (size_t i = 16; i < lim; i++)
    if (b[i] != (uint8_t)((uintptr_t)origin + i)) return false;
  if (avail < size) return true;
  return (b[size - 1] == (uint8_t)(size * 7 + 3) && mi_usable_size(p) >= size);
}

static bool verify(const void* p) {
  return verify_at(p, p, SIZE_MAX);
}

static uint64_t rnd(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static size_t rand_size(uint64_t* s) {
  uint64_t r = rnd(s) % 1000;
  if (r < 800) return 17 + (size_t)(rnd(s) % 1024);
  if (r < 995) return 1024 + (size_t)(rnd(s) % (120 * 1024));
  return 200 * 1024 + (size_t)(rnd(s) % (800 * 1024)); /* large: its own segment */
}

/* Swap a block into a random slot and free what was there (written by
   another thread, or by a thread that has exited). */
static bool exchange_and_free(_Atomic(uintptr_t)* table, size_t n, void* p, uint64_t* s) {
  bool shared = (table == slots);
  if (shared) pthread_mutex_lock(&slots_lock);
  uintptr_t got = atomic_exchange(&table[rnd(s) % n], (uintptr_t)p);
  bool ok = (got == 0 || verify((void*)got));
  mi_free((void*)got);
  if (shared) pthread_mutex_unlock(&slots_lock);
  return ok;
}

/* ---- Parent workers ---------------------------------------------------------------- */

static void* short_thread(void* arg) {
  uint64_t s = (uint64_t)(uintptr_t)arg;
  for (int i = 0; i < 50; i++) {
    size_t size = rand_size(&s);
    void* p = mi_malloc(size);
    if (p == NULL) continue;
    mark(p, size);
    if (!exchange_and_free(slots, SLOTS, p, &s)) atomic_fetch_add(&worker_failures, 1);
  }
  return NULL; /* its blocks in the slots outlive it: its segments are abandoned */
}

static void* worker(void* arg) {
  int id = (int)(intptr_t)arg;
  uint64_t s = 0x1234567ULL * (uint64_t)(id + 1);
  enum { LOCAL = 64 };
  void* local[LOCAL] = {0};
  mi_heap_t* heap = NULL;
  for (long it = 0; !atomic_load_explicit(&stop, memory_order_relaxed); it++) {
    size_t size = rand_size(&s);
    void* p = (heap != NULL && (it & 1) ? mi_heap_malloc(heap, size) : mi_malloc(size));
    if (p == NULL) {
      atomic_fetch_add(&worker_failures, 1);
      continue;
    }
    mark(p, size);
    if (rnd(&s) % 3 == 0) {
      if (!exchange_and_free(slots, SLOTS, p, &s)) atomic_fetch_add(&worker_failures, 1);
    } else {
      size_t k = (size_t)(rnd(&s) % LOCAL);
      if (local[k] != NULL) {
        if (!verify(local[k])) atomic_fetch_add(&worker_failures, 1);
        mi_free(local[k]);
      }
      local[k] = p;
    }
    if (it % 4096 == 100) mi_collect(it % 16384 == 100); /* purge passes, adoption of abandoned segments */
    if (it % 2048 == 1000) {                             /* heaps come and go (meta slots) */
      if (heap != NULL) mi_heap_delete(heap);
      heap = mi_heap_new();
    }
    if (id == 0 && it % 8192 == 5000) { /* a thread that exits and leaves blocks behind */
      pthread_t t;
      if (pthread_create(&t, NULL, short_thread, (void*)(uintptr_t)it) == 0) pthread_join(t, NULL);
    }
    atomic_fetch_add_explicit(&worker_ops, 1, memory_order_relaxed);
    if (it % 64 == 0) sched_yield(); /* leave the forking thread its share of 2 cores */
  }
  for (size_t k = 0; k < LOCAL; k++) {
    if (local[k] != NULL && !verify(local[k])) atomic_fetch_add(&worker_failures, 1);
    mi_free(local[k]);
  }
  if (heap != NULL) mi_heap_delete(heap);
  return NULL;
}

/* ---- Children ----------------------------------------------------------------- */

/* Wait for `pid` at most `deadline_ms`; a child still running then is killed
   and counted as hung. Returns its wait status, or -1 if it hung. */
static int wait_deadline(pid_t pid, long deadline_ms) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long spins = 0;; spins++) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -2;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
    if (ms > deadline_ms) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    if (spins < 50) sched_yield();
    else nanosleep(&(struct timespec){0, 100 * 1000}, NULL);
  }
}

static void child_fail_block(const char* what, const void* p) {
  char buf[256];
  uint64_t hdr[2] = {0, 0};
  if (p != NULL) memcpy(hdr, p, sizeof(hdr));
  int n = snprintf(buf, sizeof(buf), "fork-storm: child %d: %s (block %p: words 0x%llx 0x%llx, marked for %p)\n",
                   (int)getpid(), what, p, (unsigned long long)hdr[0], (unsigned long long)hdr[1],
                   (void*)(uintptr_t)(hdr[1] ^ hdr[0] ^ 0x5eedf00dULL));
  if (n > 0) (void)!write(2, buf, (size_t)n);
  _exit(2);
}

static void child_fail(const char* what) {
  char buf[160];
  int n = snprintf(buf, sizeof(buf), "fork-storm: child %d: %s\n", (int)getpid(), what);
  if (n > 0) (void)!write(2, buf, (size_t)n);
  _exit(2);
}

/* A few megabytes: allocate, reallocate (grow and shrink, small and large),
   check, free. */
static void child_churn(uint64_t seed) {
  enum { N = 200 };
  void* blocks[N];
  uint64_t s = seed;
  size_t total = 0;
  for (int i = 0; i < N; i++) {
    size_t size = (i == 0 ? 1536 * 1024 : 17 + (size_t)(rnd(&s) % (32 * 1024)));
    blocks[i] = (i % 5 == 0 ? mi_zalloc(size) : mi_malloc(size));
    if (blocks[i] == NULL) child_fail("allocation failed");
    mark(blocks[i], size);
    total += size;
  }
  for (int i = 0; i < N; i++) {
    size_t size = 17 + (size_t)(rnd(&s) % (i % 2 ? 64 * 1024 : 2048));
    if (i == 1) size = 600 * 1024;
    void* old = blocks[i];
    if (!verify(old)) child_fail("block corrupted before realloc");
    void* q = mi_realloc(old, size);
    if (q == NULL) child_fail("realloc failed");
    if (!verify_at(q, old, size)) child_fail("contents lost by realloc");
    mark(q, size);
    blocks[i] = q;
  }
  for (int i = 0; i < N; i++) {
    if (!verify(blocks[i])) child_fail("block corrupted");
    mi_free(blocks[i]);
  }
  (void)total;
}

/* The parent's workers do not exist here: free the blocks they left in the
   slots (their pages now belong to abandoned segments). One small block is
   kept back and returned, for the adoption check. */
static void* child_free_inherited(void) {
  void* kept = NULL;
  for (size_t j = 0; j < SLOTS; j++) {
    void* p = (void*)atomic_exchange(&slots[j], 0);
    if (p == NULL) continue;
    if (!verify(p)) child_fail_block("inherited block corrupted", p);
    if (kept == NULL && mi_usable_size(p) <= 64 * 1024) kept = p;
    else mi_free(p);
  }
  return kept;
}

static _Atomic(uintptr_t) child_slots[32];

typedef struct child_thread_arg_s {
  long n;
  int index;
} child_thread_arg_t;

/* A thread of a child: it frees its share of the blocks the parent's
   workers left (a new thread may sit where one of them was, with the same
   thread id: their segments must not look like its own), then allocates
   and hands blocks to its siblings. */
static void* child_thread(void* argp) {
  const child_thread_arg_t* arg = (const child_thread_arg_t*)argp;
  for (size_t j = (size_t)arg->index; j < SLOTS; j += 3) {
    void* p = (void*)atomic_exchange(&slots[j], 0);
    if (p == NULL) continue;
    if (!verify(p)) child_fail_block("inherited block corrupted (freed by a child's thread)", p);
    mi_free(p);
  }
  uint64_t s = (uint64_t)arg->n * 3u + (uint64_t)arg->index + 1;
  for (int i = 0; i < 300; i++) {
    size_t size = 17 + (size_t)(rnd(&s) % 4096);
    void* p = mi_malloc(size);
    if (p == NULL) child_fail("allocation in a child's thread failed");
    mark(p, size);
    if (!exchange_and_free(child_slots, 32, p, &s)) child_fail("cross-thread block corrupted in child");
  }
  return NULL;
}

static void child_main(int variant, long n) {
  alarm(CHILD_WATCHDOG_S); /* a hang dies of SIGALRM: the parent counts a deadlock */
  void* kept = (variant != V_THREADS ? child_free_inherited() : NULL); /* else the child's threads do */
  child_churn((uint64_t)n * 7919u + 1);
  if (n % 8 == 0) {
    /* adopt the abandoned segments and purge everything free (which starts
       a background thread): a live block a parent's thread allocated keeps its
       contents (its page is orphaned, or adopted if its thread had exited) */
    mi_collect(true);
    if (kept != NULL && !verify(kept)) child_fail_block("inherited block corrupted by mi_collect(true)", kept);
  }
  mi_free(kept);
  switch (variant) {
    case V_FORK: {
      fflush(NULL);
      pid_t pid = fork();
      if (pid < 0) child_fail("nested fork failed");
      if (pid == 0) {
        alarm(CHILD_WATCHDOG_S);
        child_churn((uint64_t)n * 31u + 5);
        exit(0);
      }
      child_churn((uint64_t)n * 17u + 3);
      int status = wait_deadline(pid, WAIT_DEADLINE_MS);
      if (status == -1) child_fail("grandchild hung");
      if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) child_fail("grandchild failed");
      break;
    }
    case V_THREADS: {
      pthread_t t[3];
      child_thread_arg_t args[3];
      for (int i = 0; i < 3; i++) {
        args[i].n = n;
        args[i].index = i;
        if (pthread_create(&t[i], NULL, child_thread, &args[i]) != 0) child_fail("pthread_create failed");
      }
      for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
      for (size_t j = 0; j < 32; j++) {
        void* p = (void*)atomic_exchange(&child_slots[j], 0);
        if (p != NULL && !verify(p)) child_fail("cross-thread block corrupted in child");
        mi_free(p);
      }
      break;
    }
    case V_EXEC: {
      char* argv[] = {(char*)"fork-storm", (char*)"--exec-child", NULL};
      execv(self_path, argv);
      child_fail("exec failed");
      break;
    }
    default: break;
  }
  exit(0);
}

/* ---- Main ---------------------------------------------------------------------- */

static void* watchdog(void* arg) {
  (void)arg;
  long last = -1;
  int still = 0;
  while (!atomic_load(&stop)) {
    sleep(1);
    long now = atomic_load(&progress);
    still = (now == last ? still + 1 : 0);
    last = now;
    if (still >= PROGRESS_DEADLINE_S) {
      fprintf(stderr, "fork-storm: deadlock: no fork completed in %d s (at fork %ld)\n", PROGRESS_DEADLINE_S, now);
      _exit(3);
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--exec-child") == 0) {
    child_churn(42);
    return 0;
  }
  long forks = 2000;
  const char* env = getenv("FORK_STORM_FORKS");
  if (argc > 1) forks = atol(argv[1]);
  else if (env != NULL) forks = atol(env);
  if (forks <= 0) forks = 1;
  int only = -1; /* FORK_STORM_VARIANT=<name>: that variant alone */
  const char* venv = getenv("FORK_STORM_VARIANT");
  for (int v = 0; venv != NULL && v < V_COUNT; v++)
    if (strcmp(venv, variant_names[v]) == 0) only = v;
  /* exec runs the file /proc/self/exe names, resolved now: under Valgrind
     the link itself leads to the tool's binary, but readlink is answered
     with the program's path */
  static char self_buf[4096];
  ssize_t len = readlink("/proc/self/exe", self_buf, sizeof(self_buf) - 1);
  if (len > 0) {
    self_buf[len] = 0;
    self_path = self_buf;
  }
  mi_process_init(); /* registers the allocator's fork handlers first */
  pthread_atfork(slots_prepare, slots_parent, slots_child);

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int nworkers = 3; /* FORK_STORM_WORKERS */
  const char* wenv = getenv("FORK_STORM_WORKERS");
  if (wenv != NULL) nworkers = atoi(wenv);
  if (nworkers < 1) nworkers = 1;
  if (nworkers > MAX_WORKERS) nworkers = MAX_WORKERS;
  pthread_t workers[MAX_WORKERS], dog;
  for (int i = 0; i < nworkers; i++) pthread_create(&workers[i], NULL, worker, (void*)(intptr_t)i);
  pthread_create(&dog, NULL, watchdog, NULL);
  pthread_detach(dog);

  long ok = 0, deadlocks = 0, failures = 0;
  long per_variant[V_COUNT] = {0};
  for (long n = 0; n < forks; n++) {
    int variant = (only >= 0 ? only : (int)(n % V_COUNT));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "fork-storm: fork %ld failed: %s\n", n, strerror(errno));
      failures++;
      continue;
    }
    if (pid == 0) child_main(variant, n);
    int status = wait_deadline(pid, WAIT_DEADLINE_MS);
    per_variant[variant]++;
    if (status == -1 || (status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)) {
      fprintf(stderr, "fork-storm: child %ld (%s) hung: deadlock\n", n, variant_names[variant]);
      deadlocks++;
    } else if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "fork-storm: child %ld (%s) failed: status 0x%x\n", n, variant_names[variant], status);
      failures++;
    } else {
      ok++;
    }
    atomic_fetch_add(&progress, 1);
  }
  atomic_store(&stop, true);
  for (int i = 0; i < nworkers; i++) pthread_join(workers[i], NULL);
  for (size_t j = 0; j < SLOTS; j++) {
    void* p = (void*)atomic_exchange(&slots[j], 0);
    if (p != NULL && !verify(p)) atomic_fetch_add(&worker_failures, 1);
    mi_free(p);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("fork-storm: forks %ld (", forks);
  for (int v = 0; v < V_COUNT; v++) printf("%s%s %ld", v ? ", " : "", variant_names[v], per_variant[v]);
  printf(
      "), children ok %ld, deadlocks %ld, failures %ld; %d workers, %ld worker allocations, "
      "%ld worker check failures; %.1f s\n",
      ok, deadlocks, failures, nworkers, atomic_load(&worker_ops), atomic_load(&worker_failures), secs);
  return (ok == forks && deadlocks == 0 && failures == 0 && atomic_load(&worker_failures) == 0 ? 0 : 1);
}
