/* Fault injection: the policy, the counters and the one decision point that
   every primitive call passes (see include/mimalloc/fault.h). Shared by the
   POSIX and Windows primitives; it makes no system call of its own except
   the environment reads at start and the report at exit. */
#include "../compiler.h"
#include "../config.h"
#include "fault.h"
#include "prim.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MI_FAULT

typedef struct mi_fault_state_s {
  _Atomic(int) kind;
  _Atomic(long long) nth;
  _Atomic(long long) count;
  _Atomic(uint64_t) threshold; /* probability scaled to 2^64; 0: never */
  _Atomic(uint64_t) seed;
  _Atomic(int) error;
  _Atomic(bool) misalign;
  _Atomic(unsigned long long) calls[mi_fault_kind_count];
  _Atomic(unsigned long long) injected[mi_fault_kind_count];
  _Atomic(unsigned long long) selected_calls;
  _Atomic(unsigned long long) selected_injected;
  _Atomic(unsigned long long) events[mi_fault_event_count];
  _Atomic(long long) os_reserved;
} mi_fault_state_t;

static mi_fault_state_t mi_fault;

/* A draw that depends only on the seed and the call's index, so the same
   seed fails the same calls whatever the threads do between them. */
static uint64_t mi_fault_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

int _mi_fault_decide(mi_fault_kind_t kind) {
  atomic_fetch_add_explicit(&mi_fault.calls[mi_fault_any], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&mi_fault.calls[kind], 1, memory_order_relaxed);
  int selected = atomic_load_explicit(&mi_fault.kind, memory_order_relaxed);
  if (selected != mi_fault_any && selected != (int)kind) return 0;
  unsigned long long index = atomic_fetch_add_explicit(&mi_fault.selected_calls, 1, memory_order_relaxed) + 1;
  long long nth = atomic_load_explicit(&mi_fault.nth, memory_order_relaxed);
  long long count = atomic_load_explicit(&mi_fault.count, memory_order_relaxed);
  bool fail = (nth > 0 && index >= (unsigned long long)nth &&
               (count < 0 || index < (unsigned long long)nth + (unsigned long long)count));
  uint64_t threshold = atomic_load_explicit(&mi_fault.threshold, memory_order_relaxed);
  if (!fail && threshold != 0) {
    fail = (mi_fault_mix(atomic_load_explicit(&mi_fault.seed, memory_order_relaxed) ^ mi_fault_mix(index)) < threshold);
  }
  if (!fail) return 0;
  atomic_fetch_add_explicit(&mi_fault.selected_injected, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&mi_fault.injected[mi_fault_any], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&mi_fault.injected[kind], 1, memory_order_relaxed);
  int error = atomic_load_explicit(&mi_fault.error, memory_order_relaxed);
  if (error == mi_fault_error_mixed) {
    bool last = (count > 0 && nth > 0 && index == (unsigned long long)(nth + count - 1));
    error = (last ? mi_fault_error_other : mi_fault_error_oom);
  }
  return error + 1;
}

bool _mi_fault_misalign(void) {
  return atomic_load_explicit(&mi_fault.misalign, memory_order_relaxed);
}

void _mi_fault_note_reserved(long long delta) {
  atomic_fetch_add_explicit(&mi_fault.os_reserved, delta, memory_order_relaxed);
}

void _mi_fault_note_event(mi_fault_event_t event) {
  atomic_fetch_add_explicit(&mi_fault.events[event], 1, memory_order_relaxed);
}

bool mi_fault_available(void) {
  return true;
}

