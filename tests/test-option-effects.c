/* Options that act at process start or deep in the allocator, each seen to
   change what it should: the legacy environment names, MIMALLOC_VERBOSE's
   listing, disallow_os_alloc, disallow_arena_alloc, arena_reserve,
   arena_eager_commit, allow_thp and abandoned_page_purge. Each case runs
   this program again as a fresh process with the environment it needs
   (child-env.h) and reads what the child printed; each has its control, the
   same child without the option. Linux only (smaps, prctl). */
#define _GNU_SOURCE
#include "testutil.h"

#include "child-env.h"

#include <pthread.h>
#include <sys/prctl.h>

/* ---- children ------------------------------------------------------------------------ */
/* Children print with write(2) from stack buffers: if malloc is ours, a
   child that forbids OS memory must not need it to report. */
static void say(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  if (n > 0) (void)!write(1, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static const struct {
  const char* name;
  mi_option_t option;
} printed[] = {
    {"purge_delay", mi_option_purge_delay},
    {"allow_large_os_pages", mi_option_allow_large_os_pages},
    {"arena_eager_commit", mi_option_arena_eager_commit},
    {"purge_decommits", mi_option_purge_decommits},
    {"abandoned_page_purge", mi_option_abandoned_page_purge},
    {"disallow_os_alloc", mi_option_disallow_os_alloc},
    {"purge_extend_delay", mi_option_purge_extend_delay},
};

static void child_print(void) {
  for (size_t i = 0; i < sizeof(printed) / sizeof(printed[0]); i++) {
    say("%s=%ld\n", printed[i].name, mi_option_get(printed[i].option));
  }
}

static bool inside(const void* p, mi_arena_id_t id) {
  size_t size = 0;
  const uint8_t* start = (const uint8_t*)mi_arena_area(id, &size);
  return (start != NULL && (const uint8_t*)p >= start && (const uint8_t*)p < start + size);
}

/* Small blocks past one segment's worth, then a large block: each needs a
   fresh segment at some point. */
static void try_blocks(const char* label, mi_arena_id_t id) {
  static void* blocks[8192];
  size_t n = 0;
  errno = 0;
  for (; n < 8192; n++) {
    blocks[n] = mi_malloc(1024);
    if (blocks[n] == NULL) break;
  }
  int small_err = errno;
  bool small_in = (n > 0 && id != 0 && inside(blocks[n - 1], id));
  errno = 0;
  void* large = mi_malloc(MiB);
  int large_err = errno;
  say("%s: small=%zu small_errno=%d small_in=%d large=%d large_errno=%d large_in=%d\n", label, n, small_err,
      (int)small_in, (int)(large != NULL), large_err, (int)(large != NULL && id != 0 && inside(large, id)));
  mi_free(large);
  for (size_t i = 0; i < n; i++) mi_free(blocks[i]);
}

static void child_os_alloc(bool disallow) {
  if (disallow) mi_option_set(mi_option_disallow_os_alloc, 1);
  try_blocks("no arena", 0);
  errno = 0;
  void* aligned = mi_malloc_aligned(100, 8 * MiB); /* a sparse segment of its own */
  say("huge_aligned=%d huge_aligned_errno=%d\n", (int)(aligned != NULL), errno);
  mi_free(aligned);
  mi_arena_id_t id = 0;
  int err = mi_reserve_os_memory_ex(64 * MiB, false, false, false, &id);
  say("reserve=%d\n", err);
  try_blocks("arena", id);
}

static void child_arena_alloc(bool disallow) {
  mi_arena_id_t id = 0;
  int err = mi_reserve_os_memory_ex(64 * MiB, false, false, false, &id);
  if (disallow) mi_option_set(mi_option_disallow_arena_alloc, 1);
  void* p = mi_malloc(MiB);
  say("reserve=%d large_in=%d\n", err, (int)(p != NULL && inside(p, id)));
  mi_free(p);
}

static void child_arena_reserve(void) {
  void* p = mi_malloc(MiB);
  size_t size = 0;
  void* area = mi_arena_area(1, &size);
  say("arena=%d size_mib=%zu large_in=%d\n", (int)(area != NULL), size / MiB, (int)(p != NULL && inside(p, 1)));
  mi_free(p);
}

static char arena_text[4096];
static size_t arena_text_len;
static void collect_text(const char* msg, void* arg) {
  (void)arg;
  size_t n = strlen(msg);
  if (arena_text_len + n >= sizeof(arena_text)) return;
  memcpy(arena_text + arena_text_len, msg, n + 1);
  arena_text_len += n;
}

static void child_arenas_print(void) {
  mi_register_output(&collect_text, NULL);
  mi_arenas_print();
  mi_register_output(NULL, NULL);
  say("%s", arena_text);
}

/* THPeligible of the mapping holding p (-1: not found). */
static int thp_eligible(const void* p) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (f == NULL) return -1;
  char line[256];
  bool in = false;
  int eligible = -1;
  while (fgets(line, sizeof(line), f) != NULL) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ':') != NULL && line[0] != 'T') {
      in = ((uintptr_t)p >= lo && (uintptr_t)p < hi);
      continue;
    }
    if (in && strncmp(line, "THPeligible:", 12) == 0) {
      eligible = atoi(line + 12);
      break;
    }
  }
  fclose(f);
  return eligible;
}

