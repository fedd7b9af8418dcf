/* C++'s replaceable operator new and delete: the twenty forms of C++17
   (plain, array, nothrow, sized, aligned, and their combinations), exported
   under their Itanium ABI names so that a C++ program linked with this
   library, or preloading it, allocates here. Compiled with MI_OVERRIDE.

   Written in C, not C++: the library keeps needing no C++ compiler, and a C
   program never gets libstdc++ loaded for it. What new needs from the C++
   run-time (the installed new_handler, a way to throw std::bad_alloc) is
   reached through weak references (new.c, shared with mi_new), which a
   program with a C++ run-time resolves and a C program leaves null. The throw is the run-time's own
   exported helper, std::__throw_bad_alloc (libstdc++, and libc++ in its
   std::__1 namespace): building the exception here (__cxa_allocate_exception,
   the vtable's address point, __cxa_throw) would hard-code std::bad_alloc's
   layout. The exception, or one a new_handler throws, unwinds through these
   frames: this file is compiled with -fexceptions for their unwind tables.
   A C++ run-time loaded later with dlopen is not seen (the references were
   resolved at start): a throwing new that fails then aborts with a report,
   as new does without exceptions.

   Delete: the sized and aligned forms go to mi_free_size* (secure builds:
   their checks, src/secure/secure-sized.c). Secure builds keep each block's
   kind (new, new[], aligned new, aligned new[]) and each delete expects its
   own: a block freed by the wrong one is reported (secure.h: mi_alloc_kind_t). */
#include "api.h"
#include "alloc-fast.h"
#include "free-fast.h"

#if SIZE_MAX == UINT64_MAX
#define MI_SZ "m" /* size_t is unsigned long */
#else
#define MI_SZ "j" /* unsigned int */
#endif
#define MI_NOTHROW "RKSt9nothrow_t"
#define MI_ALIGN "St11align_val_t"

#define MI_CXX __attribute__((visibility("default"), used))

static void* mi_new_try(size_t size, size_t alignment, mi_alloc_kind_t kind) {
  if (MI_SECURE) {
    mi_heap_t* heap = mi_get_default_heap();
    if (alignment == 0 && mi_likely(!mi_observing())) return _mi_secure_new(heap, size, kind);
#if MI_SECURE_STACKS
    if (alignment == 0 && mi_observers_armed() == MI_OBSERVER_STACKS) return _mi_secure_new_stacked(heap, size, kind);
#endif
    return _mi_heap_malloc_kind(heap, size, alignment, kind);
  }
  return (alignment == 0 ? mi_malloc(size) : mi_malloc_aligned(size, alignment));
}

/* An allocation for new failed: as the standard asks, call the installed
   new_handler and retry while there is one (it frees memory, installs
   another, throws or aborts); then fail. A nothrow form calls it too, as
   libstdc++'s does, but cannot catch what it throws (the exception leaves
   the nothrow new). An alignment that is not a power of two fails at once,
   as in libstdc++ (the request is undefined behaviour). Out of line: the
   success path is a call and a test. */
static mi_noinline void* mi_new_failed(size_t size, size_t alignment, bool nothrow, mi_alloc_kind_t kind) {
  if (alignment == 0 || _mi_is_power_of_two(alignment)) {
    while (_mi_new_handler_run()) {
      void* p = mi_new_try(size, alignment, kind);
      if (p != NULL) return p;
    }
  }
  if (nothrow) return NULL;
  _mi_throw_bad_alloc();
}

static inline void* mi_new_with(size_t size, size_t alignment, bool nothrow, mi_alloc_kind_t kind) {
  void* p = mi_new_try(size, alignment, kind);
  if (mi_likely(p != NULL)) return p;
  return mi_new_failed(size, alignment, nothrow, kind);
}

/* The plain forms: malloc's fast path inlined, so that new is a pop with no
   call and no frame (a call to mi_malloc went through the PLT, from a frame
   kept for the test of its result: 10 instructions a new more than
   mimalloc's). Its slow path takes the failure too. */