void mi_fault_set_policy(const mi_fault_policy_t* policy) {
  mi_fault_policy_t none = {mi_fault_any, 0, 1, 0.0, 0, mi_fault_error_oom, false};
  if (policy == NULL) policy = &none;
  uint64_t threshold = 0;
  if (policy->probability >= 1.0) threshold = UINT64_MAX;
  else if (policy->probability > 0.0) threshold = (uint64_t)(policy->probability * 18446744073709551616.0);
  /* the position first, so no call sees a new kind with the old position */
  atomic_store_explicit(&mi_fault.nth, 0, memory_order_relaxed);
  atomic_store_explicit(&mi_fault.threshold, 0, memory_order_relaxed);
  atomic_store_explicit(&mi_fault.kind, (int)policy->kind, memory_order_relaxed);
  atomic_store_explicit(&mi_fault.count, policy->count, memory_order_relaxed);
  atomic_store_explicit(&mi_fault.seed, policy->seed, memory_order_relaxed);
  atomic_store_explicit(&mi_fault.error, (int)policy->error, memory_order_relaxed);
  atomic_store_explicit(&mi_fault.misalign, policy->misalign, memory_order_relaxed);
  atomic_store_explicit(&mi_fault.selected_calls, 0, memory_order_relaxed);
  atomic_store_explicit(&mi_fault.selected_injected, 0, memory_order_relaxed);
  atomic_store_explicit(&mi_fault.threshold, threshold, memory_order_relaxed);
  atomic_store_explicit(&mi_fault.nth, policy->nth, memory_order_release);
}

void mi_fault_get_counters(mi_fault_counters_t* c) {
  for (int k = 0; k < mi_fault_kind_count; k++) {
    c->calls[k] = atomic_load_explicit(&mi_fault.calls[k], memory_order_relaxed);
    c->injected[k] = atomic_load_explicit(&mi_fault.injected[k], memory_order_relaxed);
  }
  c->selected_calls = atomic_load_explicit(&mi_fault.selected_calls, memory_order_relaxed);
  c->selected_injected = atomic_load_explicit(&mi_fault.selected_injected, memory_order_relaxed);
  for (int e = 0; e < mi_fault_event_count; e++) {
    c->events[e] = atomic_load_explicit(&mi_fault.events[e], memory_order_relaxed);
  }
  c->os_reserved = atomic_load_explicit(&mi_fault.os_reserved, memory_order_relaxed);
}

void mi_fault_reset(void) {
  mi_fault_set_policy(NULL);
  for (int k = 0; k < mi_fault_kind_count; k++) {
    atomic_store_explicit(&mi_fault.calls[k], 0, memory_order_relaxed);
    atomic_store_explicit(&mi_fault.injected[k], 0, memory_order_relaxed);
  }
  for (int e = 0; e < mi_fault_event_count; e++) atomic_store_explicit(&mi_fault.events[e], 0, memory_order_relaxed);
}

static const char* const mi_fault_kind_names[mi_fault_kind_count] = {
    "any", "reserve", "commit", "decommit", "purge", "protect", "release", "huge", "large", "resident"};
static const char* const mi_fault_event_names[mi_fault_event_count] = {
    "oom_retry",      "oom_fail_fast", "aligned_trim",    "large_fallback", "large_skipped",  "huge_fallback",
    "arena_fallback", "commit_failed", "decommit_failed", "purge_failed",   "protect_failed", "release_failed"};

const char* mi_fault_kind_name(mi_fault_kind_t kind) {
  return ((unsigned)kind < mi_fault_kind_count ? mi_fault_kind_names[kind] : "?");
}

const char* mi_fault_event_name(mi_fault_event_t event) {
  return ((unsigned)event < mi_fault_event_count ? mi_fault_event_names[event] : "?");
}

void mi_fault_report(void) {
  mi_fault_counters_t c;
  mi_fault_get_counters(&c);
  char line[160];
  (void)snprintf(line, sizeof(line), "fault: calls=%llu injected=%llu\n", c.selected_calls, c.selected_injected);
  mi_prim_out_stderr(line);
  for (int k = 1; k < mi_fault_kind_count; k++) {
    (void)snprintf(line, sizeof(line), "fault: kind %-8s calls %llu injected %llu\n", mi_fault_kind_names[k],
                   c.calls[k], c.injected[k]);
    mi_prim_out_stderr(line);
  }
  for (int e = 0; e < mi_fault_event_count; e++) {
    (void)snprintf(line, sizeof(line), "fault: event %-15s %llu\n", mi_fault_event_names[e], c.events[e]);
    mi_prim_out_stderr(line);
  }
}

