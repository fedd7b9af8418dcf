/* The contents every fuzzed block holds: a byte sequence derived from the
   block's id and the offset alone, so that a stale byte left by an earlier
   size of the same block reads the same as a fresh one, and a byte from any
   other block (a mix-up of two blocks) reads differently.

   Which offsets carry the pattern does not depend on the block's size either
   (a resize must not change which bytes are checked): every byte below
   FZ_DENSE, above it the first FZ_STRIPE bytes of every 64 KiB, and past
   FZ_SPARSE of every MiB, which keeps a multi-megabyte block cheap to fill:
   every patterned page is a page fault on fresh memory, and the stripes
   every 64 KiB of a huge block (32 MiB, 528 pages) were half of the alloc
   harness's time (docs/fuzzing.md). */
#ifndef FZ_PATTERN_H
#define FZ_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FZ_DENSE ((size_t)64 * 1024)
#define FZ_STRIPE ((size_t)64)
#define FZ_STRIDE ((size_t)64 * 1024)
#define FZ_SPARSE ((size_t)4 << 20)
#define FZ_SPARSE_STRIDE ((size_t)1 << 20)

/* Fill [from, to) of block `p` with the pattern of `id` (only the patterned offsets). */
void fz_pattern_fill(uint8_t* p, uint32_t id, size_t from, size_t to);

/* The first offset in [from, to) whose byte differs from the pattern of
   `id`, or `to` if none does. */
size_t fz_pattern_check(const uint8_t* p, uint32_t id, size_t from, size_t to);

/* The first offset in [from, to) (patterned offsets only) that is not zero, or `to`. */
size_t fz_zero_check(const uint8_t* p, size_t from, size_t to);

uint8_t fz_pattern_byte(uint32_t id, size_t offset);

#endif
