/* The frame-pointer walk of the profilers' capture (stack.c), inline for
   the callers that walk on every allocation: the profilers' capture and
   the secure build's per-block stacks (secure/stacks.c). ELF only (Windows
   walks with its unwinder: stack-windows.c).

   The walk trusts a frame only if it lies above the previous one, inside
   the thread's stack, and (past the first) returns into code loaded when
   the profiler started; it is complete when it reaches `main` or the
   frame limit. The allocator's own frames come first, all with frame
   pointers: their chain is sound, and they are skipped with only the
   bounds check (stack.c's comment on _mi_dhat_stack_capture says the rest). */
#ifndef MI_STACK_WALK_H
#define MI_STACK_WALK_H

#include "dhat.h"

#define MI_WALK_CODE_RANGES 512
typedef struct mi_walk_range_s {
  uintptr_t lo, hi;
} mi_walk_range_t;
/* set once by _mi_dhat_stack_init, read by every walk */
extern uintptr_t _mi_walk_code_lo mi_decl_hidden; /* the allocator's code, as a shared object (else 0) */
extern uintptr_t _mi_walk_code_hi mi_decl_hidden;
extern mi_walk_range_t _mi_walk_ranges[MI_WALK_CODE_RANGES] mi_decl_hidden;
extern size_t _mi_walk_range_count mi_decl_hidden;
extern uintptr_t _mi_walk_main_lo mi_decl_hidden;
extern uintptr_t _mi_walk_main_hi mi_decl_hidden;
/* per thread: its stack's bounds (state 0: not asked, 1: known, 2: not
   known), and the range its last frame was found in */
extern mi_decl_thread uintptr_t _mi_walk_stack_lo mi_decl_hidden;
extern mi_decl_thread uintptr_t _mi_walk_stack_hi mi_decl_hidden;
extern mi_decl_thread uint8_t _mi_walk_stack_state mi_decl_hidden;
extern mi_decl_thread size_t _mi_walk_range_last mi_decl_hidden;
extern mi_decl_thread size_t _mi_walk_range_prev mi_decl_hidden; /* ... and the one before it */
bool _mi_walk_in_code_search(uintptr_t addr) mi_decl_hidden;
void _mi_walk_stack_bounds(void) mi_decl_hidden; /* may allocate */

/* a stack's frames keep to a few objects (the program's, the C library's):
   most lookups end at the last one's range, or the one before (a thread's
   stack ends in the C library's start_thread, under the program's frames:
   every walk goes from one to the other and back) */
static inline bool mi_walk_in_code(uintptr_t addr) {
  const mi_walk_range_t* last = &_mi_walk_ranges[_mi_walk_range_last];
  if (addr >= last->lo && addr < last->hi) return true;
  const mi_walk_range_t* prev = &_mi_walk_ranges[_mi_walk_range_prev];
  if (addr >= prev->lo && addr < prev->hi) return true;
  return _mi_walk_in_code_search(addr);
}

static inline bool mi_walk_is_main(uintptr_t ret) {
  return (ret > _mi_walk_main_lo && ret <= _mi_walk_main_hi);
}

/* The walk from `fp`, a frame of the allocator's, within the thread's stack
   from `lo` to `top` (its end less a frame): the allocator's frames
   skipped, then at most `max` frames it trusts. Where given, `frames` gets
   their return addresses, `*slot0` the first one's slot and `*hash` their
   hash (inline: what a caller passes NULL for costs nothing); `*main`
   whether it reached `main`. -1 if the allocator's own chain is broken. */
static mi_forceinline int mi_walk_frames(uintptr_t fp, uintptr_t lo, uintptr_t top, int max, uintptr_t* frames,
                                         uintptr_t* slot0, uint64_t* hash, bool* main) {
  const uintptr_t code_lo = _mi_walk_code_lo;
  const uintptr_t code_hi = _mi_walk_code_hi;
  *main = false;
  while (fp >= lo && fp <= top) {
    const uintptr_t* frame = (const uintptr_t*)fp;
    if (frame[1] < code_lo || frame[1] >= code_hi) break;
    if (frame[0] <= fp) return -1; /* (cannot happen) */
    fp = frame[0];
  }
  uint64_t h = MI_WALK_HASH_SEED;
  int n = 0;
  while (n < max) {
    if (fp < lo || fp > top || (fp & (sizeof(uintptr_t) - 1)) != 0) break;
    const uintptr_t* frame = (const uintptr_t*)fp;
    uintptr_t next = frame[0];
    uintptr_t ret = frame[1];
    if (n > 0 && !mi_walk_in_code(ret)) break;
    if (slot0 != NULL && n == 0) *slot0 = fp + sizeof(uintptr_t);
    if (frames != NULL) frames[n] = ret;
    if (hash != NULL) h = mi_walk_hash_step(h, ret);
    n++;
    if (mi_walk_is_main(ret)) {
      *main = true;
      break;
    }
    if (next <= fp) break; /* zero included: code without frame pointers keeps anything there */
    fp = next;
  }
  if (hash != NULL) *hash = mi_walk_hash_end(h, (uint32_t)n);
  return n;
}

/* The profilers' walk: the frames it trusts, `*slot0` the first one's
   slot, `*complete` whether it reached `main` or the limit. -1 if the
   thread's stack is not known. */
static mi_forceinline int mi_walk_fp(uintptr_t* frames, int max, uintptr_t fp, uintptr_t* slot0, bool* complete) {
  if (mi_unlikely(_mi_walk_stack_state == 0)) _mi_walk_stack_bounds();
  if (_mi_walk_stack_state != 1) return -1;
  *slot0 = 0;
  bool main;
  int n =
      mi_walk_frames(fp, _mi_walk_stack_lo, _mi_walk_stack_hi - 2 * sizeof(uintptr_t), max, frames, slot0, NULL, &main);
  *complete = (main || n == max);
  return n;
}

#endif
