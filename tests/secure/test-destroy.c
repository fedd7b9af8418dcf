#define _GNU_SOURCE
/* Secure mode: a block of a destroyed heap stays a freed block. A stale
   free, realloc or usable_size of it is reported every time, however much
   is allocated after the destroy (the destroyed heap's pages are held, not
   set up again: src/page/page.c), while a thread holds its last 64 destroyed
   pages (8 MiB at most). Each case runs in a child; its control, the same
   program without the stale use, must exit 0 with no report. Built only
   with MI_SECURE. */
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

/* the bounds of src/page/page.c */
#define HELD_PAGES 64

static void* volatile sink;

/* The case's parameters, set before each child is forked. */
static size_t case_size;  /* of the destroyed heap's blocks and of the allocations after it */
static size_t case_count; /* allocations after the destroy */
static unsigned case_run; /* varies the thread's random state: another shuffle of the pages carved */
static bool case_mixed;   /* the allocations after the destroy are of many sizes */

/* Each child inherits the parent's random state: frees draw from it (the
   quarantine slot), so a different number of them gives each run its own
   shuffle of the blocks carved after it. */
static void vary_random_state(unsigned run) {
  for (unsigned i = 0; i < run * 7; i++) mi_free(mi_malloc(16));
}

/* A heap with a few blocks of `size`, written, destroyed; returns its first
   block. */
static void* destroyed_block(size_t size) {
  mi_heap_t* heap = mi_heap_new();
  void* p = mi_heap_malloc(heap, size);
  for (int i = 0; i < 10; i++) sink = mi_heap_malloc(heap, size);
  memset(p, 1, size);
  mi_heap_destroy(heap);
  return p;
}

/* `count` allocations, kept, so that each new page the default heap needs
   is set up from a free slot: the destroyed heap's, if it were free. */
static void** allocate_after(size_t size, size_t count, bool mixed) {
  void** keep = (void**)mi_malloc((count + 1) * sizeof(void*));
  for (size_t i = 0; i < count; i++) {
    size_t n = (mixed ? 16 + (i * 2654435761u) % (2 * size) : size);
    keep[i] = mi_malloc(n);
    memset(keep[i], 2, n);
  }
  return keep;
}

/* Only the controls free what they kept: after a stale use that went
   unreported, a block handed out again at the stale address would be
   freed twice, and that report would hide the missed one. */
static void free_all(void** keep, size_t count) {
  for (size_t i = 0; i < count; i++) mi_free(keep[i]);
  mi_free(keep);
}

/* Allocations of `size` that fill 16 MiB: more free page slots than a few
   segments have, so the destroyed page's slot would be set up again, and
   its blocks handed out again, were it free. */
static size_t fill_count(size_t size) {
  return ((size_t)16 << 20) / size;
}

static void case_stale_free(bool misuse) {
  vary_random_state(case_run);
  void* p = destroyed_block(case_size);
  void** keep = allocate_after(case_size, case_count, case_mixed);
  if (misuse) mi_free(p);
  if (!misuse) free_all(keep, case_count);
}

static void case_stale_realloc(bool misuse) {
  vary_random_state(case_run);
  void* p = destroyed_block(case_size);
  void** keep = allocate_after(case_size, case_count, case_mixed);
  if (misuse) sink = mi_realloc(p, case_size * 2 + 1);
  if (!misuse) free_all(keep, case_count);
}

static void case_stale_usable_size(bool misuse) {
  vary_random_state(case_run);
  void* p = destroyed_block(case_size);
  void** keep = allocate_after(case_size, case_count, case_mixed);
  if (misuse) sink = (void*)(uintptr_t)mi_usable_size(p);
  if (!misuse) free_all(keep, case_count);
}

/* Small and medium sizes, each after 0 to 20000 allocations (up to 16 MiB
   of them: enough to fill the destroyed page's slot again, were it free),
   in several runs: every run must report. */
static const size_t sizes[] = {16, 48, 100, 512, 1000, 5000, 8192, 20000, 65536, 100000};
static const size_t counts[] = {0, 1, 10, 100, 1000, 20000};
#define RUNS 4

