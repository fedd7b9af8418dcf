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
   |                             |                           | keys and zero-size segments    |
   | mi_hook_process_ready       | init.c, set-up done       | fault report at exit; DHAT     |
   |                             |                           | start; secure fault handler    |
   | mi_hook_process_done        | init.c, at exit           | DHAT: the profile written      |
   | mi_hook_thread_done         | init.c, thread data going | DHAT: the thread's table       |
   | mi_hook_fork_prepare/parent | init.c, fork handlers     | (none yet)                     |
   | mi_hook_fork_child          | init.c, child's locks out | lock-order checker; DHAT       |
   | mi_hook_option_changed      | options.c, mi_option_set  | guard sampler; secure zeroing  |
   | mi_hook_segment_unmapped    | segment.c                 | secure (stale frees); DHAT     |
   | mi_hook_page_setup_begin/end| page.c, fresh page        | secure: page bitmap, seal      |
   | mi_hook_page_freed          | segment.c                 | secure: page and segment check |
   | mi_hook_block_collected     | page.c, other threads'    | secure: the block's used bit   |
   |                             | frees taken in            |                                |
   | mi_hook_heap_page_gone      | heap.c, heap destroyed    | DHAT: its live blocks freed    |
   | mi_observe_*                | api/, entry points        | DHAT (later: pprof, events)    |

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
}

/* The allocator is set up and may be used (these may allocate). */
static inline void mi_hook_process_ready(void) {
#if MI_FAULT
  _mi_fault_register_report();
#endif
#if MI_DHAT
  _mi_dhat_process_init(); /* MIMALLOC_DHAT=1: the profiler starts now */
#endif
#if MI_SECURE
  /* a fault on one of our guard pages says what it hit before the process dies */
  mi_prim_fault_handler_install(&_mi_guard_fault_report);
#endif
}

static inline void mi_hook_process_done(void) {
#if MI_DHAT
  _mi_dhat_process_done();
#endif
}

/* A thread's heaps are gone; its thread data is about to go. */
static inline void mi_hook_thread_done(void) {
#if MI_DHAT
  _mi_dhat_thread_done();
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
  (void)segment, (void)size;
}

/* A page slot is taken for `heap`: before its set-up (`was_dirty`: its
   memory is still committed and holds what it held) ... */
static inline void mi_hook_page_setup_begin(mi_heap_t* heap, mi_page_t* page, bool was_dirty, size_t blocks) {
#if MI_SECURE
  _mi_secure_page_init(heap, page, was_dirty, blocks);
#endif
  (void)heap, (void)page, (void)was_dirty, (void)blocks;
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

/* A destroyed heap's page goes with the blocks it still holds. */
static inline void mi_hook_heap_page_gone(const mi_page_t* page) {
#if MI_DHAT
  if (mi_unlikely(mi_dhat_is_on())) _mi_dhat_record_page_gone(page); /* its live blocks are freed */
#endif
  (void)page;
}

/* ---- Observers of the program's allocations ------------------------------ */

/* The entry points the program calls report each allocation, free and
   resize to whatever observes them (the DHAT profiler). Idle, this is one
   relaxed load and a predictable branch; compiled out, a constant. The
   entry points test mi_observing() themselves, so that their common exit
   stays a tail call. */
static inline bool mi_observing(void) {
#if MI_DHAT
  return mi_dhat_is_on();
#else
  return false;
#endif
}

static inline void* mi_observe_alloc(void* p, size_t size) {
#if MI_DHAT
  if (p != NULL) return _mi_dhat_record_alloc(p, size);
#endif
  (void)size;
  return p;
}

/* Before the block is freed: once free, another thread may get it. */
static inline void mi_observe_free(void* p) {
#if MI_DHAT
  if (p != NULL) _mi_dhat_record_free(p);
#endif
  (void)p;
}

/* A reallocation in place (mi_expand). */
static inline void mi_observe_resize(void* p, size_t newsize) {
#if MI_DHAT
  _mi_dhat_record_resize(p, newsize);
#endif
  (void)p, (void)newsize;
}

/* A reallocation: the old block's record is taken out before realloc runs
   (once it frees the block, another thread may get the same address), then
   moved to the new block, or put back if realloc failed. */
typedef struct mi_observe_held_s {
#if MI_DHAT
  mi_dhat_held_t dhat;
#else
  int none;
#endif
} mi_observe_held_t;

static inline void mi_observe_realloc_take(void* p, mi_observe_held_t* held) {
#if MI_DHAT
  _mi_dhat_realloc_take(p, &held->dhat);
#endif
  (void)p, (void)held;
}

static inline void mi_observe_realloc_done(mi_observe_held_t* held, void* newp, size_t newsize) {
#if MI_DHAT
  _mi_dhat_realloc_done(&held->dhat, newp, newsize);
#endif
  (void)held, (void)newp, (void)newsize;
}

#endif
