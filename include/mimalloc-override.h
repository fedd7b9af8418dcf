/* Redirect the C library's allocation calls of one source file to
   mimalloc-pprof, by macro: include it after every system header of that
   file (a later system header would see its declarations renamed). Only the
   calls this file makes are redirected: memory allocated elsewhere must not
   reach the mi_ functions here, nor the reverse. A program that wants every
   allocation on the library links or preloads the shared library instead.

   The POSIX, BSD and Windows C run-time names are covered, with the
   argument order each has (aligned_alloc and memalign take the alignment
   first, the _aligned_ calls of Windows last). */
#ifndef MIMALLOC_OVERRIDE_H
#define MIMALLOC_OVERRIDE_H

#include "mimalloc.h"

/* the C standard and POSIX */
#define malloc(n) mi_malloc(n)
#define calloc(n, c) mi_calloc(n, c)
#define realloc(p, n) mi_realloc(p, n)
#define free(p) mi_free(p)
#define strdup(s) mi_strdup(s)
#define strndup(s, n) mi_strndup(s, n)
#define realpath(f, n) mi_realpath(f, n)
#define aligned_alloc(a, n) mi_aligned_alloc(a, n)
#define posix_memalign(p, a, n) mi_posix_memalign(p, a, n)
#define _posix_memalign(p, a, n) mi_posix_memalign(p, a, n)

/* glibc, the BSDs and macOS */
#define cfree(p) mi_free(p)
#define valloc(n) mi_valloc(n)
#define pvalloc(n) mi_pvalloc(n)
#define memalign(a, n) mi_memalign(a, n)
#define reallocf(p, n) mi_reallocf(p, n)
#define reallocarray(p, c, n) mi_reallocarray(p, c, n)
#define reallocarr(p, c, n) mi_reallocarr(p, c, n)
#define malloc_size(p) mi_usable_size(p)
#define malloc_usable_size(p) mi_usable_size(p)
#define malloc_good_size(n) mi_malloc_good_size(n)

/* the Windows C run-time */
#define _expand(p, n) mi_expand(p, n)
#define _msize(p) mi_usable_size(p)
#define _recalloc(p, c, n) mi_recalloc(p, c, n)
#define _strdup(s) mi_strdup(s)
#define _strndup(s, n) mi_strndup(s, n)
#define _wcsdup(s) (wchar_t*)mi_wcsdup((const wchar_t*)(s))
#define _mbsdup(s) mi_mbsdup(s)
#define _dupenv_s(b, n, v) mi_dupenv_s(b, n, v)
#define _wdupenv_s(b, n, v) mi_wdupenv_s((wchar_t**)(b), n, (const wchar_t*)(v))
#define _aligned_malloc(n, a) mi_malloc_aligned(n, a)
#define _aligned_realloc(p, n, a) mi_realloc_aligned(p, n, a)
#define _aligned_recalloc(p, c, n, a) mi_aligned_recalloc(p, c, n, a)
#define _aligned_msize(p, a, o) mi_usable_size(p)
#define _aligned_free(p) mi_free(p)
#define _aligned_offset_malloc(n, a, o) mi_malloc_aligned_at(n, a, o)
#define _aligned_offset_realloc(p, n, a, o) mi_realloc_aligned_at(p, n, a, o)
#define _aligned_offset_recalloc(p, c, n, a, o) mi_aligned_offset_recalloc(p, c, n, a, o)

#endif
