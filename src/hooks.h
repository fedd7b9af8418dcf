/* The events of the allocator's life that the optional features listen to.

   The core calls every event below unconditionally, at the one place where
   it happens; which features listen is decided here and only here, so a
   build with a feature off compiles its listener to nothing and the core
   reads the same in every build. (The same idea as base/track.h, which does
   it for the memory checkers.)

   | event                       | where (core)              | listeners                      |
   |-----------------------------|---------------------------|--------------------------------|
   | mi_hook_process_start       | init.c, after prim init   | fault injection: read its env  |
   | mi_hook_process_init        | init.c, before the locks  | lock-order checker; secure     |
   |                             |                           | keys and zero-size segments;   |
   |                             |                           | memory events' locks           |
   | mi_hook_process_ready       | init.c, set-up done       | fault report at exit; DHAT and |
   |                             |                           | pprof start; secure fault      |
   |                             |                           | handler; memory events: their  |
   |                             |                           | option, the ETW provider       |
   | mi_hook_process_done        | init.c, at exit           | DHAT, pprof: profiles written; |
   |                             |                           | ETW provider unregistered      |
   | mi_hook_thread_done         | init.c, thread data going | profilers: the stack cache;    |
   |                             |                           | pprof: pending resizes         |
   | mi_hook_fork_prepare/parent | init.c, fork handlers     | (none yet)                     |
   | mi_hook_fork_child          | init.c, child's locks out | lock-order checker; DHAT;      |
   |                             |                           | pprof                          |
   | mi_hook_option_changed      | options.c, mi_option_set  | guard sampler; secure zeroing  |
   | mi_hook_segment_unmapped    | segment.c                 | secure (stale frees); DHAT;    |
   |                             |                           | memory events (their records)  |
   | mi_hook_page_setup_begin/end| page.c, fresh page        | secure: page bitmap, seal      |
   | mi_hook_page_freed          | segment.c                 | secure: page and segment check |
   | mi_hook_block_collected     | page.c, other threads'    | secure: the block's used bit   |
   |                             | frees taken in            |                                |
   | mi_hook_page_collected      | page.c, after them        | pprof: sampled flag off        |
   | mi_hook_heap_page_gone      | heap.c, heap destroyed    | DHAT, pprof, memory events:    |
   |                             |                           | live blocks freed              |
   | mi_observe_*                | api/, entry points        | DHAT, pprof, memory events     |

   The secure wing's own entry points (the secure malloc and free, and the
   policy it puts in place of the core's) are not events: the core chooses
   them with `if (MI_SECURE)` at one place per entry point, and their
   declarations (secure/secure.h) are seen in every build so both branches
   stay compiled. */
#ifndef MI_HOOKS_H
#define MI_HOOKS_H

#include "base/base.h"
#include "secure/secure.h"
#include "dhat/hooks.h"
#include "prof/hooks.h"
#include "events/hooks.h"
#include "stats/hooks.h"
#include "lockorder/lockorder.h"
#include "prim/fault.h"

/* ---- Process and threads ------------------------------------------------- */

#if MI_FAULT
/* prim/ calls nothing above it: its warning comes back through this */
static void mi_hook_fault_env_warning(const char* name, const char* value) {
  _mi_warning_message("environment option %s has an invalid value: %s\n", name, value);
}
#endif

/* The OS primitives are ready; nothing else is. */
static inline void mi_hook_process_start(void) {
#if MI_FAULT
  _mi_fault_init_from_env(&mi_hook_fault_env_warning); /* before any primitive fails on purpose */
#endif
}

/* Options read and the process key drawn; no lock made yet. */
static inline void mi_hook_process_init(void) {
#if MI_LOCKORDER
  _mi_lockorder_init();
#endif
#if MI_SECURE
  _mi_secure_keys_init();
  _mi_zero_init();
#endif
#if MI_MEMORY_EVENTS
  _mi_events_process_init();
#endif
  _mi_unwrapped_process_init(); /* (mi_unwrapped_*, in every build) */
}

