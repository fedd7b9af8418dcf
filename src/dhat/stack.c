/* Stack capture for the profiler: a frame-pointer walk, bounded by the
   thread's stack and checked against the loaded code, redone by the platform
   unwinder where the chain breaks (a program built without frame pointers);
   MIMALLOC_DHAT_BACKTRACE picks one of the two for good. The allocator itself
   is compiled with frame pointers when the profiler is built in, so the walk
   gets through our frames to the program's.

   This file and symbolize.c talk to the dynamic loader (dl_iterate_phdr,
   dladdr): they are ELF-only (Windows: stack-windows.c, symbolize-pe.c). */
#include "dhat.h"
#include "stack-walk.h"
#include "../base/listeners.h"

#if MI_DHAT || MI_PPROF

#include <link.h>

/* MIMALLOC_DHAT_BACKTRACE: 0 auto, 1 always the unwinder, -1 frame pointers only */
static long mi_dhat_unwind_mode;

/* What the frame-pointer walk reads (stack-walk.h): the allocator's code
   when it is a shared object of its own, the code of every object loaded
   when the profiler started (sorted: a return address outside it ends a
   walk as invalid), `main` (a walk that reaches it is complete: Valgrind's
   stacks end there), and per thread its stack's bounds (asked for once: it
   may allocate) and the range its last frame was found in. */
uintptr_t _mi_walk_code_lo;
uintptr_t _mi_walk_code_hi;
mi_walk_range_t _mi_walk_ranges[MI_WALK_CODE_RANGES];
size_t _mi_walk_range_count;
uintptr_t _mi_walk_main_lo;
uintptr_t _mi_walk_main_hi;
mi_decl_thread uintptr_t _mi_walk_stack_lo;
mi_decl_thread uintptr_t _mi_walk_stack_hi;
mi_decl_thread uint8_t _mi_walk_stack_state;
mi_decl_thread size_t _mi_walk_range_last;
mi_decl_thread size_t _mi_walk_range_prev;

static int mi_dhat_find_code(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  uintptr_t addr = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X) == 0) continue;
    uintptr_t lo = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
    uintptr_t hi = lo + (uintptr_t)ph->p_memsz;
    if (_mi_walk_range_count < MI_WALK_CODE_RANGES) {
      /* insertion sort: a few dozen objects */
      size_t j = _mi_walk_range_count++;
      while (j > 0 && _mi_walk_ranges[j - 1].lo > lo) {
        _mi_walk_ranges[j] = _mi_walk_ranges[j - 1];
        j--;
      }
      _mi_walk_ranges[j].lo = lo;
      _mi_walk_ranges[j].hi = hi;
    }
    /* the main program (empty name) holds the program's code as well */
    if (addr >= lo && addr < hi && info->dlpi_name != NULL && info->dlpi_name[0] != 0) {
      _mi_walk_code_lo = lo;
      _mi_walk_code_hi = hi;
    }
  }
  return 0;
}

bool _mi_walk_in_code_search(uintptr_t addr) {
  size_t lo = 0, hi = _mi_walk_range_count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (addr < _mi_walk_ranges[mid].lo) hi = mid;
    else if (addr >= _mi_walk_ranges[mid].hi) lo = mid + 1;
    else {
      _mi_walk_range_prev = _mi_walk_range_last;
      _mi_walk_range_last = mid;
      return true;
    }
  }
  return false;
}

void _mi_walk_stack_bounds(void) {
  uintptr_t lo = 0, hi = 0;
  bool known = mi_prim_thread_stack_bounds(&lo, &hi);
  _mi_walk_stack_lo = lo;
  _mi_walk_stack_hi = hi;
  _mi_walk_stack_state = (known ? 1 : 2);
}

/* Once, at the first start: later starts may run while other threads walk
   their stacks. (Code loaded later fails the check and goes to the unwinder.) */
void _mi_dhat_stack_init(void) {
  static _Atomic(int) state; /* 0: not done, 1: being done, 2: done */
  int expected = 0;
  if (!atomic_compare_exchange_strong(&state, &expected, 1)) {
    while (atomic_load(&state) != 2) mi_prim_yield();
    return;
  }
  mi_dhat_unwind_mode = mi_option_get(mi_option_dhat_backtrace);
  mi_lock_assert_none_held("the loader and the unwinder"); /* both take locks of their own, and allocate */
  dl_iterate_phdr(&mi_dhat_find_code, (void*)(uintptr_t)&_mi_dhat_stack_init);
  if (!_mi_dhat_find_main(&_mi_walk_main_lo, &_mi_walk_main_hi)) _mi_walk_main_lo = _mi_walk_main_hi = 0;
  /* the unwinder loads on its first use (and allocates): do that now */
  void* warm[4];
  (void)mi_prim_backtrace(warm, 4);
  uintptr_t ips[4], cfas[4];
  (void)mi_prim_unwind(ips, cfas, 4); /* looks the unwinder's entry points up */
  atomic_store(&state, 2);
}

