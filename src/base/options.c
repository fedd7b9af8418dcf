/* Options: one table, read lazily from MIMALLOC_<NAME> in the environment.
   mi_option_set wins over the environment; mi_option_set_default loses to it. */
#include "base.h"
#include "listeners.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

/* the full level's defaults of the options the light level changes
   (mi_secure_light below) */
#define MI_ZERO_ON_FREE_DEFAULT MI_SECURE
#define MI_LARGE_QUARANTINE_DEFAULT (MI_SECURE ? 64 : 0)
#define MI_SECURE_QUARANTINE_DEFAULT MI_SECURE
#define MI_GUARDED_SAMPLE_RATE_DEFAULT (MI_SECURE ? 4000L : 0L)

#define MI_OPTION(opt, def) \
  [mi_option_##opt] = {.value = (def), .name = #opt, .init = MI_OPTION_UNINIT, .is_size = false}
#define MI_OPTION_SIZE(opt, def) \
  [mi_option_##opt] = {.value = (def), .name = #opt, .init = MI_OPTION_UNINIT, .is_size = true}

mi_option_desc_t _mi_options[_mi_option_last] = {
    MI_OPTION(show_errors,
              MI_DEFAULT_SHOW_ERRORS), /* a failed request is not misuse: secure builds say nothing either */
    MI_OPTION(show_stats, 0),
    MI_OPTION(verbose, 0),
    MI_OPTION(eager_commit, 1),
    MI_OPTION(arena_eager_commit, 2),
    MI_OPTION(purge_decommits, 1),
    MI_OPTION(allow_large_os_pages, 0),
    MI_OPTION(reserve_huge_os_pages, 0),
    MI_OPTION(reserve_huge_os_pages_at, -1),
    MI_OPTION_SIZE(reserve_os_memory, 0),
    MI_OPTION(deprecated_segment_cache, 0),
    MI_OPTION(deprecated_page_reset, 0),
    MI_OPTION(abandoned_page_purge, 0),
    MI_OPTION(deprecated_segment_reset, 0),
    MI_OPTION(eager_commit_delay, 1),
    MI_OPTION(purge_delay, 10),
    MI_OPTION(use_numa_nodes, 0),
    MI_OPTION(disallow_os_alloc, 0),
    MI_OPTION(os_tag, 100),
    MI_OPTION(max_errors, 32),
    MI_OPTION(max_warnings, 32),
    MI_OPTION(max_segment_reclaim, 10),
    MI_OPTION(destroy_on_exit, 0),
    MI_OPTION_SIZE(arena_reserve,
                   0), /* mimalloc: 1 GiB; here segments are mapped one by one unless set (docs/options.md) */
    MI_OPTION(arena_purge_mult, 10),
    MI_OPTION(purge_extend_delay, 1),
    MI_OPTION(abandoned_reclaim_on_free, 0),
    MI_OPTION(disallow_arena_alloc, 0),
    MI_OPTION(retry_on_oom, 400),
    MI_OPTION(visit_abandoned, 0),
    MI_OPTION(guarded_min, 0),
    MI_OPTION(guarded_max, 1024L * 1024L),
    MI_OPTION(guarded_precise, 0),
    MI_OPTION(guarded_sample_rate, MI_GUARDED_SAMPLE_RATE_DEFAULT),
    MI_OPTION(guarded_sample_seed, 0),
    MI_OPTION(target_segments_per_thread, 0),
    MI_OPTION(generic_collect, 10000),
    MI_OPTION(allow_thp, MI_DEFAULT_ALLOW_THP), /* where the program's large blocks are used densely (os-thp.c) */
    MI_OPTION(purge_thread, 1),
    MI_OPTION(zero_on_free, MI_ZERO_ON_FREE_DEFAULT),
    MI_OPTION(segment_cache, MI_SEGMENT_CACHE_MAX),
    MI_OPTION(dhat, 0),
    MI_OPTION(dhat_backtrace, 0),
    MI_OPTION(lockorder, 1),
    MI_OPTION(large_quarantine, MI_LARGE_QUARANTINE_DEFAULT),
    MI_OPTION(prof, 0),
    MI_OPTION(prof_sample_rate, 524288),
    MI_OPTION(prof_bt_max, 32),
    MI_OPTION(prof_accum, 0),
    MI_OPTION(prof_seed, 0),
    MI_OPTION(prof_max_bytes, 0),
    MI_OPTION(snapshot_on_exit, 0),
    MI_OPTION(memory_events, 0),
    MI_OPTION(purge_holes, 1),
    MI_OPTION(purge_holes_min_interval, 100),
    MI_OPTION(purge_holes_full_every, 64),
    MI_OPTION(purge_holes_eager_zero, MI_DEBUG > 0 ? 1 : 0),
    MI_OPTION(dealloc_kind_check, 1), /* read only when a mismatch is found (validate.c) */
    MI_OPTION(secure_stacks, 0),      /* read at start-up, or set on (secure/stacks.c) */
    MI_OPTION(secure_level, MI_SECURE ? MI_SECURE_LEVEL_DEFAULT : 0), /* the defaults of the options it names (below) */
    MI_OPTION(secure_quarantine, MI_SECURE_QUARANTINE_DEFAULT),
};

/* Options that take words as well as numbers (upper case here). */
typedef struct mi_option_word_s {
  mi_option_t option;
  const char* word;
  long value;
} mi_option_word_t;

static const mi_option_word_t mi_option_words[] = {
    {mi_option_lockorder, "ABORT", 1},
    {mi_option_lockorder, "WARN", 2},
    {mi_option_secure_level, "LIGHT", 1},
    {mi_option_secure_level, "FULL", 2},
};

/* The secure build's levels (docs/secure-mode.md, "Levels"): the light one
   is the full one with these options' defaults changed. An option set in the
   environment or by mi_option_set keeps its value at either level. */
typedef struct mi_secure_level_option_s {
  mi_option_t option;
  long full;  /* its default at the full level (the table's) */
  long light; /* and at light */
} mi_secure_level_option_t;
static const mi_secure_level_option_t mi_secure_light[] = {
    {mi_option_zero_on_free, MI_ZERO_ON_FREE_DEFAULT, 0},
    {mi_option_large_quarantine, MI_LARGE_QUARANTINE_DEFAULT, 0},
    {mi_option_secure_quarantine, MI_SECURE_QUARANTINE_DEFAULT, 0},
    /* a tenth as many samples: at one in 4,000 their system calls and page
       faults took 15 to 20% of `glibc-simple`'s time, at one in 40,000 none
       that could be told from none at all */
    {mi_option_guarded_sample_rate, MI_GUARDED_SAMPLE_RATE_DEFAULT, 10L * MI_GUARDED_SAMPLE_RATE_DEFAULT},
};

static void mi_option_init(mi_option_t option);

/* the default of `mi_secure_light[i]` at the level in force */
static long mi_secure_level_default(size_t i) {
  if (_mi_options[mi_option_secure_level].init == MI_OPTION_UNINIT) mi_option_init(mi_option_secure_level);
  return (_mi_options[mi_option_secure_level].value == 1 ? mi_secure_light[i].light : mi_secure_light[i].full);
}

/* The names mimalloc read before its options were renamed: still read, after
   the current name, so an old script keeps working. */
typedef struct mi_option_legacy_s {
  mi_option_t option;
  const char* name;
} mi_option_legacy_t;

static const mi_option_legacy_t mi_option_legacy[] = {
    {mi_option_arena_eager_commit, "eager_region_commit"},
    {mi_option_purge_decommits, "reset_decommits"},
    {mi_option_allow_large_os_pages, "large_os_pages"},
    {mi_option_abandoned_page_purge, "abandoned_page_reset"},
    {mi_option_purge_delay, "reset_delay"},
    {mi_option_disallow_os_alloc, "limit_os_alloc"},
    {mi_option_purge_extend_delay, "decommit_extend_delay"},
};

static const char* mi_option_legacy_name(mi_option_t option) {
  for (size_t i = 0; i < sizeof(mi_option_legacy) / sizeof(mi_option_legacy[0]); i++) {
    if (mi_option_legacy[i].option == option) return mi_option_legacy[i].name;
  }
  return NULL;
}

static bool mi_option_valid(mi_option_t option) {
  return (option >= 0 && option < _mi_option_last && _mi_options[option].name != NULL);
}

static void mi_option_env_name(const char* name, char* buf, size_t size) {
  const char* prefix = "MIMALLOC_";
  size_t i = 0;
  for (; prefix[i] != 0 && i + 1 < size; i++) buf[i] = prefix[i];
  for (size_t j = 0; name[j] != 0 && i + 1 < size; j++, i++) buf[i] = (char)toupper((unsigned char)name[j]);
  buf[i] = 0;
}

static bool mi_option_parse(const mi_option_desc_t* desc, const char* s, long* value) {
  char buf[64];
  size_t len = 0;
  for (; s[len] != 0 && len + 1 < sizeof(buf); len++) buf[len] = (char)toupper((unsigned char)s[len]);
  buf[len] = 0;
  for (size_t i = 0; i < sizeof(mi_option_words) / sizeof(mi_option_words[0]); i++) {
    if (&_mi_options[mi_option_words[i].option] == desc && strcmp(buf, mi_option_words[i].word) == 0) {
      *value = mi_option_words[i].value;
      return true;
    }
  }
  if (len == 0 || strcmp(buf, "1") == 0 || strcmp(buf, "TRUE") == 0 || strcmp(buf, "ON") == 0 ||
      strcmp(buf, "YES") == 0) {
    *value = 1;
    return true;
  }
  if (strcmp(buf, "0") == 0 || strcmp(buf, "FALSE") == 0 || strcmp(buf, "OFF") == 0 || strcmp(buf, "NO") == 0) {
    *value = 0;
    return true;
  }
  char* end = NULL;
  long v = strtol(buf, &end, 10);
  if (end == buf) return false;
  if (desc->is_size) {
    /* sizes are kept in KiB */
    if (*end == 'K') end++;
    else if (*end == 'M') {
      v *= 1024;
      end++;
    } else if (*end == 'G') {
      v *= 1024L * 1024;
      end++;
    } else if (*end == 0) v = (v + 1023) / 1024; /* plain bytes */
    if (*end == 'I') end++;
    if (*end == 'B') end++;
  }
  if (*end != 0) return false;
  *value = v;
  return true;
}

/* What the level gives the options it names, where neither the
   environment nor the program set them; their listeners told. Called once
   the level is known, or when the option itself is first read. */
static void mi_secure_level_apply(mi_option_t option) {
  if (!MI_SECURE) return;
  if (option == mi_option_secure_level) {
    for (size_t i = 0; i < sizeof(mi_secure_light) / sizeof(mi_secure_light[0]); i++) {
      mi_option_desc_t* d = &_mi_options[mi_secure_light[i].option];
      if (d->init == MI_OPTION_UNINIT) continue; /* the default is given when it is read (below) */
      if (d->init == MI_OPTION_INITIALIZED) continue;
      long v = mi_secure_level_default(i);
      if (d->value != v) {
        d->value = v;
        _mi_raise_option_changed(mi_secure_light[i].option, v);
      }
    }
    return;
  }
  for (size_t i = 0; i < sizeof(mi_secure_light) / sizeof(mi_secure_light[0]); i++) {
    if (mi_secure_light[i].option == option && _mi_options[option].init == MI_OPTION_DEFAULTED) {
      _mi_options[option].value = mi_secure_level_default(i);
    }
  }
}

static void mi_option_init(mi_option_t option) {
  mi_option_desc_t* desc = &_mi_options[option];
  char name[80];
  char value[64];
  mi_option_env_name(desc->name, name, sizeof(name));
  bool found = mi_prim_getenv(name, value, sizeof(value));
  const char* legacy = mi_option_legacy_name(option);
  if (!found && legacy != NULL) {
    char current[80];
    memcpy(current, name, sizeof(current));
    mi_option_env_name(legacy, name, sizeof(name));
    found = mi_prim_getenv(name, value, sizeof(value));
    if (found) _mi_warning_message("environment option %s is deprecated: use %s\n", name, current);
  }
  if (found) {
    long v;
    if (mi_option_parse(desc, value, &v)) {
      desc->value = v;
      desc->init = MI_OPTION_INITIALIZED;
      mi_secure_level_apply(option);
      return;
    }
    desc->init = MI_OPTION_DEFAULTED;
    mi_secure_level_apply(option);
    _mi_warning_message("environment option %s has an invalid value: %s\n", name, value);
    return;
  }
  desc->init = MI_OPTION_DEFAULTED;
  mi_secure_level_apply(option);
}

/* MI_MALLOC_VERSION as mimalloc writes it: 20401 is 2.4.1 (the constant,
   not mi_version(), which is the api floor's; mimalloc's scheme before
   2.1.4, 212 for 2.1.2, is not one this library ever had). */
_Static_assert(MI_MALLOC_VERSION >= 10000, "major*10000 + minor*100 + patch");
void _mi_version_string(char* buf, size_t size) {
  const int v = MI_MALLOC_VERSION;
  (void)snprintf(buf, size, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
}

void mi_options_print(void) {
  char version[32];
  _mi_version_string(version, sizeof(version));
  _mi_message("v%s (mimalloc-pprof; secure: %d, debug: %d)\n", version, MI_SECURE, MI_DEBUG);
  for (int i = 0; i < _mi_option_last; i++) {
    if (!mi_option_valid((mi_option_t)i)) continue;
    long v = mi_option_get((mi_option_t)i);
    _mi_message("option '%s': %ld%s\n", _mi_options[i].name, v, (_mi_options[i].is_size ? " KiB" : ""));
  }
}

void _mi_options_init(void) {
  for (int i = 0; i < _mi_option_last; i++) {
    if (mi_option_valid((mi_option_t)i) && _mi_options[i].init == MI_OPTION_UNINIT) mi_option_init((mi_option_t)i);
  }
  if (mi_option_is_enabled(mi_option_verbose)) mi_options_print(); /* what this run uses, as mimalloc shows it */
}

long _mi_option_get_slow(mi_option_t option) {
  mi_option_init(option);
  return _mi_options[option].value;
}

long mi_option_get(mi_option_t option) {
  if (!mi_option_valid(option)) return 0;
  return _mi_option_get_fast(option);
}

long mi_option_get_clamp(mi_option_t option, long min, long max) {
  long v = mi_option_get(option);
  return (v < min ? min : (v > max ? max : v));
}

size_t mi_option_get_size(mi_option_t option) {
  if (!mi_option_valid(option)) return 0;
  long v = mi_option_get(option);
  if (v < 0) return 0;
  return (_mi_options[option].is_size ? (size_t)v * 1024 : (size_t)v);
}

void mi_option_set(mi_option_t option, long value) {
  if (!mi_option_valid(option)) return;
  _mi_options[option].value = value;
  _mi_options[option].init = MI_OPTION_INITIALIZED;
  _mi_raise_option_changed(option, value); /* what depends on it catches up */
  mi_secure_level_apply(option);
}

void mi_option_set_default(mi_option_t option, long value) {
  if (!mi_option_valid(option)) return;
  if (_mi_options[option].init == MI_OPTION_UNINIT) mi_option_init(option);
  if (_mi_options[option].init != MI_OPTION_INITIALIZED) {
    _mi_options[option].value = value;
    _mi_raise_option_changed(option, value); /* what depends on it catches up */
  }
}

bool mi_option_is_enabled(mi_option_t option) {
  return (mi_option_get(option) != 0);
}

void mi_option_set_enabled(mi_option_t option, bool enable) {
  mi_option_set(option, enable ? 1 : 0);
}

void mi_option_set_enabled_default(mi_option_t option, bool enable) {
  mi_option_set_default(option, enable ? 1 : 0);
}

void mi_option_enable(mi_option_t option) {
  mi_option_set_enabled(option, true);
}

void mi_option_disable(mi_option_t option) {
  mi_option_set_enabled(option, false);
}
