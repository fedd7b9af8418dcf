/* The dumps at the in-use bytes' highs (docs/pprof.md, "Which dump for
   which program"): MIMALLOC_PROF_DUMP_INUSE_INTERVAL's numbered dumps and
   MIMALLOC_PROF_DUMP_AT_PEAK's one file, each run in a fresh process (the
   options are read at the start MIMALLOC_PROF=1 makes).

   The rise-fall-rise child, every allocation sampled (interval 1, so the
   text header's in-use bytes are exact), with a step smaller than each of
   its blocks (so the last block of a rise is a level of its own and the peak
   file ends with exactly the heap at its highest):
     1. grows by 96 blocks of 64 KiB (site A) to its first high;
     2. frees 72 of them;
     3. grows by 64 blocks of 48 KiB (site B), staying under the high: no dump;
     4. grows by 64 blocks of 80 KiB (site C), past the high: dumps again;
     5. frees everything and exits (the exit dump nearly empty).
   The numbered dumps must each be a new high by at least the step; none
   between 1 and 4; the peak file must hold the heap at 1's high, and at
   the end the heap at 4's, byte for byte; the exit dump almost nothing. A
   trigger that compared the in-use bytes with where they were, not with the
   highest level dumped, writes dumps in 3 (with site B in them) and fails
   here. */
#define _GNU_SOURCE
#include "prof-test.h"
#include "child-env.h"

#include <math.h>
#include <time.h>

#define STEP ((uint64_t)32 * 1024)
#define A_SIZE ((size_t)64 * 1024)
#define B_SIZE ((size_t)48 * 1024)
#define C_SIZE ((size_t)80 * 1024)
enum { A_COUNT = 96, A_FREED = 72, B_COUNT = 64, C_COUNT = 64 };

static void* a_blocks[A_COUNT];
static void* b_blocks[B_COUNT];
static void* c_blocks[C_COUNT];

/* ---- The profiles' text ---------------------------------------------------------------- */

/* The text file's header: in-use objects and bytes (raw); false if there is
   no file or no header. */
static bool header_of(const char* path, uint64_t* objs, uint64_t* bytes) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return false;
  unsigned long long o = 0, b = 0;
  int got = fscanf(f, "heap profile: %llu: %llu", &o, &b);
  fclose(f);
  if (got != 2) return false;
  *objs = o;
  *bytes = b;
  return true;
}

/* The records of a text profile whose objects average `size` bytes: their
   objects (raw), and the in-use bytes pprof's unsampling gives all the
   records (at `period`). */
typedef struct profile_sum_s {
  uint64_t objs_of_size;
  double unsampled_bytes;
  bool read;
} profile_sum_t;

static profile_sum_t profile_sum(const char* path, size_t size, double period) {
  profile_sum_t sum = {0, 0.0, false};
  FILE* f = fopen(path, "r");
  if (f == NULL) return sum;
  static char line[1 << 14];
  bool first = true;
  while (fgets(line, sizeof(line), f) != NULL) {
    unsigned long long o = 0, b = 0;
    if (first) {
      first = false;
      sum.read = (strncmp(line, "heap profile:", 13) == 0);
      continue;
    }
    if (sscanf(line, " %llu: %llu [", &o, &b) != 2 || strchr(line, '@') == NULL) continue;
    if (o == 0) continue;
    if (b == (unsigned long long)size * o) sum.objs_of_size += o;
    double avg = (double)b / (double)o;
    sum.unsampled_bytes += (period <= 1 ? (double)b : (double)b / (1.0 - exp(-avg / period)));
  }
  fclose(f);
  return sum;
}

/* ---- The children ---------------------------------------------------------------------- */

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static uint64_t live_now(void) {
  return (uint64_t)stats_now().live_bytes;
}

/* Until the peak file's header says `bytes` in use (up to 20 s: the
   background thread writes it, on a loaded machine). */
static bool wait_peak(const char* peak, uint64_t bytes) {
  for (int i = 0; i < 400; i++) {
    uint64_t o, b;
    if (header_of(peak, &o, &b) && b == bytes) return true;
    sleep_ms(50);
  }
  return false;
}

/* The numbered dumps written so far (1, 2, ... without a gap). */
static int numbered_count(const char* prefix) {
  int n = 0;
  for (;;) {
    char path[512];
    snprintf(path, sizeof(path), "%s.%d.heap", prefix, n + 1);
    if (access(path, F_OK) != 0) return n;
    n++;
  }
}