static void expect_every_time(mi_case_fn fn, const char* message, bool mixed) {
  for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
      if (counts[c] * sizes[s] > ((size_t)16 << 20)) continue;
      for (unsigned run = 0; run < RUNS; run++) {
        case_size = sizes[s];
        case_count = counts[c];
        case_run = run;
        case_mixed = mixed;
        expect(fn, SIGABRT, message);
      }
    }
  }
}

static void test_stale_free_of_destroyed_block_is_double_free(void** state) {
  (void)state;
  expect_every_time(&case_stale_free, "double free detected of block", false);
}

static void test_stale_realloc_of_destroyed_block_is_use_after_free(void** state) {
  (void)state;
  expect_every_time(&case_stale_realloc, "use of a freed block detected at", false);
}

static void test_stale_usable_size_of_destroyed_block_is_use_after_free(void** state) {
  (void)state;
  expect_every_time(&case_stale_usable_size, "use of a freed block detected at", false);
}

static void test_stale_free_after_allocations_of_other_sizes_is_double_free(void** state) {
  (void)state;
  expect_every_time(&case_stale_free, "double free detected of block", true);
}

/* Other heaps destroyed after it, up to the bound: its page is still held. */
static void case_stale_free_after_more_destroyed_heaps(bool misuse) {
  vary_random_state(case_run);
  void* p = destroyed_block(case_size);
  /* (sizes whose 11 blocks fit a segment's first page, which the segment's
     header shortens to 8 KiB: one page per heap) */
  for (int i = 0; i < HELD_PAGES - 1; i++) sink = destroyed_block(16 + (size_t)(i % 32) * 16);
  void** keep = allocate_after(case_size, fill_count(case_size), false);
  if (misuse) mi_free(p);
  if (!misuse) free_all(keep, fill_count(case_size));
}

static void test_stale_free_after_more_destroyed_heaps_is_double_free(void** state) {
  (void)state;
  for (unsigned run = 0; run < RUNS; run++) {
    case_size = 48;
    case_run = run;
    expect(&case_stale_free_after_more_destroyed_heaps, SIGABRT, "double free detected of block");
  }
}

/* Another thread's stale free is reported as the owner's is. */
static void* free_in_thread(void* p) {
  mi_free(p);
  return NULL;
}

static void case_stale_free_from_other_thread(bool misuse) {
  vary_random_state(case_run);
  void* p = destroyed_block(case_size);
  void** keep = allocate_after(case_size, fill_count(case_size), false);
  if (misuse) {
    pthread_t t;
    pthread_create(&t, NULL, &free_in_thread, p);
    pthread_join(t, NULL);
  }
  if (!misuse) free_all(keep, fill_count(case_size));
}

static void test_stale_free_from_other_thread_is_double_free(void** state) {
  (void)state;
  for (unsigned run = 0; run < RUNS; run++) {
    case_size = 64;
    case_run = run;
    expect(&case_stale_free_from_other_thread, SIGABRT, "double free detected of block");
  }
}

/* A fork child inherits the held pages: its stale free is reported too. */
static void case_stale_free_in_fork_child(bool misuse) {
  void* p = destroyed_block(case_size);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    void** keep = allocate_after(case_size, fill_count(case_size), false);
    if (misuse) mi_free(p);
    if (!misuse) free_all(keep, fill_count(case_size));
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) raise(WTERMSIG(status)); /* die as the child did */
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) _exit(1);
}

static void test_stale_free_in_fork_child_is_double_free(void** state) {
  (void)state;
  case_size = 200;
  expect(&case_stale_free_in_fork_child, SIGABRT, "double free detected of block");
}

/* ---- Correct programs ------------------------------------------------------ */

/* Many destroyed heaps, each with small and medium pages: the thread holds
   its last 64 pages only, so memory stays bounded (11 MiB more resident
   here; 92 MiB when every page is held). */
static size_t rss_now(void) {
  size_t current = 0;
  mi_process_info(NULL, NULL, NULL, &current, NULL, NULL, NULL, NULL);
  return current;
}