static inline void* mi_new_generic(mi_heap_t* heap, size_t size, bool nothrow) {
  void* p = _mi_malloc_generic_observed(heap, size);
  if (mi_likely(p != NULL)) return p;
  return mi_new_failed(size, 0, nothrow, MI_KIND_NEW); /* (the default build keeps no kind) */
}
static mi_noinline void* mi_new_slow(mi_heap_t* heap, size_t size) {
  return mi_new_generic(heap, size, false);
}
static mi_noinline void* mi_new_slow_nothrow(mi_heap_t* heap, size_t size) {
  return mi_new_generic(heap, size, true);
}

static inline void* mi_new_plain(size_t size, bool nothrow, mi_alloc_kind_t kind) {
  if (MI_SECURE) return mi_new_with(size, 0, nothrow, kind);
  return _mi_heap_malloc_fast(mi_get_default_heap(), size, true, nothrow ? &mi_new_slow_nothrow : &mi_new_slow);
}

/* ---- new ---------------------------------------------------------------------- */

MI_CXX void* mi_cxx_new(size_t size) __asm__("_Znw" MI_SZ);
MI_CXX void* mi_cxx_new_array(size_t size) __asm__("_Zna" MI_SZ);
MI_CXX void* mi_cxx_new_nothrow(size_t size, const void* tag) __asm__("_Znw" MI_SZ MI_NOTHROW);
MI_CXX void* mi_cxx_new_array_nothrow(size_t size, const void* tag) __asm__("_Zna" MI_SZ MI_NOTHROW);
MI_CXX void* mi_cxx_new_aligned(size_t size, size_t alignment) __asm__("_Znw" MI_SZ MI_ALIGN);
MI_CXX void* mi_cxx_new_array_aligned(size_t size, size_t alignment) __asm__("_Zna" MI_SZ MI_ALIGN);
MI_CXX void* mi_cxx_new_aligned_nothrow(size_t size, size_t alignment,
                                        const void* tag) __asm__("_Znw" MI_SZ MI_ALIGN MI_NOTHROW);
MI_CXX void* mi_cxx_new_array_aligned_nothrow(size_t size, size_t alignment,
                                              const void* tag) __asm__("_Zna" MI_SZ MI_ALIGN MI_NOTHROW);

void* mi_cxx_new(size_t size) {
  return mi_new_plain(size, false, MI_KIND_NEW);
}
void* mi_cxx_new_array(size_t size) {
  return mi_new_plain(size, false, MI_KIND_NEW_ARRAY);
}
void* mi_cxx_new_nothrow(size_t size, const void* tag) {
  (void)tag;
  return mi_new_plain(size, true, MI_KIND_NEW);
}
void* mi_cxx_new_array_nothrow(size_t size, const void* tag) {
  (void)tag;
  return mi_new_plain(size, true, MI_KIND_NEW_ARRAY);
}
void* mi_cxx_new_aligned(size_t size, size_t alignment) {
  return mi_new_with(size, alignment, false, MI_KIND_NEW_ALIGNED);
}
void* mi_cxx_new_array_aligned(size_t size, size_t alignment) {
  return mi_new_with(size, alignment, false, MI_KIND_NEW_ARRAY_ALIGNED);
}
void* mi_cxx_new_aligned_nothrow(size_t size, size_t alignment, const void* tag) {
  (void)tag;
  return mi_new_with(size, alignment, true, MI_KIND_NEW_ALIGNED);
}
void* mi_cxx_new_array_aligned_nothrow(size_t size, size_t alignment, const void* tag) {
  (void)tag;
  return mi_new_with(size, alignment, true, MI_KIND_NEW_ARRAY_ALIGNED);
}

/* ---- delete ------------------------------------------------------------------- */