static void child_thp(void) {
  uint8_t* p = (uint8_t*)mi_malloc(16 * MiB);
  if (p != NULL) memset(p, 1, 16 * MiB);
  say("thp_disable=%d eligible=%d\n", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), thp_eligible(p));
  mi_free(p);
}

static size_t commit_before_exit;
static void* purge_thread(void* arg) {
  (void)arg;
  static void* blocks[4096];
  for (size_t i = 0; i < 4096; i++) blocks[i] = mi_malloc(1024);
  for (size_t i = 1; i < 4096; i++) mi_free(blocks[i]); /* blocks[0] keeps the segment in use */
  mi_process_info(NULL, NULL, NULL, NULL, NULL, &commit_before_exit, NULL, NULL);
  return blocks[0];
}

static void child_abandoned_purge(void) {
  pthread_t t;
  void* kept = NULL;
  if (pthread_create(&t, NULL, &purge_thread, NULL) != 0 || pthread_join(t, &kept) != 0) return;
  size_t commit_after = 0;
  mi_process_info(NULL, NULL, NULL, NULL, NULL, &commit_after, NULL, NULL);
  say("dropped_mib=%zu\n", (commit_before_exit > commit_after ? commit_before_exit - commit_after : 0) / MiB);
  mi_free(kept);
}

/* The program's destructors run after the allocator's exit handler (an
   atexit handler registered later than the C library's own call of them):
   what is committed then is what destroy_on_exit left. */
static bool report_at_exit;
__attribute__((destructor)) static void report_commit_at_exit(void) {
  if (!report_at_exit) return;
  size_t commit = 0;
  mi_process_info(NULL, NULL, NULL, NULL, NULL, &commit, NULL, NULL);
  say("commit_at_exit_mib=%zu\n", commit / MiB);
}

static void child_destroy(void) {
  for (size_t i = 0; i < 32 * 1024; i++) {
    char* p = (char*)mi_malloc(1024); /* left live: the program exits with them */
    if (p != NULL) p[0] = 1;
  }
  for (size_t i = 0; i < 4; i++) {
    char* p = (char*)mi_malloc(4 * MiB);
    if (p != NULL) memset(p, 1, 4 * MiB);
  }
  size_t commit = 0;
  mi_process_info(NULL, NULL, NULL, NULL, NULL, &commit, NULL, NULL);
  say("commit_live_mib=%zu\n", commit / MiB);
  report_at_exit = true;
}

static void* leave_one_block(void* arg) {
  (void)arg;
  return mi_malloc(1024); /* its segment is abandoned with it when the thread exits */
}

static char stats_text[16 * 1024];
static size_t stats_len;
static void collect_stats(const char* msg, void* arg) {
  (void)arg;
  size_t n = strlen(msg);
  if (stats_len + n >= sizeof(stats_text)) return;
  memcpy(stats_text + stats_len, msg, n + 1);
  stats_len += n;
}

