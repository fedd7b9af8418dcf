/* mi_purge_all_ex with MI_PURGE_RECLAIM (docs/memory-return.md): the
   reservations that hold no live segment are given back.
   - arenas reserved on demand (arena_reserve 40 MiB, one 32 MiB block in
     each): a forced purge without the flag leaves `reserved` and VmSize as
     they were (the control); with it every empty arena goes, `reserved` and
     VmSize fall by exactly the reported bytes, the block in the arena still
     used is intact; after its free the last goes too; a later, larger arena
     takes a vacant slot and serves;
   - arenas the caller holds an id for, or exclusive ones, stay (counted as
     kept, their ids valid); one reserved without an id goes;
   - cached segments (no arenas): unmapped, `reserved` exact again;
   - a worker allocating and freeing blocks in arenas of their own while
     the main thread reclaims over and over: every block's contents intact.
   Each case runs in a child process (its address space its own) under a
   watchdog. A build with MI_RECLAIM_PLANT_LIVE_ARENA (an arena that holds a
   live segment given back) must fail the first case. */
#define _GNU_SOURCE
#include "../testutil.h"
#include "../child.h"
#include "purge-child.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mimalloc-stats.h>

static int64_t reserved_now(void) {
  mi_stats_t_decl(stats);
  TU_CHECK(mi_stats_get(&stats));
  return stats.reserved.current;
}

/* VmSize in bytes, read without the allocator (stdio would allocate). 0
   under AddressSanitizer, whose run-time maps for itself at any call. */
#if defined(MI_TEST_TRACK_ASAN)
static size_t vm_size(void) {
  return 0;
}
#else
static size_t vm_size(void) {
  char buf[4096];
  int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char* line = strstr(buf, "VmSize:");
  if (line == NULL) return 0;
  return (size_t)strtoull(line + 7, NULL, 10) * 1024;
}
#endif

/* VmSize fell by exactly `bytes` (or is not measured) */
static bool vm_fell_by(size_t before, size_t after, size_t bytes) {
  return (before == 0 || before - after == bytes);
}

static void fill(uint8_t* p, size_t size, uint8_t seed) {
  for (size_t i = 0; i < size; i += 4096) p[i] = (uint8_t)(seed + i / 4096);
  p[size - 1] = seed;
}

static bool intact(const uint8_t* p, size_t size, uint8_t seed) {
  for (size_t i = 0; i < size; i += 4096) {
    if (p[i] != (uint8_t)(seed + i / 4096)) return false;
  }
  return (p[size - 1] == seed);
}

static int reclaim(mi_purge_flags_t flags, mi_purge_all_report_t* r) {
  memset(r, 0, sizeof(*r));
  r->size = sizeof(*r);
  int status = mi_purge_all_ex(flags, 0, r);
  TU_CHECK(r->size == sizeof(*r));
  TU_CHECK(r->reclaimed == ((flags & MI_PURGE_RECLAIM) != 0));
  return status;
}

/* ---- Arenas reserved on demand ------------------------------------------------------ */

#define ARENAS 4
#define BLOCK (32 * MiB)

