/* Allocation entry points: the thread-local fast path and the calls built on it. */
#include "api.h"
#include "alloc-fast.h"

#include <limits.h>
#include <stdlib.h>

/* Slow path of the observed entry points: the observers' hook after it
   (secure builds: the whole of an observed allocation). */
mi_noinline void* _mi_malloc_generic_observed(mi_heap_t* heap, size_t size) {
  mi_observe_refill(heap);
  void* p = (MI_SECURE ? _mi_secure_malloc(heap, size, false) : _mi_malloc_generic(heap, size, false));
  uint8_t armed = mi_observers_armed();
#if MI_PPROF
  /* the sampler alone: the heap's countdown, as on the fast path (so a
     sample is placed on a sample page there too) */
  if (armed == MI_OBSERVER_PROF) return _mi_observe_counted(heap, p, size);
#endif
  if (mi_unlikely(armed != 0)) return mi_observe_alloc(armed, p, size);
  return p;
}

static void* mi_malloc_generic_plain(mi_heap_t* heap, size_t size) {
  return _mi_malloc_generic(heap, size, false);
}

/* With `observed` (the public entry points) the observers' flag is tested
   after the pop (alloc-fast.h). */
static inline void* mi_heap_malloc_inline(mi_heap_t* heap, size_t size, bool observed) {
  if (MI_SECURE) {
    /* the observers' test first, so the common exit is a tail call (no frame) */
    const uint8_t armed = (observed ? mi_observers_armed() : 0);
    if (mi_unlikely(armed != 0)) return _mi_secure_malloc_observed(heap, size, armed);
    return _mi_secure_malloc(heap, size, false);
  }
  return _mi_heap_malloc_fast(heap, size, observed, observed ? &_mi_malloc_generic_observed : &mi_malloc_generic_plain);
}

void* _mi_heap_malloc_zero(mi_heap_t* heap, size_t size, bool zero) {
  if (MI_SECURE) return _mi_secure_malloc(heap, size, zero);
  if (!zero) return mi_heap_malloc_inline(heap, size, false);
  return _mi_malloc_generic(heap, size, true);
}

/* The public entry points: the allocation, then the observers' hook (one
   relaxed load and a branch when an observer is compiled in but off).
   Internal paths call the unobserved functions above, so a block is
   reported once, by the entry point the program called. */
static inline void* mi_heap_malloc_observed(mi_heap_t* heap, size_t size) {
  return mi_heap_malloc_inline(heap, size, true);
}

static inline void* mi_heap_malloc_zero_observed(mi_heap_t* heap, size_t size) {
  void* p = _mi_heap_malloc_zero(heap, size, true);
  uint8_t armed = mi_observers_armed();
  if (mi_unlikely(armed != 0)) return mi_observe_alloc(armed, p, size);
  return p;
}

/* The calls that take a heap check it first (secure builds: a load, an
   xor and a compare, heap/secure-heap-handles.c); those on the thread's default
   heap do not need to. */
void* mi_heap_malloc(mi_heap_t* heap, size_t size) {
  mi_heap_handle_check(heap);
  return mi_heap_malloc_observed(heap, size);
}

void* mi_malloc(size_t size) {
  return mi_heap_malloc_observed(mi_get_default_heap(), size);
}

/* Secure builds: new's kind goes in with the trailer on the fast path; an
   aligned or observed allocation takes its kind after. */
void* _mi_heap_malloc_kind(mi_heap_t* heap, size_t size, size_t alignment, mi_alloc_kind_t kind) {
  if (MI_SECURE && alignment == 0 && mi_likely(!mi_observing())) return _mi_secure_new(heap, size, kind);
  void* p = (alignment == 0 ? mi_heap_malloc_observed(heap, size) : mi_heap_malloc_aligned(heap, size, alignment));
  if (MI_SECURE) _mi_secure_kind_set(p, kind);
  return p;
}

void* mi_heap_malloc_small(mi_heap_t* heap, size_t size) {
  mi_heap_handle_check(heap);
  return mi_heap_malloc_observed(heap, size);
}

void* mi_malloc_small(size_t size) {
  return mi_heap_malloc_observed(mi_get_default_heap(), size);
}

void* mi_heap_zalloc(mi_heap_t* heap, size_t size) {
  mi_heap_handle_check(heap);
  return mi_heap_malloc_zero_observed(heap, size);
}