static __attribute__((noinline)) void grow_a(void) {
  for (int i = 0; i < A_COUNT; i++) a_blocks[i] = tu_launder(mi_malloc(A_SIZE));
}
static __attribute__((noinline)) void grow_b(void) {
  for (int i = 0; i < B_COUNT; i++) b_blocks[i] = tu_launder(mi_malloc(B_SIZE));
}
static __attribute__((noinline)) void grow_c(void) {
  for (int i = 0; i < C_COUNT; i++) c_blocks[i] = tu_launder(mi_malloc(C_SIZE));
}

/* The rise-fall-rise program; prints what it saw at each step for the test
   to check (the files stay for it). TEST_PREFIX, TEST_PEAK: the files;
   TEST_WATCHED=0: no dump is expected (nothing is waited for). */
static int child_rises(void) {
  const char* prefix = getenv("TEST_PREFIX");
  const char* peak = getenv("TEST_PEAK");
  const char* watch = getenv("TEST_WATCHED");
  if (prefix == NULL || peak == NULL || watch == NULL) return 3;
  bool watched = (strcmp(watch, "1") == 0);
  grow_a();
  uint64_t high1 = live_now();
  bool seen1 = (watched ? wait_peak(peak, high1) : true);
  int count1 = numbered_count(prefix);
  printf("high1=%llu seen=%d numbered=%d\n", (unsigned long long)high1, seen1, count1);
  for (int i = 0; i < A_FREED; i++) mi_free(a_blocks[i]);
  grow_b();
  uint64_t under = live_now();
  /* nothing is due: a dump in this second is one written under the high */
  int count3 = count1;
  for (int i = 0; i < 20 && count3 == count1; i++) {
    sleep_ms(50);
    count3 = numbered_count(prefix);
  }
  uint64_t o = 0, peak3 = 0;
  bool peak_read3 = header_of(peak, &o, &peak3);
  profile_sum_t sum3 = profile_sum(peak, B_SIZE, 1);
  printf("under=%llu numbered=%d peak=%llu peak_read=%d b_objs=%llu\n", (unsigned long long)under, count3,
         (unsigned long long)peak3, peak_read3, (unsigned long long)sum3.objs_of_size);
  grow_c();
  uint64_t high4 = live_now();
  bool seen4 = (watched ? wait_peak(peak, high4) : true);
  printf("high4=%llu seen=%d numbered=%d\n", (unsigned long long)high4, seen4, numbered_count(prefix));
  for (int i = A_FREED; i < A_COUNT; i++) mi_free(a_blocks[i]);
  for (int i = 0; i < B_COUNT; i++) mi_free(b_blocks[i]);
  for (int i = 0; i < C_COUNT; i++) mi_free(c_blocks[i]);
  return 0;
}

/* Sampled (the environment's interval): 16 MiB of 1000-byte blocks, each
   sampled with probability 1 - e^(-1000/R), then all freed. */
enum { SMALL_SIZE = 1000, SMALL_COUNT = 16 * 1024 * 1024 / SMALL_SIZE };
static void* small_blocks[SMALL_COUNT];

static __attribute__((noinline)) void grow_small(void) {
  for (int i = 0; i < SMALL_COUNT; i++) small_blocks[i] = tu_launder(mi_malloc(SMALL_SIZE));
}

static int child_small(void) {
  grow_small();
  for (int i = 0; i < SMALL_COUNT; i++) mi_free(small_blocks[i]);
  return 0;
}

/* Dumps on two threads at once: the program's own (text and proto) while
   its heap rises, and the background thread's at each of those highs, all
   symbolising the same 1024 stacks (4^5 paths down to mi_malloc). With the
   symboliser's state planted back as one for all threads, the child died of
   SIGSEGV 6 runs in 6 in Debug (3 in 5 in Release, where the dumps are
   shorter); 4096 stacks in 32 rounds caught no more and took 17 s in Debug. */
enum { PATH_LEVELS = 5, PATHS = 1 << (2 * PATH_LEVELS), ROUNDS = 16 };
static void* path_blocks[PATHS];
static volatile int path_side; /* written after each call: no tail call, no two functions alike */

static __attribute__((noinline)) void* descend(unsigned path, int level);
#define MI_TEST_VIA(k) \
  static __attribute__((noinline)) void* via_##k(unsigned path, int level) { \
    void* p = descend(path, level); \
    path_side = k; \
    return p; \
  }
MI_TEST_VIA(0)
MI_TEST_VIA(1)
MI_TEST_VIA(2)
MI_TEST_VIA(3)

