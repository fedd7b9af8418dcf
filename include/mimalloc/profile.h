/* mimalloc-pprof: sampled heap profiling in pprof's formats.

   Built in with the CMake option MI_PPROF (on by default) and idle until
   started: from the environment (MIMALLOC_PROF=1, see docs/pprof.md) or with
   mi_prof_start*. While it runs, each allocation of s bytes is sampled with
   probability 1 - exp(-s/R) (R: the sample interval, 512 KiB by default),
   which is what pprof's unsampling assumes; a sampled block keeps the stack
   of the program's call that made it (frame 0: the caller of malloc,
   mi_malloc, operator new, ...). mi_prof_dump writes the live set as
   gperftools' heap_v2 text, mi_prof_dump_proto as profile.proto (gzip when
   the path ends in ".gz"); both open with `pprof` and `go tool pprof`.

   The profiler's memory comes from the OS, never from the heap it profiles.
   A sample it cannot record (budget, OS memory) is dropped and counted; the
   program's allocation never fails for it. In a build without the profiler
   these functions exist and fail (start and dump return false). */
#ifndef MIMALLOC_PROFILE_H
#define MIMALLOC_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h> /* mi_prof_stats_t_decl */

#include "../mimalloc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Starting and stopping ------------------------------------------------ */

/* Start sampling with a mean of `sample_rate` bytes between samples (0: the
   environment's MIMALLOC_PROF_SAMPLE_INTERVAL, then MIMALLOC_PROF_SAMPLE_RATE,
   then 524288; 1: every allocation). False if already running, or called
   from a visitor, or not built in. */
mi_decl_nodiscard mi_decl_export bool mi_prof_start(size_t sample_rate) mi_attr_noexcept;
/* The same with the sampler's seed (0: a random one). The same seed, thread
   creation order and allocation sequence give the same samples in every
   process; threads that interleave differently repeat only statistically. */
mi_decl_nodiscard mi_decl_export bool mi_prof_start_seeded(size_t sample_rate, uint64_t seed) mi_attr_noexcept;

#define MI_PROF_CONFIG_VERSION 1
#define MI_PROF_CONFIG_FALLBACK 0 /* a field fills in what the environment does not set */
#define MI_PROF_CONFIG_OVERRIDE 1 /* a non-zero field wins over the environment */
#define MI_PROF_FORMAT_TEXT 0
#define MI_PROF_FORMAT_PROTO 1

typedef struct mi_prof_config_s {
  size_t size; /* sizeof(mi_prof_config_t) */
  int version; /* MI_PROF_CONFIG_VERSION */
  int mode;    /* MI_PROF_CONFIG_FALLBACK or MI_PROF_CONFIG_OVERRIDE */
  size_t sample_interval;
  size_t max_profiler_bytes; /* 0: no budget */
  uint64_t seed;             /* 0: random */
  bool accum;                /* keep cumulative counts (alloc_objects, alloc_space) */
  size_t max_stack_depth;    /* at most 128 */
  const char* dump_at_exit;  /* "%p": the process id */
  int dump_format;           /* MI_PROF_FORMAT_TEXT or MI_PROF_FORMAT_PROTO */
} mi_prof_config_t;

/* A config with its size and version set and every field unset (zero). */
#define mi_prof_config_t_decl(name) \
  mi_prof_config_t name = {sizeof(mi_prof_config_t), MI_PROF_CONFIG_VERSION, 0, 0, 0, 0, false, 0, NULL, 0}

/* Start with a config (NULL: as mi_prof_start(0)); false unless its size
   and version are this header's. A zero or NULL field is unset. */
mi_decl_nodiscard mi_decl_export bool mi_prof_start_ex(const mi_prof_config_t* config) mi_attr_noexcept;
/* Stop, dropping every record and counter; a later start begins empty. */
mi_decl_export void mi_prof_stop(void) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export bool mi_prof_is_enabled(void) mi_attr_noexcept;
/* Zero the cumulative counters (and, with accum, forget freed samples). */
mi_decl_export void mi_prof_reset(void) mi_attr_noexcept;

/* ---- Dumping ----------------------------------------------------------------- */

typedef void(mi_cdecl mi_prof_write_fun)(void* arg, const char* buf, size_t len);
/* The live set (and, with accum, the cumulative counts) as heap_v2 text;
   "%p" in `path` is the process id. Sampling goes on. The output is built
   first and written after the profiler's lock is released, so `write` may
   allocate. False (and `write` never called) without memory for it. */
