/* The secure build's check word over what free trusts of a page header
   (MI_SECURE): set by segment/secure-header.c when a page is set up (and
   for a single-block segment, when realloc resizes its block in place),
   checked by page/secure-validate.h on every free. */
#ifndef MI_SECURE_GEOMETRY_H
#define MI_SECURE_GEOMETRY_H

#include "../base/base.h"

/* keys derived from the process key at start-up (base/secure-keys.c; the
   second odd), declared in base.h */

/* What free trusts of a page to find a block and bound what it reads and
   writes: where the blocks start, their size and the inverse that divides
   by it, how many fit, the size class, and the segment's kind and page size
   (which choose the page). None of it changes while the page is set up, so
   a keyed check word over it, set when the page is (_mi_secure_page_seal),
   is checked on every free before any of it is used: a scribbled header is
   reported instead of followed. Each field enters its word whole (shifts
   that keep every bit, or rotations), so a change to any one field always
   changes the word; the two keyed multiplications make a change to several
   that cancels out a matter of knowing the keys. Bounds on each value would
   take a dozen compares. What does change (the capacity, the counts, the
   lists) is bounded where it is used. */
static inline uint64_t mi_geometry_mix(uint64_t a, uint64_t b) {
  return (((a ^ _mi_secure_geometry_keys[0]) * _mi_secure_geometry_keys[1]) ^ b) * _mi_secure_geometry_keys[1];
}

/* the segment's part: its kind and page shift, 16 bits */
static inline uint64_t mi_segment_bits(uint8_t kind, uint8_t page_shift) {
  return (uint64_t)kind | ((uint64_t)page_shift << 8);
}

static inline uint64_t mi_page_geometry(const mi_page_t* page, uint64_t segment_bits) {
  uint64_t a = (uint64_t)(uintptr_t)page->start ^ mi_rotl(segment_bits, 48);
  uint64_t b = (uint64_t)page->block_size ^ ((uint64_t)page->reserved << 20) ^ ((uint64_t)page->bin << 40) ^
               mi_rotl(page->block_size_inv, 24);
  return mi_geometry_mix(a, b);
}

/* A single-block segment's page: free also reads (rare path) the segment's
   size and page count, where the guard page is, whether it is pinned or a
   guarded block; the block's size changes when realloc resizes it in place
   (sealed again then). */
static inline uint64_t mi_single_geometry(const mi_segment_t* segment, const mi_page_t* page) {
  uint64_t c = (uint64_t)segment->segment_size ^ mi_rotl(page->guard_offset, 32) ^
               ((uint64_t)segment->is_pinned << 48) ^ ((uint64_t)page->is_guarded << 56);
  uint64_t d = (uint64_t)segment->page_count ^ mi_rotl(segment->info_size, 32);
  uint64_t h = mi_page_geometry(page, mi_segment_bits(segment->kind, segment->page_shift));
  return mi_geometry_mix(mi_geometry_mix(h, c), d);
}

/* Whether a check word `found` is `geometry` as sealed, marked or not
   (base.h: mi_geometry_sampled_mark). */
static inline bool mi_geometry_matches(uint64_t found, uint64_t geometry) {
  return (found == geometry || found == (geometry ^ mi_geometry_sampled_mark()));
}

/* ... the page's word: for the checks off free's path, which a page's
   marking does not concern. */
static inline bool mi_geometry_holds(const mi_page_t* page, uint64_t geometry) {
  return mi_geometry_matches(atomic_load_explicit(&page->geometry, memory_order_acquire), geometry);
}

#endif