static __attribute__((noinline)) void* descend(unsigned path, int level) {
  if (level == 0) return mi_malloc(1024);
  void* p;
  switch ((path >> (2 * (level - 1))) & 3) {
    case 0: p = via_0(path, level - 1); break;
    case 1: p = via_1(path, level - 1); break;
    case 2: p = via_2(path, level - 1); break;
    default: p = via_3(path, level - 1); break;
  }
  path_side = -1;
  return p;
}

static void count_bytes(void* arg, const char* buf, size_t len) {
  (void)buf;
  *(size_t*)arg += len;
}

static int child_concurrent(void) {
  int failed = 0;
  for (unsigned r = 0; r < ROUNDS; r++) {
    for (unsigned i = r * (PATHS / ROUNDS); i < (r + 1) * (PATHS / ROUNDS); i++)
      path_blocks[i] = descend(i, PATH_LEVELS);
    size_t text = 0, proto = 0;
    if (!mi_prof_dump_writer(&count_bytes, &text) || text == 0) failed++;
    if (!mi_prof_dump_proto_writer(&count_bytes, &proto) || proto == 0) failed++;
  }
  for (unsigned i = 0; i < PATHS; i++) mi_free(path_blocks[i]);
  printf("concurrent: %d dumps failed\n", failed);
  return (failed == 0 ? 0 : 4);
}

static int child_main(const char* mode) {
  if (strcmp(mode, "rises") == 0) return child_rises();
  if (strcmp(mode, "small") == 0) return child_small();
  if (strcmp(mode, "concurrent") == 0) return child_concurrent();
  return 2;
}

/* ---- The tests ---------------------------------------------------------------------------- */

static char out[1 << 14];

typedef struct files_s {
  char prefix[200], peak[256], exit[256];
  char env_prefix[300], env_peak[300], env_exit[300], test_prefix[300], test_peak[300];
} files_t;

static void files_init(files_t* f, const char* name, const char* peak_suffix) {
  snprintf(f->prefix, sizeof(f->prefix), "/tmp/mi-prof-hw-%s-%d", name, (int)getpid());
  snprintf(f->peak, sizeof(f->peak), "%s.peak%s", f->prefix, peak_suffix);
  snprintf(f->exit, sizeof(f->exit), "%s.exit.heap", f->prefix);
  snprintf(f->env_prefix, sizeof(f->env_prefix), "MIMALLOC_PROF_DUMP_PREFIX=%s", f->prefix);
  snprintf(f->env_peak, sizeof(f->env_peak), "MIMALLOC_PROF_DUMP_AT_PEAK=%s", f->peak);
  snprintf(f->env_exit, sizeof(f->env_exit), "MIMALLOC_PROF_DUMP_AT_EXIT=%s", f->exit);
  snprintf(f->test_prefix, sizeof(f->test_prefix), "TEST_PREFIX=%s", f->prefix);
  snprintf(f->test_peak, sizeof(f->test_peak), "TEST_PEAK=%s", f->peak);
}

static void files_remove(const files_t* f, const char* ext) {
  for (int n = 1; n < 10000; n++) {
    char path[512];
    snprintf(path, sizeof(path), "%s.%d%s", f->prefix, n, ext);
    if (unlink(path) != 0) break;
  }
  unlink(f->peak);
  unlink(f->exit);
}

static unsigned long long said(const char* after, const char* key) {
  const char* p = strstr(after, key);
  if (p == NULL) fail_msg("the child did not say %s: %s", key, out);
  return strtoull(p + strlen(key), NULL, 10);
}