/* The allocator is set up and may be used (these may allocate). */
static inline void mi_hook_process_ready(void) {
#if MI_FAULT
  _mi_fault_register_report();
#endif
#if MI_DHAT
  _mi_dhat_process_init(); /* MIMALLOC_DHAT=1: the profiler starts now */
#endif
#if MI_PPROF
  _mi_prof_process_init(); /* MIMALLOC_PROF=1: the sampler starts now */
#endif
#if MI_MEMORY_EVENTS
  _mi_events_process_ready(); /* MIMALLOC_MEMORY_EVENTS=1; the ETW provider */
#endif
#if MI_SECURE
  /* a fault on one of our guard pages says what it hit before the process dies */
  mi_prim_fault_handler_install(&_mi_guard_fault_report);
#endif
}

static inline void mi_hook_process_done(void) {
#if MI_PPROF
  _mi_prof_process_done();
#endif
#if MI_DHAT
  _mi_dhat_process_done();
#endif
#if MI_MEMORY_EVENTS
  _mi_events_process_done();
#endif
}

/* A thread's heaps are gone; its thread data is about to go. */
static inline void mi_hook_thread_done(void) {
#if MI_DHAT || MI_PPROF
  _mi_dhat_stack_thread_done(); /* the stack cache both profilers' capture keeps */
#endif
#if MI_PPROF
  _mi_prof_thread_done(); /* its pending resizes of sampled blocks */
#endif
}

/* ---- The background thread ------------------------------------------------- */

/* The longest the background thread may sleep (-1: until woken). A signal
   handler may not wake a thread, so the profiler's dump on a signal is
   noticed by the thread polling while one is armed. */
static inline int64_t mi_hook_background_poll_ms(void) {
#if MI_PPROF
  return _mi_prof_background_poll_ms();
#else
  return -1;
#endif
}

/* The background thread woke (or is about to sleep): the profiler writes
   the dumps asked of it, by a signal or by the bytes allocated. */
static inline void mi_hook_background_tick(void) {
#if MI_PPROF
  _mi_prof_background_tick();
#endif
}

/* ---- Fork ---------------------------------------------------------------- */

/* Every global lock is about to be taken (prepare) or was just released
   (parent). No feature listens yet: a feature with state of its own to keep
   consistent across fork takes its lock here. */
static inline void mi_hook_fork_prepare(void) {}
static inline void mi_hook_fork_parent(void) {}

/* The child's one thread released every lock; nothing else is done yet
   (the other threads' data is put in order after this). */
static inline void mi_hook_fork_child(void) {
#if MI_LOCKORDER
  _mi_lockorder_fork_child();
#endif
#if MI_DHAT
  _mi_dhat_after_fork_child();
#endif
#if MI_PPROF
  _mi_prof_after_fork_child();
#endif
}

/* ---- Options ------------------------------------------------------------- */

static inline void mi_hook_option_changed(mi_option_t option, long value) {
#if MI_GUARDED
  if (option == mi_option_guarded_sample_rate || option == mi_option_guarded_sample_seed ||
      option == mi_option_guarded_min || option == mi_option_guarded_max) {
    _mi_guard_options_changed();
  }
#endif
#if MI_SECURE
  if (option == mi_option_zero_on_free && value != 0) _mi_secure_zero_on_free_enabled();
#endif
  (void)option, (void)value;
}

/* ---- Segments, pages, blocks --------------------------------------------- */

/* A segment's range leaves the segment map and goes back to an arena or
   the OS. */
static inline void mi_hook_segment_unmapped(const void* segment, size_t size) {
#if MI_SECURE
  _mi_secure_segment_unmapped(segment, size); /* a later free into it is a double free */
#endif
#if MI_DHAT
  _mi_dhat_segment_unmapped(segment); /* the profiler's records kept beside it */
#endif
#if MI_MEMORY_EVENTS
  _mi_events_segment_unmapped(segment); /* the memory events' records beside it */
#endif
  (void)segment, (void)size;
}

/* A page slot is taken for `heap`: before its set-up (`was_dirty`: its
   memory is still committed and holds what it held) ... */
