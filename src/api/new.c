/* C++'s allocation semantics for C callers and for the C++ allocators of
   mimalloc.h (mi_new and family, mi_heap_alloc_new): a failed allocation
   calls the installed new_handler and is retried while there is one, then
   throws std::bad_alloc. Also the C++ run-time hooks that operator new
   (new-delete.c) shares. Always compiled, with -fexceptions: what a
   new_handler throws unwinds through these frames.

   The run-time is reached through weak references (new-delete.c says why):
   a program with libstdc++ or libc++ resolves them, a C program leaves them
   null, and then a throwing call that fails aborts with a report. */
#include "api.h"

#include <stdlib.h>

#if defined(_WIN32)
/* PE has no weak undefined references to rely on (and the library is built
   by a C compiler there): no handler, and a failure aborts with a report. */
void _mi_throw_bad_alloc(void) {
  _mi_fputs(NULL, NULL, "mimalloc: error: ", "out of memory in mi_new, and no C++ run-time to throw std::bad_alloc\n");
  abort();
}

bool _mi_new_handler_run(void) {
  return false;
}
#else
typedef void (*mi_new_handler_t)(void);
extern mi_new_handler_t mi_std_get_new_handler(void) __asm__("_ZSt15get_new_handlerv") __attribute__((weak));
extern mi_decl_noreturn void mi_stdcxx_throw_bad_alloc(void) __asm__("_ZSt17__throw_bad_allocv") __attribute__((weak));
extern mi_decl_noreturn void mi_libcxx_throw_bad_alloc(void) __asm__("_ZNSt3__117__throw_bad_allocEv")
    __attribute__((weak));

void _mi_throw_bad_alloc(void) {
  if (mi_stdcxx_throw_bad_alloc != NULL) mi_stdcxx_throw_bad_alloc();
  if (mi_libcxx_throw_bad_alloc != NULL) mi_libcxx_throw_bad_alloc();
  _mi_fputs(NULL, NULL, "mimalloc: error: ",
            "out of memory in operator new or mi_new, and no C++ run-time to throw std::bad_alloc\n");
  abort();
}

bool _mi_new_handler_run(void) {
  mi_new_handler_t handler = (mi_std_get_new_handler != NULL ? mi_std_get_new_handler() : NULL);
  if (handler == NULL) return false;
  handler();
  return true;
}
#endif

/* ---- mi_new and family ------------------------------------------------------------ */

/* What a failed call asked for, so that it can be asked again after each
   new_handler. realloc: `p` keeps its block until one of the attempts
   succeeds. */
typedef struct mi_new_req_s {
  mi_heap_t* heap; /* NULL: the thread's default heap, looked up at each attempt */
  void* p;
  size_t size;
  size_t alignment; /* 0: no alignment asked */
  bool realloc;
} mi_new_req_t;

/* Secure builds: mi_new's blocks are of the neutral kind, which free and
   every delete accept (mimalloc documents mi_new as malloc that throws; its
   STL allocator pairs it with mi_free, mimalloc-new-delete.h with both). */
static void* mi_new_attempt(const mi_new_req_t* req) {
  mi_heap_t* heap = (req->heap != NULL ? req->heap : mi_get_default_heap());
  if (req->realloc) {
    void* q = mi_heap_realloc(heap, req->p, req->size);
    if (MI_SECURE) _mi_secure_kind_set(q, MI_KIND_NEUTRAL);
    return q;
  }
  if (MI_SECURE) {
    if (req->alignment == 0 && mi_likely(!mi_observing())) return _mi_secure_new(heap, req->size, MI_KIND_NEUTRAL);
    return _mi_heap_malloc_kind(heap, req->size, req->alignment, MI_KIND_NEUTRAL);
  }
  if (req->alignment != 0) return mi_heap_malloc_aligned(heap, req->size, req->alignment);
  return mi_heap_malloc(heap, req->size);
}

/* As operator new does (new-delete.c): an alignment that is not a power of
   two can never succeed, so no handler is asked to make room for it. */
static mi_noinline void* mi_new_failed(const mi_new_req_t* req, bool nothrow) {
  if (req->alignment == 0 || _mi_is_power_of_two(req->alignment)) {
    while (_mi_new_handler_run()) {
      void* p = mi_new_attempt(req);
      if (p != NULL) return p;
    }
  }
  if (nothrow) return NULL;
  _mi_throw_bad_alloc();
}

static inline void* mi_new_request(mi_heap_t* heap, void* p, size_t size, size_t alignment, bool realloc,
                                   bool nothrow) {
  mi_new_req_t req = {heap, p, size, alignment, realloc};
  void* q = mi_new_attempt(&req);
  if (mi_likely(q != NULL)) return q;
  return mi_new_failed(&req, nothrow);
}

/* count * size that overflows can never be allocated: the standard's
   std::bad_array_new_length is a std::bad_alloc, thrown without a handler */
static inline size_t mi_new_total(size_t count, size_t size) {
  size_t total;
  if (mi_unlikely(mi_mul_overflow(count, size, &total))) _mi_throw_bad_alloc();
  return total;
}

void* mi_new(size_t size) {
  return mi_new_request(NULL, NULL, size, 0, false, false);
}

void* mi_new_nothrow(size_t size) {
  return mi_new_request(NULL, NULL, size, 0, false, true);
}

void* mi_new_aligned(size_t size, size_t alignment) {
  return mi_new_request(NULL, NULL, size, alignment, false, false);
}

void* mi_new_aligned_nothrow(size_t size, size_t alignment) {
  return mi_new_request(NULL, NULL, size, alignment, false, true);
}

void* mi_new_n(size_t count, size_t size) {
  return mi_new(mi_new_total(count, size));
}

void* mi_new_realloc(void* p, size_t newsize) {
  return mi_new_request(NULL, p, newsize, 0, true, false);
}

void* mi_new_reallocn(void* p, size_t newcount, size_t size) {
  return mi_new_realloc(p, mi_new_total(newcount, size));
}

void* mi_heap_alloc_new(mi_heap_t* heap, size_t size) {
  mi_heap_handle_check(heap);
  return mi_new_request(heap, NULL, size, 0, false, false);
}

void* mi_heap_alloc_new_n(mi_heap_t* heap, size_t count, size_t size) {
  return mi_heap_alloc_new(heap, mi_new_total(count, size));
}