static void child_reclaim(void) {
  mi_free(mi_malloc(16)); /* the main heap set up before any thread exits */
  pthread_t t;
  void* kept = NULL;
  if (pthread_create(&t, NULL, &leave_one_block, NULL) != 0 || pthread_join(t, &kept) != 0) return;
  static void* blocks[8192]; /* 8 MiB of small blocks: past the main thread's own segment */
  for (size_t i = 0; i < 8192; i++) blocks[i] = mi_malloc(1024);
  mi_stats_print_out(&collect_stats, NULL);
  const char* at = strstr(stats_text, "\n reclaimed:"); /* the table's row of ours, after upstream's */
  say("reclaimed=%ld\n", (at != NULL ? strtol(at + strlen("\n reclaimed:"), NULL, 10) : -1L));
  for (size_t i = 0; i < 8192; i++) mi_free(blocks[i]);
  mi_free(kept);
}

/* The protection /proc/self/maps shows at p ("rw-p", "---p"; "?" if none). */
static void protection_at(const void* p, char prot[5]) {
  strcpy(prot, "?");
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof(line), f) != NULL) {
    unsigned long lo, hi;
    char perms[5];
    if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && (uintptr_t)p >= lo && (uintptr_t)p < hi) {
      memcpy(prot, perms, 5);
      break;
    }
  }
  fclose(f);
}

/* A large block from a reserved arena, freed with no segment cache: its
   chunk goes straight back to the arena. */
static void child_arena_chunk(void) {
  mi_option_set(mi_option_segment_cache, 0);
  mi_option_set(mi_option_large_quarantine, 0); /* secure builds: no fenced wait first */
  mi_arena_id_t id = 0;
  if (mi_reserve_os_memory_ex(16 * MiB, false, false, false, &id) != 0) return;
  char* p = (char*)mi_malloc(MiB);
  if (p == NULL || !inside(p, id)) return;
  memset(p, 1, MiB);
  char prot[5];
  protection_at(p, prot);
  say("in_use=%s ", prot);
  mi_free(p);
  protection_at(p, prot);
  say("freed=%s\n", prot);
}

/* Three warnings (huge pages this machine may lack are reported as one)
   and three errors (requests larger than any block). */
static void child_messages(void) {
  for (int i = 0; i < 3; i++) {
    if (mi_reserve_huge_os_pages_at(1, 0, 0) == 0) say("huge pages reserved\n");
    void* p = mi_malloc(tu_opaque(SIZE_MAX / 2));
    if (p != NULL) say("impossible block\n");
  }
}

/* Pages of 1 KiB blocks the main heap holds with none of them in use. */
static bool count_empty_kib_pages(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size,
                                  void* arg) {
  (void)heap;
  (void)block;
  (void)size;
  if (area->block_size >= 1024 && area->block_size < 1280 && area->used == 0) (*(size_t*)arg)++;
  return true;
}

#define REMOTE_BLOCKS 1024
static void* remote_blocks[REMOTE_BLOCKS];
static void* free_remote(void* arg) {
  (void)arg;
  for (size_t i = 0; i < REMOTE_BLOCKS; i++) mi_free(remote_blocks[i]);
  return NULL;
}

/* The main thread's pages emptied by another thread's frees, then slow-path
   calls only (large blocks): generic_collect decides whether they go back. */
static void child_generic_collect(void) {
  for (size_t i = 0; i < REMOTE_BLOCKS; i++) remote_blocks[i] = mi_malloc(1024);
  pthread_t t;
  if (pthread_create(&t, NULL, &free_remote, NULL) != 0 || pthread_join(t, NULL) != 0) return;
  for (size_t i = 0; i < 256; i++) mi_free(mi_malloc(256 * KiB));
  size_t empty = 0;
  mi_heap_visit_blocks(mi_heap_get_default(), false, &count_empty_kib_pages, &empty);
  say("empty_pages=%zu\n", empty);
}

static int child_main(const char* mode) {
  if (strcmp(mode, "print") == 0) child_print();
  else if (strcmp(mode, "start") == 0) mi_free(mi_malloc(10));
  else if (strcmp(mode, "os-alloc-disallowed") == 0) child_os_alloc(true);
  else if (strcmp(mode, "os-alloc-allowed") == 0) child_os_alloc(false);
  else if (strcmp(mode, "arena-alloc-disallowed") == 0) child_arena_alloc(true);
  else if (strcmp(mode, "arena-alloc-allowed") == 0) child_arena_alloc(false);
  else if (strcmp(mode, "arena-reserve") == 0) child_arena_reserve();
  else if (strcmp(mode, "arenas-print") == 0) child_arenas_print();
  else if (strcmp(mode, "thp") == 0) child_thp();
  else if (strcmp(mode, "abandoned-purge") == 0) child_abandoned_purge();
  else if (strcmp(mode, "destroy") == 0) child_destroy();
  else if (strcmp(mode, "reclaim") == 0) child_reclaim();
  else if (strcmp(mode, "arena-chunk") == 0) child_arena_chunk();
  else if (strcmp(mode, "messages") == 0) child_messages();
  else if (strcmp(mode, "generic-collect") == 0) child_generic_collect();
  else return 2;
  return 0;
}

