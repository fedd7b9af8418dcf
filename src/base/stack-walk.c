/* The calling thread's return addresses by its frame-pointer chain, every
   read through mi_prim_read_self_prefix: a chain that leads off the stack (a
   function built without frame pointers keeps another value in the
   register) ends the walk, it never faults. For the secure build's reports
   and the stacks its guarded samples keep; no allocation, no lock. */
#include "base.h"
#include "../secure/secure.h"

#if MI_SECURE
#define MI_STACK_WINDOW_WORDS 256 /* 2 KiB */

mi_noinline size_t _mi_stack_walk(uintptr_t* pcs, size_t max, uintptr_t fp) {
#if defined(_WIN32)
  /* Windows x64 lets a function's frame pointer point anywhere in its
     frame (MinGW's does not point at the saved one): the calling thread's
     stack by the unwinder instead, from the unwind tables (ntdll's; no
     allocation, no lock) */
  if (fp == 0) {
    void* frames[62];
    int n = mi_prim_backtrace(frames, (int)(max < 62 ? max : 62));
    size_t k = 0;
    while ((int)k < n && frames[k] != NULL) { /* (past the thread's start: nothing, or noise) */
      pcs[k] = (uintptr_t)frames[k];
      k++;
    }
    return k;
  }
#endif
  if (fp == 0) fp = (uintptr_t)__builtin_frame_address(0);
  /* frames are read a window at a time: a read is a system call, and most
     walks find all their frames within the first window */
  uintptr_t window[MI_STACK_WINDOW_WORDS];
  uintptr_t window_lo = 0, window_hi = 0; /* the copied range: [lo, hi) */
  size_t n = 0;
  while (n < max && fp != 0 && (fp % sizeof(uintptr_t)) == 0) {
    if (fp < window_lo || fp > window_hi || window_hi - fp < 2 * sizeof(uintptr_t)) {
      size_t got = mi_prim_read_self_prefix((const void*)fp, window, sizeof(window));
      if (got < 2 * sizeof(uintptr_t)) break;
      window_lo = fp;
      window_hi = fp + got;
    }
    const uintptr_t* frame =
        &window[(fp - window_lo) / sizeof(uintptr_t)]; /* the caller's frame pointer, the return address */
    if (frame[1] == 0) break;
    pcs[n++] = frame[1];
    /* each frame above the last, within a stack's reach of it */
    if (frame[0] <= fp || frame[0] - fp > ((uintptr_t)64 << 20)) break;
    fp = frame[0];
  }
  return n;
}
#endif
