/* The sampled heap profiler's internal interface (src/prof): the sampler
   (sampler.c), the records and stack table (record.c), the snapshot the
   writers read (snapshot.c), the heap_v2 text writer (text.c), the
   profile.proto writer (proto.c, gzip.c), the loaded modules (modules.c) and
   the output buffer (buf.c). Nothing here allocates from the allocator:
   every table and buffer comes from the OS (_mi_os_alloc_meta). */
#ifndef MI_PROF_INTERNAL_H
#define MI_PROF_INTERNAL_H

#include "../heap/heap.h"
#include "hooks.h"
#include "../dhat/dhat.h"

#define MI_PROF_DEFAULT_INTERVAL ((size_t)512 * 1024)
#define MI_PROF_MAX_DEPTH 128
#define MI_PROF_DEFAULT_DEPTH 32
#define MI_PROF_MAX_STACKS 65536

/* ---- sampler.c: the per-thread decision -------------------------------------------- */
/* Whether the allocation of `size` bytes the calling thread just made is a sample. */
bool _mi_prof_sample_decide(size_t size) mi_decl_hidden;
/* dump.c: `bytes` more were allocated (counted at each sample point): the
   interval dumps (MIMALLOC_PROF_DUMP_INTERVAL) are asked from here. */
void _mi_prof_note_allocated(uint64_t bytes) mi_decl_hidden;
/* A new start with mean interval `period` and `seed` (threads draw anew lazily). */
void _mi_prof_sampler_restart(size_t period, uint64_t seed) mi_decl_hidden;
void _mi_prof_heap_sample_point(size_t size, uint64_t gap) mi_decl_hidden;

/* ---- record.c: the tables, for the writers and the environment --------------------- */
/* A start's settings, resolved (dump.c resolves them from the calls and the environment). */
typedef struct mi_prof_settings_s {
  size_t period; /* R (0: the default) */
  uint64_t seed; /* 0: random */
  bool accum;
  size_t depth;     /* frames kept (0: the default) */
  size_t max_bytes; /* the profiler's budget (0: none) */
  /* the in-use high-water watch (dump.c: MIMALLOC_PROF_DUMP_INUSE_INTERVAL,
     MIMALLOC_PROF_DUMP_AT_PEAK): off, nothing is kept for it; on, a rise of
     the in-use estimate by `inuse_step` bytes past the last level reached
     takes a snapshot for dump.c (0: a rise of 1/16 of that level, at least
     MI_PROF_INUSE_MIN_STEP) */
  bool inuse_watch;
  uint64_t inuse_step;
} mi_prof_settings_t;
#define MI_PROF_INUSE_MIN_STEP ((uint64_t)1 << 20)
bool _mi_prof_start_with(const mi_prof_settings_t* settings) mi_decl_hidden;
/* A copy of the stacks with samples (OS memory); NULL without memory. */
mi_prof_snapshot_t* _mi_prof_snapshot_take(void) mi_decl_hidden;
void _mi_prof_snapshot_release(mi_prof_snapshot_t* snap) mi_decl_hidden;
/* snapshot.c: the allocator's own frames dropped from the stacks' tops
   where they cannot be told by address (the allocator linked in); outside
   the lock (it symbolises). */
void _mi_prof_snapshot_trim(mi_prof_snapshot_t* snap) mi_decl_hidden;
void _mi_prof_lock_init(void) mi_decl_hidden;
/* resize.c's `_locked` functions assert the profiler's lock (record.c's) at
   their entry: the lock-order checker's assertion, nothing otherwise */
#if MI_LOCKORDER
void _mi_prof_lock_assert_held(const char* file, int line) mi_decl_hidden;
#define mi_prof_assert_locked() _mi_prof_lock_assert_held(__FILE__, __LINE__)
#else
#define mi_prof_assert_locked() ((void)0)
#endif
/* The calling thread runs the profiler's own code: its allocations are not sampled. */
void _mi_prof_thread_enter(void) mi_decl_hidden;
void _mi_prof_thread_leave(void) mi_decl_hidden;
bool _mi_prof_thread_busy(void) mi_decl_hidden;
extern _Atomic(uint64_t) _mi_prof_generation mi_decl_hidden;

/* The record of `key`, if any, takes `size` (under the lock: resize.c). */
void _mi_prof_rec_resize_locked(uintptr_t key, uint64_t size) mi_decl_hidden;