static inline void mi_hook_page_setup_begin(mi_heap_t* heap, mi_page_t* page, bool was_dirty, size_t block_size,
                                            size_t blocks) {
#if MI_SECURE
  _mi_secure_page_init(heap, page, was_dirty, block_size, blocks);
#endif
  (void)heap, (void)page, (void)was_dirty, (void)block_size, (void)blocks;
}

/* ... and after it, its geometry final. */
static inline void mi_hook_page_setup_end(mi_page_t* page) {
#if MI_SECURE
  _mi_secure_page_seal(page); /* free checks what it reads of the page against it */
#endif
  (void)page;
}

/* A page's blocks are all back and its slot goes back to its segment
   (before anything of the page or the segment is changed). */
static inline void mi_hook_page_freed(mi_segment_t* segment, mi_page_t* page) {
#if MI_SECURE
  _mi_secure_page_free_check(segment, page);
  _mi_secure_page_freed(page);
#endif
  (void)segment, (void)page;
}

/* The last page in use of `segment` went: before the segment is released. */
static inline void mi_hook_segment_emptied(const mi_segment_t* segment) {
#if MI_SECURE
  _mi_secure_segment_empty_check(segment);
#endif
  (void)segment;
}

/* A block freed by another thread is taken into its page's free list. */
static inline void mi_hook_block_collected(mi_page_t* page, mi_block_t* block) {
#if MI_SECURE
  _mi_secure_collected(page, block);
#endif
  (void)page, (void)block;
}

/* The owner took in the blocks other threads freed: a page flagged for a
   sampled block that none holds any more (its frees came from other
   threads, which may not take the owner's flag off) goes back to the fast
   path. */
static inline void mi_hook_page_collected(mi_page_t* page) {
#if MI_PPROF
  if (mi_unlikely(mi_page_flags(page) & MI_PAGE_FLAG_SAMPLED)) mi_prof_page_unflag_if_none(page);
#endif
  (void)page;
}

/* A destroyed heap's page goes with the blocks it still holds. */
static inline void mi_hook_heap_page_gone(const mi_page_t* page) {
#if MI_DHAT
  if (mi_unlikely(mi_dhat_is_on())) _mi_dhat_record_page_gone(page); /* its live blocks are freed */
#endif
#if MI_PPROF
  if (mi_unlikely(mi_prof_is_on())) _mi_prof_record_page_gone(page); /* its samples are freed */
#endif
#if MI_MEMORY_EVENTS
  _mi_events_page_gone(page); /* each counted block freed (a heap destroy: no test first) */
#endif
#if MI_STAT >= 2
  _mi_stat_requested_page_gone(page); /* detailed statistics: its live requests */
#endif
  (void)page;
}

/* ---- Observers of the program's allocations ------------------------------ */

/* The entry points the program calls report each allocation, free and
   resize to whatever observes them (the DHAT profiler, the pprof sampler,
   the memory events). Idle, this is one relaxed load of the word they set
   and a predictable branch; compiled out, a constant. The entry points test mi_observing()
   themselves, so that their common exit stays a tail call. */
/* The allocator itself allocates through the C library (a thread of its
   own started, whose stack and TLS the C library allocates with malloc):
   no observer counts that as the program's. Per thread, nesting. */
extern mi_decl_thread int _mi_observers_muted mi_decl_hidden;
static inline void mi_hook_internal_begin(void) {
  _mi_observers_muted++;
}
static inline void mi_hook_internal_end(void) {
  _mi_observers_muted--;
}

/* Which observers run (MI_OBSERVER_*); set and cleared by their start and stop. */
extern _Atomic(uint8_t) _mi_observers mi_decl_hidden;
#define MI_OBSERVER_DHAT 0x01
#define MI_OBSERVER_PROF 0x02
#define MI_OBSERVER_EVENTS 0x04 /* memory tracking on, or an ETW session listening */
#define MI_OBSERVER_STATS 0x08  /* detailed statistics (MI_STAT >= 2): set from the start, never cleared */

