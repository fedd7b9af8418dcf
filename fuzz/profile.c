/* The harness's own profile (profile.h). */
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char* const fz_profile_names[FZ_PROFILE_ROWS] = {
    "malloc",         "zalloc",         "calloc",          "malloc_small",  "malloc_aligned", "malloc_aligned_at",
    "zalloc_aligned", "calloc_aligned", "posix_memalign",  "aligned_alloc", "free",           "realloc",
    "rezalloc",       "recalloc",       "realloc_aligned", "usable",        "expand",         "heap_new",
    "heap_alloc",     "heap_realloc",   "heap_delete",     "heap_destroy",  "heap_visit",     "handoff",
    "worker_alloc",   "worker_realloc", "worker_restart",  "collect",       "huge",           "overflow",
    "corrupt",        "reserved",       "(program end)"};

static uint64_t fz_profile_ns[FZ_PROFILE_ROWS];
static uint64_t fz_profile_count[FZ_PROFILE_ROWS];
static int fz_profile_state; /* 0 unread, 1 off, 2 on */

uint64_t fz_profile_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Rows by falling total time; the programs' count is the teardown row's. */
static void fz_profile_print(void) {
  uint64_t total = 0;
  int order[FZ_PROFILE_ROWS];
  for (int i = 0; i < FZ_PROFILE_ROWS; i++) {
    total += fz_profile_ns[i];
    order[i] = i;
  }
  for (int i = 1; i < FZ_PROFILE_ROWS; i++) {
    for (int j = i; j > 0 && fz_profile_ns[order[j]] > fz_profile_ns[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  }
  uint64_t programs = fz_profile_count[FZ_PROFILE_END];
  fprintf(stderr, "fuzz profile: %llu programs, %.1f ms, %.1f us a program\n", (unsigned long long)programs,
          (double)total / 1e6, programs == 0 ? 0.0 : (double)total / 1e3 / (double)programs);
  fprintf(stderr, "fuzz profile: %-18s %10s %10s %8s %10s\n", "operation", "count", "ms", "share", "us each");
  for (int k = 0; k < FZ_PROFILE_ROWS; k++) {
    int i = order[k];
    if (fz_profile_count[i] == 0) continue;
    fprintf(stderr, "fuzz profile: %-18s %10llu %10.1f %7.1f%% %10.2f\n", fz_profile_names[i],
            (unsigned long long)fz_profile_count[i], (double)fz_profile_ns[i] / 1e6,
            total == 0 ? 0.0 : 100.0 * (double)fz_profile_ns[i] / (double)total,
            (double)fz_profile_ns[i] / 1e3 / (double)fz_profile_count[i]);
  }
}

bool fz_profile_on(void) {
  if (fz_profile_state == 0) {
    fz_profile_state = (getenv("FZ_PROFILE") != NULL ? 2 : 1);
    if (fz_profile_state == 2) atexit(fz_profile_print);
  }
  return fz_profile_state == 2;
}

void fz_profile_add(int op, uint64_t ns) {
  fz_profile_ns[op] += ns;
  fz_profile_count[op]++;
}