/* ---- resize.c: in-place resizes of sampled blocks, kept per thread ------------------ */
/* record.c: an in-place resize the thread's table does not hold. */
void _mi_prof_resize_slow(void* p, uint64_t size) mi_decl_hidden;
/* Under the lock: */
void _mi_prof_resize_track_locked(uintptr_t key, uint64_t size) mi_decl_hidden;
void _mi_prof_resize_flush_locked(void) mi_decl_hidden;
void _mi_prof_resize_forget_locked(uintptr_t key) mi_decl_hidden;
void _mi_prof_resize_clear_locked(void) mi_decl_hidden;
void _mi_prof_resize_thread_done_locked(void) mi_decl_hidden;
void _mi_prof_resize_after_fork_child_locked(void) mi_decl_hidden;
bool _mi_prof_resize_thread_has_table(void) mi_decl_hidden;
bool _mi_prof_resize_may_track(void) mi_decl_hidden;

/* ---- dump.c: the settings the environment gives -------------------------------------- */
/* The mean interval a start with none would take (environment, then 524288). */
size_t _mi_prof_configured_period(void) mi_decl_hidden;
/* The in-use estimate rose to a new high (record.c, at a sample point, the
   lock released): `snap`, the profile at that level, is dump.c's to write
   from the background thread (or at exit), and to release. */
void _mi_prof_inuse_high(mi_prof_snapshot_t* snap) mi_decl_hidden;

/* ---- buf.c: output built in OS memory, written once the lock is released ---- */
typedef struct mi_prof_buf_s {
  char* data; /* from the OS; NULL before the first byte */
  size_t len;
  size_t cap;
  bool failed; /* an OS allocation failed: the output is unusable */
} mi_prof_buf_t;
void _mi_prof_buf_put(mi_prof_buf_t* buf, const void* data, size_t len) mi_decl_hidden;
void _mi_prof_buf_str(mi_prof_buf_t* buf, const char* s) mi_decl_hidden;
void _mi_prof_buf_u64(mi_prof_buf_t* buf, uint64_t v) mi_decl_hidden; /* decimal */
void _mi_prof_buf_hex(mi_prof_buf_t* buf, uint64_t v) mi_decl_hidden; /* "0x" and lowercase hex */
void _mi_prof_buf_free(mi_prof_buf_t* buf) mi_decl_hidden;

/* ---- snapshot.c: a copy of the samples, taken under the lock -------------------- */
typedef struct mi_prof_entry_s {
  const uintptr_t* frames; /* return addresses, innermost (the program's call) first */
  uint32_t depth;
  uint64_t live_objs; /* raw sampled counts */
  uint64_t live_bytes;
  uint64_t accum_objs;
  uint64_t accum_bytes;
} mi_prof_entry_t;

struct mi_prof_snapshot_s {
  size_t mapped; /* bytes of OS memory the snapshot holds */
  size_t count;  /* entries (stacks with samples) */
  mi_prof_entry_t* entries;
  size_t period; /* R, the mean sample interval (1: every allocation) */
  bool accum;
  uint64_t dropped_samples;
  uint64_t stack_table_overflows;
  uint64_t start_nanos; /* wall clock when the profiler started */
  uint64_t taken_nanos; /* wall clock when the snapshot was taken */
};

/* ---- Logarithm and exponential without libm (the library links none) ------------ */
/* ln(x) for a normal x > 0 (the sampler's draw, at every sample): x = m 2^e
   from the double's bits, m taken into [sqrt(1/2), sqrt(2)), and
   ln m = 2 atanh(z), z = (m-1)/(m+1), |z| <= 0.1716, whose odd series
   reaches 1e-16 by z^21: one division, the rest multiplications. */
