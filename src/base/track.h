/* Telling a memory checker which bytes of the allocator's memory the program
   may touch (docs/sanitizers.md). One switch at a time:

   | switch        | tool                | how                                  |
   |---------------|---------------------|--------------------------------------|
   | MI_TRACK_ASAN | AddressSanitizer    | poison/unpoison (asan_interface.h)   |
   | MI_TRACK_VALGRIND | Valgrind memcheck | MALLOCLIKE/FREELIKE, MAKE_MEM_* (memcheck.h) |
   | (neither)     | -                   | every macro is empty: zero cost      |

   The contract, for every block:
   - mi_track_malloc(p, size, usable, zero): p .. p+size becomes accessible
     (memcheck: undefined, or defined when `zero`: the allocator zeroed it),
     the rest of the block up to p+usable (slack of the size class) stays
     inaccessible. Called once the allocator is done writing the block.
     memcheck: the block is also registered as a heap block at p with the
     requested size (VALGRIND_MALLOCLIKE_BLOCK), so its leak check, its
     "alloc'd at" stacks and its invalid-free report know it.
   - mi_track_free(p, usable): the whole block becomes inaccessible. Called
     before the block goes on a free list (after that, another thread may
     hand it out again and make it accessible).
   - mi_track_unregister(p): memcheck: the block the program holds at p
     (the pointer it was handed, which for an aligned allocation lies inside
     the block) is no longer a heap block (VALGRIND_FREELIKE_BLOCK). Called
     on every free path with the program's pointer, before the block goes
     on a free list: once there, another thread may register it again.
   - mi_track_resize(p, oldusable, newsize): p .. p+newsize accessible, the
     rest up to p+oldusable not (realloc in place). memcheck: the contents
     are kept and marked defined (the requested size of the old block is not
     known, so what was never written cannot be told apart); the block's
     registration is renewed with the new size (see below why not with
     VALGRIND_RESIZEINPLACE_BLOCK).
   - mi_track_mem_defined / undefined / noaccess(p, size): a raw range, for
     the allocator's own accesses to blocks (zeroing, copying on realloc) and
     for memory going back to the OS.

   The allocator reads and writes the free-list link inside free
   (inaccessible) blocks: the accessors (page/page.h) open the link's 8 bytes
   around the access with mi_track_link_open / mi_track_link_close. (An
   attribute that turns instrumentation off does not do: gcc inlines such a
   function into an instrumented caller and instruments it after all.) */
#ifndef MI_TRACK_H
#define MI_TRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../config.h"
#if MI_TRACK_ASAN && MI_TRACK_VALGRIND
#error "MI_TRACK_ASAN and MI_TRACK_VALGRIND: one checker at a time"
#endif

#if MI_TRACK_ASAN
#if defined(__SANITIZE_ADDRESS__) /* gcc */
#define MI_ASAN_COMPILED 1
#elif defined(__has_feature) /* clang */
#if __has_feature(address_sanitizer)
#define MI_ASAN_COMPILED 1
#endif
#endif
#if !defined(MI_ASAN_COMPILED)
#error "MI_TRACK_ASAN: compile the library with -fsanitize=address (the annotations are no-ops otherwise)"
#endif
#include <sanitizer/asan_interface.h>
#define MI_TRACK_ENABLED 1
#define mi_track_mem_defined(p, size) ASAN_UNPOISON_MEMORY_REGION((p), (size))
#define mi_track_mem_undefined(p, size) ASAN_UNPOISON_MEMORY_REGION((p), (size))
#define mi_track_mem_noaccess(p, size) ASAN_POISON_MEMORY_REGION((p), (size))
#elif MI_TRACK_VALGRIND
#include <valgrind/memcheck.h>
#define MI_TRACK_ENABLED 1
#define mi_track_mem_defined(p, size) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (size)))
#define mi_track_mem_undefined(p, size) ((void)VALGRIND_MAKE_MEM_UNDEFINED((p), (size)))
#define mi_track_mem_noaccess(p, size) ((void)VALGRIND_MAKE_MEM_NOACCESS((p), (size)))
#else
#define MI_TRACK_ENABLED 0
#define mi_track_mem_defined(p, size) ((void)0)
#define mi_track_mem_undefined(p, size) ((void)0)
#define mi_track_mem_noaccess(p, size) ((void)0)
#endif

#if MI_TRACK_ENABLED
/* The whole block first, then the part asked for: ASan keeps a partial
   8-byte granule as "the first k bytes accessible", so the order matters.
   memcheck: registering the block marks p .. p+size undefined (defined when
   the allocator zeroed it), as the two MAKE_MEM requests did. */
static inline void mi_track_malloc(void* p, size_t size, size_t usable, bool zero) {
  if (p == NULL) return;
  mi_track_mem_noaccess(p, usable);
#if MI_TRACK_VALGRIND
  VALGRIND_MALLOCLIKE_BLOCK(p, size, 0 /* no redzone */, zero);
#else
  if (zero) mi_track_mem_defined(p, size);
  else mi_track_mem_undefined(p, size);
#endif
}
static inline void mi_track_free(void* p, size_t usable) {
  mi_track_mem_noaccess(p, usable);
}
#if MI_TRACK_VALGRIND
#define mi_track_unregister(p) VALGRIND_FREELIKE_BLOCK((p), 0)
#else
#define mi_track_unregister(p) ((void)0)
#endif
/* memcheck's VALGRIND_RESIZEINPLACE_BLOCK takes the block's old size and
   rejects the call (as an invalid free) unless it is the size the block was
   registered with; the allocator keeps only the usable size, not the size
   the program asked for. So the registration is renewed instead, which
   leaves memcheck with the same record (the block at p, newsize bytes). */
static inline void mi_track_resize(void* p, size_t oldusable, size_t newsize) {
#if MI_TRACK_ASAN
  mi_track_mem_noaccess(p, oldusable);
  mi_track_mem_undefined(p, newsize);
#else
  VALGRIND_FREELIKE_BLOCK(p, 0);
  mi_track_mem_noaccess(p, oldusable);
  VALGRIND_MALLOCLIKE_BLOCK(p, newsize, 0, 1 /* contents kept: defined */);
#endif
}
#define mi_track_link_open(block) mi_track_mem_defined((block), sizeof(void*))
#define mi_track_link_close(block) mi_track_mem_noaccess((block), sizeof(void*))
#else
#define mi_track_link_open(block) ((void)0)
#define mi_track_link_close(block) ((void)0)
#define mi_track_malloc(p, size, usable, zero) ((void)0)
#define mi_track_free(p, usable) ((void)0)
#define mi_track_unregister(p) ((void)0)
#define mi_track_resize(p, oldusable, newsize) ((void)0)
#endif

/* The copy of a reallocation that moves (api/alloc.c, the secure front's
   realloc): the new block gets the old one's contents, and what lies beyond
   the old usable size zeroed for the zeroing variants. The copy reads the
   old block up to its usable size, past what the program asked for: both
   blocks are opened up for it. The old block's free is the caller's. */
static inline void mi_realloc_copy(void* p, size_t size, void* newp, size_t newsize, size_t newusable, bool zero) {
  mi_track_mem_defined(p, size);
  mi_track_mem_undefined(newp, newusable);
  if (zero && newusable > size) memset((uint8_t*)newp + size, 0, newusable - size);
  memcpy(newp, p, (newsize < size ? newsize : size));
  mi_track_resize(newp, newusable, newsize);
}

#endif
