/* Stack capture for the profiler: a frame-pointer walk, bounded by the
   thread's stack, or (MIMALLOC_DHAT_BACKTRACE=1, for programs built without
   frame pointers) the platform unwinder. The allocator itself is compiled
   with frame pointers when the profiler is built in, so the walk gets
   through our frames to the program's.

   This file and symbolize.c talk to the dynamic loader (dl_iterate_phdr,
   dladdr): the profiler is ELF-only. */
#include "dhat.h"

#if MI_DHAT

#include <link.h>

/* The allocator's code, when it is a shared object of its own. */
static uintptr_t mi_dhat_code_lo;
static uintptr_t mi_dhat_code_hi;
/* MIMALLOC_DHAT_BACKTRACE: 0 auto, 1 always the unwinder, -1 frame pointers only */
static long mi_dhat_unwind_mode;

/* The code of every object loaded when the profiler started, sorted: a
   return address outside it ends a frame-pointer walk as invalid. */
#define MI_DHAT_CODE_RANGES 512
typedef struct mi_dhat_range_s {
  uintptr_t lo, hi;
} mi_dhat_range_t;
static mi_dhat_range_t mi_dhat_ranges[MI_DHAT_CODE_RANGES];
static size_t mi_dhat_range_count;
/* `main`: a walk that reaches it is complete (Valgrind's stacks end there) */
static uintptr_t mi_dhat_main_lo;
static uintptr_t mi_dhat_main_hi;

/* Per thread: the stack's bounds, asked for once (it may allocate). */
static mi_decl_thread uintptr_t mi_dhat_stack_lo;
static mi_decl_thread uintptr_t mi_dhat_stack_hi;
static mi_decl_thread uint8_t mi_dhat_stack_state; /* 0: not asked, 1: known, 2: unknown */

static int mi_dhat_find_code(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  uintptr_t addr = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X) == 0) continue;
    uintptr_t lo = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
    uintptr_t hi = lo + (uintptr_t)ph->p_memsz;
    if (mi_dhat_range_count < MI_DHAT_CODE_RANGES) {
      /* insertion sort: a few dozen objects */
      size_t j = mi_dhat_range_count++;
      while (j > 0 && mi_dhat_ranges[j - 1].lo > lo) {
        mi_dhat_ranges[j] = mi_dhat_ranges[j - 1];
        j--;
      }
      mi_dhat_ranges[j].lo = lo;
      mi_dhat_ranges[j].hi = hi;
    }
    /* the main program (empty name) holds the program's code as well */
    if (addr >= lo && addr < hi && info->dlpi_name != NULL && info->dlpi_name[0] != 0) {
      mi_dhat_code_lo = lo;
      mi_dhat_code_hi = hi;
    }
  }
  return 0;
}

static bool mi_dhat_in_code(uintptr_t addr) {
  size_t lo = 0, hi = mi_dhat_range_count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (addr < mi_dhat_ranges[mid].lo) hi = mid;
    else if (addr >= mi_dhat_ranges[mid].hi) lo = mid + 1;
    else return true;
  }
  return false;
}

void _mi_dhat_stack_init(void) {
  mi_dhat_unwind_mode = mi_option_get(mi_option_dhat_backtrace);
  mi_dhat_range_count = 0;
  mi_dhat_code_lo = mi_dhat_code_hi = 0;
  dl_iterate_phdr(&mi_dhat_find_code, (void*)(uintptr_t)&_mi_dhat_stack_init);
  if (!_mi_dhat_find_main(&mi_dhat_main_lo, &mi_dhat_main_hi)) mi_dhat_main_lo = mi_dhat_main_hi = 0;
  /* the unwinder loads on its first use (and allocates): do that now */
  void* warm[4];
  (void)mi_prim_backtrace(warm, 4);
}

bool _mi_dhat_addr_in_allocator(uintptr_t addr) {
  return (addr >= mi_dhat_code_lo && addr < mi_dhat_code_hi);
}

bool _mi_dhat_allocator_linked_in(void) {
  return (mi_dhat_code_hi == 0);
}

static int mi_dhat_capture_backtrace(uintptr_t* frames, int max) {
  void* raw[MI_DHAT_MAX_FRAMES + 16];
  int n = mi_prim_backtrace(raw, MI_DHAT_MAX_FRAMES + 16);
  int k = 0;
  int i = 0;
  while (i < n && _mi_dhat_addr_in_allocator((uintptr_t)raw[i])) i++;
  for (; i < n && k < max; i++) frames[k++] = (uintptr_t)raw[i];
  return k;
}

/* The walk trusts a frame only if it lies above the previous one, inside the
   thread's stack, and (past the first) returns into code. It is complete when
   it reaches `main`, the outermost frame (a zero frame pointer) or the frame
   limit. The first frame is always right: the allocator keeps frame pointers,
   so its outermost frame holds the return address into the program. A
   program built without frame pointers breaks the chain after that; in the
   automatic mode such a walk is redone by the unwinder. (Where a register
   happens to hold a stack address and the slot above it an address in code,
   the walk can take a wrong frame for a right one; MIMALLOC_DHAT_BACKTRACE=1
   rules that out.) */
__attribute__((noinline)) int _mi_dhat_stack_capture(uintptr_t* frames, int max) {
  if (mi_dhat_unwind_mode > 0) return mi_dhat_capture_backtrace(frames, max);
  if (mi_unlikely(mi_dhat_stack_state == 0)) {
    uintptr_t lo = 0, hi = 0;
    bool known = mi_prim_thread_stack_bounds(&lo, &hi);
    mi_dhat_stack_lo = lo;
    mi_dhat_stack_hi = hi;
    mi_dhat_stack_state = (known ? 1 : 2);
  }
  if (mi_dhat_stack_state != 1) return mi_dhat_capture_backtrace(frames, max);
  uintptr_t lo = mi_dhat_stack_lo;
  uintptr_t hi = mi_dhat_stack_hi;
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  int n = 0;
  bool leading = true;
  bool complete = false;
  while (n < max) {
    if (fp < lo || fp > hi - 2 * sizeof(uintptr_t) || (fp & (sizeof(uintptr_t) - 1)) != 0) break;
    const uintptr_t* frame = (const uintptr_t*)fp;
    uintptr_t next = frame[0];
    uintptr_t ret = frame[1];
    if (leading && _mi_dhat_addr_in_allocator(ret)) {
      /* still inside the allocator */
    } else {
      if (n > 0 && !mi_dhat_in_code(ret)) break;
      leading = false;
      frames[n++] = ret;
      if (ret > mi_dhat_main_lo && ret <= mi_dhat_main_hi) {
        complete = true;
        break;
      }
    }
    if (next == 0) {
      complete = true;
      break;
    }
    if (next <= fp) break;
    fp = next;
  }
  if (n == max) complete = true;
  if (!complete && mi_dhat_unwind_mode == 0) return mi_dhat_capture_backtrace(frames, max);
  return n;
}

#endif
