/* Stack capture for the profilers on Windows: the platform unwinder (x64:
   RtlLookupFunctionEntry and RtlVirtualUnwind, through mi_prim_unwind;
   every function of a PE image has its unwind table, so no frame pointers
   are needed), then the allocator's own frames skipped so that frame 0 is
   the program's call to the entry point, as on Linux (stack.c):

   - the allocator built as a DLL (libmimalloc.dll): a frame is the
     allocator's when its return address lies in the DLL's image (its base
     from the loader, its size from the image's own headers);
   - the allocator linked into a module (the static library, in the program
     or in a DLL of the program's): a frame is the allocator's when it lies
     in one of the allocator's functions (mi_..., _mi_...), told by the
     module's COFF symbol table, read once at the first start. A module
     linked with -s has none: its stacks keep the allocator's frames.

   A stack ends at `main` (as Valgrind's and the ELF walk's do), or at the
   frame limit. */
#include "dhat.h"

#if (MI_DHAT || MI_PPROF) && defined(_WIN32)

#include "win-api.h"
#include "../base/listeners.h"

/* The allocator's image, when it is a DLL of its own; else [0, 0). */
static uintptr_t mi_win_code_lo;
static uintptr_t mi_win_code_hi;
/* Linked in: the functions of the module holding the allocator, each
   marked (1) if it is one of the allocator's. */
static mi_pe_syms_t mi_win_own;
/* `main`: a stack that reaches it is complete */
static uintptr_t mi_win_main_lo;
static uintptr_t mi_win_main_hi;

/* Once, at the first start (later starts may run while other threads
   capture their stacks). */
void _mi_dhat_stack_init(void) {
  static _Atomic(int) state; /* 0: not done, 1: being done, 2: done */
  int expected = 0;
  if (!atomic_compare_exchange_strong(&state, &expected, 1)) {
    while (atomic_load(&state) != 2) mi_prim_yield();
    return;
  }
  mi_lock_assert_none_held("the loader and the unwinder"); /* they take locks of their own */
  uintptr_t self = _mi_pe_module_of((uintptr_t)&_mi_dhat_stack_init);
  uintptr_t exe = (uintptr_t)GetModuleHandleW(NULL);
#if defined(MI_SHARED_LIB_EXPORT)
  /* the DLL: all of its image is the allocator's */
  mi_win_code_lo = self;
  mi_win_code_hi = self + _mi_pe_image_size(self);
#else
  if (self != 0 && _mi_pe_syms_load(self, &mi_win_own)) {
    for (size_t i = 0; i < mi_win_own.count; i++) {
      mi_win_own.fns[i].mark = _mi_pe_allocator_name(_mi_pe_fn_name(&mi_win_own, &mi_win_own.fns[i]));
    }
  }
#endif
  /* `main` is the program's */
  if (exe != 0 && exe == mi_win_own.base && mi_win_own.count > 0) {
    if (!_mi_pe_syms_range(&mi_win_own, "main", &mi_win_main_lo, &mi_win_main_hi)) mi_win_main_lo = mi_win_main_hi = 0;
  } else if (exe != 0) {
    mi_pe_syms_t syms;
    if (_mi_pe_syms_load(exe, &syms) && !_mi_pe_syms_range(&syms, "main", &mi_win_main_lo, &mi_win_main_hi)) {
      mi_win_main_lo = mi_win_main_hi = 0;
    }
    _mi_pe_syms_free(&syms);
  }
  /* the unwinder's first use (it may allocate): now rather than in a sample */
  void* warm[4];
  (void)mi_prim_backtrace(warm, 4);
  uintptr_t ips[4], cfas[4];
  (void)mi_prim_unwind(ips, cfas, 4);
  atomic_store(&state, 2);
}

bool _mi_dhat_addr_in_allocator(uintptr_t addr) {
  return (addr >= mi_win_code_lo && addr < mi_win_code_hi);
}

bool _mi_dhat_allocator_linked_in(void) {
  return (mi_win_code_hi == 0);
}

/* Nothing kept per thread: the unwinder's tables are the images' own. */
void _mi_dhat_stack_thread_done(void) {}

/* Whether the frame returning to `ret` is one of the allocator's. */
static bool mi_win_frame_is_allocator(uintptr_t ret) {
  uintptr_t pc = ret - 1; /* the call instruction */
  if (pc >= mi_win_code_lo && pc < mi_win_code_hi) return true;
  const mi_pe_fn_t* fn = _mi_pe_syms_find(&mi_win_own, pc);
  return (fn != NULL && fn->mark != 0);
}

static bool mi_win_is_main(uintptr_t ret) {
  return (ret > mi_win_main_lo && ret <= mi_win_main_hi);
}

int _mi_dhat_stack_capture(uintptr_t* frames, int max, mi_dhat_site_hint_t** hint) {
  *hint = NULL; /* no stack cache: the unwinder is cheap enough */
  uintptr_t ips[MI_CAPTURE_MAX_FRAMES + 24];
  uintptr_t cfas[MI_CAPTURE_MAX_FRAMES + 24];
  int want = (max < 0 ? 0 : max) + 24; /* the allocator's own frames are a handful */
  if (want > MI_CAPTURE_MAX_FRAMES + 24) want = MI_CAPTURE_MAX_FRAMES + 24;
  int m = mi_prim_unwind(ips, cfas, want);
  if (m < 0) { /* no unwinder with frame addresses (not x64): the plain backtrace */
    void* raw[MI_CAPTURE_MAX_FRAMES + 24];
    m = mi_prim_backtrace(raw, want);
    for (int i = 0; i < m; i++) ips[i] = (uintptr_t)raw[i];
  }
  int start = 0;
  while (start < m && mi_win_frame_is_allocator(ips[start])) start++;
  int n = 0;
  for (int i = start; i < m && n < max; i++) {
    frames[n++] = ips[i];
    if (mi_win_is_main(ips[i])) break;
  }
  return n;
}

/* Windows x64 code keeps no frame-pointer chain: its unwinder is the walk. */
int _mi_stack_capture_fp(uintptr_t* frames, int max, const void* frame) {
  (void)frame;
  mi_dhat_site_hint_t* hint;
  return _mi_dhat_stack_capture(frames, max, &hint);
}

/* (nothing kept per thread here; the listener exists as on POSIX) */
mi_listener_define(mi_stack_cache_listener) = {
    .name = "stack cache",
    .order = MI_LISTEN_STACK_CACHE,
    .thread_done = &_mi_dhat_stack_thread_done,
};

#endif
