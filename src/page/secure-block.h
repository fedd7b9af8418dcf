/* The secure build's block format (MI_SECURE), shared by the secure wing's
   rooms: allocation (alloc.c) writes it, validation (validate.c) and free
   (free.c) read it.

   A block of a small or medium page, `block_size` bytes, 16-byte aligned:

     block                 data end (user_end)               block + block_size
     |<-- the program's data -->|<-- canary, up to 16 bytes -->|<-- trailer, 8 -->|
     |                          |  keyed bytes, 1st never 0,   |  tag ^ packed     |
     |                          |  2nd always 0, rest never 0  |  value * MUL      |

   An aligned allocation hands out a pointer inside the block; a keyed tag
   (mi_tag_of) then sits 16 bytes before that pointer. A guarded block (a
   sampled one, ending at its guard page) has no trailer: its slack holds
   its canary byte. A large or huge block's page keeps the data's start
   itself (user_start): its block may pass 4 GiB.

   The trailer's packed value (mi_trailer_pack), before encoding:

     bit 54 .. 52: kind, what allocated the block (mi_alloc_kind_t: malloc,
                   new, new[], their aligned forms, mi_new), which the free
                   must match
     bit 51 .. 32: start, how far inside the block the program's pointer lies
     bit 31 ..  0: end, where the program's data ends (MI_TRAILER_FREEING: an
                   end no block has, stored by a free from another thread)

   Encoded (mi_trailer_encode): the tag xor the value times an odd constant,
   in 55 bits, with nine fixed bits rotated to the top of the first byte and
   to the second byte. */
#ifndef MI_SECURE_BLOCK_H
#define MI_SECURE_BLOCK_H

#include "page.h"
#include "../secure/secure.h"

/* keys derived from the process key at start-up (keys.c) */
extern uintptr_t _mi_secure_trailer_key mi_decl_hidden;

/* A block's keyed tag: its canary is derived from it, its trailer the tag
   xor the data's end times an odd constant, in 55 bits. Decoding multiplies
   by the constant's inverse: a trailer changed in any bit decodes to an end
   that is out of range but with a chance of about block size / 2^55 (a
   plain xor would have left the tag's low bits unchecked: a changed low
   byte moved the end within the block).

   In memory the trailer's first byte is 7 of those bits with the top bit
   set, its second byte zero, its last six the other 48 bits. So a live
   block's trailer is never zero (a freed block's is), a NUL written one past
   data that ends at the trailer changes it, and a string read past the data
   stops at the trailer's second byte: an over-read (strlen of a buffer
   filled to its size) leaks the first canary byte, or the trailer's first
   byte, never the rest a forged overrun would have to match. */
#define MI_TRAILER_MUL 0x9E3779B97F4A7C15ULL
#define MI_TRAILER_MUL_INV 0xF1DE83E19937733DULL
_Static_assert((uint64_t)(MI_TRAILER_MUL* MI_TRAILER_MUL_INV) == 1, "the inverse of the trailer's multiplier");
/* A small or medium block's trailer also keeps, above this bit, how far
   inside the block the program's pointer lies (an aligned allocation's may):
   the block's start is then not a pointer that was handed out. The check of
   the common case, a pointer at the start, stays one compare: the value
   must not exceed the trailer's offset. A single-block segment's block may
   pass 4 GiB; its page keeps the offset instead (user_start). */
#define MI_TRAILER_START_SHIFT 32
#define MI_TRAILER_END_MASK (((uint64_t)1 << MI_TRAILER_START_SHIFT) - 1)
/* The allocation's kind, above the start (a small or medium block's offset
   is below 2^20; a single-block segment's end, which fills the start's bits
   too, below 2^52). Checked as the start is, for free: the free subtracts
   the kind it expects with the offset, so a block of another kind decodes
   to an end out of range, and the matching pair pays nothing (malloc's kind
   is 0). Only then, on the rare path, is the kind looked at. */