static void test_highwater_rise_fall_rise_dumps_at_rises_only_peak_exact(void** state) {
  (void)state;
  files_t f;
  files_init(&f, "rises", ".heap");
  files_remove(&f, ".heap");
  char step[64];
  snprintf(step, sizeof(step), "MIMALLOC_PROF_DUMP_INUSE_INTERVAL=%llu", (unsigned long long)STEP);
  const char* env[] = {"MIMALLOC_PROF=1",
                       "MIMALLOC_PROF_SAMPLE_INTERVAL=1",
                       step,
                       f.env_prefix,
                       f.env_peak,
                       f.env_exit,
                       f.test_prefix,
                       f.test_peak,
                       "TEST_WATCHED=1",
                       NULL};
  assert_int_equal(run_self_env("rises", env, out, sizeof(out)), 0);
  const char* l1 = strstr(out, "high1=");
  const char* l3 = strstr(out, "under=");
  const char* l4 = strstr(out, "high4=");
  if (l1 == NULL || l3 == NULL || l4 == NULL) fail_msg("the child's report: %s", out);
  uint64_t high1 = said(l1, "high1="), under = said(l3, "under="), high4 = said(l4, "high4=");
  /* the program's own shape: fell, rose under the high, then past it */
  assert_true(under < high1 && high4 > high1 + STEP);
  /* 1: the peak file reached the first high exactly, with numbered dumps */
  if (said(l1, "seen=") != 1) fail_msg("the peak file never held the first high: %s", out);
  int count1 = (int)said(l1, "numbered=");
  assert_true(count1 >= 1);
  /* 3: under the high, nothing written: no numbered dump, the peak file
     still the first high's, no block of site B in it */
  if (said(l3, "numbered=") != (unsigned long long)count1)
    fail_msg("a dump was written under the high (rose from a fall, not past the highest level): %s", out);
  if (said(l3, "peak_read=") != 1 || said(l3, "peak=") != high1 || said(l3, "b_objs=") != 0)
    fail_msg("the peak file changed under the high: %s", out);
  /* 4: past the high, dumps again; the peak file ends with the peak exactly */
  if (said(l4, "seen=") != 1) fail_msg("the peak file never held the second high: %s", out);
  int count4 = (int)said(l4, "numbered=");
  assert_true(count4 > count1);
  /* the numbered dumps: each a new high by at least the step, the first
     high among them, the last the peak */
  uint64_t last = 0;
  bool saw_high1 = false;
  for (int n = 1; n <= count4; n++) {
    char path[512];
    snprintf(path, sizeof(path), "%s.%d.heap", f.prefix, n);
    uint64_t o = 0, b = 0;
    if (!header_of(path, &o, &b)) fail_msg("%s: no profile", path);
    if (n > 1 && b < last + STEP)
      fail_msg("dump %d: %llu in use, not a new high by %llu past %llu", n, (unsigned long long)b,
               (unsigned long long)STEP, (unsigned long long)last);
    if (n == 1 && b < STEP) fail_msg("dump 1: %llu in use, under the first level", (unsigned long long)b);
    saw_high1 = saw_high1 || (b == high1);
    last = b;
  }
  assert_true(saw_high1);
  assert_int_equal(last, high4);
  /* the peak file: the heap at the peak, every block of A, B and C live then */
  profile_sum_t peak_c = profile_sum(f.peak, C_SIZE, 1);
  profile_sum_t peak_b = profile_sum(f.peak, B_SIZE, 1);
  profile_sum_t peak_a = profile_sum(f.peak, A_SIZE, 1);
  assert_true(peak_c.read);
  assert_int_equal(peak_c.objs_of_size, C_COUNT);
  assert_int_equal(peak_b.objs_of_size, B_COUNT);
  assert_int_equal(peak_a.objs_of_size, A_COUNT - A_FREED);
  uint64_t o = 0, b = 0;
  assert_true(header_of(f.peak, &o, &b));
  assert_int_equal(b, high4);
  /* the exit dump: everything was freed (what is left is stdio's) */
  assert_true(header_of(f.exit, &o, &b));
  assert_true(b < 64 * 1024);
  files_remove(&f, ".heap");
}

static void test_highwater_options_unset_no_dump_written(void** state) {
  (void)state;
  files_t f;
  files_init(&f, "unset", ".heap");
  files_remove(&f, ".heap");
  const char* env[] = {"MIMALLOC_PROF=1",
                       "MIMALLOC_PROF_SAMPLE_INTERVAL=1",
                       f.env_prefix,
                       f.test_prefix,
                       f.test_peak,
                       "TEST_WATCHED=0",
                       NULL};
  assert_int_equal(run_self_env("rises", env, out, sizeof(out)), 0);
  const char* l4 = strstr(out, "high4=");
  if (l4 == NULL) fail_msg("the child's report: %s", out);
  assert_int_equal(said(l4, "numbered="), 0);
  assert_int_equal(access(f.peak, F_OK), -1);
  files_remove(&f, ".heap");
}

/* Sampled at 64 KiB, blocks of 1000 bytes (each sampled with probability
   1.5%): the peak file alone (no numbered dump without the interval, its
   own step 1/16 of the level) holds the 16 MiB of the peak within the
   sampling error. Compared in raw sampled bytes the rise would be 1.5% of
   it, and no level would be reached. */
