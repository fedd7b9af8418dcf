/* What the secure build zeroes when a block is freed, shared by the counter
 * (zero_count.c, which records it while a workload runs) and the replay
 * (zero_floor.c, which times it). Keep in step with src/config.h and
 * src/page/page.c: the trailer, the size classes and the largest zeroed block. */
#ifndef BENCH_ZERO_FLOOR_H
#define BENCH_ZERO_FLOOR_H

#include <stddef.h>

/* bytes the secure build adds to every request (MI_SECURE_TRAILER) */
#define ZF_TRAILER 8
/* the secure build's last size class (MI_MEDIUM_BLOCK_MAX); larger blocks
   have a segment of their own */
#define ZF_MEDIUM_MAX ((size_t)128 * 1024 + 16)
/* The largest block counted in the floor: freed large blocks up to 4 MiB
   are zeroed too (src/secure/secure-large.c, MI_LARGE_ZERO_MAX) before they are
   fenced off, while those held stay under 64 MiB; past it their pages are
   given back to the OS instead, which costs no zeroing. */
#define ZF_MAX_BLOCK ((size_t)4 << 20)
/* blocks above ZF_STREAM_MIN are zeroed with non-temporal stores and never
   read back (MI_SECURE_UAF_CHECK_MAX); up to ZF_INLINE_MAX with inline
   16-byte stores; memset between */
#define ZF_STREAM_MIN ((size_t)8 * 1024)
#define ZF_INLINE_MAX 512

/* The secure build's block for a request of n bytes: the size class holding
   n + ZF_TRAILER. The classes: 16-byte steps up to 128 bytes, then eight per
   doubling (a step of an eighth of the power of two below), and a last one
   of 128 KiB + 16 so that a 128 KiB request stays off a segment of its own.
   Above that, a large block: its page-rounded size (it ends at its guard
   page and starts on a page boundary). */
static inline size_t zf_block_size(size_t n) {
  size_t need = n + ZF_TRAILER;
  if (need <= 16) return 16;
  if (need <= 128) return (need + 15) & ~(size_t)15;
  if (need > ((size_t)128 * 1024) && need <= ZF_MEDIUM_MAX) return ZF_MEDIUM_MAX;
  if (need > ZF_MEDIUM_MAX) return (need + 4095) & ~(size_t)4095;
  size_t step = (size_t)1 << (63 - __builtin_clzll((unsigned long long)(need - 1)) - 3);
  return (need + step - 1) & ~(step - 1);
}

#endif
