/* The secure build's zeroing of freed blocks that are not zeroed inline
   (secure/memory.h inlines the rest): with stores that bypass the cache,
   unless the block was just read whole. On the base floor: the segment
   floor's large-block quarantine zeroes too. */
#include "base.h"
#include "../secure/secure.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if MI_SECURE
/* (secure.h says what it is for) */
mi_decl_thread bool _mi_secure_zero_in_cache;

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
  /* 128 bytes a step: the loop's own three instructions count against
     eight stores, not four (randsizes: 125 to 110 M instructions here) */
  for (; b + 8 <= end; b += 8) {
    _mm_stream_si128(b, zero);
    _mm_stream_si128(b + 1, zero);
    _mm_stream_si128(b + 2, zero);
    _mm_stream_si128(b + 3, zero);
    _mm_stream_si128(b + 4, zero);
    _mm_stream_si128(b + 5, zero);
    _mm_stream_si128(b + 6, zero);
    _mm_stream_si128(b + 7, zero);
  }
  for (; b < end; b++) _mm_stream_si128(b, zero);
  _mm_sfence();
}
#endif

/* A freed large block's bytes (segment/secure-large.c), zeroed as the
   secure front zeroes the blocks past the checked sizes (secure/memory.h). */
void _mi_secure_block_zero(void* p, size_t size) {
#if defined(__SSE2__)
  if (size > MI_MEDIUM_BLOCK_MAX && !_mi_secure_zero_in_cache) {
    _mi_secure_block_zero_streaming((mi_block_t*)p, size);
    return;
  }
#endif
  memset(p, 0, size);
}
#endif
