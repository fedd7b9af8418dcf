/* The pprof sampler's calls and environment: starting with settings
   resolved from the call and MIMALLOC_PROF_*, the dumps to a file or a
   writer, the dump at exit (MIMALLOC_PROF_DUMP_AT_EXIT, "%p" the process
   id so a forked child never overwrites its parent's file), and the dumps
   of a running process (on a signal, every N bytes allocated, at the in-use
   bytes' new highs), written by the background thread.

   A dump is built whole in OS memory first and written after the
   profiler's lock is released: a writer may allocate, and what it allocates
   is sampled like any other allocation. Files are written through the
   primitives (open and write: nothing allocated). */
#include "prof.h"

#include <stdio.h> /* snprintf: no allocation */

#if MI_PPROF

/* ---- The environment ------------------------------------------------------------------ */

static bool mi_prof_env(const char* name, char* buf, size_t size) {
  return (mi_prim_getenv(name, buf, size) && buf[0] != 0);
}

/* A plain decimal number (no K or M suffix, as the seed reads them). */
static bool mi_prof_env_u64(const char* name, uint64_t* value) {
  char buf[64];
  if (!mi_prof_env(name, buf, sizeof(buf))) return false;
  uint64_t v = 0;
  const char* s = buf;
  if (*s < '0' || *s > '9') return false;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  if (*s != 0) return false;
  *value = v;
  return true;
}

static bool mi_prof_env_bool(const char* name, bool* value) {
  char buf[16];
  if (!mi_prof_env(name, buf, sizeof(buf))) return false;
  *value = (buf[0] == '1' || buf[0] == 'y' || buf[0] == 'Y' || buf[0] == 't' || buf[0] == 'T' ||
            ((buf[0] == 'o' || buf[0] == 'O') && (buf[1] == 'n' || buf[1] == 'N')));
  return true;
}

/* "proto" or "1", in any case, means the proto format; anything else text. */
static bool mi_prof_env_format(int* format) {
  char buf[16];
  if (!mi_prof_env("MIMALLOC_PROF_DUMP_FORMAT", buf, sizeof(buf))) return false;
  bool proto = (strcmp(buf, "1") == 0);
  if (strlen(buf) == 5) {
    char low[6];
    for (int i = 0; i < 6; i++) low[i] = (char)((buf[i] >= 'A' && buf[i] <= 'Z') ? buf[i] - 'A' + 'a' : buf[i]);
    proto = (strcmp(low, "proto") == 0);
  }
  *format = (proto ? MI_PROF_FORMAT_PROTO : MI_PROF_FORMAT_TEXT);
  return true;
}

static bool mi_prof_env_interval(uint64_t* value) {
  return (mi_prof_env_u64("MIMALLOC_PROF_SAMPLE_INTERVAL", value) ||
          mi_prof_env_u64("MIMALLOC_PROF_SAMPLE_RATE", value));
}

size_t _mi_prof_configured_period(void) {
  uint64_t v;
  if (mi_prof_env_interval(&v) && v != 0) return (size_t)v;
  return MI_PROF_DEFAULT_INTERVAL;
}

/* ---- The exit dump ---------------------------------------------------------------------- */

static char mi_prof_exit_path[1024];
static int mi_prof_exit_format;
static _Atomic(bool) mi_prof_exit_pending;

static void mi_prof_exit_set(const char* path, int format) {
  if (path == NULL || path[0] == 0 || strlen(path) >= sizeof(mi_prof_exit_path)) return;
  memcpy(mi_prof_exit_path, path, strlen(path) + 1);
  mi_prof_exit_format = format;
  atomic_store_explicit(&mi_prof_exit_pending, true, memory_order_release);
}

/* ---- Dumps of a running process: on a signal, every N bytes --------------------------------- */

