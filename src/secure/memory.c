/* The secure build's memory operations on blocks that are not inline
   (memory.h): the sampled check of a large freed block, the zeroing with
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

/* Past MI_SECURE_UAF_CHECK_MAX a block is sample-checked (docs/secure-mode.md):
   reading it all back would cost as much as zeroing it again, in cache
   misses on lines the program may never have touched (the zeroing bypassed
   the cache). Its first and last 64 bytes are always checked: the commonest
   stale writes (a header, the end), and lines the pop (the link) and the
   trailer's store bring into the cache anyway. Of the m 64-byte chunks
   between, MI_SECURE_UAF_SAMPLES evenly spaced from a random start: a write
   into t of them is caught with probability t * SAMPLES / m per reuse, and
   for certain once t >= m / SAMPLES; even spacing, not independent picks,
   so that a wide write cannot slip between them. A block not handed out
   since its page was set up is not read at all: the memory under it may
   never have been written (fresh from the OS, or past what the page's
   last use touched), and reading it would fault its pages in, as the zero
   page and again when written (`randsizes` took 11% more page faults).
   After its first free, the zeroing has written all of it. */
#define MI_SECURE_UAF_SAMPLES 16
_Static_assert((MI_SECURE_UAF_SAMPLES & (MI_SECURE_UAF_SAMPLES - 1)) == 0, "the spacing is a shift");
_Static_assert(MI_SECURE_UAF_CHECK_MAX / 64 - 2 >= MI_SECURE_UAF_SAMPLES, "the samples are distinct chunks");
_Static_assert(MI_MEDIUM_PAGE_SIZE / (MI_SECURE_UAF_CHECK_MAX + 16) < 64, "a bit of handed_out per block");

/* 64 bytes or'ed together, folded at the end (one vector, or one word) */
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

mi_noinline bool _mi_secure_block_untouched_sampled(mi_page_t* page, const mi_block_t* block, size_t idx) {
  uint64_t bit = (uint64_t)1 << idx;
  if ((page->handed_out & bit) == 0) {
    page->handed_out |= bit;
    return true;
  }
  const uint8_t* b = (const uint8_t*)block;
  const uint8_t* end = b + page->block_size;
  const uint8_t* clamp = end - 128; /* the last chunk between, when they do not divide evenly */
  size_t m = (page->block_size - 128 + 63) / 64;
  size_t r = (size_t)(_mi_tld_random(page->heap->tld) % m);
  mi_or_t v = mi_or64(end - 64);
  for (size_t j = 0; j < MI_SECURE_UAF_SAMPLES; j++) {
    size_t c = r + j * m / MI_SECURE_UAF_SAMPLES;
    if (c >= m) c -= m;
    const uint8_t* q = b + 64 + 64 * c;
    v |= mi_or64(q < clamp ? q : clamp);
  }
  uint64_t acc = mi_or_fold(v);
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
