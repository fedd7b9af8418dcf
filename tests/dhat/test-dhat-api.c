/* The profiler's API from a program linked with the static library:
   start, allocations through the mi_ API (malloc, calloc, realloc up and
   down, aligned, heap, zero-size, frees from another thread), dump on demand
   with "%p", fork (the child's profiler is off), stop. Writes the file named
   by argv[1] (pid expanded); format-test.sh validates it. */
#include <errno.h>
#include <mimalloc.h>
#include <mimalloc/dhat.h>
#include <mimalloc/fault.h>
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK_PROG "test-dhat-api"
#include "check.h"

static void* volatile keep[64];

static void* free_elsewhere(void* arg) {
  mi_free(arg);
  return NULL;
}

/* Threads allocating, reallocating and freeing (also each other's blocks,
   through a shared array) while the main thread dumps. */
#define SHARED 256
static void* _Atomic shared[SHARED];

/* NULL if every dump was written or refused with EBUSY */
static void* dump_repeatedly(void* arg) {
  char path[80];
  snprintf(path, sizeof(path), "/tmp/mi-dhat-api-%d-%d.json", (int)getpid(), (int)(uintptr_t)arg);
  void* bad = NULL;
  for (int i = 0; i < 5 && bad == NULL; i++) {
    if (!mi_dhat_dump(path) && errno != EBUSY) bad = (void*)1;
  }
  unlink(path);
  return bad;
}

/* A dump held at its schedule point (fault-hook builds), so that a second
   one is asked for while the first certainly runs: the second must be
   refused with EBUSY, and the first still written. The hook calls nothing of
   the allocator; it spins with sched_yield. */
static atomic_int held_state; /* 0: not armed, 1: armed, 2: a dump is held, 3: released */
static void hold_dump(mi_sched_point_t point, void* arg) {
  (void)arg;
  int armed = 1;
  if (point != MI_SCHED_DHAT_DUMPING || !atomic_compare_exchange_strong(&held_state, &armed, 2)) return;
  while (atomic_load(&held_state) != 3) sched_yield();
}
static void* dump_once(void* arg) {
  return (mi_dhat_dump((const char*)arg) ? NULL : (void*)1);
}
static void check_second_dump_refused(const char* path) {
  atomic_store(&held_state, 1);
  mi_sched_set_hook(&hold_dump, NULL);
  pthread_t first;
  CHECK(pthread_create(&first, NULL, dump_once, (void*)path) == 0);
  while (atomic_load(&held_state) != 2) sched_yield();
  errno = 0;
  CHECK(!mi_dhat_dump(path));
  CHECK(errno == EBUSY);
  atomic_store(&held_state, 3);
  void* bad;
  CHECK(pthread_join(first, &bad) == 0);
  CHECK(bad == NULL);
  mi_sched_set_hook(NULL, NULL);
  CHECK(mi_dhat_dump(path)); /* the flag was let go */
  unlink(path);
}

static void* churn(void* arg) {
  unsigned x = (unsigned)(uintptr_t)arg * 2654435761u + 1;
  void* mine[32] = {0};
  for (int i = 0; i < 20000; i++) {
    x = x * 1103515245u + 12345u;
    int k = (int)((x >> 8) % 32);
    switch ((x >> 16) % 4) {
      case 0:
        mi_free(mine[k]);
        mine[k] = mi_malloc((x >> 4) % 300);
        break;
      case 1: mine[k] = mi_realloc(mine[k], (x >> 3) % 5000 + 1); break;
      case 2:
        mi_free(atomic_exchange(&shared[(x >> 12) % SHARED], mine[k]));
        mine[k] = NULL;
        break;
      default:
        mi_free(mine[k]);
        mine[k] = mi_calloc(2, (x >> 5) % 64);
        break;
    }
  }
  for (int k = 0; k < 32; k++) mi_free(mine[k]);
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  alarm(60); /* a hang fails the test */
  CHECK(!mi_dhat_is_running() || getenv("MIMALLOC_DHAT") != NULL);
  CHECK(mi_dhat_start());
  CHECK(mi_dhat_is_running());
  void* a = mi_malloc(100);
  a = mi_realloc(a, 5000);
  a = mi_realloc(a, 10);
  keep[0] = a;
  keep[1] = mi_calloc(4, 25);
  keep[2] = mi_malloc_aligned(300, 256);
  keep[3] = mi_malloc(0);
  keep[4] = mi_zalloc(77);
  keep[5] = mi_realloc_aligned(NULL, 64, 64);
  keep[5] = mi_realloc_aligned(keep[5], 4000, 64);
  keep[6] = mi_strdup("hello, profiler");
  mi_heap_t* heap = mi_heap_new();
  keep[7] = mi_heap_malloc(heap, 1000);
  mi_heap_destroy(heap);     /* its blocks go without frees: the profiler must cope */
  keep[7] = mi_malloc(1000); /* likely at an address the destroyed heap had */
  void* x = mi_malloc(4096);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_elsewhere, x) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  for (int i = 0; i < 1000; i++) mi_free(mi_malloc((size_t)i));
  volatile size_t huge = SIZE_MAX / 2;
  CHECK(mi_calloc(huge, 4) == NULL); /* counts nothing */

  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    /* documented: the child's profiler is off; it may start its own */
    if (mi_dhat_is_running()) _exit(3);
    if (!mi_dhat_start() || !mi_dhat_is_running()) _exit(4);
    mi_dhat_stop();
    _exit(0);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(mi_dhat_is_running());

  pthread_t workers[4];
  for (int i = 0; i < 4; i++) CHECK(pthread_create(&workers[i], NULL, churn, (void*)(uintptr_t)(i + 1)) == 0);
  char tmp[64];
  snprintf(tmp, sizeof(tmp), "/tmp/mi-dhat-api-%d.json", (int)getpid());
  for (int i = 0; i < 3; i++) CHECK(mi_dhat_dump(tmp)); /* while the workers run */
  unlink(tmp);
  /* two threads dumping at once: each dump is written whole or refused with
     EBUSY, never both at a time through the shared symboliser */
  pthread_t dumpers[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&dumpers[i], NULL, dump_repeatedly, (void*)(uintptr_t)i) == 0);
  for (int i = 0; i < 2; i++) {
    void* bad;
    CHECK(pthread_join(dumpers[i], &bad) == 0);
    CHECK(bad == NULL);
  }
  for (int i = 0; i < 4; i++) CHECK(pthread_join(workers[i], NULL) == 0);
  for (int i = 0; i < SHARED; i++) mi_free(atomic_exchange(&shared[i], NULL));
  if (mi_fault_available()) check_second_dump_refused(tmp);

  CHECK(mi_dhat_dump(argv[1]));
  mi_dhat_stop();
  CHECK(!mi_dhat_is_running());
  mi_free(mi_malloc(10)); /* not recorded */
  for (int i = 0; i < 8; i++) mi_free(keep[i]);
  return 0;
}