/* ---- cases ------------------------------------------------------------------------------ */
static char out[64 * 1024];

static const char* child(const char* mode, const char* const* env) {
  int code = run_self_env(mode, env, out, sizeof(out));
  if (code != 0) fail_msg("child %s exited with %d: %s", mode, code, out);
  return out;
}

static void expect_text(const char* text, const char* want) {
  if (strstr(text, want) == NULL) fail_msg("expected '%s' in the child's output:\n%s", want, text);
}

static void expect_no_text(const char* text, const char* unwanted) {
  if (strstr(text, unwanted) != NULL) fail_msg("did not expect '%s' in the child's output:\n%s", unwanted, text);
}

static void test_option_legacy_env_reset_delay_sets_purge_delay(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_RESET_DELAY=7", NULL};
  expect_text(child("print", env), "purge_delay=7\n");
  const char* control[] = {NULL};
  expect_no_text(child("print", control), "purge_delay=7\n");
}

static void test_option_legacy_env_large_os_pages_sets_allow_large(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_LARGE_OS_PAGES=1", NULL};
  expect_text(child("print", env), "allow_large_os_pages=1\n");
}

static void test_option_legacy_env_eager_region_commit_sets_arena_eager_commit(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_EAGER_REGION_COMMIT=0", NULL};
  expect_text(child("print", env), "arena_eager_commit=0\n");
}

static void test_option_legacy_env_reset_decommits_sets_purge_decommits(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_RESET_DECOMMITS=0", NULL};
  expect_text(child("print", env), "purge_decommits=0\n");
}

static void test_option_legacy_env_abandoned_page_reset_sets_abandoned_page_purge(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_ABANDONED_PAGE_RESET=1", NULL};
  expect_text(child("print", env), "abandoned_page_purge=1\n");
}

static void test_option_legacy_env_limit_os_alloc_sets_disallow_os_alloc(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_LIMIT_OS_ALLOC=1", NULL};
  expect_text(child("print", env), "disallow_os_alloc=1\n");
}

static void test_option_legacy_env_name_warned_deprecated(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_RESET_DELAY=7", "MIMALLOC_SHOW_ERRORS=1", NULL};
  expect_text(child("print", env), "environment option MIMALLOC_RESET_DELAY is deprecated: use MIMALLOC_PURGE_DELAY\n");
  const char* control[] = {"MIMALLOC_PURGE_DELAY=7", "MIMALLOC_SHOW_ERRORS=1", NULL};
  expect_no_text(child("print", control), "deprecated");
}

static void test_option_legacy_env_current_name_wins(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_RESET_DELAY=7", "MIMALLOC_PURGE_DELAY=3", NULL};
  expect_text(child("print", env), "purge_delay=3\n");
}

static void test_option_legacy_enum_aliases_same_option(void** state) {
  (void)state;
  assert_int_equal(mi_option_eager_region_commit, mi_option_arena_eager_commit);
  assert_int_equal(mi_option_reset_decommits, mi_option_purge_decommits);
  assert_int_equal(mi_option_abandoned_page_reset, mi_option_abandoned_page_purge);
  assert_int_equal(mi_option_limit_os_alloc, mi_option_disallow_os_alloc);
  assert_int_equal(mi_option_large_os_pages, mi_option_allow_large_os_pages);
  assert_int_equal(mi_option_reset_delay, mi_option_purge_delay);
}