#define MI_TRAILER_KIND_SHIFT 52
#define MI_TRAILER_START_MASK (((uint64_t)1 << (MI_TRAILER_KIND_SHIFT - MI_TRAILER_START_SHIFT)) - 1)
#define MI_TRAILER_KIND_MASK ((uint64_t)7 << MI_TRAILER_KIND_SHIFT)
_Static_assert(MI_KIND_ANY <= 7, "the kinds fit the trailer's three bits");
/* What a free from another thread stores in the trailer before it touches
   anything else of the block: an end no block has. A visit of the owner's
   heap that finds it (or finds the block's canary changed and then it) skips
   the block, which is being freed, instead of taking the zeroing for an
   overflow; a second free finds it and reports a double free, zero on free
   on or off. */
#define MI_TRAILER_FREEING MI_TRAILER_END_MASK
static inline uintptr_t mi_block_tag(const mi_block_t* block) {
  return (((uintptr_t)block ^ _mi_secure_trailer_key) * 0xBF58476D1CE4E5B9ULL) | ((uintptr_t)1 << 63);
}
#define MI_TRAILER_BITS_MASK (((uint64_t)1 << 55) - 1)
/* a word as its bytes lie in memory, first byte lowest */
static inline uint64_t mi_word_le(uint64_t w) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return __builtin_bswap64(w);
#else
  return w;
#endif
}
static inline uint64_t mi_rotl64(uint64_t x, unsigned r) {
  return (x << r) | (x >> (64 - r));
}
/* The 55 bits, then a one and eight zeros above them, rotated so that those
   nine fixed bits are the top bit of the first byte and the second byte. */
static inline uint64_t mi_trailer_encode(uintptr_t tag, uint64_t value) {
  uint64_t e = ((tag ^ (value * MI_TRAILER_MUL)) & MI_TRAILER_BITS_MASK) | ((uint64_t)1 << 55);
  return mi_word_le(mi_rotl64(e, 16));
}
/* A trailer whose fixed bits are not as written decodes to an end of at
   least 2^55. */
static inline uint64_t mi_trailer_decode(uintptr_t tag, uint64_t trailer) {
  uint64_t e = mi_rotl64(mi_word_le(trailer), 48);
  uint64_t fixed = (e >> 55) ^ 1;
  return (((e ^ tag) * MI_TRAILER_MUL_INV) & MI_TRAILER_BITS_MASK) | (fixed << 55);
}

static inline uintptr_t mi_tag_of(const void* p) {
  return ((uintptr_t)p ^ _mi_process_key) * 0x94D049BB133111EBULL;
}

/* The tag sits 16 bytes before an aligned allocation's inner pointer, which
   mi_malloc_aligned_at (an offset) or a pointer under validation may leave
   at any byte address: accessed bytewise. */
static inline void mi_tag_store(void* p) {
  uintptr_t tag = mi_tag_of(p);
  memcpy((uint8_t*)p - 16, &tag, sizeof(tag));
}
static inline bool mi_tag_matches(const void* p) {
  uintptr_t tag;
  memcpy(&tag, (const uint8_t*)p - 16, sizeof(tag));
  return tag == mi_tag_of(p);
}

/* The one pack and unpack of a trailer's value (the diagram above). */
static inline uint64_t mi_trailer_pack(uint64_t start, uint64_t end) {
  return (start << MI_TRAILER_START_SHIFT) + end;
}
static inline uint64_t mi_trailer_start(uint64_t value) {
  return (value >> MI_TRAILER_START_SHIFT) & MI_TRAILER_START_MASK;
}
static inline uint64_t mi_trailer_kind_bits(mi_alloc_kind_t kind) {
  return (uint64_t)kind << MI_TRAILER_KIND_SHIFT;
}
static inline mi_alloc_kind_t mi_trailer_kind(uint64_t value) {
  return (mi_alloc_kind_t)((value & MI_TRAILER_KIND_MASK) >> MI_TRAILER_KIND_SHIFT);
}
static inline uint64_t mi_trailer_end(uint64_t value) {
  return value & MI_TRAILER_END_MASK;
}

/* Offsets within a page are below 2^22 and block sizes at most 2^17, so
   multiplying by ceil(2^40 / size) and shifting is an exact division. A
   single-block segment's page has a factor of 0: its block, possibly beyond
   4 GiB, has index 0 without a branch here. */