/* MIMALLOC_PROF_SIGNAL=<signal> arms a handler that only sets a flag; the
   background thread, polling while it is armed, writes the dump.
   MIMALLOC_PROF_DUMP_INTERVAL=<bytes> asks one each time that many more
   bytes were allocated (counted at the sample points: exact to a gap). The
   files are <MIMALLOC_PROF_DUMP_PREFIX>.<n>.heap (or .pb.gz with the proto
   format), n = 1, 2, ...; the prefix defaults to mimalloc-prof.%p. */
static char mi_prof_prefix[1024];
static int mi_prof_live_format;
static bool mi_prof_signal_armed;
static _Atomic(bool) mi_prof_signal_pending;
static _Atomic(bool) mi_prof_interval_pending;
static _Atomic(uint32_t) mi_prof_dump_seq;
static uint64_t mi_prof_dump_interval;
static _Atomic(uint64_t) mi_prof_allocated;
static _Atomic(uint64_t) mi_prof_next_dump_at;

/* The dumps at the in-use bytes' highs (issue 42: a program that frees
   everything before it exits, an interpreter, leaves an exit profile with
   nothing in it). MIMALLOC_PROF_DUMP_INUSE_INTERVAL=<bytes>: a numbered
   dump (as above) each time the in-use estimate passes the last level
   dumped by that much; MIMALLOC_PROF_DUMP_AT_PEAK=<path>: one file, written
   again at each such rise (by 1/16 of the last level, at least 1 MiB, when
   no interval is set), so that it ends with the largest heap. The estimate
   is the profile's own (record.c), compared at the sample points only; the
   snapshot of the profile at the level is taken there, by the allocating
   thread under the profiler's lock (a copy: no I/O), and written here by
   the background thread, or at exit when it had no time to. A rise while
   one waits replaces it (the newer is the higher). */
static uint64_t mi_prof_inuse_interval;
static char mi_prof_peak_path[1024]; /* "": none */
static _Atomic(mi_prof_snapshot_t*) mi_prof_inuse_pending;

#if !defined(_WIN32)
static void mi_prof_on_signal(int sig) {
  (void)sig;
  atomic_store_explicit(&mi_prof_signal_pending, true, memory_order_release);
}
#endif

/* A dump for the background thread to write: a pass made due now, then the
   wake. A wake alone was lost when it came as the thread, idle, was ending
   (segment/background.c: the thread runs on, or its waker starts another,
   only for something due), and the last dump asked stayed unwritten: a
   peak file short of the peak (test-prof-highwater, once in a CI run). */
static void mi_prof_background_ask(void) {
  _mi_background_due_in(0);
  _mi_background_wake(); /* (the due time may have been lower already) */
}

void _mi_prof_note_allocated(uint64_t bytes) {
  if (mi_prof_dump_interval == 0) return;
  uint64_t total = atomic_fetch_add_explicit(&mi_prof_allocated, bytes, memory_order_relaxed) + bytes;
  uint64_t next = atomic_load_explicit(&mi_prof_next_dump_at, memory_order_relaxed);
  if (total < next) return;
  uint64_t after = total - total % mi_prof_dump_interval + mi_prof_dump_interval;
  if (atomic_compare_exchange_strong_explicit(&mi_prof_next_dump_at, &next, after, memory_order_relaxed,
                                              memory_order_relaxed)) {
    atomic_store_explicit(&mi_prof_interval_pending, true, memory_order_release);
    mi_prof_background_ask();
  }
}

int64_t _mi_prof_background_poll_ms(void) {
  return (mi_prof_signal_armed && mi_prof_is_on() ? 100 : -1);
}

static bool mi_prof_dump_file(const char* path, bool proto);
static void mi_prof_inuse_write(mi_prof_snapshot_t* snap);

void _mi_prof_inuse_high(mi_prof_snapshot_t* snap) {
  mi_prof_snapshot_t* older = atomic_exchange_explicit(&mi_prof_inuse_pending, snap, memory_order_acq_rel);
  _mi_prof_snapshot_release(older); /* not written yet, and lower */
  mi_prof_background_ask();
}

