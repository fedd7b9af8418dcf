/* The live heaps as JSON (mi_heap_dump_json): complete in a process with one
   thread; the pages' used x block_size summing to what a visit of the
   blocks sees; with blocks, exactly the live blocks allocated; hashed ids
   unlike the addresses; another thread's pages left out and counted, never
   read (complete false; its clean twin: the first case, one thread,
   complete). (The JSON is parsed by python3 and jq in stats-json-test.sh.) */
#include "../testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <mimalloc-stats.h>

/* Sum of used * block_size over the page entries of the heap with seq 0. */
static size_t dump_used_bytes(const char* text, size_t* pages) {
  size_t sum = 0;
  *pages = 0;
  const char* end = strstr(text, "\n  { \"seq\": 1,");
  for (const char* p = strstr(text, "\"block_size\": "); p != NULL && (end == NULL || p < end);
       p = strstr(p + 1, "\"block_size\": ")) {
    size_t bsize = 0, used = 0;
    if (sscanf(p, "\"block_size\": %zu, \"used\": %zu", &bsize, &used) != 2) break;
    sum += bsize * used;
    (*pages)++;
  }
  return sum;
}

/* the blocks a visit sees (in the secure build, a quarantined block counts
   in its page's `used` but is no live block) */
static bool sum_visit(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap, (void)block_size;
  if (block != NULL) *(size_t*)arg += area->block_size;
  return true;
}

/* first: before any other test makes a thread */
static void test_dump_one_thread_complete_true(void** state) {
  (void)state;
  void* p = mi_malloc(100);
  char* text = mi_heap_dump_json(false, false);
  assert_non_null(text);
  assert_non_null(strstr(text, "{ \"heaps\": [\n  { \"seq\": 0,\n    \"pages\": [\n"));
  assert_non_null(strstr(text, "], \"complete\": true, \"skipped_pages\": 0, \"busy_theaps\": 0 }"));
  assert_null(strstr(text, "\"blocks\""));
  mi_free(text);
  mi_free(p);
}

static void test_dump_used_bytes_equal_visit(void** state) {
  (void)state;
  static void* kept[300];
  for (int i = 0; i < 300; i++) kept[i] = mi_malloc((size_t)(16 + 50 * i));
  mi_heap_collect(mi_heap_get_default(), false);
  /* the visit first: the dump's text is allocated after its walk */
  size_t visited = 0;
  assert_true(mi_heap_visit_blocks(mi_heap_get_backing(), true, &sum_visit, &visited));
  char* text = mi_heap_dump_json(true, false);
  assert_non_null(text);
  size_t pages = 0;
  assert_int_equal(dump_used_bytes(text, &pages), visited);
  assert_true(pages > 10);
  /* every block kept is listed, as [address,size] */
  for (int i = 0; i < 300; i += 37) {
    char entry[64];
    snprintf(entry, sizeof(entry), "[%llu,", (unsigned long long)(uintptr_t)kept[i]);
    if (strstr(text, entry) == NULL) fail_msg("block %d (%p) missing from the dump", i, kept[i]);
  }
  mi_free(text);
  for (int i = 0; i < 300; i++) mi_free(kept[i]);
}

static void test_dump_hashed_ids_unlike_addresses_consistent(void** state) {
  (void)state;
  void* p = mi_malloc(48);
  char* plain = mi_heap_dump_json(true, false);
  char* hashed = mi_heap_dump_json(true, true);
  assert_non_null(plain);
  assert_non_null(hashed);
  char entry[64];
  snprintf(entry, sizeof(entry), "[%llu,", (unsigned long long)(uintptr_t)p);
  assert_non_null(strstr(plain, entry));
  assert_null(strstr(hashed, entry));
  unsigned long long id = 0;
  const char* at = strstr(hashed, "\"id\": ");
  assert_non_null(at);
  assert_int_equal(sscanf(at, "\"id\": %llu", &id), 1);
  assert_true(id < ((unsigned long long)1 << 53));
  mi_free(plain);
  mi_free(hashed);
  mi_free(p);
}

static _Atomic(int) other_phase;
static void* other_thread(void* arg) {
  (void)arg;
  static void* held[200];
  for (int i = 0; i < 200; i++) held[i] = mi_malloc(64);
  atomic_store(&other_phase, 1);
  while (atomic_load(&other_phase) != 2) sched_yield();
  for (int i = 0; i < 200; i++) mi_free(held[i]);
  mi_collect(true);
  return NULL;
}

static void test_dump_other_thread_pages_skipped_not_complete(void** state) {
  (void)state;
  pthread_t t;
  atomic_store(&other_phase, 0);
  assert_int_equal(pthread_create(&t, NULL, &other_thread, NULL), 0);
  while (atomic_load(&other_phase) != 1) sched_yield();
  char* text = mi_heap_dump_json(false, false);
  assert_non_null(text);
  size_t skipped = 0, busy = 0;
  const char* at = strstr(text, "\"complete\": false, \"skipped_pages\": ");
  assert_non_null(at);
  assert_int_equal(sscanf(at, "\"complete\": false, \"skipped_pages\": %zu, \"busy_theaps\": %zu", &skipped, &busy), 2);
  assert_true(skipped >= 1);
  assert_true(busy >= 1);
  mi_free(text);
  atomic_store(&other_phase, 2);
  pthread_join(t, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dump_one_thread_complete_true),
      cmocka_unit_test(test_dump_used_bytes_equal_visit),
      cmocka_unit_test(test_dump_hashed_ids_unlike_addresses_consistent),
      cmocka_unit_test(test_dump_other_thread_pages_skipped_not_complete),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
