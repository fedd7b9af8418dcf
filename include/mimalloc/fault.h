/* Fault injection in the allocator's OS primitives (builds with MI_FAULT=ON;
   on in Debug builds). Every call the allocator makes to the OS for memory
   (reserve, commit, decommit, purge, protect, release, huge and large pages)
   passes one decision point that can make it fail with a realistic error, so
   tests can drive the out-of-memory and fallback paths instead of trusting
   them. The same policy can be set from outside with MIMALLOC_FAULT_*
   environment variables (see docs/fault-injection.md).

   In builds without the hooks every function here exists and does nothing;
   mi_fault_available() tells the two apart. */
#ifndef MIMALLOC_FAULT_H
#define MIMALLOC_FAULT_H

#include "../mimalloc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds of primitive call; a policy selects one kind or all of them. */
typedef enum mi_fault_kind_e {
  mi_fault_any = 0,
  mi_fault_reserve,  /* new address space (mmap / VirtualAlloc MEM_RESERVE) */
  mi_fault_commit,   /* make reserved memory usable */
  mi_fault_decommit, /* give memory back and make it unusable */
  mi_fault_purge,    /* give memory back, keep it usable (madvise / MEM_RESET) */
  mi_fault_protect,  /* guard pages on and off */
  mi_fault_release,  /* give address space back (munmap / MEM_RELEASE) */
  mi_fault_huge,     /* 1 GiB pages */
  mi_fault_large,    /* 2 MiB pages */
  mi_fault_resident, /* which pages of a range are resident (mincore) */
  mi_fault_kind_count
} mi_fault_kind_t;

/* The error an injected failure reports. */
typedef enum mi_fault_error_e {
  mi_fault_error_oom = 0, /* ENOMEM (Windows: ERROR_NOT_ENOUGH_MEMORY, ERROR_COMMITMENT_LIMIT, ...) */
  mi_fault_error_again,   /* EAGAIN: also out-of-memory for the retry policy */
  mi_fault_error_other,   /* EINVAL: not an out-of-memory error, never retried */
  mi_fault_error_mixed    /* ENOMEM, but EINVAL for the last of `count` failures: a retry meeting another error */
} mi_fault_error_t;

typedef struct mi_fault_policy_s {
  mi_fault_kind_t kind;    /* which calls count and may fail */
  long long nth;           /* fail the nth selected call (1-based); 0: none by position */
  long long count;         /* ... and this many in a row from there (-1: every later call) */
  double probability;      /* also fail each selected call with this probability */
  unsigned long long seed; /* seed for the probability draws: same seed, same failures */
  mi_fault_error_t error;
  bool misalign; /* aligned reservations land one page off their aligned address */
} mi_fault_policy_t;

/* Events on the paths that handle a failure, counted so tests can show each
   path taken. */
typedef enum mi_fault_event_e {
  mi_fault_event_oom_retry = 0,   /* a failed reserve retried after a back-off */
  mi_fault_event_oom_fail_fast,   /* an OOM failure not retried: the budget was spent before */
  mi_fault_event_aligned_trim,    /* aligned reservation fell back to over-reserve and trim */
  mi_fault_event_large_fallback,  /* 2 MiB pages failed: normal pages used instead */
  mi_fault_event_large_skipped,   /* 2 MiB pages not tried: the circuit breaker is open */
  mi_fault_event_huge_fallback,   /* 1 GiB pages failed: large or normal pages used instead */
  mi_fault_event_arena_fallback,  /* no arena memory: the OS was asked directly */
  mi_fault_event_commit_failed,   /* commit failed: the allocation returned NULL or fell back */
  mi_fault_event_decommit_failed, /* decommit failed: the memory stays committed */
  mi_fault_event_purge_failed,    /* purge failed: the memory stays committed */
  mi_fault_event_protect_failed,  /* a guard page could not be set: reported, memory not used */
  mi_fault_event_release_failed,  /* the OS refused to take address space back */
  mi_fault_event_count
} mi_fault_event_t;

typedef struct mi_fault_counters_s {
  unsigned long long calls[mi_fault_kind_count];    /* [mi_fault_any]: all primitive calls */
  unsigned long long injected[mi_fault_kind_count]; /* failures injected, per kind */
  unsigned long long selected_calls;                /* calls of the policy's kind */
  unsigned long long selected_injected;
  unsigned long long events[mi_fault_event_count];
  long long os_reserved; /* bytes mapped by the primitives and not released */
} mi_fault_counters_t;

