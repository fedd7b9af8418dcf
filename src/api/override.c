/* The malloc family exported from the shared library, so that LD_PRELOAD (or
   linking it first) puts the whole program on this allocator. Each is a tail
   call into the mi_ function, but malloc and free, which inline the fast
   paths (a tail call into mi_malloc or mi_free went through the PLT).
   Compiled only with MI_OVERRIDE. */
#include "api.h"
#include "alloc-fast.h"
#include "free-fast.h"

#include <dlfcn.h>

#define MI_FORWARD __attribute__((visibility("default"), used))

MI_FORWARD void* malloc(size_t size) {
  if (MI_SECURE) { /* as mi_malloc (alloc.c), without its PLT entry */
    mi_heap_t* heap = mi_get_default_heap();
    const uint8_t armed = mi_observers_armed();
    if (mi_unlikely(armed != 0)) return _mi_secure_malloc_observed(heap, size, armed);
    return _mi_secure_malloc(heap, size, false);
  }
  return _mi_heap_malloc_fast(mi_get_default_heap(), size, true, &_mi_malloc_generic_observed);
}
MI_FORWARD void* calloc(size_t count, size_t size) {
  return mi_calloc(count, size);
}
MI_FORWARD void free(void* p) {
  mi_free_fast(p);
}
MI_FORWARD void cfree(void* p) {
  mi_free_fast(p);
}

/* glibc frees and returns NULL for realloc(p, 0); programs written for it
   (and profilers counting it as a free) expect that. */
MI_FORWARD void* realloc(void* p, size_t newsize) {
  if (newsize == 0 && p != NULL) {
    mi_free(p);
    return NULL;
  }
  return mi_realloc(p, newsize);
}

MI_FORWARD void* reallocarray(void* p, size_t count, size_t size) {
  return mi_reallocarray(p, count, size);
}
MI_FORWARD int posix_memalign(void** p, size_t alignment, size_t size) {
  return mi_posix_memalign(p, alignment, size);
}
MI_FORWARD void* aligned_alloc(size_t alignment, size_t size) {
  return mi_aligned_alloc(alignment, size);
}
MI_FORWARD void* memalign(size_t alignment, size_t size) {
  return mi_memalign(alignment, size);
}
MI_FORWARD void* valloc(size_t size) {
  return mi_valloc(size);
}
MI_FORWARD void* pvalloc(size_t size) {
  return mi_pvalloc(size);
}
MI_FORWARD size_t malloc_usable_size(void* p) {
  return mi_usable_size(p);
}

/* C23: the size (and alignment) the block was allocated with; the secure
   build checks them (mi_free_size) */
MI_FORWARD void free_sized(void* p, size_t size) {
  mi_free_size(p, size);
}
MI_FORWARD void free_aligned_sized(void* p, size_t alignment, size_t size) {
  mi_free_size_aligned(p, size, alignment);
}

/* The BSD and macOS names that mimalloc's library exports on Linux too:
   programs ported from those systems call them when they find them. */
MI_FORWARD void* reallocf(void* p, size_t newsize) {
  return mi_reallocf(p, newsize);
}
/* weak: a C library that has its own (NetBSD's, newer glibc's) keeps the
   program's link unambiguous; preloaded, ours is found first all the same */
__attribute__((weak)) MI_FORWARD int reallocarr(void* p, size_t count, size_t size) {
  return mi_reallocarr(p, count, size);
}
MI_FORWARD size_t malloc_size(const void* p) {
  return mi_malloc_size(p);
}
MI_FORWARD size_t malloc_good_size(size_t size) {
  return mi_malloc_good_size(size);
}
MI_FORWARD void vfree(void* p) {
  mi_free(p);
}

/* The C library's own duplicates allocate with its internal malloc, not
   through the symbol: served here, their copies are blocks of ours. */
MI_FORWARD char* strdup(const char* s) {
  return mi_strdup(s);
}
MI_FORWARD char* strndup(const char* s, size_t n) {
  return mi_strndup(s, n);
}

/* realpath with a buffer of the caller's is the C library's: the path work
   is its own, and mi_realpath (alloc.c), which calls realpath and within
   this library reaches this one, depends on it. Without a buffer, the copy
   is ours. */
typedef char* (*mi_realpath_fun)(const char*, char*);
static _Atomic(mi_realpath_fun) mi_libc_realpath;

static char* mi_realpath_next(const char* fname, char* resolved_name) {
  mi_realpath_fun fn = atomic_load_explicit(&mi_libc_realpath, memory_order_acquire);
  if (fn == NULL) {
    /* the next definition after this library: the C library's */
    fn = (mi_realpath_fun)dlsym(RTLD_NEXT, "realpath");
    if (fn == NULL) {
      errno = ENOSYS;
      return NULL;
    }
    atomic_store_explicit(&mi_libc_realpath, fn, memory_order_release);
  }
  return fn(fname, resolved_name);
}

MI_FORWARD char* realpath(const char* fname, char* resolved_name) {
  if (resolved_name != NULL) return mi_realpath_next(fname, resolved_name);
  return mi_realpath(fname, NULL);
}

/* glibc's internal names, called by a few programs and libraries directly */
MI_FORWARD void* __libc_malloc(size_t size) {
  return mi_malloc(size);
}
MI_FORWARD void* __libc_calloc(size_t count, size_t size) {
  return mi_calloc(count, size);
}
MI_FORWARD void* __libc_realloc(void* p, size_t size) {
  return realloc(p, size);
}
MI_FORWARD void __libc_free(void* p) {
  mi_free(p);
}
MI_FORWARD void* __libc_memalign(size_t alignment, size_t size) {
  return mi_memalign(alignment, size);
}
MI_FORWARD void* __libc_valloc(size_t size) {
  return mi_valloc(size);
}
MI_FORWARD void* __libc_pvalloc(size_t size) {
  return mi_pvalloc(size);
}
MI_FORWARD void __libc_cfree(void* p) {
  mi_free(p);
}
MI_FORWARD int __posix_memalign(void** p, size_t alignment, size_t size) {
  return mi_posix_memalign(p, alignment, size);
}