static inline double _mi_prof_ln(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof(bits));
  int e = (int)((bits >> 52) & 0x7FF) - 1023;
  bits = (bits & 0x000FFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL; /* m in [1, 2) */
  double m;
  memcpy(&m, &bits, sizeof(m));
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e++;
  }
  double z = (m - 1.0) / (m + 1.0);
  double z2 = z * z;
  double p = 1.0 / 21;
  p = p * z2 + 1.0 / 19;
  p = p * z2 + 1.0 / 17;
  p = p * z2 + 1.0 / 15;
  p = p * z2 + 1.0 / 13;
  p = p * z2 + 1.0 / 11;
  p = p * z2 + 1.0 / 9;
  p = p * z2 + 1.0 / 7;
  p = p * z2 + 1.0 / 5;
  p = p * z2 + 1.0 / 3;
  p = p * z2 + 1.0;
  return 2.0 * z * p + e * 0.69314718055994530942;
}
/* exp(x): x = k ln2 + r with |r| <= ln2 / 2, exp(r) by its series. */
static inline double _mi_prof_exp(double x) {
  if (x < -700.0) return 0.0;
  if (x > 700.0) x = 700.0;
  double kf = x / 0.69314718055994530942;
  int k = (int)(kf < 0 ? kf - 0.5 : kf + 0.5);
  double r = x - k * 0.69314718055994530942;
  double term = 1.0, sum = 1.0;
  for (int i = 1; i < 20; i++) {
    term *= r / i;
    sum += term;
  }
  while (k > 0) {
    sum *= 2.0;
    k--;
  }
  while (k < 0) {
    sum *= 0.5;
    k++;
  }
  return sum;
}

/* ---- The unsampling pprof applies (legacy_profile.go's scaleHeapSample) ---- */
static inline void _mi_prof_unsample(uint64_t count, uint64_t bytes, uint64_t period, int64_t* ocount,
                                     int64_t* obytes) {
  if (count == 0 || bytes == 0) {
    *ocount = 0;
    *obytes = 0;
    return;
  }
  if (period <= 1) {
    *ocount = (int64_t)count;
    *obytes = (int64_t)bytes;
    return;
  }
  double avg = (double)bytes / (double)count;
  double scale = 1.0 / (1.0 - _mi_prof_exp(-avg / (double)period));
  *ocount = (int64_t)((double)count * scale);
  *obytes = (int64_t)((double)bytes * scale);
}

/* ---- proto.c: profile.proto of a snapshot (gzip-compressed if asked) ----------- */
bool _mi_prof_proto_build(const mi_prof_snapshot_t* snap, bool gzip, mi_prof_buf_t* out) mi_decl_hidden;
/* ---- gzip.c: a gzip container of deflate stored blocks (no zlib) ------------------ */
bool _mi_prof_gzip(const mi_prof_buf_t* in, mi_prof_buf_t* out) mi_decl_hidden;
/* ---- text.c: heap_v2 text of a snapshot, with the allocator's exact counters ------ */
bool _mi_prof_text_build(const mi_prof_snapshot_t* snap, mi_prof_buf_t* out) mi_decl_hidden;

/* ---- modules.c: the loaded modules ----------------------------------------------- */
typedef struct mi_prof_mapping_s {
  uintptr_t start; /* an executable segment of a module, as /proc/self/maps has it */
  uintptr_t limit;
  uint64_t file_offset;
  const char* path; /* valid until the modules are released */
  uint8_t build_id[20];
  size_t build_id_len; /* 0: none */
} mi_prof_mapping_t;
/* The executable mappings of the process, the main program first, in OS
   memory (release with _mi_prof_mappings_free); false without memory.
   (Windows, modules-windows.c: one mapping per module, its whole image at
   file offset 0.) */
bool _mi_prof_mappings(mi_prof_mapping_t** maps, size_t* count) mi_decl_hidden;
void _mi_prof_mappings_free(mi_prof_mapping_t* maps, size_t count) mi_decl_hidden;
/* The text format's memory map: "MAPPED_LIBRARIES:\n", then /proc/self/maps
   verbatim (Windows: one "start-limit r-xp 00000000 00:00 0    path" line
   per module); false if it could not be read or memory ran out. */
bool _mi_prof_maps_text(mi_prof_buf_t* out) mi_decl_hidden;
/* For the platforms' lists: room for `count` mappings and `path_bytes` of
   their paths (at *paths) in one zeroed OS block, released by
   _mi_prof_mappings_free; and the mapping holding `addr` (the main
   program's) moved first. */
mi_prof_mapping_t* _mi_prof_maps_alloc(size_t count, size_t path_bytes, char** paths) mi_decl_hidden;
void _mi_prof_maps_main_first(mi_prof_mapping_t* maps, size_t count, uintptr_t addr) mi_decl_hidden;

#endif
