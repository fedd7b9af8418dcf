/* The run-time lock-order checker (MI_LOCKORDER): the interface lock.c and
   the fork handlers use, and the hooks of the lock-order tests. Without
   MI_LOCKORDER nothing here exists and the lock calls are the plain
   primitives. See docs/lock-order.md. */
#ifndef MI_LOCKORDER_H
#define MI_LOCKORDER_H

#if MI_LOCKORDER
#include <stdbool.h>

#include "../compiler.h"

struct mi_lock_s;

/* What a violation does (option lockorder, MIMALLOC_LOCKORDER). */
typedef enum mi_lockorder_mode_e {
  MI_LOCKORDER_OFF = 0,   /* no checking */
  MI_LOCKORDER_ABORT = 1, /* report and abort (the default) */
  MI_LOCKORDER_WARN = 2   /* report each distinct violation once and go on */
} mi_lockorder_mode_t;

/* Read the mode from the options; called once at process start. */
void _mi_lockorder_init(void) mi_decl_hidden;
/* Before blocking on `lock`: check the rank order against every lock this
   thread holds, record the edges held -> lock and look for a cycle. */
void _mi_lockorder_before_acquire(const struct mi_lock_s* lock, const char* file, int line) mi_decl_hidden;
/* `lock` is now held (after an acquire or a successful try-acquire). */
void _mi_lockorder_acquired(const struct mi_lock_s* lock, const char* file, int line) mi_decl_hidden;
/* Before releasing `lock`: it must be held by this thread (in any position). */
void _mi_lockorder_release(const struct mi_lock_s* lock, const char* file, int line) mi_decl_hidden;
/* A `_locked` function's entry: `lock` must be held by this thread. */
void _mi_lockorder_assert_held(const struct mi_lock_s* lock, const char* file, int line) mi_decl_hidden;
/* Before a callback of the program (`callback` names it): this thread holds
   no lock of ours, as the callback may call the allocator or block. */
void _mi_lockorder_assert_none_held(const char* callback, const char* file, int line) mi_decl_hidden;
/* Fork child: the forking thread holds nothing any more (it released every
   lock after the fork). The edges seen stay valid. */
void _mi_lockorder_fork_child(void) mi_decl_hidden;

/* Tests: forget every edge and report, clear this thread's held locks, and
   set the mode. */
void _mi_lockorder_reset(mi_lockorder_mode_t mode) mi_decl_hidden;
/* Tests: how many violations there have been (in warn mode a pair is
   reported once but counted every time). */
long _mi_lockorder_violations(void) mi_decl_hidden;
#endif

#endif