/* The next numbered file's name: <prefix>.<n>.heap, or .pb.gz. */
static void mi_prof_numbered_path(char* path, size_t size, bool proto) {
  uint32_t n = atomic_fetch_add_explicit(&mi_prof_dump_seq, 1, memory_order_relaxed) + 1;
  (void)snprintf(path, size, "%s.%u%s", mi_prof_prefix, (unsigned)n, proto ? ".pb.gz" : ".heap");
}

void _mi_prof_background_tick(void) {
  mi_prof_snapshot_t* high = atomic_exchange_explicit(&mi_prof_inuse_pending, NULL, memory_order_acq_rel);
  if (high != NULL) mi_prof_inuse_write(high); /* (even after a stop: the level was reached) */
  bool asked = atomic_exchange_explicit(&mi_prof_signal_pending, false, memory_order_acq_rel);
  asked = atomic_exchange_explicit(&mi_prof_interval_pending, false, memory_order_acq_rel) || asked;
  if (!asked || !mi_prof_is_on()) return;
  bool proto = (mi_prof_live_format == MI_PROF_FORMAT_PROTO);
  char path[1100];
  mi_prof_numbered_path(path, sizeof(path), proto);
  if (!mi_prof_dump_file(path, proto)) {
    _mi_warning_message("the heap profile could not be written to %s (error %d)\n", path, errno);
  }
}

/* The in-use watch's settings (record.c keeps the estimate only with one
   of them), read at each start. */
static bool mi_prof_inuse_env(uint64_t* interval, char* peak, size_t peak_size) {
  *interval = 0;
  (void)mi_prof_env_u64("MIMALLOC_PROF_DUMP_INUSE_INTERVAL", interval);
  if (!mi_prof_env("MIMALLOC_PROF_DUMP_AT_PEAK", peak, peak_size)) peak[0] = 0;
  return (*interval != 0 || peak[0] != 0);
}

/* The live dumps' settings, read at each start. */
static void mi_prof_live_dumps_setup(int format, uint64_t inuse_interval, const char* peak) {
  mi_prof_live_format = format;
  if (!mi_prof_env("MIMALLOC_PROF_DUMP_PREFIX", mi_prof_prefix, sizeof(mi_prof_prefix))) {
    memcpy(mi_prof_prefix, "mimalloc-prof.%p", sizeof("mimalloc-prof.%p"));
  }
  uint64_t interval = 0;
  (void)mi_prof_env_u64("MIMALLOC_PROF_DUMP_INTERVAL", &interval);
  atomic_store_explicit(&mi_prof_allocated, 0, memory_order_relaxed);
  atomic_store_explicit(&mi_prof_next_dump_at, interval, memory_order_relaxed);
  mi_prof_dump_interval = interval;
  mi_prof_inuse_interval = inuse_interval;
  memcpy(mi_prof_peak_path, peak, strlen(peak) + 1);
  char sig[32];
#if defined(_WIN32)
  /* Windows has no signal to ask for a dump with: the option is read and
     said so, once; the interval and exit dumps are there instead */
  static bool signal_refused;
  if (!signal_refused && mi_prof_env("MIMALLOC_PROF_SIGNAL", sig, sizeof(sig))) {
    signal_refused = true;
    _mi_warning_message(
        "MIMALLOC_PROF_SIGNAL=%s: no signals on Windows, no dump on a signal "
        "(MIMALLOC_PROF_DUMP_INTERVAL and the exit dump work)\n",
        sig);
  }
#else
  if (!mi_prof_signal_armed && mi_prof_env("MIMALLOC_PROF_SIGNAL", sig, sizeof(sig))) {
    mi_prof_signal_armed = mi_prim_signal_handler_install(sig, &mi_prof_on_signal);
    if (!mi_prof_signal_armed) _mi_warning_message("MIMALLOC_PROF_SIGNAL: no signal %s to take\n", sig);
  }
#endif
  /* the background thread polls for the signal's flag: have it running */
  if (mi_prof_signal_armed || interval != 0) _mi_background_wake();
}

