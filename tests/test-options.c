/* Options (API and MIMALLOC_<NAME> environment variables), output and error
   hooks, statistics, process info, version, thread init/done. */
#define _GNU_SOURCE
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#if defined(_WIN32)
#include "spawn.h" /* no fork: the child is this program started again */
#else
#include <sys/wait.h>
extern char** environ;
#endif

/* ---------------------------------------------------------------------------- */
/* set / get */
static void test_option_set_then_get_returns_value_and_clamps(void** state) {
  (void)state;
  const long old_max_errors = mi_option_get(mi_option_max_errors);
  mi_option_set(mi_option_max_errors, 500);
  assert_int_equal(mi_option_get(mi_option_max_errors), 500);
  assert_int_equal(mi_option_get_clamp(mi_option_max_errors, 0, 100), 100);
  assert_int_equal(mi_option_get_clamp(mi_option_max_errors, 600, 700), 600);
  assert_int_equal(mi_option_get_clamp(mi_option_max_errors, 0, 1000), 500);
  mi_option_set(mi_option_max_errors, 123);
  assert_int_equal(mi_option_get(mi_option_max_errors), 123);
  mi_option_set(mi_option_max_errors, old_max_errors);
  assert_int_equal(mi_option_get(mi_option_max_errors), old_max_errors);
}

/* enable / disable / is_enabled */
static void test_option_enable_disable_toggles_is_enabled(void** state) {
  (void)state;
  const bool old_show = mi_option_is_enabled(mi_option_show_errors);
  mi_option_enable(mi_option_show_errors);
  assert_true(mi_option_is_enabled(mi_option_show_errors));
  assert_int_not_equal(mi_option_get(mi_option_show_errors), 0);
  mi_option_disable(mi_option_show_errors);
  assert_false(mi_option_is_enabled(mi_option_show_errors));
  assert_int_equal(mi_option_get(mi_option_show_errors), 0);
  mi_option_set_enabled(mi_option_show_errors, true);
  assert_true(mi_option_is_enabled(mi_option_show_errors));
  mi_option_set_enabled(mi_option_show_errors, false);
  assert_false(mi_option_is_enabled(mi_option_show_errors));
  mi_option_set_enabled(mi_option_show_errors, old_show);
  assert_int_equal(mi_option_is_enabled(mi_option_show_errors), old_show);
}

/* set_default never overrides a value that was set explicitly */
static void test_option_set_default_keeps_explicit_value(void** state) {
  (void)state;
  mi_option_set(mi_option_max_warnings, 77);
  mi_option_set_default(mi_option_max_warnings, 5);
  assert_int_equal(mi_option_get(mi_option_max_warnings), 77);
  const bool old_show = mi_option_is_enabled(mi_option_show_errors);
  mi_option_set_enabled(mi_option_show_errors, old_show); /* set explicitly, to its value */
  mi_option_set_enabled_default(mi_option_show_errors, !old_show);
  assert_int_equal(mi_option_is_enabled(mi_option_show_errors), old_show);
}

/* legacy names alias the same option */
static void test_option_legacy_names_alias_purge_delay(void** state) {
  (void)state;
  const long pd = mi_option_get(mi_option_purge_delay);
  assert_int_equal(mi_option_get(mi_option_reset_delay), pd);
  assert_int_equal(mi_option_get(mi_option_decommit_delay), pd);
  mi_option_set(mi_option_purge_delay, pd + 5);
  assert_int_equal(mi_option_get(mi_option_decommit_delay), pd + 5);
  mi_option_set(mi_option_purge_delay, pd);
}

/* size options are in KiB */
static void test_option_size_options_read_in_kib(void** state) {
  (void)state;
  long ar = mi_option_get(mi_option_arena_reserve);
  assert_int_equal(mi_option_get_size(mi_option_arena_reserve), (size_t)(ar < 0 ? 0 : ar) * KiB);
  long rm = mi_option_get(mi_option_reserve_os_memory);
  assert_int_equal(mi_option_get_size(mi_option_reserve_os_memory), (size_t)(rm < 0 ? 0 : rm) * KiB);
}