/* Whether frees must be reported one by one. The pprof sampler needs only
   the frees of its sampled blocks: their pages are flagged, which sends
   their frees to the generic path (mi_hook_sampled_page_free), so it
   leaves the free fast path alone. The secure build's free has no such
   path: there the sampler's frees take _mi_secure_free_sampling, which
   reads the page's flag once the segment is validated. */
static inline bool mi_observing_frees(void) {
#if MI_OBSERVERS
  const uint8_t mask =
      (MI_SECURE ? MI_OBSERVER_DHAT | MI_OBSERVER_PROF : MI_OBSERVER_DHAT) | MI_OBSERVER_EVENTS | MI_OBSERVER_STATS;
  return ((atomic_load_explicit(&_mi_observers, memory_order_relaxed) & mask) != 0);
#else
  return false;
#endif
}

/* Whether the page's flag and its bits say that the block may be sampled. */
static inline bool mi_prof_page_may_hold(const mi_page_t* page, const void* p) {
#if MI_PPROF
  return ((mi_page_flags(page) & MI_PAGE_FLAG_SAMPLED) != 0 &&
          (atomic_load_explicit(&page->prof_bits, memory_order_relaxed) & mi_prof_page_bit(p)) != 0);
#else
  (void)page, (void)p;
  return false;
#endif
}

/* A free on the generic path of a block whose page holds a sampled one:
   the profiler is called when the page's bits say the block may be a
   sample, or when the page holds none any more (its owner takes the flag
   off); the other blocks of the page, most of its frees, go on at once. */
static inline void mi_hook_sampled_page_free(mi_segment_t* segment, mi_page_t* page, void* p) {
#if MI_PPROF
  if (mi_unlikely(mi_page_flags(page) & MI_PAGE_FLAG_SAMPLED) &&
      ((atomic_load_explicit(&page->prof_bits, memory_order_relaxed) & mi_prof_page_bit(p)) != 0 ||
       atomic_load_explicit(&page->prof_samples, memory_order_relaxed) == 0)) {
    _mi_prof_sampled_page_free(segment, page, p);
  }
#endif
  (void)segment, (void)page, (void)p;
}

/* The secure build's free while the sampler runs, its segment validated,
   before the block goes anywhere: a block of a flagged page may be a sample
   (a zero-size slot has no page to flag: always looked up). */
static inline void mi_hook_secure_sampled_free(mi_segment_t* segment, void* p) {
#if MI_PPROF
  if (mi_unlikely(segment->kind == MI_SEGMENT_ZERO)) {
    if (mi_prof_is_on()) _mi_prof_record_free(p);
    return;
  }
  mi_hook_sampled_page_free(segment, _mi_segment_page_of(segment, p), p);
#endif
  (void)segment, (void)p;
}

/* The observers armed now (MI_OBSERVER_*): one relaxed load, which the
   entry points take once and pass on. */
static inline uint8_t mi_observers_armed(void) {
#if MI_OBSERVERS
  return atomic_load_explicit(&_mi_observers, memory_order_relaxed);
#else
  return 0;
#endif
}

/* Whether a reallocation's block may be a sample: its page is flagged (the
   secure build's pointer is not validated yet: the filter, which reads
   nothing of it). */
static inline bool mi_prof_realloc_maybe_sampled(const void* p) {
#if MI_PPROF
  if (MI_SECURE) return mi_prof_maybe_sampled(p);
  mi_segment_t* segment = _mi_block_segment(p);
  return mi_prof_page_may_hold(_mi_segment_page_of(segment, p), p);
#else
  (void)p;
  return false;
#endif
}

static inline bool mi_observing(void) {
  return (mi_observers_armed() != 0);
}

/* One call out of line each (observers.c), so that the entry points' exits
   stay tail calls and their fast paths need no frame. */
void* _mi_observe_alloc(void* p, size_t size) mi_decl_hidden; /* returns p */
void _mi_observe_free(void* p) mi_decl_hidden;

