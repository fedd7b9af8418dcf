/* The secure build's memory operations on blocks (MI_SECURE): the check
   that a freed block is still zero when handed out again, and the zeroing
   on free. Inline where the allocation and free paths take them; the rare
   ones are in memory.c. */
#ifndef MI_SECURE_MEMORY_H
#define MI_SECURE_MEMORY_H

#include "../page/secure-block.h"
#include "secure.h"

/* Blocks of the size classes are multiples of 16 bytes and 16-byte aligned:
   the zeroing on free and the check on allocation go 16 bytes at a time
   (gcc/clang vector extension; plain words elsewhere). */
#if defined(__GNUC__)
typedef uint64_t mi_v16_t __attribute__((vector_size(16), may_alias));
#endif

#define mi_v16_at(p) (*(const mi_v16_t*)(p))
#define mi_v64_at(p) ((mi_v16_at(p) | mi_v16_at((p) + 16)) | (mi_v16_at((p) + 32) | mi_v16_at((p) + 48)))

/* Still all zero since it was freed, but for word 0, which held the
   free-list link? Four vectors per step (the loop's own instructions would
   otherwise cost as much as the loads), then the last 64 bytes, overlapping
   what the steps read: no loop over the vectors left over. Under 64 bytes,
   the two or three vectors there are. */
static inline bool mi_block_untouched(const mi_block_t* block, size_t block_size) {
  const uint8_t* b = (const uint8_t*)block;
  uint64_t acc = ((const uint64_t*)b)[1];
#if defined(__GNUC__)
  const uint8_t* end = b + block_size;
  mi_v16_t v = {0, 0};
  if (block_size > 64) {
    const uint8_t* last = end - 64; /* a pointer bound: one compare a step */
    for (const uint8_t* q = b + 16; q < last; q += 64) v |= mi_v64_at(q);
    v |= mi_v64_at(end - 64);
  } else if (block_size > 16) {
    v |= mi_v16_at(b + 16) | mi_v16_at(end - 16);
    if (block_size > 48) v |= mi_v16_at(b + 32);
  }
  acc |= v[0] | v[1];
#else
  for (size_t i = 2; i < block_size / 8; i++) acc |= ((const uint64_t*)b)[i];
#endif
  return (acc == 0);
}

/* blocks past MI_SECURE_UAF_CHECK_MAX: checked whole but at their first
   hand-out from their page (memory.c) */
bool _mi_secure_block_untouched_medium(mi_page_t* page, const mi_block_t* block, size_t idx) mi_decl_hidden;

#if defined(__GNUC__)
static inline void mi_v64_store(uint8_t* p, mi_v16_t v) {
  *(mi_v16_t*)p = v;
  *(mi_v16_t*)(p + 16) = v;
  *(mi_v16_t*)(p + 32) = v;
  *(mi_v16_t*)(p + 48) = v;
}
#endif

/* Zero a freed block: inline for small ones, where a call costs more than
   the stores; past the blocks whose contents are checked when handed out
   again (read back whole then: up to the medium sizes), without filling the
   cache. A medium block zeroed with stores that bypass the cache was read
   back from memory at its reuse: `randsizes` one thread took 1.81 s of CPU
   against 1.28 s zeroed through the cache (1.17 s before the whole check). */
static inline void mi_block_zero(mi_block_t* block, size_t block_size) {
#if defined(__GNUC__)
  if (block_size <= 512) {
    /* as the check above: 64 bytes a step, then the last 64 overlapping */
    uint8_t* b = (uint8_t*)block;
    uint8_t* end = b + block_size;
    const mi_v16_t zero = {0, 0};
    if (block_size >= 64) {
      uint8_t* last = end - 64;
      for (uint8_t* q = b; q < last; q += 64) {
        mi_v64_store(q, zero);
        __asm__ volatile("" ::: "memory"); /* keeps the compiler from making this loop a memset call */
      }
      mi_v64_store(end - 64, zero);
    } else {
      *(mi_v16_t*)b = zero;
      *(mi_v16_t*)(end - 16) = zero;
      if (block_size > 32) *(mi_v16_t*)(b + 16) = zero;
    }
    return;
  }
#endif
#if defined(__SSE2__)
  if (block_size > MI_MEDIUM_BLOCK_MAX && !_mi_secure_zero_in_cache) {
    _mi_secure_block_zero_streaming(block, block_size);
    return;
  }
#endif
  memset(block, 0, block_size);
}

#endif