/* every option can be read; the allocator keeps working after changes */
static void test_option_every_option_readable(void** state) {
  (void)state;
  for (int o = 0; o < (int)_mi_option_last; o++) {
    if (o > (int)mi_option_retry_on_oom && o < (int)mi_option_purge_thread) continue;
    long v = mi_option_get((mi_option_t)o);
    (void)v;
  }
  void* p = mi_malloc(1000);
  assert_non_null(p);
  mi_free(p);
}

/* ---------------------------------------------------------------------------- */
/* child mode: print option values, optionally after set_default / set */
static int child_main(const char* mode) {
  if (strcmp(mode, "set_default") == 0) mi_option_set_default(mi_option_purge_delay, 999);
  if (strcmp(mode, "set") == 0) mi_option_set(mi_option_purge_delay, 77);
  void* p = mi_malloc(100); /* make sure the allocator is initialized */
  if (strcmp(mode, "set_light") == 0) mi_option_set(mi_option_secure_level, 1);
  printf("purge_delay=%ld verbose=%d\n", mi_option_get(mi_option_purge_delay),
         (int)mi_option_is_enabled(mi_option_verbose));
  printf("secure_level=%ld zero_on_free=%ld large_quarantine=%ld secure_quarantine=%ld guarded_sample_rate=%ld\n",
         mi_option_get(mi_option_secure_level), mi_option_get(mi_option_zero_on_free),
         mi_option_get(mi_option_large_quarantine), mi_option_get(mi_option_secure_quarantine),
         mi_option_get(mi_option_guarded_sample_rate));
  fflush(stdout);
  mi_free(p);
  return 0;
}

