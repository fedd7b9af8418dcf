/* The secure build's memory operations on blocks that are not inline
   (memory.h): the check of a medium freed block, the zeroing with
   stores that bypass the cache. */
#include "memory.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Set while this thread frees a block it has just read whole (the old block
   of a reallocation that moved, copied from): its lines are in the cache,
   where stores that bypass it would first have to evict them (on an Intel
   Xeon, `realloc` of bench/ took 0.30 s with them, 0.13 s with memset).
   Blocks the program frees may be cold: for them the streaming stores. */
mi_decl_thread bool _mi_secure_zero_in_cache;

/* Past MI_SECURE_UAF_CHECK_MAX (the medium blocks, up to 128 KiB + 16) a
   block is checked whole too, as the small ones are: a sample of it let a
   write between its ends through (a byte in a 10 KiB block was caught at
   one reuse in ten, in a 104 KiB one in a hundred). Reading it back costs
   about 5 instructions per 64 bytes, and cache misses: the zeroing on free
   bypassed the cache. A block not handed out since its page was set up is
   not read at all: the memory under it may never have been written (fresh
   from the OS, or past what the slot's earlier pages touched), and reading
   it would fault its pages in, as the zero page and again when written
   (`randsizes` took 11% more page faults). A page set up again on memory
   still committed inherits the bits of the blocks its slot's earlier page
   handed out (_mi_secure_page_init): those were zeroed when freed, so
   reading them faults nothing in, and a stale write into one after its page
   went back to the segment is seen when the new page hands it out. */
_Static_assert(MI_MEDIUM_PAGE_SIZE / (MI_SECURE_UAF_CHECK_MAX + 16) < 64, "a bit of handed_out per block");

/* 128 bytes or'ed together (two accumulators, so the loads do not wait on
   one chain of ors), folded at the end */
#if defined(__GNUC__)
typedef mi_v16_t mi_or_t;
#define mi_or64(p) mi_v64_at(p)
#define mi_or_fold(v) ((v)[0] | (v)[1])
#else
typedef uint64_t mi_or_t;
static inline uint64_t mi_or64(const uint8_t* p) {
  uint64_t acc = 0;
  for (size_t i = 0; i < 8; i++) acc |= ((const uint64_t*)p)[i];
  return acc;
}
#define mi_or_fold(v) (v)
#endif

mi_noinline bool _mi_secure_block_untouched_medium(mi_page_t* page, const mi_block_t* block, size_t idx) {
  uint64_t bit = (uint64_t)1 << idx;
  if ((page->handed_out & bit) == 0) {
    page->handed_out |= bit;
    return true;
  }
  /* steps of 128 bytes, then the last 128, overlapping (medium blocks are
     over 8 KiB, multiples of 16) */
  const uint8_t* b = (const uint8_t*)block;
  const uint8_t* last = b + page->block_size - 128;
  mi_or_t v0 = mi_or64(b + 64);
  mi_or_t v1 = mi_or64(last) | mi_or64(last + 64);
  for (const uint8_t* q = b + 128; q < last; q += 128) {
    v0 |= mi_or64(q);
    v1 |= mi_or64(q + 64);
  }
  uint64_t acc = mi_or_fold(v0 | v1);
  for (size_t i = 1; i < 8; i++) acc |= ((const uint64_t*)b)[i]; /* word 0 held the link */
  return (acc == 0);
}

#if defined(__SSE2__)
/* Zero a block nothing reads back soon with stores that bypass the cache: no
   reading of lines the program may never have touched (a program that fills
   a 64 KiB buffer one byte a page), and the lines the program does use stay
   cached. Blocks are 16-byte aligned, sizes multiples of 16. The fence makes
   the stores visible before the block is published on a free list. */
mi_noinline void _mi_secure_block_zero_streaming(mi_block_t* block, size_t block_size) {
  __m128i* b = (__m128i*)block;
  __m128i* end = (__m128i*)((uint8_t*)block + block_size);
  const __m128i zero = _mm_setzero_si128();
  for (; b + 4 <= end; b += 4) {
    _mm_stream_si128(b, zero);
    _mm_stream_si128(b + 1, zero);
    _mm_stream_si128(b + 2, zero);
    _mm_stream_si128(b + 3, zero);
  }
  for (; b < end; b++) _mm_stream_si128(b, zero);
  _mm_sfence();
}
#endif

/* A freed large block's bytes (secure-large.c), zeroed as the blocks past the
   checked sizes are. */
void _mi_secure_block_zero(void* p, size_t size) {
  mi_block_zero((mi_block_t*)p, size);
}