/* ---- Starting --------------------------------------------------------------------------- */

/* A field of the call wins when it is set and the mode overrides, or when
   the environment does not set it. */
static uint64_t mi_prof_pick(int mode, uint64_t field, bool env_set, uint64_t env, uint64_t fallback) {
  if (field != 0 && (mode == MI_PROF_CONFIG_OVERRIDE || !env_set)) return field;
  if (env_set) return env;
  return fallback;
}

bool mi_prof_start_ex(const mi_prof_config_t* config) {
  mi_prof_config_t none;
  memset(&none, 0, sizeof(none));
  none.size = sizeof(none);
  none.version = MI_PROF_CONFIG_VERSION;
  if (config == NULL) config = &none;
  if (config->size != sizeof(mi_prof_config_t) || config->version != MI_PROF_CONFIG_VERSION) return false;
  int mode = config->mode;
  uint64_t v = 0; /* (passed on, unread, when no variable is set) */
  bool set = mi_prof_env_interval(&v);
  uint64_t period = mi_prof_pick(mode, config->sample_interval, set && v != 0, v, MI_PROF_DEFAULT_INTERVAL);
  set = mi_prof_env_u64("MIMALLOC_PROF_MAX_BYTES", &v);
  uint64_t max_bytes = mi_prof_pick(mode, config->max_profiler_bytes, set, v, 0);
  set = mi_prof_env_u64("MIMALLOC_PROF_SEED", &v);
  uint64_t seed = mi_prof_pick(mode, config->seed, set, v, 0);
  set = mi_prof_env_u64("MIMALLOC_PROF_BT_MAX", &v);
  uint64_t depth = mi_prof_pick(mode, config->max_stack_depth, set && v != 0, v, MI_PROF_DEFAULT_DEPTH);
  bool accum = false;
  set = mi_prof_env_bool("MIMALLOC_PROF_ACCUM", &accum);
  accum = (mi_prof_pick(mode, config->accum ? 1 : 0, set, accum ? 1 : 0, 0) != 0);
  int format = MI_PROF_FORMAT_TEXT;
  set = mi_prof_env_format(&format);
  format = (int)mi_prof_pick(mode, (uint64_t)config->dump_format, set, (uint64_t)format, MI_PROF_FORMAT_TEXT);
  char env_path[1024];
  set = mi_prof_env("MIMALLOC_PROF_DUMP_AT_EXIT", env_path, sizeof(env_path));
  const char* exit_path =
      (config->dump_at_exit != NULL && (mode == MI_PROF_CONFIG_OVERRIDE || !set) ? config->dump_at_exit
                                                                                 : (set ? env_path : NULL));
  mi_prof_settings_t settings;
  memset(&settings, 0, sizeof(settings));
  settings.period = (size_t)period;
  settings.seed = seed;
  settings.accum = accum;
  settings.depth = (size_t)depth;
  settings.max_bytes = (size_t)max_bytes;
  uint64_t inuse_interval = 0;
  char peak[sizeof(mi_prof_peak_path)];
  settings.inuse_watch = mi_prof_inuse_env(&inuse_interval, peak, sizeof(peak));
  settings.inuse_step = inuse_interval;
  if (!_mi_prof_start_with(&settings)) return false;
  if (exit_path != NULL) mi_prof_exit_set(exit_path, format);
  mi_prof_live_dumps_setup(format, inuse_interval, peak);
  return true;
}

bool mi_prof_start_seeded(size_t sample_rate, uint64_t seed) {
  mi_prof_config_t_decl(config);
  config.mode = MI_PROF_CONFIG_OVERRIDE;
  config.sample_interval = sample_rate;
  config.seed = seed;
  return mi_prof_start_ex(&config);
}

bool mi_prof_start(size_t sample_rate) {
  return mi_prof_start_seeded(sample_rate, 0);
}

/* ---- Dumping ------------------------------------------------------------------------------- */