void* mi_zalloc(size_t size) {
  return mi_heap_malloc_zero_observed(mi_get_default_heap(), size);
}

void* mi_heap_zalloc_small(mi_heap_t* heap, size_t size) {
  mi_heap_handle_check(heap);
  return mi_heap_malloc_zero_observed(heap, size);
}

void* mi_zalloc_small(size_t size) {
  return mi_heap_malloc_zero_observed(mi_get_default_heap(), size);
}

static inline void* mi_heap_calloc_observed(mi_heap_t* heap, size_t count, size_t size) {
  size_t total;
  if (_mi_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return mi_heap_malloc_zero_observed(heap, total);
}

void* mi_heap_calloc(mi_heap_t* heap, size_t count, size_t size) {
  mi_heap_handle_check(heap);
  return mi_heap_calloc_observed(heap, count, size);
}

void* mi_calloc(size_t count, size_t size) {
  return mi_heap_calloc_observed(mi_get_default_heap(), count, size);
}

void* mi_heap_mallocn(mi_heap_t* heap, size_t count, size_t size) {
  size_t total;
  if (_mi_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return mi_heap_malloc(heap, total);
}

void* mi_mallocn(size_t count, size_t size) {
  return mi_heap_mallocn(mi_get_default_heap(), count, size);
}

/* ---- Reallocation ------------------------------------------------------------ */

/* With `sampled` (the sampler alone runs; known at each call site): a block
   kept in place whose page is flagged tells the sampler its new size, and
   a move's new block is an allocation of the program's, through the heap's
   countdown as malloc's (a moved sampled block's free is told by its
   page's flag: prof/hooks.h). The secure build's the same: secure/free.c. */
static mi_forceinline void* mi_heap_realloc_zero_at(mi_heap_t* heap, void* p, size_t newsize, bool zero, bool sampled) {
  if (p == NULL) {
    if (sampled) return (zero ? mi_heap_malloc_zero_observed(heap, newsize) : mi_heap_malloc_observed(heap, newsize));
    return _mi_heap_malloc_zero(heap, newsize, zero);
  }
  if (MI_SECURE && sampled) {
    /* a move's new block: an allocation of the program's, the sampler's to decide */
    void* newp = _mi_secure_realloc_sampling(heap, p, newsize, zero);
    return (newp != p ? mi_observe_alloc(MI_OBSERVER_PROF, newp, newsize) : newp);
  }
  if (MI_SECURE) return _mi_secure_realloc(heap, p, newsize, zero);
  if (newsize > MI_MAX_ALLOC_SIZE) {
    errno = ENOMEM;
    return NULL; /* the original block stays valid */
  }
  /* the page and its flags read once: the usable size and, while the
     sampler runs, whether the block may be a sample */
  mi_segment_t* segment = _mi_block_segment(p);
  mi_page_t* page = _mi_segment_page_of(segment, p);
  const uint8_t flags = mi_page_flags(page);
  size_t size = page->block_size;
  if (mi_unlikely(flags & MI_PAGE_FLAG_HAS_ALIGNED))
    size -= (size_t)((const uint8_t*)p - (const uint8_t*)_mi_page_block_start(page, p));
  /* keep the block when the new size fits and does not waste more than half of it */
  if (newsize <= size && newsize >= (size / 2) && newsize > 0) {
    mi_track_resize(p, size, newsize);
    if (sampled) mi_observe_resized_sampler(page, flags, p, newsize);
    return p;
  }
  if (segment->kind == MI_SEGMENT_SINGLE && newsize > MI_MEDIUM_BLOCK_MAX && _mi_page_block_start(page, p) == p &&
      _mi_segment_single_resize(segment, newsize)) {
    /* grown or shrunk in place inside its own segment */
    size_t newusable = _mi_usable_size(p);
    mi_track_mem_defined(p, newusable);
    if (zero && newsize > size) memset((uint8_t*)p + size, 0, newusable - size);
    mi_track_resize(p, newusable, newsize);
    if (sampled) mi_observe_resized_sampler(page, flags, p, newsize);
    return p;
  }
  /* a zeroing move to a large block asks for it zeroed, and copies the kept
     prefix only: a single-block segment fresh from the OS is zero already,
     where zeroing past the old size touched every page of it (the alloc
     fuzz harness's recalloc of up to 64 MiB: 39% of its time, a page fault
     a page). A reused segment is zeroed whole, the prefix then copied over. */
  bool zero_new = (zero && !sampled && newsize > MI_MEDIUM_BLOCK_MAX);
  void* newp = (sampled ? mi_heap_malloc_observed(heap, newsize) : _mi_heap_malloc_zero(heap, newsize, zero_new));
  return _mi_realloc_move(p, size, newp, newsize, zero && !zero_new);
}

/* (out of line: the entry points test the observers before any frame is
   set up, and tail-call this) */
mi_noinline void* _mi_heap_realloc_zero(mi_heap_t* heap, void* p, size_t newsize, bool zero) {
  return mi_heap_realloc_zero_at(heap, p, newsize, zero, false);
}

/* The end of every reallocation that moves: copy into the new block (zeroing
   what lies beyond the old usable size for the zeroing variants) and free the
   old one. If the new block could not be had, the old one stays valid. */
void* _mi_realloc_move(void* p, size_t size, void* newp, size_t newsize, bool zero) {
  if (mi_unlikely(newp == NULL)) return NULL; /* errno set */
  /* secure builds: a block's usable size is the size asked for */
  mi_realloc_copy(p, size, newp, newsize, (MI_SECURE ? newsize : _mi_usable_size(newp)), zero);
  /* unobserved: the observers move the old block's record to newp */
  if (MI_SECURE) _mi_secure_free_copied(p);
  else _mi_free_unobserved(p);
  return newp;
}

/* A reallocation while an observer runs (observe.h: the old block's record
   is held while realloc runs). */
static mi_noinline void* mi_heap_realloc_observing(uint8_t armed, mi_heap_t* heap, void* p, size_t newsize, bool zero) {
  mi_observe_held_t held;
  mi_observe_realloc_take(armed, p, &held);
  void* newp = _mi_heap_realloc_zero(heap, p, newsize, zero);
  mi_observe_realloc_done(&held, newp, newsize);
  return newp;
}

/* The same while the sampler alone runs: no record held around it
   (mi_heap_realloc_zero_at). */
static mi_noinline void* mi_heap_realloc_sampled(mi_heap_t* heap, void* p, size_t newsize, bool zero) {
  return mi_heap_realloc_zero_at(heap, p, newsize, zero, true);
}

static inline void* mi_heap_realloc_observed(mi_heap_t* heap, void* p, size_t newsize, bool zero) {
  uint8_t armed = mi_observers_armed();
  if (mi_unlikely(armed != 0)) {
    if (armed == MI_OBSERVER_PROF) return mi_heap_realloc_sampled(heap, p, newsize, zero);
    return mi_heap_realloc_observing(armed, heap, p, newsize, zero);
  }
  return _mi_heap_realloc_zero(heap, p, newsize, zero);
}

void* mi_heap_realloc(mi_heap_t* heap, void* p, size_t newsize) {
  mi_heap_handle_check(heap);
  return mi_heap_realloc_observed(heap, p, newsize, false);
}

void* mi_realloc(void* p, size_t newsize) {
  return mi_heap_realloc_observed(mi_get_default_heap(), p, newsize, false);
}

void* mi_heap_reallocn(mi_heap_t* heap, void* p, size_t count, size_t size) {
  size_t total;
  if (!_mi_realloc_total(p, count, size, &total)) return NULL;
  return mi_heap_realloc(heap, p, total);
}

void* mi_reallocn(void* p, size_t count, size_t size) {
  return mi_heap_reallocn(mi_get_default_heap(), p, count, size);
}

void* mi_heap_reallocf(mi_heap_t* heap, void* p, size_t newsize) {
  void* newp = mi_heap_realloc(heap, p, newsize);
  if (newp == NULL && p != NULL) mi_free(p);
  return newp;
}

void* mi_reallocf(void* p, size_t newsize) {
  return mi_heap_reallocf(mi_get_default_heap(), p, newsize);
}

void* mi_heap_rezalloc(mi_heap_t* heap, void* p, size_t newsize) {
  mi_heap_handle_check(heap);
  return mi_heap_realloc_observed(heap, p, newsize, true);
}

void* mi_rezalloc(void* p, size_t newsize) {
  return mi_heap_realloc_observed(mi_get_default_heap(), p, newsize, true);
}

void* mi_heap_recalloc(mi_heap_t* heap, void* p, size_t count, size_t size) {
  size_t total;
  if (!_mi_realloc_total(p, count, size, &total)) return NULL;
  return mi_heap_rezalloc(heap, p, total);
}

void* mi_recalloc(void* p, size_t count, size_t size) {
  return mi_heap_recalloc(mi_get_default_heap(), p, count, size);
}

void* mi_expand(void* p, size_t newsize) {
  if (p == NULL) return NULL;
  size_t size = _mi_usable_size(p);
  if (newsize > size) return NULL;
  mi_track_mem_defined(p, newsize); /* grows only: a program may shrink and keep using the rest */
  /* observed as a reallocation that stays in place */
  uint8_t armed = mi_observers_armed();
  if (mi_unlikely(armed != 0)) mi_observe_resize(armed, p, newsize);
  return p;
}

void* mi__expand(void* p, size_t newsize) {
  void* res = mi_expand(p, newsize);
  if (res == NULL) errno = ENOMEM;
  return res;
}

/* ---- Strings -------------------------------------------------------------------- */

char* mi_heap_strdup(mi_heap_t* heap, const char* s) {
  if (s == NULL) return NULL;
  size_t n = strlen(s);
  char* t = (char*)mi_heap_malloc(heap, n + 1);
  if (t != NULL) memcpy(t, s, n + 1);
  return t;
}

char* mi_strdup(const char* s) {
  return mi_heap_strdup(mi_get_default_heap(), s);
}

char* mi_heap_strndup(mi_heap_t* heap, const char* s, size_t n) {
  if (s == NULL) return NULL;
  const char* end = (const char*)memchr(s, 0, n);
  size_t m = (end != NULL ? (size_t)(end - s) : n);
  char* t = (char*)mi_heap_malloc(heap, m + 1);
  if (t == NULL) return NULL;
  memcpy(t, s, m);
  t[m] = 0;
  return t;
}

char* mi_strndup(const char* s, size_t n) {
  return mi_heap_strndup(mi_get_default_heap(), s, n);
}

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#if defined(_WIN32)
#include <io.h>
#endif

#if defined(_WIN32)
/* the C runtime's absolute path; like realpath, only of what exists */
static char* mi_os_realpath(const char* fname, char* resolved_name) {
  if (_access(fname, 0) != 0) return NULL; /* errno ENOENT (or EACCES) */
  return _fullpath(resolved_name, fname, PATH_MAX);
}
#else
static char* mi_os_realpath(const char* fname, char* resolved_name) {
  return realpath(fname, resolved_name);
}
#endif

char* mi_heap_realpath(mi_heap_t* heap, const char* fname, char* resolved_name) {
  if (resolved_name != NULL) return mi_os_realpath(fname, resolved_name);
  char buf[PATH_MAX + 1];
  char* rname = mi_os_realpath(fname, buf);
  if (rname == NULL) return NULL;
  return mi_heap_strdup(heap, rname);
}

char* mi_realpath(const char* fname, char* resolved_name) {
  return mi_heap_realpath(mi_get_default_heap(), fname, resolved_name);
}

/* ---- Sizes ------------------------------------------------------------------------ */

size_t _mi_usable_size(const void* p) {
  if (MI_SECURE) {
    size_t size;
    _mi_secure_validate(p, MI_OP_USABLE_SIZE, NULL, &size);
    return size;
  }
  mi_segment_t* segment = _mi_block_segment(p);
  mi_page_t* page = _mi_segment_page_of(segment, p);
  if (mi_unlikely(mi_page_flags(page) & MI_PAGE_FLAG_HAS_ALIGNED)) {
    const mi_block_t* block = _mi_page_block_start(page, p);
    return page->block_size - (size_t)((const uint8_t*)p - (const uint8_t*)block);
  }
  return page->block_size;
}

/* The program may use the whole usable size once it has asked for it. */
size_t mi_usable_size(const void* p) {
  if (p == NULL) return 0;
  size_t size = _mi_usable_size(p);
  mi_track_mem_defined(p, size);
  return size;
}

size_t mi_good_size(size_t size) {
  if (MI_SECURE) return size; /* every byte past the request is canary */
  if (size <= MI_MEDIUM_BLOCK_MAX) return _mi_bin_size(_mi_bin(size));
  if (size > MI_MAX_ALLOC_SIZE) return size;
  return _mi_align_up(size, _mi_os_page_size());
}