bool _mi_dhat_addr_in_allocator(uintptr_t addr) {
  return (addr >= _mi_walk_code_lo && addr < _mi_walk_code_hi);
}

bool _mi_dhat_allocator_linked_in(void) {
  return (_mi_walk_code_hi == 0);
}

static int mi_dhat_capture_backtrace(uintptr_t* frames, int max) {
  void* raw[MI_CAPTURE_MAX_FRAMES + 16];
  int n = mi_prim_backtrace(raw, MI_CAPTURE_MAX_FRAMES + 16);
  int k = 0;
  int i = 0;
  while (i < n && _mi_dhat_addr_in_allocator((uintptr_t)raw[i])) i++;
  for (; i < n && k < max; i++) frames[k++] = (uintptr_t)raw[i];
  return k;
}

/* ---- The unwinder, with a per-thread cache -------------------------------------
   Unwinding by the tables costs microseconds per stack. A program without
   frame pointers calls malloc from the same places with the same stacks over
   and over, so each thread keeps the stacks it unwound, keyed by the first
   frame's return address (known, with the stack slot it was found in, from
   the frame-pointer walk through the allocator). Each return address is
   kept with its slot's distance from that first slot: a frame's size is
   fixed by its code, so a cached stack is used only if every one of its
   return addresses lies at its distance from the new first slot, and the
   chain of live frames above the caller is then the one that was unwound.
   Distances, not addresses, so that a thread's cache, handed on when it
   ends, serves the next thread's first calls from the same places (a
   program of short threads would otherwise unwind in full in each).
   Stacks that the frame-pointer walk got whole are kept in the same cache
   (marked as walked, and only ever compared whole with a new walk): not to
   save the walk, but so that each entry can carry the site of its stack
   (its hint), which spares the recorder hashing and comparing the stack. */
#define MI_DHAT_UCACHE 256
#define MI_DHAT_UCACHE_WAYS 4
typedef struct mi_dhat_uentry_s {
  uintptr_t ret0, slot0;
  uint32_t n;
  bool walked; /* from a whole frame-pointer walk: no slots */
  mi_dhat_site_hint_t hint;
  uintptr_t ips[MI_DHAT_MAX_FRAMES];
  uintptr_t offsets[MI_DHAT_MAX_FRAMES]; /* each return address's slot, from slot0 (walked: none) */
} mi_dhat_uentry_t;
#define MI_DHAT_UCACHE_SIZE (MI_DHAT_UCACHE * sizeof(mi_dhat_uentry_t))

static mi_decl_thread mi_dhat_uentry_t* mi_dhat_ucache; /* OS memory, kept for reuse at thread exit */
static mi_decl_thread unsigned mi_dhat_ucache_victim;

/* The caches of exited threads, for the next threads: a program that starts
   short threads by the thousand would map and unmap one each (and fault its
   pages in) at each thread's first sample. A slot is taken by exchange, so
   each cache has one owner at a time. */
#define MI_DHAT_UCACHE_SPARE 8
static _Atomic(mi_dhat_uentry_t*) mi_dhat_ucache_spare[MI_DHAT_UCACHE_SPARE];

void _mi_dhat_stack_thread_done(void) {
  mi_dhat_uentry_t* cache = mi_dhat_ucache;
  mi_dhat_ucache = NULL;
  if (cache == NULL) return;
  for (int i = 0; i < MI_DHAT_UCACHE_SPARE; i++) {
    mi_dhat_uentry_t* expected = NULL;
    if (atomic_compare_exchange_strong_explicit(&mi_dhat_ucache_spare[i], &expected, cache, memory_order_release,
                                                memory_order_relaxed)) {
      return;
    }
  }
  _mi_dhat_os_free(cache, MI_DHAT_UCACHE_SIZE);
}

/* A cache for this thread: a spare one with its entries (each is checked
   against this thread's stack before use), or a new one. */