static void case_empty_arenas_given_back(void) {
  mi_option_set(mi_option_purge_thread, 0); /* VmSize is the process's: no other thread maps meanwhile */
  mi_free(mi_malloc(16));                   /* the thread's set-up first, its segment's cache emptied, */
  mi_purge_all_report_t r;
  (void)reclaim(MI_PURGE_FORCE | MI_PURGE_RECLAIM, &r);
  mi_option_set(mi_option_arena_reserve, 40 * 1024); /* then arenas (KiB): one 32 MiB block in each */
  uint8_t* blocks[ARENAS];
  int64_t reserved0 = reserved_now();
  size_t arena_bytes = 0;
  for (int i = 0; i < ARENAS; i++) {
    blocks[i] = (uint8_t*)mi_malloc(BLOCK);
    TU_CHECK(blocks[i] != NULL);
    fill(blocks[i], BLOCK, (uint8_t)(i * 17 + 1));
    size_t size = 0;
    TU_CHECK(mi_arena_area(i + 1, &size) != NULL);
    arena_bytes += size;
  }
  /* A1: what was reserved is the arenas, one per block */
  TU_CHECK(reserved_now() - reserved0 == (int64_t)arena_bytes);
  TU_CHECK(arena_bytes == ARENAS * 40 * MiB);
  for (int i = 0; i < ARENAS; i++) {
    if (i != 1) mi_free(blocks[i]);
  }
  /* A2, the control: a forced purge without the flag gives no reservation back */
  int64_t reserved1 = reserved_now();
  size_t vm1 = vm_size();
  TU_CHECK(reclaim(MI_PURGE_FORCE, &r) == MI_PURGE_OK);
  TU_CHECK(r.arena_reclaim_bytes == 0 && r.arenas_reclaimed == 0 && r.segments_reclaimed == 0);
  TU_CHECK(reserved_now() == reserved1);
  TU_CHECK(vm_fell_by(vm1, vm_size(), 0));
  /* A3: with it, every empty arena goes, and exactly what it says goes */
  TU_CHECK(reclaim(MI_PURGE_FORCE | MI_PURGE_RECLAIM, &r) == MI_PURGE_OK);
  int64_t reserved2 = reserved_now();
  size_t vm2 = vm_size();
  fprintf(stderr,
          "reclaim: %zu arenas, %zu cached segments, %zu MiB (reserved %lld -> %lld MiB, VmSize %zu -> %zu MiB)\n",
          r.arenas_reclaimed, r.segments_reclaimed, r.arena_reclaim_bytes / MiB, (long long)(reserved1 >> 20),
          (long long)(reserved2 >> 20), vm1 / MiB, vm2 / MiB);
  TU_CHECK(r.arenas_reclaimed == ARENAS - 1);
  TU_CHECK(r.arenas_kept == 0);
  TU_CHECK(r.arena_reclaim_bytes == (ARENAS - 1) * 40 * MiB);
  TU_CHECK(reserved1 - reserved2 == (int64_t)r.arena_reclaim_bytes);
  TU_CHECK(vm_fell_by(vm1, vm2, r.arena_reclaim_bytes));
  TU_CHECK(mi_arena_area(1, NULL) == NULL && mi_arena_area(3, NULL) == NULL && mi_arena_area(4, NULL) == NULL);
  TU_CHECK(mi_arena_area(2, NULL) != NULL);
  TU_CHECK(intact(blocks[1], BLOCK, 18));
  /* A4: after the last free, the last arena goes */
  mi_free(blocks[1]);
  TU_CHECK(reclaim(MI_PURGE_FORCE | MI_PURGE_RECLAIM, &r) == MI_PURGE_OK);
  TU_CHECK(r.arenas_reclaimed == 1 && r.arena_reclaim_bytes == 40 * MiB);
  TU_CHECK(reserved_now() == reserved0);
  /* A7: a vacant slot takes a larger arena, which serves */
  uint8_t* big = (uint8_t*)mi_malloc(100 * MiB);
  TU_CHECK(big != NULL);
  size_t size = 0;
  TU_CHECK(mi_arena_area(1, &size) != NULL && size >= 100 * MiB);
  fill(big, 100 * MiB, 99);
  TU_CHECK(intact(big, 100 * MiB, 99));
  mi_free(big);
  TU_CHECK(reclaim(MI_PURGE_FORCE | MI_PURGE_RECLAIM, &r) == MI_PURGE_OK);
  TU_CHECK(r.arenas_reclaimed == 1 && r.arena_reclaim_bytes == size);
}

static void case_held_arenas_kept(void) {
  mi_arena_id_t held = 0, exclusive = 0;
  TU_CHECK(mi_reserve_os_memory_ex(64 * MiB, false, false, false, &held) == 0);
  TU_CHECK(mi_reserve_os_memory_ex(64 * MiB, false, false, true, &exclusive) == 0);
  TU_CHECK(mi_reserve_os_memory(64 * MiB, false, false) == 0); /* no id: ours to give back */
  mi_purge_all_report_t r;
  int64_t reserved1 = reserved_now();
  TU_CHECK(reclaim(MI_PURGE_FORCE | MI_PURGE_RECLAIM, &r) == MI_PURGE_OK);
  TU_CHECK(r.arenas_reclaimed == 1 && r.arenas_kept == 2);
  TU_CHECK(r.arena_reclaim_bytes == 64 * MiB);
  TU_CHECK(reserved1 - reserved_now() == (int64_t)(64 * MiB));
  size_t size = 0;
  TU_CHECK(mi_arena_area(held, &size) != NULL && size == 64 * MiB);
  TU_CHECK(mi_arena_area(exclusive, &size) != NULL && size == 64 * MiB);
  /* the exclusive arena still serves its heap */
  mi_heap_t* heap = mi_heap_new_in_arena(exclusive);
  TU_CHECK(heap != NULL);
  uint8_t* p = (uint8_t*)mi_heap_malloc(heap, 1000);
  void* start = mi_arena_area(exclusive, &size);
  TU_CHECK(p != NULL && p >= (uint8_t*)start && p < (uint8_t*)start + size);
  mi_heap_destroy(heap);
}

/* ---- The segment cache ------------------------------------------------------------- */

#define SMALL_BLOCKS 60000

