/* The secure block format's canary bytes (block.h includes this after the
   tag and the trailer it builds on). */
#ifndef MI_SECURE_CANARY_H
#define MI_SECURE_CANARY_H

#include <string.h>

/* Canary bytes: eight keyed bytes per block (repeated after the eighth), so
   that learning one byte tells nothing of the next, nor one block's canary
   of another's. The first is never zero: the commonest off-by-one writes a
   NUL terminator, and it must always change the canary. The second is
   zero: a string read past the data stops there, having leaked one byte
   (a lone zero written there goes unseen; a write that reaches it from the
   data changes the first). The others are never zero either. */
static inline uint64_t mi_canary_word(uintptr_t tag) {
  /* from the tag's high bits (a product's low bits depend on few of the
     address's); a byte leaked is 8 of the 55 bits a forged trailer needs */
  return mi_word_le((mi_rotl64(tag, 40) | 0x0101010101010101ULL) & ~(uint64_t)0xFF00);
}

/* The canary fills the bytes from the data's end up to the trailer, at most
   MI_SECURE_CANARY_MAX (16). Without branches on the size (sizes vary, and
   every mispredicted branch costs more than a store): two word stores, the
   second moved onto the trailer when the canary is at most 8 bytes long (the
   trailer is written after them), and a check that masks off what lies past
   the canary. Both words lie inside the block: the data's end is at most the
   trailer's offset. */
_Static_assert(MI_SECURE_CANARY_MAX == 16 && MI_SECURE_TRAILER == 8, "two words cover the canary");
static inline size_t mi_canary_second(size_t user_end, size_t trailer_at) {
  return (user_end + 8 < trailer_at ? user_end + 8 : trailer_at);
}
static inline void mi_canary_fill(uint8_t* block, size_t user_end, size_t trailer_at, uint64_t w) {
  memcpy(block + user_end, &w, 8);
  memcpy(block + mi_canary_second(user_end, trailer_at), &w, 8);
}
/* [n]: the first n bytes of a word in memory */
static const uint64_t mi_first_bytes_mask[9] = {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    0,
    0xFF00000000000000ULL,
    0xFFFF000000000000ULL,
    0xFFFFFF0000000000ULL,
    0xFFFFFFFF00000000ULL,
    0xFFFFFFFFFF000000ULL,
    0xFFFFFFFFFFFF0000ULL,
    0xFFFFFFFFFFFFFF00ULL,
    0xFFFFFFFFFFFFFFFFULL
#else
    0,
    0xFFULL,
    0xFFFFULL,
    0xFFFFFFULL,
    0xFFFFFFFFULL,
    0xFFFFFFFFFFULL,
    0xFFFFFFFFFFFFULL,
    0xFFFFFFFFFFFFFFULL,
    0xFFFFFFFFFFFFFFFFULL
#endif
};
static inline bool mi_canary_intact(const uint8_t* block, size_t user_end, size_t trailer_at, uint64_t w) {
  size_t n = trailer_at - user_end;
  if (n > MI_SECURE_CANARY_MAX) n = MI_SECURE_CANARY_MAX;
  size_t n1 = (n < 8 ? n : 8);
  uint64_t v1, v2;
  memcpy(&v1, block + user_end, 8);
  memcpy(&v2, block + mi_canary_second(user_end, trailer_at), 8);
  return (((v1 ^ w) & mi_first_bytes_mask[n1]) | ((v2 ^ w) & mi_first_bytes_mask[n - n1])) == 0;
}

#endif