/* The file of `snap` (taken by the caller, released here). */
static bool mi_prof_build_from(mi_prof_snapshot_t* snap, bool proto, bool gzip, mi_prof_buf_t* out) {
  memset(out, 0, sizeof(*out));
  _mi_prof_thread_enter(); /* what the writers call is not sampled */
  _mi_prof_snapshot_trim(snap);
  bool ok = (snap != NULL);
  if (ok) ok = (proto ? _mi_prof_proto_build(snap, gzip, out) : _mi_prof_text_build(snap, out));
  _mi_prof_snapshot_release(snap);
  _mi_prof_thread_leave();
  if (!ok || out->failed) {
    _mi_prof_buf_free(out);
    return false;
  }
  return true;
}

static bool mi_prof_build(bool proto, bool gzip, mi_prof_buf_t* out) {
  return mi_prof_build_from(_mi_prof_snapshot_take(), proto, gzip, out);
}

static bool mi_prof_dump_to(bool proto, mi_prof_write_fun* write, void* arg) {
  if (write == NULL || _mi_prof_thread_busy()) return false;
  mi_prof_buf_t out;
  if (!mi_prof_build(proto, false, &out)) return false;
  write(arg, out.data, out.len);
  _mi_prof_buf_free(&out);
  return true;
}

bool mi_prof_dump_writer(mi_prof_write_fun* write, void* arg) {
  return mi_prof_dump_to(false, write, arg);
}

bool mi_prof_dump_proto_writer(mi_prof_write_fun* write, void* arg) {
  return mi_prof_dump_to(true, write, arg);
}

static bool mi_prof_write_file(const char* path, const mi_prof_buf_t* out) {
  char name[1024];
  if (path == NULL || !_mi_path_with_pid(path, name, sizeof(name))) {
    errno = EINVAL;
    return false;
  }
  int fd = -1;
  int err = mi_prim_file_create(name, &fd);
  if (err == 0) {
    err = mi_prim_file_write(fd, out->data, out->len);
    int cerr = mi_prim_file_close(fd);
    if (err == 0) err = cerr;
  }
  if (err != 0) errno = err;
  return (err == 0);
}

static bool mi_prof_dump_file(const char* path, bool proto) {
  if (_mi_prof_thread_busy()) return false;
  size_t len = (path == NULL ? 0 : strlen(path));
  bool gzip = (proto && len >= 3 && strcmp(path + len - 3, ".gz") == 0);
  mi_prof_buf_t out;
  if (!mi_prof_build(proto, gzip, &out)) {
    errno = ENOMEM;
    return false;
  }
  bool ok = mi_prof_write_file(path, &out);
  _mi_prof_buf_free(&out);
  return ok;
}

bool mi_prof_dump(const char* path) {
  return mi_prof_dump_file(path, false);
}

bool mi_prof_dump_proto(const char* path) {
  return mi_prof_dump_file(path, true);
}

/* A file written whole under another name first, then renamed over `path`:
   a reader of the peak file, rewritten while the program runs, finds the
   previous profile or the new one, never part of one. */
static bool mi_prof_replace_file(const char* path, const mi_prof_buf_t* out) {
  char name[1024], tmp[1100];
  if (!_mi_path_with_pid(path, name, sizeof(name))) {
    errno = EINVAL;
    return false;
  }
  (void)snprintf(tmp, sizeof(tmp), "%s.tmp", name);
  if (!mi_prof_write_file(tmp, out)) return false;
  int err = mi_prim_file_rename(tmp, name);
  if (err != 0) errno = err;
  return (err == 0);
}

/* A snapshot taken at a new high of the in-use bytes: the next numbered
   file (with MIMALLOC_PROF_DUMP_INUSE_INTERVAL) and the peak file (with
   MIMALLOC_PROF_DUMP_AT_PEAK), in the live dumps' format; the snapshot
   released. */