static void case_cached_segments_given_back(void) {
  mi_option_set(mi_option_purge_thread, 0); /* VmSize is the process's: no other thread maps meanwhile */
  static void* blocks[SMALL_BLOCKS];
  for (size_t i = 0; i < SMALL_BLOCKS; i++) {
    blocks[i] = mi_malloc(1000);
    memset(blocks[i], 1, 1000);
  }
  for (size_t i = 0; i < SMALL_BLOCKS; i++) mi_free(blocks[i]);
  mi_collect(true); /* the empty segments go to the cache */
  mi_purge_all_report_t r;
  int64_t reserved1 = reserved_now();
  size_t vm1 = vm_size();
  TU_CHECK(reclaim(MI_PURGE_FORCE, &r) == MI_PURGE_OK);
  TU_CHECK(reserved_now() == reserved1 && vm_fell_by(vm1, vm_size(), 0));
  TU_CHECK(reclaim(MI_PURGE_FORCE | MI_PURGE_RECLAIM, &r) == MI_PURGE_OK);
  int64_t reserved2 = reserved_now();
  size_t vm2 = vm_size();
  fprintf(stderr, "cache: %zu segments, %zu MiB (reserved %lld -> %lld MiB, VmSize %zu -> %zu MiB)\n",
          r.segments_reclaimed, r.arena_reclaim_bytes / MiB, (long long)(reserved1 >> 20), (long long)(reserved2 >> 20),
          vm1 / MiB, vm2 / MiB);
  TU_CHECK(r.segments_reclaimed >= 1 && r.arenas_reclaimed == 0);
  TU_CHECK(r.arena_reclaim_bytes >= r.segments_reclaimed * 4 * MiB);
  TU_CHECK(reserved1 - reserved2 == (int64_t)r.arena_reclaim_bytes);
  TU_CHECK(vm_fell_by(vm1, vm2, r.arena_reclaim_bytes));
  /* and the allocator goes on as before */
  for (size_t i = 0; i < SMALL_BLOCKS; i++) blocks[i] = mi_malloc(1000);
  for (size_t i = 0; i < SMALL_BLOCKS; i++) mi_free(blocks[i]);
}

/* ---- Reclaims while another thread allocates -------------------------------------- */

#define WORKER_ROUNDS 3000
static _Atomic(bool) worker_done;

static void* arena_worker(void* arg) {
  (void)arg;
  uint8_t* held[3] = {NULL, NULL, NULL};
  uint64_t rng = 7;
  for (int round = 0; round < WORKER_ROUNDS; round++) {
    size_t k = (size_t)round % 3;
    size_t size = (size_t)(tu_rand(&rng) % 6 + 1) * MiB;
    if (held[k] != NULL) {
      size_t old = mi_usable_size(held[k]);
      TU_CHECK(intact(held[k], old, (uint8_t)(k + 1))); /* unchanged under the reclaims */
      mi_free(held[k]);
    }
    held[k] = (uint8_t*)mi_malloc(size);
    TU_CHECK(held[k] != NULL);
    if (held[k] == NULL) break;
    fill(held[k], mi_usable_size(held[k]), (uint8_t)(k + 1));
  }
  for (size_t k = 0; k < 3; k++) mi_free(held[k]);
  atomic_store(&worker_done, true);
  return NULL;
}

static void case_reclaim_while_allocating(void) {
  mi_option_set(mi_option_arena_reserve, 8 * 1024); /* KiB: small arenas, made and emptied often */
  pthread_t t;
  TU_CHECK(pthread_create(&t, NULL, &arena_worker, NULL) == 0);
  size_t passes = 0, given = 0;
  while (!atomic_load(&worker_done)) {
    mi_purge_all_report_t r;
    int status = reclaim(MI_PURGE_FORCE | MI_PURGE_RECLAIM, &r);
    TU_CHECK(status == MI_PURGE_OK || status == MI_PURGE_PARTIAL);
    given += r.arenas_reclaimed;
    passes++;
  }
  pthread_join(t, NULL);
  fprintf(stderr, "concurrent: %zu passes, %zu arenas given back\n", passes, given);
  mi_purge_all_report_t r;
  (void)reclaim(MI_PURGE_FORCE | MI_PURGE_RECLAIM, &r);
#if !MI_SECURE
  /* every one empty: gone (the secure build's large quarantine holds the
     last freed blocks' segments: never given back while they wait) */
  for (mi_arena_id_t id = 1; id <= 16; id++) TU_CHECK(mi_arena_area(id, NULL) == NULL);
#endif
}

static void test_reclaim_empty_arenas_given_back_reserved_exact(void** state) {
  (void)state;
  run_in_child(&case_empty_arenas_given_back);
}

static void test_reclaim_held_and_exclusive_arenas_kept(void** state) {
  (void)state;
  run_in_child(&case_held_arenas_kept);
}

static void test_reclaim_cached_segments_given_back_reserved_exact(void** state) {
  (void)state;
  run_in_child(&case_cached_segments_given_back);
}

static void test_reclaim_while_allocating_blocks_intact(void** state) {
  (void)state;
  run_in_child(&case_reclaim_while_allocating);
}

int main(void) {
  mi_child_save_signals();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reclaim_empty_arenas_given_back_reserved_exact),
      cmocka_unit_test(test_reclaim_held_and_exclusive_arenas_kept),
      cmocka_unit_test(test_reclaim_cached_segments_given_back_reserved_exact),
      cmocka_unit_test(test_reclaim_while_allocating_blocks_intact),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