static void test_highwater_peak_alone_sampled_small_blocks_within_error(void** state) {
  (void)state;
  files_t f;
  files_init(&f, "small", ".heap");
  files_remove(&f, ".heap");
  const char* env[] = {"MIMALLOC_PROF=1",
                       "MIMALLOC_PROF_SAMPLE_INTERVAL=65536",
                       "MIMALLOC_PROF_SEED=42",
                       f.env_prefix,
                       f.env_peak,
                       f.env_exit,
                       NULL};
  assert_int_equal(run_self_env("small", env, out, sizeof(out)), 0);
  profile_sum_t peak = profile_sum(f.peak, SMALL_SIZE, 65536);
  if (!peak.read) fail_msg("no peak file: %s", out);
  double truth = (double)SMALL_COUNT * SMALL_SIZE;
  if (peak.unsampled_bytes < 0.8 * truth || peak.unsampled_bytes > 1.2 * truth)
    fail_msg("the peak file's in-use bytes %.0f, not within 20%% of the peak's %.0f", peak.unsampled_bytes, truth);
  profile_sum_t at_exit = profile_sum(f.exit, SMALL_SIZE, 65536);
  assert_true(at_exit.read);
  assert_true(at_exit.unsampled_bytes < 0.05 * truth);
  assert_int_equal(numbered_count(f.prefix), 0);
  files_remove(&f, ".heap");
}

/* The proto format: the numbered dumps are .pb.gz, and a peak path ending
   in .gz is gzip-compressed too. */
static void test_highwater_proto_format_numbered_and_peak_gzipped(void** state) {
  (void)state;
  files_t f;
  files_init(&f, "proto", ".pb.gz");
  files_remove(&f, ".pb.gz");
  const char* env[] = {"MIMALLOC_PROF=1",
                       "MIMALLOC_PROF_SAMPLE_INTERVAL=65536",
                       "MIMALLOC_PROF_DUMP_FORMAT=proto",
                       "MIMALLOC_PROF_DUMP_INUSE_INTERVAL=4000000",
                       f.env_prefix,
                       f.env_peak,
                       NULL};
  assert_int_equal(run_self_env("small", env, out, sizeof(out)), 0);
  char path[512];
  snprintf(path, sizeof(path), "%s.1.pb.gz", f.prefix);
  const char* files[] = {path, f.peak};
  for (int i = 0; i < 2; i++) {
    unsigned char magic[2] = {0, 0};
    FILE* file = fopen(files[i], "rb");
    if (file == NULL) fail_msg("%s: not written", files[i]);
    assert_int_equal(fread(magic, 1, 2, file), 2);
    fclose(file);
    assert_int_equal(magic[0], 0x1f);
    assert_int_equal(magic[1], 0x8b);
  }
  files_remove(&f, ".pb.gz");
}

/* The program dumps while the background thread writes the highs' dumps:
   each thread symbolises with its own state (they shared one, and the
   second dump crashed in the first's lookups). */
static void test_highwater_program_dumps_during_high_dumps_no_crash(void** state) {
  (void)state;
  files_t f;
  files_init(&f, "concurrent", ".heap");
  files_remove(&f, ".heap");
  const char* env[] = {"MIMALLOC_PROF=1",
                       "MIMALLOC_PROF_SAMPLE_INTERVAL=1",
                       "MIMALLOC_PROF_DUMP_INUSE_INTERVAL=16384",
                       f.env_prefix,
                       f.env_peak,
                       NULL};
  int status = run_self_env_status("concurrent", env, out, sizeof(out));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("the child died (signal %d) or failed (exit %d): %s", WIFSIGNALED(status) ? WTERMSIG(status) : 0,
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
  assert_true(numbered_count(f.prefix) >= 1);
  uint64_t o = 0, b = 0;
  assert_true(header_of(f.peak, &o, &b));
  assert_true(b >= (uint64_t)PATHS * 1024 - 16384);
  files_remove(&f, ".heap");
}

#if defined(__SANITIZE_ADDRESS__)
#define MI_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MI_TEST_ASAN 1
#endif
#endif

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "--child") == 0) return child_main(argv[2]);
#if defined(MI_TEST_ASAN)
  /* every allocation sampled and unwound in full (code without frame
     pointers): past the 300 s limit under ASan's run-time (the asan job's
     timeout); the default, secure, Debug, MI_DEBUG=3 and tsan jobs run it */
  printf("[   SKIP   ] test-prof-highwater: too slow under AddressSanitizer\n");
  return 0;
#endif
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_highwater_rise_fall_rise_dumps_at_rises_only_peak_exact),
      cmocka_unit_test(test_highwater_options_unset_no_dump_written),
      cmocka_unit_test(test_highwater_peak_alone_sampled_small_blocks_within_error),
      cmocka_unit_test(test_highwater_proto_format_numbered_and_peak_gzipped),
      cmocka_unit_test(test_highwater_program_dumps_during_high_dumps_no_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