mi_decl_nodiscard mi_decl_export bool mi_prof_dump(const char* path) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export bool mi_prof_dump_writer(mi_prof_write_fun* write, void* arg) mi_attr_noexcept;
/* The same as profile.proto, values already unsampled, with the functions
   symbolised; gzip-compressed when `path` ends in ".gz". */
mi_decl_nodiscard mi_decl_export bool mi_prof_dump_proto(const char* path) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export bool mi_prof_dump_proto_writer(mi_prof_write_fun* write, void* arg) mi_attr_noexcept;

/* ---- Statistics -------------------------------------------------------------- */

#define MI_PROF_STAT_VERSION 3
typedef struct mi_prof_stats_s {
  size_t size; /* sizeof the caller's struct: one of the three versions' sizes */
  int version; /* 1, 2 or 3, matching `size` */
  /* version 1 */
  bool enabled;
  bool accum;
  size_t sample_rate;
  size_t live_samples; /* raw sampled counts */
  size_t live_bytes;
  size_t accum_samples;
  size_t accum_bytes;
  size_t unique_stacks;
  size_t arena_committed; /* the profiler's own memory */
  size_t stack_table_overflows;
  /* version 2 */
  size_t dropped_samples; /* >= stack_table_overflows */
  /* version 3: the allocator's exact counters */
  size_t heap_committed;
  size_t heap_reserved;
  size_t heap_malloc_requested; /* 0 unless built with detailed statistics (MI_STAT=2) */
  size_t heap_pages;
  size_t heap_pages_abandoned;
  size_t heap_count;
  size_t theap_count;
  size_t heap_purged;
  bool heap_stats_detailed; /* heap_malloc_requested is kept */
} mi_prof_stats_t;

#define mi_prof_stats_t_decl(name) \
  mi_prof_stats_t name; \
  memset(&(name), 0, sizeof(name)); \
  (name).size = sizeof(mi_prof_stats_t); \
  (name).version = MI_PROF_STAT_VERSION

/* Fill the fields of the version the struct says it is; false for a size
   and version that do not match. */
mi_decl_nodiscard mi_decl_export bool mi_prof_stats_get(mi_prof_stats_t* stats) mi_attr_noexcept;
/* Deprecated: mi_prof_stats_get. */
mi_decl_export void mi_prof_debug_stats(size_t* records, size_t* bytes, size_t* unique_stacks) mi_attr_noexcept;

/* ---- Visiting the samples ----------------------------------------------------- */

typedef struct mi_prof_sample_info_s {
  const void* const* stack; /* return addresses, innermost (the program's call) first */
  size_t depth;
  size_t live_objects; /* raw sampled counts */
  size_t live_bytes;
  size_t accum_objects;
  size_t accum_bytes;
} mi_prof_sample_info_t;
typedef bool(mi_cdecl mi_prof_visit_fun)(const mi_prof_sample_info_t* info, void* arg);

/* Each stack with samples, under the profiler's lock: the visitor must not
   allocate (a profiler call from it fails). Return false to stop. */
mi_decl_export bool mi_prof_visit(mi_prof_visit_fun* visitor, void* arg) mi_attr_noexcept;

/* A copy of the samples (memory from the OS), visited without the lock: its
   visitor may allocate. NULL without memory or when not running. */
typedef struct mi_prof_snapshot_s mi_prof_snapshot_t;
mi_decl_nodiscard mi_decl_export mi_prof_snapshot_t* mi_prof_snapshot_new(void) mi_attr_noexcept;
mi_decl_export bool mi_prof_snapshot_visit(const mi_prof_snapshot_t* snapshot, mi_prof_visit_fun* visitor,
                                           void* arg) mi_attr_noexcept;
mi_decl_export void mi_prof_snapshot_free(mi_prof_snapshot_t* snapshot) mi_attr_noexcept;

/* The loaded modules (the program and its shared objects), as the dumps
   map addresses to them. */
typedef struct mi_prof_module_info_s {
  const char* path;
  uintptr_t base;
  size_t size;
} mi_prof_module_info_t;
typedef bool(mi_cdecl mi_prof_module_visit_fun)(const mi_prof_module_info_t* info, void* arg);
mi_decl_export bool mi_prof_modules_visit(mi_prof_module_visit_fun* visitor, void* arg) mi_attr_noexcept;

#ifdef __cplusplus
}
#endif

#endif
