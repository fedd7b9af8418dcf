/* Pattern fill and checks (pattern.h). */
#include "pattern.h"

#include <string.h>

/* One 64-bit word per 8 offsets; odd multipliers, so neighbouring ids and
   neighbouring words differ in every byte. */
static uint64_t fz_pattern_word(uint32_t id, size_t word) {
  uint64_t w = ((uint64_t)id + 1) * 0x9E3779B97F4A7C15ULL + (uint64_t)word * 0xD6E8FEB86659FD93ULL;
  return w ^ (w >> 29);
}

uint8_t fz_pattern_byte(uint32_t id, size_t offset) {
  return (uint8_t)(fz_pattern_word(id, offset >> 3) >> ((offset & 7) * 8));
}

/* The byte order of a word in memory, whatever the machine's. */
static void fz_store_le(uint8_t* q, uint64_t w) {
  for (int k = 0; k < 8; k++) q[k] = (uint8_t)(w >> (8 * k));
}

/* The next patterned run at or after *lo and below `to`: [*lo, *hi). */
/* The distance between stripes at offset `at` (past FZ_DENSE). */
static size_t fz_stride_at(size_t at) {
  return (at < FZ_SPARSE ? FZ_STRIDE : FZ_SPARSE_STRIDE);
}

static bool fz_next_run(size_t* lo, size_t to, size_t* hi) {
  if (*lo >= FZ_DENSE) {
    size_t in_stride = *lo % fz_stride_at(*lo);
    if (in_stride >= FZ_STRIPE) *lo += fz_stride_at(*lo) - in_stride;
  }
  if (*lo >= to) return false;
  size_t end = (*lo < FZ_DENSE ? FZ_DENSE : *lo - *lo % fz_stride_at(*lo) + FZ_STRIPE);
  *hi = (end < to ? end : to);
  return true;
}

void fz_pattern_fill(uint8_t* p, uint32_t id, size_t from, size_t to) {
  size_t lo = from, hi;
  while (fz_next_run(&lo, to, &hi)) {
    size_t i = lo;
    for (; i < hi && (i & 7) != 0; i++) p[i] = fz_pattern_byte(id, i);
    for (; i + 8 <= hi; i += 8) fz_store_le(p + i, fz_pattern_word(id, i >> 3));
    for (; i < hi; i++) p[i] = fz_pattern_byte(id, i);
    lo = hi;
  }
}

size_t fz_pattern_check(const uint8_t* p, uint32_t id, size_t from, size_t to) {
  size_t lo = from, hi;
  while (fz_next_run(&lo, to, &hi)) {
    size_t i = lo;
    for (; i < hi && (i & 7) != 0; i++) {
      if (p[i] != fz_pattern_byte(id, i)) return i;
    }
    for (; i + 8 <= hi; i += 8) {
      /* a word loaded and compared in place: memcmp on 8 bytes was a call
         into ASan's interceptor for every word, a fifth of the alloc
         harness's time (docs/fuzzing.md); the load is still checked */
      uint8_t want[8];
      fz_store_le(want, fz_pattern_word(id, i >> 3));
      uint64_t got, expect;
      memcpy(&got, p + i, 8);
      memcpy(&expect, want, 8);
      if (got != expect) break; /* the byte loop below names the offset */
    }
    for (; i < hi; i++) {
      if (p[i] != fz_pattern_byte(id, i)) return i;
    }
    lo = hi;
  }
  return to;
}

size_t fz_zero_check(const uint8_t* p, size_t from, size_t to) {
  size_t lo = from, hi;
  while (fz_next_run(&lo, to, &hi)) {
    size_t i = lo;
    for (; i < hi && (i & 7) != 0; i++) {
      if (p[i] != 0) return i;
    }
    for (; i + 8 <= hi; i += 8) {
      uint64_t w;
      memcpy(&w, p + i, 8);
      if (w != 0) break;
    }
    for (; i < hi; i++) {
      if (p[i] != 0) return i;
    }
    lo = hi;
  }
  return to;
}