/* The fast path's countdown (mi_heap_t.observe_until). Each heap counts
   down the bytes it hands out; the observers hear of an allocation only
   when the count goes below 0: the sampler sets it to its gap to the next
   sample point less one, DHAT to -1 (every allocation), and idle it is set
   beyond what a process allocates. So the fast path pays one subtraction and one
   branch whether the observers are idle or sampling (tcmalloc's sampler
   works so). A start or a stop begins a new epoch: a heap set for an
   earlier one is set anew when its count ends, at its next page refill
   (mi_observe_refill), or at once for the thread that started. */
#define MI_OBSERVE_IDLE_UNTIL ((int64_t)1 << 62)
extern _Atomic(uint64_t) _mi_observe_epoch mi_decl_hidden;
void* _mi_observe_countdown_end(mi_heap_t* heap, void* p, size_t size) mi_decl_hidden; /* returns p */
/* After the observers word changed (a start, a stop): a new epoch, and the
   calling thread's heaps set anew. */
void _mi_observers_changed(void) mi_decl_hidden;

static inline void* mi_observe_fast(mi_heap_t* heap, void* p, size_t size) {
#if MI_OBSERVERS
  /* (written so that it compiles to a subtraction in memory and a sign test) */
  heap->observe_until -= (int64_t)size;
  if (mi_unlikely(heap->observe_until < 0)) return _mi_observe_countdown_end(heap, p, size);
#endif
  (void)heap, (void)size;
  return p;
}

/* A refill of an observed entry point's page: a heap set for an earlier
   epoch ends its count (a thread that allocates only from its pages' free
   lists hears of a start within a page's worth of blocks). */
static inline void mi_observe_refill(mi_heap_t* heap) {
#if MI_OBSERVERS
  if (mi_heap_is_initialized(heap) &&
      heap->observe_epoch != atomic_load_explicit(&_mi_observe_epoch, memory_order_relaxed)) {
    heap->observe_until = -1;
  }
#endif
  (void)heap;
}

/* After an allocation, with `armed` as the entry point read it. */
static inline void* mi_observe_alloc(uint8_t armed, void* p, size_t size) {
#if MI_PPROF
  /* the sampler alone, and this allocation short of its sample point: the
     common case while it runs, a subtraction without a call */
  if (armed == MI_OBSERVER_PROF && p != NULL && !mi_prof_countdown(size)) return p;
#endif
  (void)armed;
#if MI_OBSERVERS
  return _mi_observe_alloc(p, size);
#else
  (void)size;
  return p;
#endif
}

/* Before the block is freed: once free, another thread may get it. */
static inline void mi_observe_free(void* p) {
#if MI_OBSERVERS
  _mi_observe_free(p);
#else
  (void)p;
#endif
}

/* The memory events of a free the observers see (api/free.c): the block's
   size and record taken before the free (the secure build validates the
   pointer first: a double free is reported before anything is told), the
   event after it. */
typedef struct mi_observe_free_held_s {
  int none;
#if MI_MEMORY_EVENTS
  mi_events_held_t events;
#endif
#if MI_STAT >= 2
  size_t requested; /* detailed statistics: the block's request */
#endif
} mi_observe_free_held_t;

static inline void mi_observe_free_take(void* p, mi_observe_free_held_t* held) {
#if MI_MEMORY_EVENTS
  held->events.armed = false;
  if (mi_observers_armed() & MI_OBSERVER_EVENTS) _mi_events_take(p, false, &held->events);
#endif
#if MI_STAT >= 2
  held->requested = _mi_stat_requested_take(p, false);
#endif
  (void)p, (void)held;
}

static inline void mi_observe_free_done(mi_observe_free_held_t* held) {
#if MI_MEMORY_EVENTS
  if (held->events.armed) _mi_events_free_done(&held->events);
#endif
#if MI_STAT >= 2
  _mi_stat_requested_free_done(held->requested);
#endif
  (void)held;
}

/* A reallocation: the old block's record is taken out before realloc runs
   (once it frees the block, another thread may get the same address), then
   moved to the new block, or put back if realloc failed. */