static mi_dhat_uentry_t* mi_dhat_ucache_new(void) {
  for (int i = 0; i < MI_DHAT_UCACHE_SPARE; i++) {
    if (atomic_load_explicit(&mi_dhat_ucache_spare[i], memory_order_relaxed) == NULL) continue;
    mi_dhat_uentry_t* cache = atomic_exchange_explicit(&mi_dhat_ucache_spare[i], NULL, memory_order_acquire);
    if (cache != NULL) return cache;
  }
  return (mi_dhat_uentry_t*)_mi_dhat_os_alloc(MI_DHAT_UCACHE_SIZE);
}

static bool mi_dhat_uentry_valid(const mi_dhat_uentry_t* e, uintptr_t ret0, uintptr_t slot0, int max) {
  if (e->ret0 != ret0 || e->n == 0 || (int)e->n > max || e->walked) return false;
  /* the farthest slot (the offsets grow) inside this thread's stack */
  if (e->offsets[e->n - 1] > _mi_walk_stack_hi - sizeof(uintptr_t) - slot0) return false;
  for (uint32_t i = 0; i < e->n; i++) {
    if (*(const uintptr_t*)(slot0 + e->offsets[i]) != e->ips[i]) return false;
  }
  return true;
}

/* The cache set of the caller's return address (NULL without
   memory). Set-associative: one place called from several others (a wrapper
   such as xmalloc) has one stack per caller. */
static mi_dhat_uentry_t* mi_dhat_ucache_set(uintptr_t ret0) {
  if (mi_dhat_ucache == NULL) mi_dhat_ucache = mi_dhat_ucache_new();
  if (mi_dhat_ucache == NULL) return NULL;
  /* (the first frame's slot is not in the key: another thread's stack has other slots) */
  uint64_t h = (uint64_t)ret0 * 0x9E3779B97F4A7C15ULL;
  return &mi_dhat_ucache[((h >> 40) % (MI_DHAT_UCACHE / MI_DHAT_UCACHE_WAYS)) * MI_DHAT_UCACHE_WAYS];
}

/* The way of `set` to fill: an empty one, else one in turn. */
static mi_dhat_uentry_t* mi_dhat_ucache_victim_of(mi_dhat_uentry_t* set) {
  for (int w = 0; w < MI_DHAT_UCACHE_WAYS; w++) {
    if (set[w].n == 0) return &set[w];
  }
  return &set[mi_dhat_ucache_victim++ % MI_DHAT_UCACHE_WAYS];
}

