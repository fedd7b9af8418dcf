/* The fault sweep, in the manner of SQLite's OOM tests: count the primitive
   calls T of a deterministic workload, then for every n in 1..T run the
   workload again with the n-th call failing, once transient (COUNT=1) and
   once persistent (COUNT=-1). Each run is a forked child, so each starts
   from the same allocator state and a crash is seen as a signal. A run
   passes when:
   - every NULL came with errno ENOMEM, and a failed realloc left the old
     block intact;
   - every block kept its contents (checked on every free);
   - the debug heap-consistency check (run by mi_collect) found nothing;
   - after teardown no segment is left, and the OS memory the primitives hold
     is exactly what the allocator's accounting says it holds: metadata and
     arenas, plus what the OS refused to take back.

   Usage: fault-sweep [--threads 1|2] [--arena] [--kind NAME] [--expect-failure] [--only N COUNT]
   With --expect-failure (the positive control, built with the planted
   unchecked commit) the sweep must find a failing run. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <mimalloc.h>
#include <mimalloc/fault.h>

#include "../../src/internal.h"

#if defined(_WIN32)
/* no fork: each run is this program again with --only N COUNT (tests/win/spawn.h) */
#include "spawn.h"
#define child_exit(code) exit(code)
#else
#include "child-exit.h"
#endif

#define LIVE_MAX 48
#define ROUNDS 160

typedef struct block_s {
  unsigned char* p;
  size_t size;
  unsigned char tag;
} block_t;

static int threads = 1;
static bool use_arena = false;
static mi_fault_kind_t sweep_kind = mi_fault_any;

static void fail(const char* what, size_t detail) {
  fprintf(stderr, "fault-sweep: check failed: %s (%zu)\n", what, detail);
  child_exit(3);
}

/* blocks beyond 4 KiB are written and checked at a stride, so large and
   huge blocks cost a touch per page rather than a full memset */
static size_t stride(size_t size) {
  return (size <= 4096 ? 1 : (size <= ((size_t)1 << 20) ? 509 : 4093));
}

static void fill(block_t* b) {
  for (size_t i = 0; i < b->size; i += stride(b->size)) b->p[i] = b->tag;
  if (b->size > 0) b->p[b->size - 1] = b->tag;
}

static void verify(const block_t* b) {
  for (size_t i = 0; i < b->size; i += stride(b->size)) {
    if (b->p[i] != b->tag) fail("block contents changed", b->size);
  }
  if (b->size > 0 && b->p[b->size - 1] != b->tag) fail("block end changed", b->size);
}

static void expect_enomem(const char* what) {
  if (errno != ENOMEM) fail(what, (size_t)errno);
}

static uint64_t next_rand(uint64_t* state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return *state >> 33;
}

static size_t pick_size(uint64_t* rng) {
  uint64_t r = next_rand(rng) % 100;
  if (r < 55) return 1 + next_rand(rng) % 1024;                /* small */
  if (r < 85) return 8 * 1024 + next_rand(rng) % (120 * 1024); /* medium */
  if (r < 98) return 256 * 1024 + next_rand(rng) % (3 << 20);  /* large */
  return (size_t)33 << 20;                                     /* huge */
}

static void release(block_t* b) {
  if (b->p == NULL) return;
  verify(b);
  mi_free(b->p);
  b->p = NULL;
}

/* One thread's share: mallocs, callocs, aligned blocks, reallocs that grow
   and shrink, and a first-class heap, all checked. */