typedef struct mi_observe_held_s {
  void* p;
  uint8_t armed; /* the observers armed when the reallocation began */
#if MI_DHAT
  mi_dhat_held_t dhat;
#endif
#if MI_PPROF
  mi_prof_held_t prof;
#endif
#if MI_MEMORY_EVENTS
  mi_events_held_t events;
#endif
#if MI_STAT >= 2
  size_t requested; /* detailed statistics: the old block's request */
#endif
} mi_observe_held_t;

/* Each observer armed at the start is told of the start and of the end,
   and only those: a reallocation of an unsampled block while the sampler
   alone runs costs a filter load, and the countdown if it moved. */
static inline void mi_observe_realloc_take(uint8_t armed, void* p, mi_observe_held_t* held) {
  held->p = p;
  held->armed = armed;
#if MI_DHAT
  if (armed & MI_OBSERVER_DHAT) _mi_dhat_realloc_take(p, &held->dhat);
#endif
#if MI_PPROF
  held->prof.found = false;
  if ((armed & MI_OBSERVER_PROF) && p != NULL && mi_prof_realloc_maybe_sampled(p)) {
    _mi_prof_realloc_take(p, &held->prof);
  }
#endif
#if MI_MEMORY_EVENTS
  held->events.armed = false;
  if (armed & MI_OBSERVER_EVENTS) _mi_events_take(p, true, &held->events);
#endif
#if MI_STAT >= 2
  held->requested = _mi_stat_requested_take(p, true);
#endif
}

static inline void mi_observe_realloc_done(mi_observe_held_t* held, void* newp, size_t newsize) {
#if MI_DHAT
  if (held->armed & MI_OBSERVER_DHAT) _mi_dhat_realloc_done(&held->dhat, newp, newsize);
#endif
#if MI_PPROF
  if (held->armed & MI_OBSERVER_PROF) {
    if (held->prof.found) {
      _mi_prof_realloc_done(&held->prof, held->p, newp, newsize);
    } else if (newp != NULL && newp != held->p && mi_prof_countdown(newsize) && mi_prof_is_on()) {
      /* a move (or realloc of NULL): an allocation of its own, decided anew
         (one that stays in place keeps its decision) */
      _mi_prof_record_alloc(newp, newsize);
    }
  }
#endif
#if MI_MEMORY_EVENTS
  if (held->events.armed) _mi_events_realloc_done(&held->events, newp, newsize); /* after DHAT's */
#endif
#if MI_STAT >= 2
  _mi_stat_requested_realloc_done(held->p, held->requested, newp, newsize);
#endif
  (void)held, (void)newp, (void)newsize;
}

/* A block kept in place by a reallocation while the sampler alone runs
   (src/api/alloc.c), its page and the flags it read: a sampled block takes
   its new size. The page's bits are read whatever the flag (they share its
   cache line; stale ones are masked off), so that the call is one branch,
   which a program growing many buffers, some sampled, cannot predict.
   (No record is held around such a reallocation: a moved sampled block's
   free is told by its page's flag, mi_hook_sampled_page_free, and the new
   block is an allocation of its own.) */
static inline void mi_observe_resized_sampler(const mi_page_t* page, uint8_t flags, void* p, size_t newsize) {
#if MI_PPROF
  const uint32_t flagged = (uint32_t)0 - (uint32_t)((flags & MI_PAGE_FLAG_SAMPLED) != 0);
  const uint32_t bits = atomic_load_explicit(&page->prof_bits, memory_order_relaxed) & flagged;
  if (mi_unlikely((bits & mi_prof_page_bit(p)) != 0)) _mi_prof_realloc_in_place(p, newsize);
#else
  (void)page, (void)flags, (void)p, (void)newsize;
#endif
}

/* The same in the secure build, the block validated and its page known
   (src/secure/free.c). */
static inline void mi_hook_secure_resized(const mi_page_t* page, void* p, size_t newsize) {
  mi_observe_resized_sampler(page, mi_page_flags(page), p, newsize);
}

/* A reallocation in place (mi_expand). */
static inline void mi_observe_resize(uint8_t armed, void* p, size_t newsize) {
  mi_observe_held_t held;
  mi_observe_realloc_take(armed, p, &held);
  mi_observe_realloc_done(&held, p, newsize);
}

#endif