/* mimalloc 2.4.1's option names, and this library's own */
static const char* const option_names[] = {
    "show_errors",
    "show_stats",
    "verbose",
    "eager_commit",
    "arena_eager_commit",
    "purge_decommits",
    "allow_large_os_pages",
    "reserve_huge_os_pages",
    "reserve_huge_os_pages_at",
    "reserve_os_memory",
    "deprecated_segment_cache",
    "deprecated_page_reset",
    "abandoned_page_purge",
    "deprecated_segment_reset",
    "eager_commit_delay",
    "purge_delay",
    "use_numa_nodes",
    "disallow_os_alloc",
    "os_tag",
    "max_errors",
    "max_warnings",
    "max_segment_reclaim",
    "destroy_on_exit",
    "arena_reserve",
    "arena_purge_mult",
    "purge_extend_delay",
    "abandoned_reclaim_on_free",
    "disallow_arena_alloc",
    "retry_on_oom",
    "visit_abandoned",
    "guarded_min",
    "guarded_max",
    "guarded_precise",
    "guarded_sample_rate",
    "guarded_sample_seed",
    "target_segments_per_thread",
    "generic_collect",
    "allow_thp",
    "purge_thread",
    "zero_on_free",
    "segment_cache",
    "dhat",
    "dhat_backtrace",
    "lockorder",
    "large_quarantine",
};

static void test_option_verbose_start_prints_version_and_every_option(void** state) {
  (void)state;
  int v = mi_version();
  char version[64];
  if (v >= 10000) snprintf(version, sizeof(version), "mimalloc: v%d.%d.%d ", v / 10000, (v % 10000) / 100, v % 100);
  else snprintf(version, sizeof(version), "mimalloc: v%d.%d.%d ", v / 100, (v % 100) / 10, v % 10);
  const char* env[] = {"MIMALLOC_VERBOSE=1", "MIMALLOC_PURGE_DELAY=42", NULL};
  const char* text = child("start", env);
  expect_text(text, version);
  for (size_t i = 0; i < sizeof(option_names) / sizeof(option_names[0]); i++) {
    char want[96];
    snprintf(want, sizeof(want), "option '%s': ", option_names[i]);
    expect_text(text, want);
  }
  expect_text(text, "option 'purge_delay': 42\n");
  const char* control[] = {NULL};
  expect_no_text(child("start", control), "option '");
}

static void test_option_disallow_os_alloc_without_arena_fails_enomem(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_SHOW_ERRORS=0", NULL};
  const char* text = child("os-alloc-disallowed", env);
  char want[128];
  snprintf(want, sizeof(want), "no arena: small=");
  expect_text(text, want);
  expect_no_text(text, "no arena: small=8192 "); /* the small blocks ran out */
  snprintf(want, sizeof(want), "small_errno=%d small_in=0 large=0 large_errno=%d", ENOMEM, ENOMEM);
  expect_text(text, want);
  snprintf(want, sizeof(want), "huge_aligned=0 huge_aligned_errno=%d\n", ENOMEM);
  expect_text(text, want);
  /* the control: the same child without the option */
  const char* control = child("os-alloc-allowed", env);
  expect_text(control, "no arena: small=8192 small_errno=0 small_in=0 large=1 ");
  expect_text(control, "huge_aligned=1 ");
}

static void test_option_disallow_os_alloc_with_arena_served_from_it(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_SHOW_ERRORS=0", NULL};
  const char* text = child("os-alloc-disallowed", env);
  expect_text(text, "reserve=0\n");
  expect_text(text, "arena: small=8192 small_errno=0 small_in=1 large=1 large_errno=0 large_in=1\n");
}

static void test_option_disallow_arena_alloc_shared_arena_not_used(void** state) {
  (void)state;
  const char* env[] = {NULL};
  expect_text(child("arena-alloc-disallowed", env), "reserve=0 large_in=0\n");
  expect_text(child("arena-alloc-allowed", env), "reserve=0 large_in=1\n");
}

static void test_option_arena_reserve_set_blocks_from_arena_of_that_size(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_ARENA_RESERVE=64MiB", NULL};
  expect_text(child("arena-reserve", env), "arena=1 size_mib=64 large_in=1\n");
  const char* control[] = {"MIMALLOC_ARENA_RESERVE=0", NULL};
  expect_text(child("arena-reserve", control), "arena=0 size_mib=0 large_in=0\n");
}