static void workload(unsigned seed) {
  uint64_t rng = seed;
  block_t live[LIVE_MAX];
  memset(live, 0, sizeof(live));
  int rounds = ROUNDS / threads; /* two threads: the same work in all, so the sweep stays as long */
  for (int round = 0; round < rounds; round++) {
    block_t* b = &live[next_rand(&rng) % LIVE_MAX];
    uint64_t op = next_rand(&rng) % 10;
    size_t size = pick_size(&rng);
    if (b->p != NULL && op < 3) {
      /* realloc: on failure the old block must be intact */
      unsigned char* q = (unsigned char*)mi_realloc(b->p, size);
      if (q == NULL) {
        expect_enomem("realloc NULL without ENOMEM");
        verify(b);
        continue;
      }
      size_t keep = (size < b->size ? size : b->size);
      for (size_t i = 0; i < keep; i += stride(b->size)) {
        if (q[i] != b->tag) fail("realloc lost contents", keep);
      }
      b->p = q;
      b->size = size;
      b->tag = (unsigned char)(b->tag + 1);
      fill(b);
      continue;
    }
    release(b);
    unsigned char* p;
    if (op < 5) {
      p = (unsigned char*)mi_malloc(size);
    } else if (op < 7) {
      p = (unsigned char*)mi_calloc(1, size);
      if (p != NULL) {
        for (size_t i = 0; i < size; i += stride(size)) {
          if (p[i] != 0) fail("calloc not zero", size);
        }
      }
    } else {
      /* 64 B .. 4 MiB: the largest past half a segment, a sparse segment */
      size_t align = (size_t)64 << (next_rand(&rng) % 17);
      p = (unsigned char*)mi_malloc_aligned(size, align);
      if (p != NULL && ((uintptr_t)p & (align - 1)) != 0) fail("misaligned", align);
    }
    if (p == NULL) {
      expect_enomem("malloc NULL without ENOMEM");
      continue;
    }
    b->p = p;
    b->size = size;
    b->tag = (unsigned char)(round + seed);
    fill(b);
    if (round % 50 == 25) mi_collect(true); /* purges the free pages of live segments */
    if (round % 40 == 39) {
      /* a heap of its own, deleted (blocks move to the default heap) or destroyed */
      mi_heap_t* heap = mi_heap_new();
      if (heap == NULL) {
        expect_enomem("heap_new NULL without ENOMEM");
        continue;
      }
      void* hp[8];
      for (int i = 0; i < 8; i++) {
        hp[i] = mi_heap_malloc(heap, 64 + (size_t)i * 3000);
        if (hp[i] == NULL) expect_enomem("heap_malloc NULL without ENOMEM");
      }
      if (round % 80 == 79) {
        mi_heap_destroy(heap);
      } else {
        mi_heap_delete(heap);
        for (int i = 0; i < 8; i++) mi_free(hp[i]);
      }
    }
  }
  for (int i = 0; i < LIVE_MAX; i++) release(&live[i]);
}

static void* thread_main(void* arg) {
  workload((unsigned)(uintptr_t)arg);
  return NULL;
}

static void run_workload(void) {
  if (use_arena) {
    int err = mi_reserve_os_memory((size_t)64 << 20, false, false);
    if (err != 0 && err != ENOMEM) fail("mi_reserve_os_memory error", (size_t)err);
  }
  if (threads == 1) {
    workload(1);
  } else {
    pthread_t t;
    /* a thread that cannot start is not the allocator's failure: run inline */
    bool started = (pthread_create(&t, NULL, &thread_main, (void*)(uintptr_t)2) == 0);
    workload(1);
    if (started) pthread_join(t, NULL);
    else workload(2);
  }
  mi_collect(true); /* runs the heap-consistency check in debug builds */
}

static void check_accounting(void) {
  mi_fault_counters_t c;
  mi_fault_get_counters(&c);
  int64_t reserved = atomic_load(&_mi_stats.reserved.current);
  int64_t meta = atomic_load(&_mi_stats.meta.current);
  int64_t arenas = atomic_load(&_mi_stats.arenas.current);
  int64_t segments = atomic_load(&_mi_stats.segments.current);
  if (c.os_reserved != reserved) fail("OS memory differs from the accounting", (size_t)(c.os_reserved - reserved));
  if (segments != 0) fail("segments left after teardown", (size_t)segments);
  if (c.events[mi_fault_event_release_failed] == 0 && reserved != meta + arenas) {
    fail("reserved memory beyond metadata and arenas (leak)", (size_t)(reserved - meta - arenas));
  }
}

#if defined(_WIN32)
/* Run one case in a child; returns the number of selected calls it made, or
   -1 after printing why it failed. */
static long long run_case(long long nth, long long count) {
  char args[160];
  static char out[1 << 16]; /* the warnings of a persistent failure come first */
  snprintf(args, sizeof(args), "--threads %d%s --kind %s --only %lld %lld", threads, use_arena ? " --arena" : "",
           mi_fault_kind_name(sweep_kind), nth, count);
  int code = mi_spawn_self(args, NULL, true, true, out, sizeof(out), 120000);
  long long calls = -1;
  const char* line = strstr(out, "passed (calls ");
  if (code != 0 || line == NULL || sscanf(line, "passed (calls %lld)", &calls) != 1) {
    printf("fault-sweep: nth=%lld count=%lld: failed (exit %d%s): %s\n", nth, count, code,
           code == MI_SPAWN_TIMEOUT       ? ", hung"
           : code == MI_SPAWN_NOT_STARTED ? ", not started"
           : code == 3                    ? ", a check failed or abort"
                                          : "",
           out);
    return -1;
  }
  return calls;
}
#else
/* Run one case in a child; returns the number of selected calls it made, or
   -1 after printing why it failed. */