MI_CXX void mi_cxx_delete(void* p) __asm__("_ZdlPv");
MI_CXX void mi_cxx_delete_array(void* p) __asm__("_ZdaPv");
MI_CXX void mi_cxx_delete_nothrow(void* p, const void* tag) __asm__("_ZdlPv" MI_NOTHROW);
MI_CXX void mi_cxx_delete_array_nothrow(void* p, const void* tag) __asm__("_ZdaPv" MI_NOTHROW);
MI_CXX void mi_cxx_delete_sized(void* p, size_t size) __asm__("_ZdlPv" MI_SZ);
MI_CXX void mi_cxx_delete_array_sized(void* p, size_t size) __asm__("_ZdaPv" MI_SZ);
MI_CXX void mi_cxx_delete_aligned(void* p, size_t alignment) __asm__("_ZdlPv" MI_ALIGN);
MI_CXX void mi_cxx_delete_array_aligned(void* p, size_t alignment) __asm__("_ZdaPv" MI_ALIGN);
MI_CXX void mi_cxx_delete_aligned_nothrow(void* p, size_t alignment,
                                          const void* tag) __asm__("_ZdlPv" MI_ALIGN MI_NOTHROW);
MI_CXX void mi_cxx_delete_array_aligned_nothrow(void* p, size_t alignment,
                                                const void* tag) __asm__("_ZdaPv" MI_ALIGN MI_NOTHROW);
MI_CXX void mi_cxx_delete_sized_aligned(void* p, size_t size, size_t alignment) __asm__("_ZdlPv" MI_SZ MI_ALIGN);
MI_CXX void mi_cxx_delete_array_sized_aligned(void* p, size_t size, size_t alignment) __asm__("_ZdaPv" MI_SZ MI_ALIGN);

/* secure builds: the size and alignment checked, and the kind */
static inline void mi_delete_sized(void* p, size_t size, mi_alloc_kind_t kind) {
  if (MI_SECURE) {
    _mi_secure_check_sized(p, size, kind);
    mi_delete_fast(p, kind);
  } else {
    mi_free_size(p, size);
  }
}
static inline void mi_delete_aligned(void* p, size_t size, size_t alignment, bool sized, mi_alloc_kind_t kind) {
  if (MI_SECURE) {
    _mi_secure_check_aligned(p, size, alignment, sized, kind);
    mi_delete_fast(p, kind);
  } else {
    mi_free(p);
  }
}

void mi_cxx_delete(void* p) {
  mi_delete_fast(p, MI_KIND_NEW);
}
void mi_cxx_delete_array(void* p) {
  mi_delete_fast(p, MI_KIND_NEW_ARRAY);
}
void mi_cxx_delete_nothrow(void* p, const void* tag) {
  (void)tag;
  mi_delete_fast(p, MI_KIND_NEW);
}
void mi_cxx_delete_array_nothrow(void* p, const void* tag) {
  (void)tag;
  mi_delete_fast(p, MI_KIND_NEW_ARRAY);
}
void mi_cxx_delete_sized(void* p, size_t size) {
  mi_delete_sized(p, size, MI_KIND_NEW);
}
void mi_cxx_delete_array_sized(void* p, size_t size) {
  mi_delete_sized(p, size, MI_KIND_NEW_ARRAY);
}
void mi_cxx_delete_aligned(void* p, size_t alignment) {
  mi_delete_aligned(p, 0, alignment, false, MI_KIND_NEW_ALIGNED);
}
void mi_cxx_delete_array_aligned(void* p, size_t alignment) {
  mi_delete_aligned(p, 0, alignment, false, MI_KIND_NEW_ARRAY_ALIGNED);
}
void mi_cxx_delete_aligned_nothrow(void* p, size_t alignment, const void* tag) {
  (void)tag;
  mi_delete_aligned(p, 0, alignment, false, MI_KIND_NEW_ALIGNED);
}
void mi_cxx_delete_array_aligned_nothrow(void* p, size_t alignment, const void* tag) {
  (void)tag;
  mi_delete_aligned(p, 0, alignment, false, MI_KIND_NEW_ARRAY_ALIGNED);
}
void mi_cxx_delete_sized_aligned(void* p, size_t size, size_t alignment) {
  mi_delete_aligned(p, size, alignment, true, MI_KIND_NEW_ALIGNED);
}
void mi_cxx_delete_array_sized_aligned(void* p, size_t size, size_t alignment) {
  mi_delete_aligned(p, size, alignment, true, MI_KIND_NEW_ARRAY_ALIGNED);
}
