/* The calling thread's return addresses by its frame-pointer chain, every
   read through mi_prim_read_self: a chain that leads off the stack (a
   function built without frame pointers keeps another value in the
   register) ends the walk, it never faults. For the secure build's reports
   and the stacks its guarded samples keep; no allocation, no lock. */
#include "base.h"
#include "../secure/secure.h"

#if MI_SECURE
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
  size_t n = 0;
  while (n < max && fp != 0 && (fp % sizeof(uintptr_t)) == 0) {
    uintptr_t frame[2]; /* the caller's frame pointer, the return address */
    if (mi_prim_read_self((const void*)fp, frame, sizeof(frame)) != 0) break;
    if (frame[1] == 0) break;
    pcs[n++] = frame[1];
    /* each frame above the last, within a stack's reach of it */
    if (frame[0] <= fp || frame[0] - fp > ((uintptr_t)64 << 20)) break;
    fp = frame[0];
  }
  return n;
}
#endif