/* run ourselves with an extra environment; returns the child's stdout */
#if defined(_WIN32)
static char* run_child(const char* mode, const char* const* extra_env, char* out, size_t outsize) {
  char args[64];
  snprintf(args, sizeof(args), "--child %s", mode);
  /* the run has no MIMALLOC_* of its own to remove (ctest's environment) */
  assert_int_equal(mi_spawn_self(args, extra_env, true, false, out, outsize, 120000), 0);
  return out;
}
#else
static char* run_child(const char* mode, const char* const* extra_env, char* out, size_t outsize) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  /* build environment: current environment minus MIMALLOC_* plus extra */
  size_t n = 0;
  while (environ[n] != NULL) n++;
  char** env = (char**)calloc(n + 8, sizeof(char*));
  assert_non_null(env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "MIMALLOC_", 9) != 0) env[k++] = environ[i];
  for (size_t i = 0; extra_env[i] != NULL; i++) env[k++] = (char*)extra_env[i];
  env[k] = NULL;
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  assert_true(len > 0);
  self[len] = 0;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 1);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2); /* verbose messages go to stderr: keep the log clean */
    close(fds[0]);
    close(fds[1]);
    char* argv[] = {self, (char*)"--child", (char*)mode, NULL};
    execve(self, argv, env);
    _exit(127);
  }
  close(fds[1]);
  size_t got = 0;
  for (;;) {
    ssize_t r = read(fds[0], out + got, outsize - 1 - got);
    if (r <= 0) break;
    got += (size_t)r;
    if (got >= outsize - 1) break;
  }
  out[got] = 0;
  close(fds[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  free(env);
  return out;
}
#endif

static void test_option_environment_honoured_between_default_and_set(void** state) {
  (void)state;
  char out[4096];
  const char* env1[] = {"MIMALLOC_VERBOSE=0", "MIMALLOC_PURGE_DELAY=123", NULL};
  run_child("plain", env1, out, sizeof(out));
  print_message("child (MIMALLOC_PURGE_DELAY=123): %s", out);
  if (strstr(out, "purge_delay=123") == NULL)
    fail_msg("MIMALLOC_PURGE_DELAY=123 not honoured: child printed '%s'", out);

  /* the environment beats mi_option_set_default */
  run_child("set_default", env1, out, sizeof(out));
  print_message("child (env + set_default 999): %s", out);
  if (strstr(out, "purge_delay=123") == NULL) fail_msg("mi_option_set_default overrode the environment: '%s'", out);

  /* mi_option_set beats the environment */
  run_child("set", env1, out, sizeof(out));
  print_message("child (env + set 77): %s", out);
  if (strstr(out, "purge_delay=77") == NULL) fail_msg("mi_option_set did not override the environment: '%s'", out);

  /* boolean option from the environment (verbose output goes to stderr) */
  const char* env2[] = {"MIMALLOC_VERBOSE=1", "MIMALLOC_PURGE_DELAY=5", NULL};
  run_child("plain", env2, out, sizeof(out));
  print_message("child (MIMALLOC_VERBOSE=1): %s", out);
  if (strstr(out, "verbose=1") == NULL) fail_msg("MIMALLOC_VERBOSE=1 not honoured: '%s'", out);
  if (strstr(out, "purge_delay=5") == NULL) fail_msg("MIMALLOC_PURGE_DELAY=5 not honoured: '%s'", out);

  /* lower case values / names as in mimalloc ("true") */
  const char* env3[] = {"MIMALLOC_VERBOSE=true", NULL};
  run_child("plain", env3, out, sizeof(out));
  if (strstr(out, "verbose=1") == NULL) fail_msg("MIMALLOC_VERBOSE=true not honoured: '%s'", out);

  /* without environment: the default value (not 123) */
  const char* env0[] = {NULL};
  run_child("plain", env0, out, sizeof(out));
  print_message("child (no env): %s", out);
  assert_null(strstr(out, "purge_delay=123"));
  assert_non_null(strstr(out, "verbose=0"));
}

/* The secure build's levels (docs/secure-mode.md, "Levels"): light turns
   the defaults of zero on free, the large-block quarantine and the small
   blocks' quarantine off and samples a tenth as many guarded blocks, from the environment (a word or a number) or
   mi_option_set; an option the environment sets keeps its value at either
   level; full is the default. Other builds read it and leave the three
   options as they are. */
typedef struct level_case_s {
  const char* mode;   /* child_main's */
  const char* env[3]; /* NULL-terminated */
  const char* expect; /* child_main's second line */
} level_case_t;

static void assert_level_cases(const level_case_t* cases, size_t n) {
  char out[4096];
  for (size_t i = 0; i < n; i++) {
    run_child(cases[i].mode, cases[i].env, out, sizeof(out));
    if (strstr(out, cases[i].expect) == NULL) fail_msg("case %zu: expected \"%s\", got:\n%s", i, cases[i].expect, out);
  }
}

static void test_option_secure_level_light_defaults_off_explicit_kept(void** state) {
  (void)state;
#if MI_TEST_SECURE
  static const level_case_t cases[] = {
      {"plain",
       {NULL},
       "secure_level=2 zero_on_free=1 large_quarantine=64 secure_quarantine=1 guarded_sample_rate=4000"},
      {"plain",
       {"MIMALLOC_SECURE_LEVEL=light", NULL},
       "secure_level=1 zero_on_free=0 large_quarantine=0 secure_quarantine=0 guarded_sample_rate=40000"},
      {"plain",
       {"MIMALLOC_SECURE_LEVEL=1", NULL},
       "secure_level=1 zero_on_free=0 large_quarantine=0 secure_quarantine=0 guarded_sample_rate=40000"},
      {"plain",
       {"MIMALLOC_SECURE_LEVEL=LIGHT", "MIMALLOC_ZERO_ON_FREE=1", NULL},
       "secure_level=1 zero_on_free=1 large_quarantine=0 secure_quarantine=0 guarded_sample_rate=40000"},
      {"plain",
       {"MIMALLOC_SECURE_LEVEL=light", "MIMALLOC_SECURE_QUARANTINE=1", NULL},
       "secure_level=1 zero_on_free=0 large_quarantine=0 secure_quarantine=1 guarded_sample_rate=40000"},
      {"plain",
       {"MIMALLOC_SECURE_LEVEL=full", "MIMALLOC_LARGE_QUARANTINE=3", NULL},
       "secure_level=2 zero_on_free=1 large_quarantine=3 secure_quarantine=1 guarded_sample_rate=4000"},
      {"set_light",
       {NULL},
       "secure_level=1 zero_on_free=0 large_quarantine=0 secure_quarantine=0 guarded_sample_rate=40000"},
  };
#else
  static const level_case_t cases[] = {
      {"plain", {NULL}, "secure_level=0 zero_on_free=0 large_quarantine=0 secure_quarantine=0 guarded_sample_rate=0"},
      {"plain",
       {"MIMALLOC_SECURE_LEVEL=light", NULL},
       "secure_level=1 zero_on_free=0 large_quarantine=0 secure_quarantine=0 guarded_sample_rate=0"},
  };
#endif
  assert_level_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

/* ---------------------------------------------------------------------------- */
typedef struct capture_s {
  char buf[64 * 1024];
  size_t len;
  size_t calls;
} capture_t;

static capture_t cap_default, cap_direct;

static void capture_out(const char* msg, void* arg) {
  capture_t* c = (capture_t*)arg;
  if (c == NULL || msg == NULL) return;
  c->calls++;
  size_t n = strlen(msg);
  if (c->len + n >= sizeof(c->buf)) n = sizeof(c->buf) - 1 - c->len;
  memcpy(c->buf + c->len, msg, n);
  c->len += n;
  c->buf[c->len] = 0;
}

static bool has_text(const capture_t* c) {
  for (size_t i = 0; i < c->len; i++)
    if (c->buf[i] != ' ' && c->buf[i] != '\n' && c->buf[i] != '\t') return true;
  return false;
}

static void test_stats_print_to_given_or_registered_output(void** state) {
  (void)state;
  void* blocks[100];
  for (int i = 0; i < 100; i++) {
    blocks[i] = mi_malloc((size_t)i * 100 + 1);
    assert_non_null(blocks[i]);
  }
  /* explicit output function */
  memset(&cap_direct, 0, sizeof(cap_direct));
  mi_stats_print_out(capture_out, &cap_direct);
  print_message("mi_stats_print_out wrote %zu bytes in %zu calls\n", cap_direct.len, cap_direct.calls);
  assert_true(cap_direct.calls > 0);
  assert_true(has_text(&cap_direct));

  /* registered output function captures default output */
  memset(&cap_default, 0, sizeof(cap_default));
  mi_register_output(capture_out, &cap_default);
  mi_stats_print_out(NULL, NULL);
  size_t after_print_out = cap_default.len;
  mi_stats_print(NULL);
  mi_thread_stats_print_out(NULL, NULL);
  mi_register_output(NULL, NULL); /* back to the default (stderr) */
  print_message("registered output captured %zu bytes (%zu after mi_stats_print_out)\n", cap_default.len,
                after_print_out);
  assert_true(after_print_out > 0);
  assert_true(has_text(&cap_default));
  assert_true(cap_default.len > after_print_out); /* mi_stats_print also went there */

  /* thread stats to an explicit function */
  memset(&cap_direct, 0, sizeof(cap_direct));
  mi_thread_stats_print_out(capture_out, &cap_direct);
  assert_true(has_text(&cap_direct));

  mi_stats_merge();
  mi_stats_reset();
  mi_stats_merge();
  for (int i = 0; i < 100; i++) mi_free(blocks[i]);
  /* stats still print after reset */
  memset(&cap_direct, 0, sizeof(cap_direct));
  mi_stats_print_out(capture_out, &cap_direct);
  assert_true(has_text(&cap_direct));
}

/* mi_stats_print takes the output function as a void* (mimalloc's older
   signature) and calls it with arg NULL */
static capture_t cap_null_arg;
static void capture_null_arg(const char* msg, void* arg) {
  if (arg == NULL) capture_out(msg, &cap_null_arg);
}

static void test_stats_print_given_out_called_text_has_pid(void** state) {
  (void)state;
  memset(&cap_null_arg, 0, sizeof(cap_null_arg));
  mi_output_fun* fun = &capture_null_arg;
  void* out = NULL;
  memcpy(&out, &fun, sizeof(out));
  mi_stats_print(out);
  assert_true(cap_null_arg.calls > 0);
  char pid[32];
  snprintf(pid, sizeof(pid), "pid %ld", (long)getpid());
  if (strstr(cap_null_arg.buf, pid) == NULL) fail_msg("'%s' not in the statistics:\n%s", pid, cap_null_arg.buf);
}

/* The thread's own blocks in use, as its statistics print them. */
#define THREAD_BLOCKS 300
static capture_t cap_thread;
static void* stats_thread(void* arg) {
  (void)arg;
  void* blocks[THREAD_BLOCKS];
  for (int i = 0; i < THREAD_BLOCKS; i++) blocks[i] = mi_malloc(48);
  memset(&cap_thread, 0, sizeof(cap_thread));
  mi_thread_stats_print_out(capture_out, &cap_thread);
  for (int i = 0; i < THREAD_BLOCKS; i++) mi_free(blocks[i]);
  return NULL;
}

static void test_thread_stats_print_out_shows_thread_own_blocks(void** state) {
  (void)state;
  enum { MAIN_BLOCKS = 5000 };
  static void* blocks[MAIN_BLOCKS];
  for (int i = 0; i < MAIN_BLOCKS; i++) blocks[i] = mi_malloc(48);
  /* a guarded sample (secure builds) is a block of its own segment, not of
     the small pages the count walks: none for the thread's blocks (it
     printed 299 in 2 of 100 runs with them, 0 of 150 without) */
  long saved_rate = mi_option_get(mi_option_guarded_sample_rate);
  mi_option_set(mi_option_guarded_sample_rate, 0);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, &stats_thread, NULL), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  mi_option_set(mi_option_guarded_sample_rate, saved_rate);
  for (int i = 0; i < MAIN_BLOCKS; i++) mi_free(blocks[i]);
  const char* line = strstr(cap_thread.buf, "blocks in use ");
  if (line == NULL) fail_msg("no count of blocks in:\n%s", cap_thread.buf);
  long n = strtol(line + strlen("blocks in use "), NULL, 10);
  print_message("the thread printed %ld blocks in use\n", n);
  /* its own 300 (and what the thread set-up took), not the main thread's 5000 */
  assert_true(n >= THREAD_BLOCKS && n < MAIN_BLOCKS);
  char pid[32];
  snprintf(pid, sizeof(pid), "pid %ld", (long)getpid());
  assert_non_null(strstr(cap_thread.buf, pid));
}

/* ---------------------------------------------------------------------------- */
static atomic_int error_calls, error_last;
static void on_error(int err, void* arg) {
  (void)arg;
  atomic_fetch_add(&error_calls, 1);
  atomic_store(&error_last, err);
}

static atomic_int deferred_calls, deferred_forced;
static void on_deferred(bool force, unsigned long long heartbeat, void* arg) {
  (void)heartbeat;
  if (arg != (void*)&deferred_calls) return;
  atomic_fetch_add(&deferred_calls, 1);
  if (force) atomic_fetch_add(&deferred_forced, 1);
}

static void test_error_hook_called_on_impossible_request(void** state) {
  (void)state;
  const bool show = mi_option_is_enabled(mi_option_show_errors);
  mi_option_disable(mi_option_show_errors); /* keep the log quiet */
  mi_register_error(on_error, NULL);
  void* p = mi_malloc(tu_opaque(SIZE_MAX / 2));
  assert_null(p);
  mi_register_error(NULL, NULL);
  mi_option_set_enabled(mi_option_show_errors, show);
  print_message("error handler called %d times, last err %d\n", atomic_load(&error_calls), atomic_load(&error_last));
  assert_true(atomic_load(&error_calls) >= 1);
  int e = atomic_load(&error_last);
  assert_true(e == ENOMEM || e == EOVERFLOW);
}

static void test_deferred_free_hook_called_forced_on_collect(void** state) {
  (void)state;
  mi_register_deferred_free(on_deferred, (void*)&deferred_calls);
  for (int i = 0; i < 200000; i++) {
    void* q = mi_malloc(64 + (size_t)(i % 512));
    assert_non_null(q);
    mi_free(q);
  }
  mi_collect(true);
  mi_register_deferred_free(NULL, NULL);
  print_message("deferred free called %d times (%d forced)\n", atomic_load(&deferred_calls),
                atomic_load(&deferred_forced));
  assert_true(atomic_load(&deferred_forced) >= 1);
}

/* ---------------------------------------------------------------------------- */
static void* thread_init_done(void* arg) {
  (void)arg;
  mi_thread_init();
  mi_thread_init(); /* idempotent */
  void* p = mi_malloc(1000);
  TU_CHECK(p != NULL);
  mi_free(p);
  void* keep = mi_malloc(5000);
  TU_CHECK(keep != NULL);
  if (keep) memset(keep, 0x42, 5000);
  mi_thread_done();
  mi_thread_done(); /* idempotent */
  return keep;      /* freed by the main thread */
}

static void test_process_info_reports_rss_and_commit(void** state) {
  (void)state;
  assert_true(mi_version() >= 100);
  mi_process_init(); /* again: no effect */
  struct timespec ts = {0, 30 * 1000 * 1000};
  nanosleep(&ts, NULL);
  void* big = mi_malloc(8 * MiB);
  assert_non_null(big);
  memset(big, 1, 8 * MiB);
  size_t elapsed = 0, user = 0, sys = 0, rss = 0, peak_rss = 0, commit = 0, peak_commit = 0, faults = 0;
  mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
  print_message(
      "elapsed %zu ms, user %zu ms, sys %zu ms, rss %zu KiB, peak rss %zu KiB, commit %zu KiB, peak commit "
      "%zu KiB, faults %zu\n",
      elapsed, user, sys, rss / KiB, peak_rss / KiB, commit / KiB, peak_commit / KiB, faults);
  assert_true(elapsed >= 10);
  assert_true(rss >= 8 * MiB);
  assert_true(peak_rss >= rss);
  assert_true(commit >= 8 * MiB);
  assert_true(peak_commit >= commit);
  mi_process_info(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL); /* all NULL is fine */
  mi_free(big);
}

static void test_thread_init_done_idempotent_blocks_survive(void** state) {
  (void)state;
  for (int i = 0; i < 4; i++) {
    pthread_t t;
    void* ret = NULL;
    assert_int_equal(pthread_create(&t, NULL, thread_init_done, NULL), 0);
    assert_int_equal(pthread_join(t, &ret), 0);
    assert_non_null(ret);
    assert_true(tu_all_bytes(ret, 5000, 0x42));
    mi_free(ret);
  }
  assert_int_equal(atomic_load(&tu_failures), 0);
  /* main thread init/done too (done on the main thread must leave it usable) */
  mi_thread_init();
  void* p = mi_malloc(10);
  assert_non_null(p);
  mi_free(p);
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "--child") == 0) return child_main(argv[2]);
  mi_process_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_option_set_then_get_returns_value_and_clamps),
      cmocka_unit_test(test_option_enable_disable_toggles_is_enabled),
      cmocka_unit_test(test_option_set_default_keeps_explicit_value),
      cmocka_unit_test(test_option_legacy_names_alias_purge_delay),
      cmocka_unit_test(test_option_size_options_read_in_kib),
      cmocka_unit_test(test_option_every_option_readable),
      cmocka_unit_test(test_option_environment_honoured_between_default_and_set),
      cmocka_unit_test(test_option_secure_level_light_defaults_off_explicit_kept),
      cmocka_unit_test(test_stats_print_to_given_or_registered_output),
      cmocka_unit_test(test_stats_print_given_out_called_text_has_pid),
      cmocka_unit_test(test_thread_stats_print_out_shows_thread_own_blocks),
      cmocka_unit_test(test_error_hook_called_on_impossible_request),
      cmocka_unit_test(test_deferred_free_hook_called_forced_on_collect),
      cmocka_unit_test(test_process_info_reports_rss_and_commit),
      cmocka_unit_test(test_thread_init_done_idempotent_blocks_survive),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