static void mi_prof_inuse_write(mi_prof_snapshot_t* snap) {
  bool proto = (mi_prof_live_format == MI_PROF_FORMAT_PROTO);
  size_t len = strlen(mi_prof_peak_path);
  bool peak_gzip = (proto && len >= 3 && strcmp(mi_prof_peak_path + len - 3, ".gz") == 0);
  mi_prof_buf_t plain, gz;
  memset(&gz, 0, sizeof(gz));
  bool ok = mi_prof_build_from(snap, proto, false, &plain);
  if (ok && proto && (mi_prof_inuse_interval != 0 || peak_gzip)) ok = _mi_prof_gzip(&plain, &gz) && !gz.failed;
  if (!ok) {
    _mi_warning_message("the heap profile at a new in-use high could not be built (out of memory)\n");
  } else {
    if (mi_prof_inuse_interval != 0) {
      char path[1100];
      mi_prof_numbered_path(path, sizeof(path), proto);
      if (!mi_prof_write_file(path, proto ? &gz : &plain)) {
        _mi_warning_message("the heap profile could not be written to %s (error %d)\n", path, errno);
      }
    }
    if (len != 0 && !mi_prof_replace_file(mi_prof_peak_path, peak_gzip ? &gz : &plain)) {
      _mi_warning_message("the heap profile could not be written to %s (error %d)\n", mi_prof_peak_path, errno);
    }
  }
  _mi_prof_buf_free(&plain);
  _mi_prof_buf_free(&gz);
}

/* ---- Process ------------------------------------------------------------------------------ */

void _mi_prof_process_init(void) {
  _mi_prof_lock_init();
  char path[1024];
  int format = MI_PROF_FORMAT_TEXT;
  (void)mi_prof_env_format(&format);
  if (mi_prof_env("MIMALLOC_PROF_DUMP_AT_EXIT", path, sizeof(path))) mi_prof_exit_set(path, format);
  if (mi_option_is_enabled(mi_option_prof) && !mi_prof_start(0)) {
    _mi_warning_message("the pprof sampler could not start (MIMALLOC_PROF)\n");
  }
}

void _mi_prof_process_done(void) {
  /* a high the background thread had no time to write (it is stopped by now) */
  mi_prof_snapshot_t* high = atomic_exchange_explicit(&mi_prof_inuse_pending, NULL, memory_order_acq_rel);
  if (high != NULL) mi_prof_inuse_write(high);
  if (!atomic_exchange_explicit(&mi_prof_exit_pending, false, memory_order_acq_rel)) return;
  if (!mi_prof_dump_file(mi_prof_exit_path, mi_prof_exit_format == MI_PROF_FORMAT_PROTO)) {
    _mi_warning_message("the heap profile could not be written to %s (error %d)\n", mi_prof_exit_path, errno);
  }
}

/* ---- Listening to the rare events (base/listeners.h) ---------------------------------- */

/* fork(): a high the parent reached and has not written yet is the
   parent's to write. */
static void mi_prof_fork_child(void) {
  _mi_prof_after_fork_child();
  _mi_prof_snapshot_release(atomic_exchange_explicit(&mi_prof_inuse_pending, NULL, memory_order_acq_rel));
}

static void mi_prof_page_gone(const mi_page_t* page) {
  if (mi_unlikely(mi_prof_is_on())) _mi_prof_record_page_gone(page); /* its samples are freed */
}
mi_listener_define(mi_prof_listener) = {
    .name = "pprof",
    .order = MI_LISTEN_PPROF,
    .process_ready = &_mi_prof_process_init, /* MIMALLOC_PROF=1: the sampler starts now */
    .process_done = &_mi_prof_process_done,
    .thread_done = &_mi_prof_thread_done, /* its pending resizes of sampled blocks */
    .fork_child = &mi_prof_fork_child,
    .page_gone = &mi_prof_page_gone,
    /* the dumps asked by a signal (polled while one is armed), by the bytes
       allocated or by the in-use bytes' highs */
    .background_poll_ms = &_mi_prof_background_poll_ms,
    .background_tick = &_mi_prof_background_tick,
};
#endif