static bool mi_fault_env_ll(const char* name, long long* value, mi_fault_warn_fun* warn) {
  char buf[64];
  if (!mi_prim_getenv(name, buf, sizeof(buf))) return false;
  char* end;
  long long v = strtoll(buf, &end, 10);
  if (end == buf || *end != 0) {
    warn(name, buf);
    return false;
  }
  *value = v;
  return true;
}

static bool mi_fault_report_at_exit;

static void mi_fault_exit_report(void) {
  if (mi_fault_report_at_exit) mi_fault_report();
}

void _mi_fault_init_from_env(mi_fault_warn_fun* warn) {
  mi_fault_policy_t policy = {mi_fault_any, 0, 1, 0.0, 0, mi_fault_error_oom, false};
  bool any = mi_fault_env_ll("MIMALLOC_FAULT_NTH", &policy.nth, warn);
  any = mi_fault_env_ll("MIMALLOC_FAULT_COUNT", &policy.count, warn) || any;
  long long seed = 0;
  if (mi_fault_env_ll("MIMALLOC_FAULT_SEED", &seed, warn)) policy.seed = (unsigned long long)seed;
  char buf[64];
  if (mi_prim_getenv("MIMALLOC_FAULT_PROB", buf, sizeof(buf))) {
    char* end;
    double p = strtod(buf, &end);
    if (end == buf || *end != 0 || !(p >= 0.0 && p <= 1.0)) {
      warn("MIMALLOC_FAULT_PROB", buf);
    } else {
      policy.probability = p;
      any = true;
    }
  }
  if (mi_prim_getenv("MIMALLOC_FAULT_KIND", buf, sizeof(buf))) {
    int k = 0;
    while (k < mi_fault_kind_count && strcmp(buf, mi_fault_kind_names[k]) != 0) k++;
    if (k == mi_fault_kind_count) warn("MIMALLOC_FAULT_KIND", buf);
    else policy.kind = (mi_fault_kind_t)k;
  }
  if (mi_prim_getenv("MIMALLOC_FAULT_ERROR", buf, sizeof(buf))) {
    if (strcmp(buf, "oom") == 0) policy.error = mi_fault_error_oom;
    else if (strcmp(buf, "again") == 0) policy.error = mi_fault_error_again;
    else if (strcmp(buf, "other") == 0) policy.error = mi_fault_error_other;
    else if (strcmp(buf, "mixed") == 0) policy.error = mi_fault_error_mixed;
    else warn("MIMALLOC_FAULT_ERROR", buf);
  }
  long long misalign = 0;
  if (mi_fault_env_ll("MIMALLOC_FAULT_MISALIGN", &misalign, warn) && misalign != 0) {
    policy.misalign = true;
    any = true;
  }
  mi_fault_set_policy(any ? &policy : NULL);
  long long report = 0;
  if (mi_fault_env_ll("MIMALLOC_FAULT_REPORT", &report, warn) && report != 0) {
    mi_fault_report_at_exit = true;
  }
}

/* Registered after the process is set up (atexit may allocate). */
void _mi_fault_register_report(void) {
  if (mi_fault_report_at_exit) mi_prim_atexit(&mi_fault_exit_report);
}

#else /* !MI_FAULT: the API exists and does nothing */

bool mi_fault_available(void) {
  return false;
}
void mi_fault_set_policy(const mi_fault_policy_t* policy) {
  (void)policy;
}
void mi_fault_get_counters(mi_fault_counters_t* counters) {
  memset(counters, 0, sizeof(*counters));
}
void mi_fault_reset(void) {}
void mi_fault_report(void) {}
const char* mi_fault_kind_name(mi_fault_kind_t kind) {
  (void)kind;
  return "?";
}
const char* mi_fault_event_name(mi_fault_event_t event) {
  (void)event;
  return "?";
}

#endif
