/* The teardown protocol's schedule points (docs/teardown-protocol.md): each
   step of a free, claim, abandon, reclaim, heap delete or destroy and purge
   that can race another passes one, where a test's hook may yield, sleep or
   wait (tests/teardown). A core test hook, compiled with fault injection
   (MI_FAULT); the API exists and does nothing without it. */
#include "sched.h"

#include <stdatomic.h>

#if MI_FAULT
static _Atomic(mi_sched_hook_fun*) mi_sched_hook;
static void* _Atomic mi_sched_hook_arg;
static _Atomic(unsigned long long) mi_sched_hit_count[MI_SCHED_POINT_COUNT];

void _mi_sched_point(mi_sched_point_t point) {
  atomic_fetch_add_explicit(&mi_sched_hit_count[point], 1, memory_order_relaxed);
  mi_sched_hook_fun* hook = atomic_load_explicit(&mi_sched_hook, memory_order_acquire);
  if (hook != NULL) hook(point, atomic_load_explicit(&mi_sched_hook_arg, memory_order_relaxed));
}

void mi_sched_set_hook(mi_sched_hook_fun* hook, void* arg) {
  atomic_store_explicit(&mi_sched_hook, NULL, memory_order_release);
  atomic_store_explicit(&mi_sched_hook_arg, arg, memory_order_relaxed);
  atomic_store_explicit(&mi_sched_hook, hook, memory_order_release);
}

unsigned long long mi_sched_hits(mi_sched_point_t point) {
  if ((unsigned)point >= MI_SCHED_POINT_COUNT) return 0;
  return atomic_load_explicit(&mi_sched_hit_count[point], memory_order_relaxed);
}

#else

void mi_sched_set_hook(mi_sched_hook_fun* hook, void* arg) {
  (void)hook;
  (void)arg;
}
unsigned long long mi_sched_hits(mi_sched_point_t point) {
  (void)point;
  return 0;
}

#endif

static const char* const mi_sched_point_names[MI_SCHED_POINT_COUNT] = {
    "free_remote_read", "free_remote_pushed",   "page_collect",      "abandon_begin",   "abandon_pushed",
    "reclaim_claimed",  "heap_delete_absorbed", "heap_destroy_page", "heap_freed",      "page_claim_slot",
    "purge_claimed",    "purge_settled",        "segment_unlink",    "free_claim_read", "free_claimed",
    "dhat_dumping",     "page_free_listing"};

const char* mi_sched_point_name(mi_sched_point_t point) {
  return ((unsigned)point < MI_SCHED_POINT_COUNT ? mi_sched_point_names[point] : "?");
}
