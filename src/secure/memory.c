/* The secure build's memory operations on blocks that are not inline
   (memory.h): the check of a medium freed block. (Its zeroing with stores
   that bypass the cache: base/secure-zeroing.c.) */
#include "../api/api.h"
#include "memory.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Past MI_SECURE_UAF_CHECK_MAX (the medium blocks, up to 128 KiB + 16) a
   block is checked whole too, as the small ones are: a sample of it let a
   write between its ends through (a byte in a 10 KiB block was caught at
   one reuse in ten, in a 104 KiB one in a hundred). Reading it back costs
   about 5.5 instructions per 64 bytes, and cache misses: the zeroing on free
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

#if defined(__GNUC__)
/* Eight accumulators, each or'ed with a vector loaded straight from memory:
   one instruction per 16 bytes, 128 bytes a step (with fewer accumulators,
   or two loads each a step, the compiler combines the loads in a tree of
   moves and ors first: half as many instructions again), then the last 128
   bytes, overlapping. Blocks here are over 8 KiB, multiples of 16; words 1
   to 7 are read apart (word 0 held the link). */
static bool mi_block_untouched_medium(const uint8_t* b, size_t block_size) {
  const uint8_t* last = b + block_size - 128;
  mi_v16_t a0 = mi_v16_at(last), a1 = mi_v16_at(last + 16), a2 = mi_v16_at(last + 32), a3 = mi_v16_at(last + 48);
  mi_v16_t a4 = mi_v16_at(last + 64), a5 = mi_v16_at(last + 80), a6 = mi_v16_at(last + 96), a7 = mi_v16_at(last + 112);
  a0 |= mi_v16_at(b + 64), a1 |= mi_v16_at(b + 80), a2 |= mi_v16_at(b + 96), a3 |= mi_v16_at(b + 112);
  for (const uint8_t* q = b + 128; q < last; q += 128) {
    a0 |= mi_v16_at(q), a1 |= mi_v16_at(q + 16), a2 |= mi_v16_at(q + 32), a3 |= mi_v16_at(q + 48);
    a4 |= mi_v16_at(q + 64), a5 |= mi_v16_at(q + 80), a6 |= mi_v16_at(q + 96), a7 |= mi_v16_at(q + 112);
  }
  mi_v16_t v = ((a0 | a1) | (a2 | a3)) | ((a4 | a5) | (a6 | a7));
  uint64_t acc = v[0] | v[1];
  for (size_t i = 1; i < 8; i++) acc |= ((const uint64_t*)b)[i];
  return (acc == 0);
}
#else
static bool mi_block_untouched_medium(const uint8_t* b, size_t block_size) {
  uint64_t acc = 0;
  for (size_t i = 1; i < block_size / 8; i++) acc |= ((const uint64_t*)b)[i];
  return (acc == 0);
}
#endif
_Static_assert(MI_SECURE_UAF_CHECK_MAX >= 256, "the last 128 bytes lie past the first 128");

mi_noinline bool _mi_secure_block_untouched_medium(mi_page_t* page, const mi_block_t* block, size_t idx) {
  uint64_t bit = (uint64_t)1 << idx;
  if ((page->handed_out & bit) == 0) {
    page->handed_out |= bit;
    return true;
  }
  return mi_block_untouched_medium((const uint8_t*)block, page->block_size);
}