static long long run_case(long long nth, long long count) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(120); /* a hang (a retry that never ends, a lost lock) is a failure too */
    mi_fault_reset();
    mi_fault_policy_t policy = {sweep_kind, nth, count, 0.0, 0, mi_fault_error_oom, false};
    mi_fault_set_policy(&policy); /* nth 0: count the kind's calls, fail none */
    run_workload();
    mi_fault_counters_t c;
    mi_fault_get_counters(&c);
    long long calls = (long long)c.selected_calls;
    mi_fault_set_policy(NULL);
    check_accounting();
    if (write(fds[1], &calls, sizeof(calls)) != (ssize_t)sizeof(calls)) child_exit(4);
    child_exit(0);
  }
  close(fds[1]);
  long long calls = -1;
  ssize_t got = read(fds[0], &calls, sizeof(calls));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    printf("fault-sweep: nth=%lld count=%lld: crashed with signal %d (%s)\n", nth, count, WTERMSIG(status),
           strsignal(WTERMSIG(status)));
    return -1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got != (ssize_t)sizeof(calls)) {
    printf("fault-sweep: nth=%lld count=%lld: failed (exit %d)\n", nth, count, WEXITSTATUS(status));
    return -1;
  }
  return calls;
}
#endif

int main(int argc, char** argv) {
  bool expect_failure = false;
  long long only_nth = 0, only_count = 0;
  bool only = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--only") == 0 && i + 2 < argc) {
      only_nth = atoll(argv[++i]);
      only_count = atoll(argv[++i]);
      only = true;
    } else if (strcmp(argv[i], "--arena") == 0) use_arena = true;
    else if (strcmp(argv[i], "--expect-failure") == 0) expect_failure = true;
    else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc) {
      const char* name = argv[++i];
      int k = 0;
      while (k < mi_fault_kind_count && strcmp(name, mi_fault_kind_name((mi_fault_kind_t)k)) != 0) k++;
      if (k == mi_fault_kind_count) {
        fprintf(stderr, "fault-sweep: unknown kind %s\n", name);
        return 2;
      }
      sweep_kind = (mi_fault_kind_t)k;
    } else {
      fprintf(stderr,
              "usage: fault-sweep [--threads 1|2] [--arena] [--kind NAME] [--expect-failure] [--only N COUNT]\n");
      return 2;
    }
  }
  if (!mi_fault_available()) {
    printf("fault-sweep: this build has no fault hooks (MI_FAULT=OFF); nothing to sweep\n");
    return 0;
  }
  /* a deterministic call sequence: no background thread, no purges by time, no
     cached segments (teardown then returns every segment), short retries */
  mi_option_set(mi_option_purge_thread, 0);
  mi_option_set(mi_option_purge_delay, -1);
  mi_option_set(mi_option_segment_cache, 0);
  mi_option_set(mi_option_retry_on_oom, 2);
  setvbuf(stdout, NULL, _IONBF, 0);
  if (only) {
    /* one case, in this process (for a debugger; on Windows, each run of
       the sweep): exit 0 if it passes */
    mi_fault_reset();
    mi_fault_policy_t policy = {sweep_kind, only_nth, only_count, 0.0, 0, mi_fault_error_oom, false};
    mi_fault_set_policy(&policy);
    run_workload();
    mi_fault_counters_t c;
    mi_fault_get_counters(&c);
    mi_fault_set_policy(NULL);
    check_accounting();
    printf("fault-sweep: nth=%lld count=%lld: passed (calls %llu)\n", only_nth, only_count, c.selected_calls);
    return 0;
  }
  long long total = run_case(0, 0);
  if (total < 0) {
    printf("fault-sweep: the workload fails without faults\n");
    return 1;
  }
  if (total == 0) {
    printf("fault-sweep: the workload makes no %s calls: nothing to sweep\n", mi_fault_kind_name(sweep_kind));
    return 0;
  }
  printf("fault-sweep: threads=%d arena=%d kind=%s: %lld primitive calls\n", threads, use_arena,
         mi_fault_kind_name(sweep_kind), total);
  /* two threads interleave differently from run to run: sweep a little past T */
  long long last = (threads > 1 ? total + total / 4 : total);
  long long failures = 0;
  for (long long n = 1; n <= last; n++) {
    if (run_case(n, 1) < 0) failures++;
    if (run_case(n, -1) < 0) failures++;
    if (expect_failure && failures > 0) break;
  }
  printf("fault-sweep: %lld runs, %lld failed\n", 2 * last, failures);
  if (expect_failure) {
    printf("fault-sweep: positive control: %s\n", failures > 0 ? "the planted bug was caught" : "NOT caught");
    return (failures > 0 ? 0 : 1);
  }
  return (failures == 0 ? 0 : 1);
}