/* Short stacks are the rule: a loop beats a call to memcmp. */
static inline bool mi_dhat_frames_equal(const uintptr_t* a, const uintptr_t* b, int n) {
  for (int i = 0; i < n; i++) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

/* After a whole walk: the hint of the cached walk with the same frames, or
   of a new entry for them. */
static mi_dhat_site_hint_t* mi_dhat_walk_hint(const uintptr_t* frames, int n, uintptr_t slot0) {
  if (n <= 0 || n > MI_DHAT_MAX_FRAMES) return NULL;
  mi_dhat_uentry_t* set = mi_dhat_ucache_set(frames[0]);
  if (set == NULL) return NULL;
  for (int w = 0; w < MI_DHAT_UCACHE_WAYS; w++) {
    mi_dhat_uentry_t* e = &set[w];
    if (e->walked && e->n == (uint32_t)n && e->slot0 == slot0 && mi_dhat_frames_equal(e->ips, frames, n)) {
      return &e->hint;
    }
  }
  mi_dhat_uentry_t* e = mi_dhat_ucache_victim_of(set);
  e->ret0 = frames[0];
  e->slot0 = slot0;
  e->n = (uint32_t)n;
  e->walked = true;
  e->hint = (mi_dhat_site_hint_t){0};
  memcpy(e->ips, frames, (size_t)n * sizeof(uintptr_t));
  return &e->hint;
}

static int mi_dhat_capture_unwind(uintptr_t* frames, int max, uintptr_t ret0, uintptr_t slot0,
                                  mi_dhat_site_hint_t** hint) {
  mi_dhat_uentry_t* e = NULL;
  if (slot0 != 0) {
    mi_dhat_uentry_t* set = mi_dhat_ucache_set(ret0);
    if (set != NULL) {
      for (int w = 0; w < MI_DHAT_UCACHE_WAYS; w++) {
        if (mi_dhat_uentry_valid(&set[w], ret0, slot0, max)) {
          memcpy(frames, set[w].ips, set[w].n * sizeof(uintptr_t));
          *hint = &set[w].hint;
          return (int)set[w].n;
        }
      }
      e = mi_dhat_ucache_victim_of(set);
    }
  }
  uintptr_t ips[MI_CAPTURE_MAX_FRAMES + 24];
  uintptr_t cfas[MI_CAPTURE_MAX_FRAMES + 24];
  int m = mi_prim_unwind(ips, cfas, MI_CAPTURE_MAX_FRAMES + 24);
  if (m < 0) {
    if (e != NULL) e->n = 0;
    return mi_dhat_capture_backtrace(frames, max);
  }
  /* start at the allocator's caller: the frame whose return address lies in
     slot0, else the first one outside the allocator's code */
  int start = -1;
  for (int i = 0; i < m && start < 0; i++) {
    if (ips[i] == ret0 && cfas[i] - sizeof(uintptr_t) == slot0) start = i;
  }
  bool cacheable = (start >= 0);
  if (start < 0) {
    start = 0;
    while (start < m && _mi_dhat_addr_in_allocator(ips[start])) start++;
  }
  int n = 0;
  for (int i = start; i < m && n < max; i++) {
    frames[n] = ips[i];
    if (e != NULL && cacheable && n < MI_DHAT_MAX_FRAMES) {
      /* only slots on this thread's stack, read again on a later lookup */
      uintptr_t slot = cfas[i] - sizeof(uintptr_t);
      if (slot < slot0 || slot > _mi_walk_stack_hi - sizeof(uintptr_t) || (n > 0 && slot <= slot0 + e->offsets[n - 1]))
        cacheable = false;
      e->offsets[n] = slot - slot0;
    }
    n++;
    if (mi_walk_is_main(ips[i])) break;
  }
  if (e != NULL && cacheable && n > 0 && n <= MI_DHAT_MAX_FRAMES) {
    e->ret0 = ret0;
    e->slot0 = slot0;
    e->n = (uint32_t)n;
    e->walked = false;
    e->hint = (mi_dhat_site_hint_t){0};
    memcpy(e->ips, frames, (size_t)n * sizeof(uintptr_t));
    *hint = &e->hint;
  } else if (e != NULL) {
    e->n = 0;
  }
  return n;
}

/* The walk trusts a frame only if it lies above the previous one, inside the
   thread's stack, and (past the first) returns into code. It is complete when
   it reaches `main` or the frame limit. The first frame is always right: the
   allocator keeps frame pointers, so its outermost frame holds the return
   address into the program. A program built without frame pointers breaks
   the chain after that; in the automatic mode such a walk is redone by the
   unwinder. A zero frame pointer is such a break too, not the end of the
   stack: code without frame pointers uses the register for anything, and 0
   is a common value, so taking it for the outermost frame would cut the
   stack to the caller alone, and merge sites that differ further out. (The
   real outermost frames, a thread's start routine, go to the unwinder, which
   gives the frames above it as Valgrind does; the stack cache keeps that
   cheap.) Where a register happens to hold a stack address and the slot
   above it an address in code, the walk can take a wrong frame for a right
   one; MIMALLOC_DHAT_BACKTRACE=1 rules that out. */
__attribute__((noinline)) int _mi_dhat_stack_capture(uintptr_t* frames, int max, mi_dhat_site_hint_t** hint) {
  *hint = NULL;
  if (mi_dhat_unwind_mode > 0) return mi_dhat_capture_unwind(frames, max, 0, 0, hint);
  uintptr_t slot0;
  bool complete;
  int n = mi_walk_fp(frames, max, (uintptr_t)__builtin_frame_address(0), &slot0, &complete);
  if (n < 0) return mi_dhat_capture_unwind(frames, max, 0, 0, hint);
  if (!complete && mi_dhat_unwind_mode == 0) {
    return mi_dhat_capture_unwind(frames, max, (n > 0 ? frames[0] : 0), slot0, hint);
  }
  /* (a walk that stopped short in the frame-pointer-only mode gets no hint:
     its stack is not known to be the same as an earlier one's) */
  if (complete && slot0 != 0) *hint = mi_dhat_walk_hint(frames, n, slot0);
  return n;
}

/* the stack cache both profilers' capture keeps: a thread's goes with it */
mi_listener_define(mi_stack_cache_listener) = {
    .name = "stack cache",
    .order = MI_LISTEN_STACK_CACHE,
    .thread_done = &_mi_dhat_stack_thread_done,
};
#endif