static inline size_t mi_block_index(const mi_page_t* page, const void* p) {
  uint64_t offset = (uint64_t)((const uint8_t*)p - page->start);
  return (size_t)((offset * page->block_size_inv) >> 40);
}

/* The start of one of a small or medium page's carved blocks, whose index
   it sets (a link read from a block may point anywhere). */
static inline bool mi_carved_block_index(const mi_page_t* page, const void* p, size_t* idx) {
  const uint8_t* b = (const uint8_t*)p;
  if (b < page->start || b >= page->start + (size_t)page->capacity * page->block_size) return false;
  *idx = mi_block_index(page, p);
  return b == page->start + *idx * page->block_size;
}

#include "secure-canary.h" /* the canary bytes between a request's end and its trailer */

static inline bool mi_bit_get(const mi_page_t* page, size_t idx) {
  return mi_bitmap_get(page->used_map, idx);
}

/* only the page's owner writes the bits */
static inline void mi_bit_set(mi_page_t* page, size_t idx, bool on) {
  mi_bitmap_store(page->used_map, idx, on);
}

static inline uint64_t* mi_trailer_of(const mi_page_t* page, const mi_block_t* block) {
  return (uint64_t*)((uint8_t*)block + page->block_size - MI_SECURE_TRAILER);
}

/* A large block's slack after its canary that free checks (validate.c):
   from the canary's end to the trailer, but no further than the end of the
   OS page the canary ends in, which the canary's store mapped (the rest, a
   reallocation's room, may never be touched: reading it would fault its
   pages in). Empty for a block that ends at its guard page with no room
   (segment-checks.c); an aligned allocation's or a room's. Kept zero by
   each layout of the block (alloc.c). Offsets from the block's start. */
static inline size_t mi_single_slack_from(size_t user_end, size_t trailer_at) {
  return (user_end + MI_SECURE_CANARY_MAX < trailer_at ? user_end + MI_SECURE_CANARY_MAX : trailer_at);
}
static inline size_t mi_single_slack_to(const mi_block_t* block, size_t from, size_t trailer_at) {
  size_t psize = _mi_os_page_size();
  uintptr_t at = (uintptr_t)block + from;
  size_t to = from + (size_t)(((at + psize - 1) & ~(uintptr_t)(psize - 1)) - at);
  return (to < trailer_at ? to : trailer_at);
}

/* A block of a single-block segment (large, huge, guarded). Not the same as
   page->reserved == 1: the first small page of a segment, shortened by the
   segment header, may have room for one block of the larger small sizes. */
static inline bool mi_page_is_single_block(const mi_page_t* page) {
  return _mi_page_segment(page)->kind == MI_SEGMENT_SINGLE;
}

#if MI_GUARDED
/* A guarded block ends at its guard page, where an overflow faults, and has
   no trailer. What lies between the data and the guard page (under 16
   bytes, or up to about twice the alignment for an aligned block) is filled
   with the block's canary byte, checked wherever the block is validated
   (free, realloc, usable size, a visit). */
static inline uint8_t mi_guarded_canary(const mi_block_t* block) {
  return (uint8_t)mi_canary_word(mi_block_tag(block));
}
static inline void mi_guarded_set_user(mi_page_t* page, mi_block_t* block, void* p, size_t size, mi_alloc_kind_t kind) {
  page->user_start = (size_t)((uint8_t*)p - (uint8_t*)block);
  page->guarded_kind = (uint8_t)kind;
  size_t user_end = page->user_start + size;
  page->guarded_size = user_end;
  memset((uint8_t*)block + user_end, mi_guarded_canary(block), page->block_size - user_end);
  if ((void*)block != p) mi_tag_store(p);
}
static inline bool mi_guarded_slack_intact(const mi_page_t* page, const mi_block_t* block) {
  const uint8_t* b = (const uint8_t*)block;
  uint8_t canary = mi_guarded_canary(block);
  for (size_t i = page->guarded_size; i < page->block_size; i++) {
    if (b[i] != canary) return false;
  }
  return true;
}
#endif

#endif