mi_decl_export bool mi_fault_available(void);
/* Install a policy (NULL: inject nothing). Counters keep running. */
mi_decl_export void mi_fault_set_policy(const mi_fault_policy_t* policy);
mi_decl_export void mi_fault_get_counters(mi_fault_counters_t* counters);
/* No policy, call and event counters zero (the reserved-bytes balance stays:
   it is a fact about the process, not about a test). */
mi_decl_export void mi_fault_reset(void);
/* Print the counters to stderr: one line "fault: calls=T injected=I" for the
   selected kind, then a line per kind and per event. */
mi_decl_export void mi_fault_report(void);
mi_decl_export const char* mi_fault_kind_name(mi_fault_kind_t kind);
mi_decl_export const char* mi_fault_event_name(mi_fault_event_t event);

/* ---- Schedule points (teardown protocol, docs/teardown-protocol.md) ------

   Each step of the ownership protocol (cross-thread free, abandon, reclaim,
   heap delete and destroy, purge) passes a schedule point. A test installs
   one hook, called at every point by the thread that reaches it, which may
   yield, sleep or wait on a barrier there, so that a chosen interleaving is
   forced instead of hoped for. Points are never reached with an allocator
   lock held, except the purge points (the purge-run lock: a pass in
   progress) and PAGE_COLLECT when the purge thread collects an abandoned
   segment (the abandoned lock). The hook must not call the allocator. Without
   MI_FAULT the points are compiled out: the hook is never called. */
typedef enum mi_sched_point_e {
  MI_SCHED_FREE_REMOTE_READ = 0, /* a cross-thread free has read the page's list head, before its CAS */
  MI_SCHED_FREE_REMOTE_PUSHED,   /* ... its block is on the list; it touches the page no more */
  MI_SCHED_PAGE_COLLECT,         /* the page's holder is about to take its cross-thread list */
  MI_SCHED_ABANDON_BEGIN,        /* an exiting thread has folded its heaps, about to abandon its segments */
  MI_SCHED_ABANDON_PUSHED,       /* ... one segment is on the abandoned list (owner 0) */
  MI_SCHED_RECLAIM_CLAIMED, /* a claimer took a segment off the abandoned list and owns it, pages not yet collected */
  MI_SCHED_HEAP_DELETE_ABSORBED, /* mi_heap_delete moved the heap's pages to the backing heap; slot not yet freed */
  MI_SCHED_HEAP_DESTROY_PAGE,    /* mi_heap_destroy is about to free one of the heap's pages */
  MI_SCHED_HEAP_FREED,           /* a deleted or destroyed heap's slot is back in the pool */
  MI_SCHED_PAGE_CLAIM_SLOT,      /* a segment owner is about to CAS a free page slot to IN_USE */
  MI_SCHED_PURGE_CLAIMED,        /* the purger holds pages PURGING (purge lock released), memory not yet returned */
  MI_SCHED_PURGE_SETTLED,        /* the purger has left one page FREE_CLEAN or (refused) FREE_DIRTY */
  MI_SCHED_SEGMENT_UNLINK,       /* a segment with no page in use is about to leave the purge list, then be released */
  MI_SCHED_FREE_CLAIM_READ, /* a free (reclaim on free) read its segment's owner word ABANDONED, before its claim CAS */
  MI_SCHED_FREE_CLAIMED,    /* ... its CAS won (CLAIMED); the segment is still listed, not yet unlinked */
  MI_SCHED_DHAT_DUMPING,    /* not the protocol's: a profile dump holds the one-dump flag, nothing written yet */
  MI_SCHED_PAGE_FREE_LISTING, /* a freed page's owner is about to take the purge lock to list its segment */
  MI_SCHED_POINT_COUNT
} mi_sched_point_t;

typedef void(mi_sched_hook_fun)(mi_sched_point_t point, void* arg);

/* Install the hook (NULL: none). */
mi_decl_export void mi_sched_set_hook(mi_sched_hook_fun* hook, void* arg);
/* How often a point has been passed (counted with or without a hook). */
mi_decl_export unsigned long long mi_sched_hits(mi_sched_point_t point);
mi_decl_export const char* mi_sched_point_name(mi_sched_point_t point);

#ifdef __cplusplus
}
#endif
#endif