static void test_option_arena_eager_commit_zero_arena_reserved_uncommitted(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_RESERVE_OS_MEMORY=64MiB", "MIMALLOC_ARENA_EAGER_COMMIT=0", NULL};
  const char* text = child("arenas-print", env);
  expect_text(text, "arenas: 1 ");
  expect_no_text(text, ", committed");
  /* 2 (the default): committed where the OS overcommits, as Linux does */
  const char* control[] = {"MIMALLOC_RESERVE_OS_MEMORY=64MiB", "MIMALLOC_ARENA_EAGER_COMMIT=2", NULL};
  expect_text(child("arenas-print", control), ", committed");
}

static void test_option_allow_thp_zero_process_thp_disabled(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_ALLOW_THP=0", NULL};
  const char* text = child("thp", env);
  expect_text(text, "thp_disable=1 ");
  expect_no_text(text, "eligible=1"); /* the large block's mapping may not take huge pages */
  const char* control[] = {"MIMALLOC_ALLOW_THP=1", NULL};
  expect_text(child("thp", control), "thp_disable=0 ");
}

static void test_option_abandoned_page_purge_thread_exit_purges_at_once(void** state) {
  (void)state;
  /* a purge delay far beyond the test's run: only the option purges */
  const char* env[] = {"MIMALLOC_PURGE_DELAY=1000000", "MIMALLOC_ABANDONED_PAGE_PURGE=1", NULL};
  const char* text = child("abandoned-purge", env);
  if (strstr(text, "dropped_mib=0\n") != NULL || strstr(text, "dropped_mib=1\n") != NULL) {
    fail_msg("the exiting thread's free pages stayed committed:\n%s", text);
  }
  const char* control[] = {"MIMALLOC_PURGE_DELAY=1000000", "MIMALLOC_ABANDONED_PAGE_PURGE=0", NULL};
  expect_text(child("abandoned-purge", control), "dropped_mib=0\n");
}

static long commit_at_exit(const char* text) {
  const char* at = strstr(text, "commit_at_exit_mib=");
  if (at == NULL) fail_msg("the child did not report at exit:\n%s", text);
  return strtol(at + strlen("commit_at_exit_mib="), NULL, 10);
}

static void test_option_destroy_on_exit_memory_given_back_at_exit(void** state) {
  (void)state;
  /* 48 MiB left live by the child */
  const char* env[] = {"MIMALLOC_DESTROY_ON_EXIT=1", NULL};
  const char* text = child("destroy", env);
  if (commit_at_exit(text) >= 4) fail_msg("the leaks stayed committed at exit:\n%s", text);
  /* the control: the same leaks stay committed to the end */
  const char* control[] = {"MIMALLOC_DESTROY_ON_EXIT=0", NULL};
  text = child("destroy", control);
  if (commit_at_exit(text) < 40) fail_msg("the control's leaks were not committed at exit:\n%s", text);
}

static void test_option_max_segment_reclaim_zero_abandoned_segment_not_adopted(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_MAX_SEGMENT_RECLAIM=0", NULL};
  expect_text(child("reclaim", env), "reclaimed=0\n");
  /* the control: the default adopts the exited thread's segment for a fresh page */
  const char* control[] = {"MIMALLOC_MAX_SEGMENT_RECLAIM=10", NULL};
  const char* text = child("reclaim", control);
  if (strstr(text, "reclaimed=0\n") != NULL || strstr(text, "reclaimed=-1\n") != NULL) {
    fail_msg("the control adopted nothing:\n%s", text);
  }
}

static void test_option_purge_decommits_zero_freed_arena_chunk_stays_committed(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_PURGE_DECOMMITS=0", NULL};
  expect_text(child("arena-chunk", env), "in_use=rw-p freed=rw-p\n");
  /* the control: decommitted, the chunk is inaccessible until committed again */
  const char* control[] = {"MIMALLOC_PURGE_DECOMMITS=1", NULL};
  expect_text(child("arena-chunk", control), "in_use=rw-p freed=---p\n");
}

static size_t count_text(const char* text, const char* what) {
  size_t n = 0;
  for (const char* at = strstr(text, what); at != NULL; at = strstr(at + 1, what)) n++;
  return n;
}