static void case_many_destroyed_heaps_stay_bounded(bool misuse) {
  (void)misuse;
  mi_collect(true);
  size_t base = rss_now();
  for (int round = 0; round < 300; round++) {
    mi_heap_t* heap = mi_heap_new();
    for (int i = 0; i < 40; i++) memset(mi_heap_malloc(heap, 100 + (size_t)(i % 8) * 3000), 3, 100);
    sink = mi_heap_malloc(heap, 50000);
    mi_heap_destroy(heap);
  }
  size_t after = rss_now();
  if (after > base + ((size_t)32 << 20)) {
    fprintf(stderr, "RSS grew from %zu KiB to %zu KiB\n", base >> 10, after >> 10);
    _exit(1);
  }
  mi_collect(true); /* gives the held pages back */
  if (rss_now() > base + ((size_t)16 << 20)) _exit(2);
}

static void test_many_destroyed_heaps_stay_bounded(void** state) {
  (void)state;
  expect_clean_exit(&case_many_destroyed_heaps_stay_bounded);
}

/* A thread exits with destroyed heaps' pages held: they go back with its
   other empty pages (held, they would keep its segments abandoned for
   good: 12 MiB after these 20 threads). */
static void* destroy_in_thread(void* arg) {
  (void)arg;
  for (int i = 0; i < 8; i++) sink = destroyed_block(32 + (size_t)i * 1000);
  void** keep = allocate_after(64, 500, true);
  free_all(keep, 500);
  return NULL;
}

static void case_thread_exit_gives_destroyed_pages_back(bool misuse) {
  (void)misuse;
  mi_collect(true);
  size_t base = rss_now();
  for (int round = 0; round < 20; round++) {
    pthread_t t;
    pthread_create(&t, NULL, &destroy_in_thread, NULL);
    pthread_join(t, NULL);
  }
  mi_collect(true);
  size_t after = rss_now();
  if (after > base + ((size_t)4 << 20)) {
    fprintf(stderr, "RSS grew from %zu KiB to %zu KiB\n", base >> 10, after >> 10);
    _exit(1);
  }
  void** keep = allocate_after(64, 1000, true);
  free_all(keep, 1000);
}

static void test_thread_exit_gives_destroyed_pages_back(void** state) {
  (void)state;
  expect_clean_exit(&case_thread_exit_gives_destroyed_pages_back);
}

/* A forced collect gives the held pages back (their memory is purged at
   once), and they are used again. */
static void case_collect_gives_destroyed_pages_back(bool misuse) {
  (void)misuse;
  mi_collect(true);
  size_t base = rss_now();
  for (int round = 0; round < 100; round++) {
    mi_heap_t* heap = mi_heap_new();
    for (int i = 0; i < 1000; i++) memset(mi_heap_malloc(heap, 48), 5, 48);
    mi_heap_destroy(heap);
  }
  mi_collect(true);
  size_t after = rss_now();
  if (after > base + ((size_t)1 << 20)) {
    fprintf(stderr, "RSS grew from %zu KiB to %zu KiB\n", base >> 10, after >> 10);
    _exit(1);
  }
  void** keep = allocate_after(48, 5000, false);
  free_all(keep, 5000);
}

static void test_collect_gives_destroyed_pages_back(void** state) {
  (void)state;
  expect_clean_exit(&case_collect_gives_destroyed_pages_back);
}

int main(void) {
  mi_child_save_signals();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stale_free_of_destroyed_block_is_double_free),
      cmocka_unit_test(test_stale_realloc_of_destroyed_block_is_use_after_free),
      cmocka_unit_test(test_stale_usable_size_of_destroyed_block_is_use_after_free),
      cmocka_unit_test(test_stale_free_after_allocations_of_other_sizes_is_double_free),
      cmocka_unit_test(test_stale_free_after_more_destroyed_heaps_is_double_free),
      cmocka_unit_test(test_stale_free_from_other_thread_is_double_free),
      cmocka_unit_test(test_stale_free_in_fork_child_is_double_free),
      cmocka_unit_test(test_many_destroyed_heaps_stay_bounded),
      cmocka_unit_test(test_thread_exit_gives_destroyed_pages_back),
      cmocka_unit_test(test_collect_gives_destroyed_pages_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