static void test_option_show_stats_exit_prints_statistics(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_SHOW_STATS=1", NULL};
  const char* text = child("start", env);
  expect_text(text, "heap stats:     peak       total     current       block      total#");
  expect_text(text, " allocator: mimalloc-pprof ");
  const char* control[] = {"MIMALLOC_SHOW_STATS=0", NULL};
  expect_no_text(child("start", control), "heap stats:");
}

static void test_option_max_warnings_one_prints_one_warning(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_SHOW_ERRORS=1", "MIMALLOC_MAX_WARNINGS=1", NULL};
  const char* text = child("messages", env);
  if (strstr(text, "huge pages reserved") != NULL) skip(); /* a machine with 1 GiB pages: no warning to count */
  assert_int_equal(count_text(text, "mimalloc: warning: "), 1);
  const char* control[] = {"MIMALLOC_SHOW_ERRORS=1", "MIMALLOC_MAX_WARNINGS=32", NULL};
  assert_int_equal(count_text(child("messages", control), "mimalloc: warning: "), 3);
}

static void test_option_max_errors_one_prints_one_error(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_SHOW_ERRORS=1", "MIMALLOC_MAX_ERRORS=1", NULL};
  assert_int_equal(count_text(child("messages", env), "mimalloc: error: "), 1);
  const char* control[] = {"MIMALLOC_SHOW_ERRORS=1", "MIMALLOC_MAX_ERRORS=32", NULL};
  assert_int_equal(count_text(child("messages", control), "mimalloc: error: "), 3);
}

static void test_option_generic_collect_one_remotely_emptied_pages_freed(void** state) {
  (void)state;
  const char* env[] = {"MIMALLOC_GENERIC_COLLECT=1", NULL};
  expect_text(child("generic-collect", env), "empty_pages=0\n");
  /* the control: with a collection only every million calls the pages stay */
  const char* control[] = {"MIMALLOC_GENERIC_COLLECT=1000000", NULL};
  const char* text = child("generic-collect", control);
  const char* at = strstr(text, "empty_pages=");
  assert_non_null(at);
  if (strtol(at + strlen("empty_pages="), NULL, 10) < 2)
    fail_msg("the control's emptied pages were collected:\n%s", text);
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "--child") == 0) return child_main(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_option_legacy_env_reset_delay_sets_purge_delay),
      cmocka_unit_test(test_option_legacy_env_large_os_pages_sets_allow_large),
      cmocka_unit_test(test_option_legacy_env_eager_region_commit_sets_arena_eager_commit),
      cmocka_unit_test(test_option_legacy_env_reset_decommits_sets_purge_decommits),
      cmocka_unit_test(test_option_legacy_env_abandoned_page_reset_sets_abandoned_page_purge),
      cmocka_unit_test(test_option_legacy_env_limit_os_alloc_sets_disallow_os_alloc),
      cmocka_unit_test(test_option_legacy_env_name_warned_deprecated),
      cmocka_unit_test(test_option_legacy_env_current_name_wins),
      cmocka_unit_test(test_option_legacy_enum_aliases_same_option),
      cmocka_unit_test(test_option_verbose_start_prints_version_and_every_option),
      cmocka_unit_test(test_option_disallow_os_alloc_without_arena_fails_enomem),
      cmocka_unit_test(test_option_disallow_os_alloc_with_arena_served_from_it),
      cmocka_unit_test(test_option_disallow_arena_alloc_shared_arena_not_used),
      cmocka_unit_test(test_option_arena_reserve_set_blocks_from_arena_of_that_size),
      cmocka_unit_test(test_option_arena_eager_commit_zero_arena_reserved_uncommitted),
      cmocka_unit_test(test_option_allow_thp_zero_process_thp_disabled),
      cmocka_unit_test(test_option_abandoned_page_purge_thread_exit_purges_at_once),
      cmocka_unit_test(test_option_destroy_on_exit_memory_given_back_at_exit),
      cmocka_unit_test(test_option_max_segment_reclaim_zero_abandoned_segment_not_adopted),
      cmocka_unit_test(test_option_purge_decommits_zero_freed_arena_chunk_stays_committed),
      cmocka_unit_test(test_option_show_stats_exit_prints_statistics),
      cmocka_unit_test(test_option_max_warnings_one_prints_one_warning),
      cmocka_unit_test(test_option_max_errors_one_prints_one_error),
      cmocka_unit_test(test_option_generic_collect_one_remotely_emptied_pages_freed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
