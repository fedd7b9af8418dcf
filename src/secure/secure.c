/* Secure mode (MI_SECURE): detection of heap misuse on every entry point.

   - Every block carries, in its last 8 bytes, an encoded trailer with the
     offset where the caller's data ends and a check tied to the block's
     address; canary bytes fill the slack after the data. A write past the
     requested size breaks one or the other and is caught at free/realloc.
   - A bitmap per page marks the blocks handed out. Free validates the pointer
     through the segment map (it is never dereferenced before that), the
     segment cookie, the page state, the block boundary (or, for aligned
     blocks, a keyed tag just before the pointer) and the bit: a double free,
     an interior, foreign, stack or global pointer is caught exactly.
     Only the owning thread writes the bits (plain load and store, no atomic
     read-modify-write); a free from another thread only reads its bit, and
     the owner checks and clears it when it collects the block, so even two
     racing frees of one block from two threads are caught (at collection).
   - Freed blocks are zeroed (option zero_on_free); blocks up to
     MI_SECURE_UAF_CHECK_MAX are checked to still be zero when handed out
     again, so a write through a stale pointer is caught at that allocation;
     larger ones are sample-checked then (their ends and a few lines).
   - Small blocks freed by their owner wait in a per-thread quarantine and
     leave it in random order. Fresh free lists are carved in random order.
   Every violation prints one line and aborts. */
#include "../api/api.h"
#include "secure.h"

#if MI_SECURE

#include <stdio.h>
#include <stdlib.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- Reporting -------------------------------------------------------------- */

void _mi_secure_fatal(const char* what, const void* p, size_t size) {
  char buf[256];
  (void)snprintf(buf, sizeof(buf), "mimalloc: error: %s %p (size %zu)\n", what, p, size); /* cut to the buffer */
  _mi_fputs(NULL, NULL, NULL, buf);
  _mi_error_callback(EFAULT);
  abort();
}

static const char* const mi_op_names[] = {"free", "realloc", "usable_size", "visit"};

static mi_decl_noreturn void mi_secure_fatal_op(mi_secure_op_t op, const char* what, const void* p, size_t size) {
  char buf[96];
  (void)snprintf(buf, sizeof(buf), "invalid %s detected of pointer", mi_op_names[op]);
  _mi_secure_fatal(what != NULL ? what : buf, p, size);
}

/* A pointer to a block already freed: a double free, or a use after free
   through the other entry points. */
static mi_decl_noreturn void mi_report_freed(mi_secure_op_t op, const void* p, size_t size) {
  mi_secure_fatal_op(op, op == MI_OP_FREE ? "double free detected of block" : "use of a freed block detected at", p,
                     size);
}

/* ---- Keys and the per-thread random state ---------------------------------- */

/* Derived from the process key once, at start-up: free and malloc both use it. */
static uintptr_t mi_trailer_key_value;
static uint64_t mi_geometry_keys[2]; /* the header's check words (mi_page_geometry); the second odd */

void _mi_secure_keys_init(void) {
  mi_trailer_key_value = _mi_process_key * 0xBF58476D1CE4E5B9ULL;
  mi_geometry_keys[0] = _mi_process_key * 0x94D049BB133111EBULL;
  mi_geometry_keys[1] = ((_mi_process_key ^ (_mi_process_key >> 29)) * 0xD6E8FEB86659FD93ULL) | 1;
}

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
/* What a free from another thread stores in the trailer before it touches
   anything else of the block: an end no block has. A visit of the owner's
   heap that finds it (or finds the block's canary changed and then it) skips
   the block, which is being freed, instead of taking the zeroing for an
   overflow; a second free finds it and reports a double free, zero on free
   on or off. */
#define MI_TRAILER_FREEING MI_TRAILER_END_MASK
static inline uintptr_t mi_block_tag(const mi_block_t* block) {
  return (((uintptr_t)block ^ mi_trailer_key_value) * 0xBF58476D1CE4E5B9ULL) | ((uintptr_t)1 << 63);
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

/* ---- Block geometry ------------------------------------------------------- */

/* Offsets within a page are below 2^22 and block sizes at most 2^17, so
   multiplying by ceil(2^40 / size) and shifting is an exact division. A
   single-block segment's page has a factor of 0: its block, possibly beyond
   4 GiB, has index 0 without a branch here. */
static inline size_t mi_block_index(const mi_page_t* page, const void* p) {
  uint64_t offset = (uint64_t)((const uint8_t*)p - page->start);
  return (size_t)((offset * page->block_size_inv) >> 40);
}

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

static inline bool mi_bit_get(const mi_page_t* page, size_t idx) {
  return (atomic_load_explicit(&page->used_map[idx / 64], memory_order_relaxed) >> (idx % 64)) & 1;
}

/* only the page's owner writes the bits */
static inline void mi_bit_set(mi_page_t* page, size_t idx, bool on) {
  uint64_t w = atomic_load_explicit(&page->used_map[idx / 64], memory_order_relaxed);
  uint64_t bit = (uint64_t)1 << (idx % 64);
  atomic_store_explicit(&page->used_map[idx / 64], on ? (w | bit) : (w & ~bit), memory_order_relaxed);
}

bool _mi_secure_block_is_live(const mi_page_t* page, size_t idx) {
  return mi_bit_get(page, idx);
}

static inline uint64_t* mi_trailer_of(const mi_page_t* page, const mi_block_t* block) {
  return (uint64_t*)((uint8_t*)block + page->block_size - MI_SECURE_TRAILER);
}

/* ---- Pages ---------------------------------------------------------------- */

/* `blocks`: how many the page will hold; the bits past them are never read
   (every index is checked against the page's capacity first) */
void _mi_secure_page_init(mi_heap_t* heap, mi_page_t* page, bool was_dirty, size_t blocks) {
  page->keys[0] = _mi_tld_random(heap->tld);
  page->keys[1] = _mi_tld_random(heap->tld);
  page->handed_out = 0; /* mi_block_untouched_sampled */
  for (size_t i = 0; i < (blocks + 63) / 64; i++) {
    atomic_store_explicit(&page->used_map[i], 0, memory_order_relaxed);
  }
  if (!was_dirty) {
    page->needs_zero = false;
  } else if (page->needs_zero && _mi_option_get_fast(mi_option_zero_on_free) != 0) {
    /* freed with live contents: they would look like writes after free */
    uint8_t* start;
    size_t area = _mi_segment_page_area(_mi_page_segment(page), page->index, &start);
    memset(start, 0, area);
    page->needs_zero = false;
  }
  /* with zero on free off, nothing checks a block when it is handed out: the
     area stays as it is (needs_zero kept) until a page is set up here with
     the option on; zeroing it anyway made turning the option off slower than
     leaving it on (realloc 0.68 s against 0.34 s) */
}

/* A page goes back to its segment. Its blocks were zeroed when freed; only
   their free-list links are left, which a later page with another block size
   would see as writes after free: clear them. With no block in use, every
   carved block is on the free list and its link is its first word, so a
   strided pass clears them all without chasing the list through memory. */
void _mi_secure_page_freed(mi_page_t* page) {
  if (page->needs_zero) return; /* the whole area is zeroed before reuse */
  if (_mi_option_get_fast(mi_option_zero_on_free) == 0) {
    page->needs_zero = true;
    return;
  }
  uint8_t* b = page->start;
  for (size_t i = 0; i < page->capacity; i++, b += page->block_size) ((mi_block_t*)b)->next = NULL;
  page->free = NULL;
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
static uint8_t mi_guarded_canary(const mi_block_t* block) {
  return (uint8_t)mi_canary_word(mi_block_tag(block));
}
static void mi_guarded_set_user(mi_page_t* page, mi_block_t* block, void* p, size_t size) {
  page->user_start = (size_t)((uint8_t*)p - (uint8_t*)block);
  size_t user_end = page->user_start + size;
  page->guarded_size = user_end;
  memset((uint8_t*)block + user_end, mi_guarded_canary(block), page->block_size - user_end);
  if ((void*)block != p) mi_tag_store(p);
}
static bool mi_guarded_slack_intact(const mi_page_t* page, const mi_block_t* block) {
  const uint8_t* b = (const uint8_t*)block;
  uint8_t canary = mi_guarded_canary(block);
  for (size_t i = page->guarded_size; i < page->block_size; i++) {
    if (b[i] != canary) return false;
  }
  return true;
}
#endif

/* Lay out the caller's view of a block: data up to p+size, canary bytes, trailer. */
static mi_forceinline void mi_set_user(mi_page_t* page, mi_block_t* block, void* p, size_t size) {
#if MI_GUARDED
  if (page->is_guarded) {
    mi_guarded_set_user(page, block, p, size);
    return;
  }
#endif
  size_t start = (size_t)((uint8_t*)p - (uint8_t*)block);
  size_t user_end = start + size;
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  uintptr_t tag = mi_block_tag(block);
  mi_canary_fill((uint8_t*)block, user_end, trailer_at, mi_canary_word(tag));
  uint64_t start_bits = (uint64_t)start << MI_TRAILER_START_SHIFT;
  if (mi_page_is_single_block(page)) {
    page->user_start = start;
    start_bits = 0;
  }
  *mi_trailer_of(page, block) = mi_trailer_encode(tag, user_end + start_bits);
  if ((void*)block != p) mi_tag_store(p);
}

void _mi_secure_set_user(mi_page_t* page, void* p, size_t size) {
  mi_set_user(page, (mi_block_t*)(page->start + mi_block_index(page, p) * page->block_size), p, size);
}

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

static mi_noinline bool mi_block_untouched_sampled(mi_page_t* page, const mi_block_t* block, size_t idx) {
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
static mi_noinline void mi_block_zero_streaming(mi_block_t* block, size_t block_size) {
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

#if defined(__GNUC__)
static inline void mi_v64_store(uint8_t* p, mi_v16_t v) {
  *(mi_v16_t*)p = v;
  *(mi_v16_t*)(p + 16) = v;
  *(mi_v16_t*)(p + 32) = v;
  *(mi_v16_t*)(p + 48) = v;
}
#endif

/* Set while this thread frees a block it has just read whole (the old block
   of a reallocation that moved, copied from): its lines are in the cache,
   where stores that bypass it would first have to evict them (on an Intel
   Xeon, `realloc` of bench/ took 0.30 s with them, 0.13 s with memset).
   Blocks the program frees may be cold: for them the streaming stores. */
static mi_decl_thread bool mi_zero_in_cache;

/* Zero a freed block: inline for small ones, where a call costs more than
   the stores; past the blocks whose contents are checked when handed out
   again (read back then), without filling the cache. */
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
  if (block_size > MI_SECURE_UAF_CHECK_MAX && !mi_zero_in_cache) {
    mi_block_zero_streaming(block, block_size);
    return;
  }
#endif
  memset(block, 0, block_size);
}

/* A freed large block's bytes (secure-large.c), zeroed as the blocks past the
   checked sizes are. */
void _mi_secure_block_zero(void* p, size_t size) {
  mi_block_zero((mi_block_t*)p, size);
}

/* A block of a small or medium page just taken from its free list: check it
   was not written since it was freed, mark it handed out, lay out its canary
   and trailer. */
static mi_forceinline void mi_block_prepare_small(mi_page_t* page, mi_block_t* block, size_t size) {
  size_t idx = mi_block_index(page, block);
  if (_mi_option_get_after_init(mi_option_zero_on_free) != 0) {
    bool untouched =
        (mi_likely(page->block_size <= MI_SECURE_UAF_CHECK_MAX) ? mi_block_untouched(block, page->block_size)
                                                                : mi_block_untouched_sampled(page, block, idx));
    if (mi_unlikely(!untouched)) _mi_secure_fatal("use-after-free write detected in block", block, page->block_size);
  }
  mi_bit_set(page, idx, true);
  /* the link: an encoded pointer, a clue to the page's keys, is not the
     program's to read (before the canary, which may start in this word) */
  block->next = NULL;
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  uintptr_t tag = mi_block_tag(block);
  mi_canary_fill((uint8_t*)block, size, trailer_at, mi_canary_word(tag));
  *mi_trailer_of(page, block) = mi_trailer_encode(tag, size);
}

/* Any block: also of a single-block segment, which has nothing to check
   (its memory came from the OS or the purge), and guarded ones, which have
   neither canary nor trailer. */
void* _mi_secure_block_prepare(mi_page_t* page, mi_block_t* block, size_t size) {
#if MI_GUARDED
  if (page->is_guarded) {
    _mi_secure_page_seal(page); /* its block was just placed (guard.c) */
    mi_bit_set(page, 0, true);
    mi_guarded_set_user(page, block, block, size);
    return block;
  }
#endif
  if (!mi_page_is_single_block(page)) {
    mi_block_prepare_small(page, block, size);
    return block;
  }
  _mi_secure_page_seal(page); /* its block was just placed (segment.c) */
  mi_bit_set(page, 0, true);
  mi_set_user(page, block, block, size);
  return block;
}

/* ---- Allocation ------------------------------------------------------------ */

/* Everything but a pop from a page of the heap's queues: the size check, the
   guarded sample, a fresh page or a single-block segment. */
static mi_noinline void* mi_secure_malloc_slow(mi_heap_t* heap, size_t size, bool zero) {
  if (size == 0) return _mi_zero_malloc(heap, MI_MAX_ALIGN_SIZE, 0); /* a slot no access reaches */
  if (mi_unlikely(size > MI_MAX_ALLOC_SIZE - MI_SECURE_TRAILER)) {
    _mi_error_message(ENOMEM, "allocation request is too large (%zu bytes)\n", size);
    errno = ENOMEM;
    return NULL;
  }
#if MI_GUARDED
  /* the fast path counted down already if it came here for this */
  if (mi_heap_is_initialized(heap) && heap->tld->guard_countdown-- <= 1) {
    void* g = _mi_guard_malloc_sampled(heap, size, zero);
    if (g != NULL) return g;
  }
#endif
  size_t need = size + MI_SECURE_TRAILER;
  /* single-block segments come zeroed when asked; small blocks are zeroed below */
  mi_block_t* block = (mi_block_t*)_mi_malloc_generic(heap, need, zero && need > MI_MEDIUM_BLOCK_MAX);
  if (block == NULL) return NULL;
  mi_page_t* page = _mi_segment_page_of(_mi_ptr_segment(block), block);
  _mi_secure_block_prepare(page, block, size);
  if (zero && !mi_page_is_single_block(page)) memset(block, 0, size);
  return block;
}

/* A block above MI_SECURE_UAF_CHECK_MAX popped by the fast path: its check
   is a call, which would have the fast path keep its values across it (in
   callee-saved registers, pushed and popped on every allocation). */
static mi_noinline void* mi_secure_malloc_medium(mi_page_t* page, mi_block_t* block, size_t size, bool zero) {
  mi_block_prepare_small(page, block, size);
  if (zero) return memset(block, 0, size);
  return block;
}

void* _mi_secure_malloc(mi_heap_t* heap, size_t size, bool zero) {
  /* size 0 wraps around: the slow path, with no compare of its own here */
  if (mi_likely(size - 1 < MI_MEDIUM_BLOCK_MAX - MI_SECURE_TRAILER)) {
    /* the page of the request with its trailer (size 0 never comes here: it
       goes to the slow path, secure-zero.c) */
    mi_page_t* page = _mi_heap_page_for(heap, size + MI_SECURE_TRAILER);
    mi_block_t* block = page->free;
    /* a block on the list: the heap is a real one (the empty heap's pages have none) */
    if (mi_likely(block != NULL)) {
#if MI_GUARDED
      /* the sampling decision costs one decrement until the countdown runs out */
      if (mi_unlikely(heap->tld->guard_countdown <= 1)) return mi_secure_malloc_slow(heap, size, zero);
      heap->tld->guard_countdown--;
#endif
      page->free = mi_block_next_checked(page, block);
      page->used++;
      if (mi_unlikely(page->block_size > MI_SECURE_UAF_CHECK_MAX))
        return mi_secure_malloc_medium(page, block, size, zero);
      mi_block_prepare_small(page, block, size);
      /* with zero on free, the reuse check just found the block all zero
         (its link cleared): a zeroing allocation has nothing left to do */
      if (zero && _mi_option_get_after_init(mi_option_zero_on_free) == 0) return memset(block, 0, size);
      return block;
    }
  }
  return mi_secure_malloc_slow(heap, size, zero);
}

/* ---- Validation -------------------------------------------------------------- */

/* The last segments given back (to the OS or an arena): a pointer into one
   of them was handed out and freed, and its segment went with it, so its
   free is a double free, not a foreign pointer. (A huge block's segment goes
   at once; any other segment when its last page is freed and the segment
   cache is full.) Start and end are two stores: a reader racing a writer may
   pair them wrongly, which only changes the wording of a report. */
#define MI_UNMAPPED_RING 64
static _Atomic(uintptr_t) mi_unmapped_start[MI_UNMAPPED_RING];
static _Atomic(uintptr_t) mi_unmapped_end[MI_UNMAPPED_RING];
static _Atomic(size_t) mi_unmapped_next;

void _mi_secure_segment_unmapped(const void* start, size_t size) {
  size_t i = atomic_fetch_add_explicit(&mi_unmapped_next, 1, memory_order_relaxed) % MI_UNMAPPED_RING;
  atomic_store_explicit(&mi_unmapped_start[i], (uintptr_t)start, memory_order_relaxed);
  atomic_store_explicit(&mi_unmapped_end[i], (uintptr_t)start + size, memory_order_relaxed);
}

static bool mi_was_unmapped(const void* p) {
  for (size_t i = 0; i < MI_UNMAPPED_RING; i++) {
    uintptr_t start = atomic_load_explicit(&mi_unmapped_start[i], memory_order_relaxed);
    uintptr_t end = atomic_load_explicit(&mi_unmapped_end[i], memory_order_relaxed);
    if (start <= (uintptr_t)p && (uintptr_t)p < end) return true;
  }
  return false;
}

/* The start of one of a small or medium page's carved blocks, whose index
   it sets (a link read from a block may point anywhere). */
static bool mi_carved_block_index(const mi_page_t* page, const void* p, size_t* idx) {
  const uint8_t* b = (const uint8_t*)p;
  if (b < page->start || b >= page->start + (size_t)page->capacity * page->block_size) return false;
  *idx = mi_block_index(page, p);
  return b == page->start + *idx * page->block_size;
}

/* A block freed by another thread and not collected yet: zeroed whole,
   trailer included (a live block's trailer is never zero: it encodes the
   block's address), but for its first word, the link to the next block of
   the page's list of remote frees (or to none). An overrun that writes zeros
   leaves a zero trailer too, but not that shape: the data before it stays as
   it was, and a word of data decodes to a block of the page only by chance
   (about one in 2^64 / blocks). Only reports come here. Single-block
   segments' blocks are freed at once, by any thread; guarded ones have no
   trailer. */
static bool mi_freed_by_other_thread(const mi_page_t* page, const mi_block_t* block) {
  if (mi_page_is_single_block(page)) return false;
  if (*mi_trailer_of(page, block) != 0 || _mi_option_get_fast(mi_option_zero_on_free) == 0) return false;
  const uint64_t* words = (const uint64_t*)block;
  for (size_t i = 1; i < (page->block_size - MI_SECURE_TRAILER) / 8; i++) {
    if (words[i] != 0) return false;
  }
  mi_block_t* next = mi_block_next(page, block);
  size_t idx;
  return next == NULL || mi_carved_block_index(page, next, &idx);
}

/* ---- The header's geometry ---------------------------------------------------- */

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
  return (((a ^ mi_geometry_keys[0]) * mi_geometry_keys[1]) ^ b) * mi_geometry_keys[1];
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
static uint64_t mi_single_geometry(const mi_segment_t* segment, const mi_page_t* page) {
  uint64_t c = (uint64_t)segment->segment_size ^ mi_rotl(page->guard_offset, 32) ^
               ((uint64_t)segment->is_pinned << 48) ^ ((uint64_t)page->is_guarded << 56);
  uint64_t d = (uint64_t)segment->page_count ^ mi_rotl(segment->info_size, 32);
  uint64_t h = mi_page_geometry(page, mi_segment_bits(segment->kind, segment->page_shift));
  return mi_geometry_mix(mi_geometry_mix(h, c), d);
}

void _mi_secure_page_seal(mi_page_t* page) {
  const mi_segment_t* segment = _mi_page_segment(page);
  page->geometry = (segment->kind == MI_SEGMENT_SINGLE
                        ? mi_single_geometry(segment, page)
                        : mi_page_geometry(page, mi_segment_bits(segment->kind, segment->page_shift)));
}

/* Nothing of the header is followed once it is found corrupted. The size is
   the header's, which starts at the address given. */
static mi_noinline mi_decl_noreturn void mi_report_corrupted_header(const mi_segment_t* segment) {
  _mi_secure_fatal("corrupted segment header detected at", segment, sizeof(mi_segment_t));
}

void _mi_secure_corrupted_header(const mi_segment_t* segment) {
  mi_report_corrupted_header(segment);
}

/* A small or medium page about to go back to its segment, which walks its
   blocks (_mi_secure_page_freed): its geometry is checked again. */
void _mi_secure_page_check(const mi_page_t* page) {
  const mi_segment_t* segment = _mi_page_segment(page);
  if (page->geometry != mi_page_geometry(page, mi_segment_bits(segment->kind, segment->page_shift)) ||
      page->capacity > page->reserved) {
    mi_report_corrupted_header(segment);
  }
}

/* The segment header must carry our cookie. */
static inline void mi_validate_cookie(const mi_segment_t* segment, const void* p, mi_secure_op_t op) {
  if (mi_unlikely(segment->cookie != ((uintptr_t)segment ^ _mi_process_key))) {
    /* still ours (in the map) but its header reads as zero: a cached segment
       the cache has purged, which holds no live block; any other cookie in a
       segment the map holds was written over */
    if (segment->cookie == 0 && segment->segment_size == 0) {
      mi_report_freed(op, p, 0);
    }
    mi_report_corrupted_header(segment);
  }
}

/* The segment of a pointer outside every segment's first chunk: past the
   first 4 MiB of a large or huge block (and then maybe past its end), or not
   ours at all. Out of line: the free fast path never comes here. */
static mi_noinline mi_segment_t* mi_validate_far_segment(const void* p, mi_secure_op_t op) {
  mi_segment_t* segment = _mi_segment_containing(p);
  if (segment == NULL) {
    if (mi_was_unmapped(p)) {
      mi_report_freed(op, p, 0);
    }
    mi_secure_fatal_op(op, NULL, p, 0);
  }
  mi_validate_cookie(segment, p, op); /* before its size is read */
  if ((size_t)((const uint8_t*)p - (const uint8_t*)segment) >= segment->segment_size) {
    mi_secure_fatal_op(op, NULL, p, 0);
  }
  return segment;
}

/* The segment of a pointer: ours (in the segment map), with our cookie;
   anything else aborts with a report. */
static mi_forceinline mi_segment_t* mi_validate_segment(const void* p, mi_secure_op_t op) {
  if (mi_likely(_mi_segment_map_contains(p))) {
    mi_segment_t* segment = _mi_ptr_segment(p); /* a pointer in a segment's first chunk lies within it */
    mi_validate_cookie(segment, p, op);
    return segment;
  }
  return mi_validate_far_segment(p, op);
}

/* The page of a pointer is no longer in use. It keeps the geometry of its
   last use: a pointer into its blocks was freed with them, one elsewhere
   (the segment header, a guard page) never was a block. */
static mi_noinline mi_decl_noreturn void mi_report_page_not_in_use(const mi_page_t* page, const void* p,
                                                                   mi_secure_op_t op) {
  /* no state it can have, or a free page with a heap, or a small or medium
     one with blocks in use: both are cleared before the state changes
     (_mi_segment_page_free; a single block's page is unlinked first) */
  uint32_t state = atomic_load_explicit(&page->state, memory_order_acquire);
  const mi_segment_t* segment = _mi_page_segment(page);
  if (state > MI_PAGE_HELD ||
      (state != MI_PAGE_HELD && (page->heap != NULL || (!mi_page_is_single_block(page) && page->used != 0)))) {
    mi_report_corrupted_header(segment);
  }
  /* a small or medium page keeps its geometry when freed: its check word
     holds, or it was never set up (and then the page was picked by a kind
     and page shift that agree) */
  if (segment->kind <= MI_SEGMENT_MEDIUM) {
    uint8_t shift = (segment->kind == MI_SEGMENT_SMALL ? MI_SMALL_PAGE_SHIFT : MI_MEDIUM_PAGE_SHIFT);
    bool never_set_up = (page->geometry == 0 && page->start == NULL);
    if (segment->page_shift != shift || segment->page_count != (MI_SEGMENT_SIZE >> shift) ||
        (!never_set_up && page->geometry != mi_page_geometry(page, mi_segment_bits(segment->kind, shift)))) {
      mi_report_corrupted_header(segment);
    }
  }
  const uint8_t* b = (const uint8_t*)p;
  if (b >= page->start && b < page->start + (size_t)page->capacity * page->block_size) {
    mi_report_freed(op, p, page->block_size);
  }
  mi_secure_fatal_op(op, NULL, p, 0);
}

/* A pointer past a page's carved blocks (or before them), whose geometry
   checked: an invalid one, unless the counts it was bounded by cannot be
   those of a page in use (a block of it is handed out). */
static mi_noinline mi_decl_noreturn void mi_report_outside_blocks(const mi_segment_t* segment, const mi_page_t* page,
                                                                  const void* p, mi_secure_op_t op) {
  if (page->capacity == 0 || page->used > page->capacity) mi_report_corrupted_header(segment);
  mi_secure_fatal_op(op, NULL, p, 0);
}

/* A pointer inside a live block: only an aligned allocation hands one out,
   and it leaves a keyed tag just before that pointer. Returns if it is one. */
static mi_noinline void mi_validate_interior(const mi_page_t* page, const mi_block_t* block, const void* p,
                                             mi_secure_op_t op) {
  if ((const uint8_t*)p - (const uint8_t*)block >= 16) {
    if (mi_tag_matches(p)) return;
    /* A free from another thread zeroes the block, the tag with it: an
       aligned pointer freed a second time before the owner collects the
       first free shows a zero tag and a zero trailer. */
    if (mi_freed_by_other_thread(page, block)) mi_report_freed(op, p, page->block_size);
  }
  mi_secure_fatal_op(op, op == MI_OP_FREE ? "invalid free detected of interior pointer" : NULL, p, page->block_size);
}

/* The owner visits its heap while another thread frees one of its blocks
   (the bit stays set until the owner collects it). That thread marks the
   trailer before it zeroes or links the block; a visit that read the block
   mid-way (a canary or trailer already changed) reads the trailer again
   after a fence: the mark, or the zero it ends as, says the block is being
   freed. An overrun of zeros over the trailer looks the same here; it is
   reported when the block is freed. */
static mi_noinline bool mi_visit_finds_remote_free(const mi_page_t* page, const mi_block_t* block) {
  if (mi_page_is_single_block(page)) return false; /* freed under the lock the visit holds */
  atomic_thread_fence(memory_order_acquire);
  uint64_t trailer = *(const volatile uint64_t*)mi_trailer_of(page, block);
  if (trailer == 0) return _mi_option_get_fast(mi_option_zero_on_free) != 0;
  return mi_trailer_decode(mi_block_tag(block), trailer) == MI_TRAILER_FREEING;
}

/* A trailer that does not decode: the block was freed by another thread
   (marked, or zeroed, and not yet collected), or written past its end. */
static mi_noinline mi_decl_noreturn void mi_report_bad_trailer(const mi_page_t* page, const mi_block_t* block,
                                                               const void* p, mi_secure_op_t op) {
  if (!mi_page_is_single_block(page) &&
      mi_trailer_decode(mi_block_tag(block), *mi_trailer_of(page, block)) == MI_TRAILER_FREEING) {
    mi_report_freed(op, p, page->block_size);
  }
  if (mi_freed_by_other_thread(page, block)) {
    mi_report_freed(op, p, page->block_size);
  }
  /* intact, but the block was handed out at another pointer inside it */
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  uint64_t value = mi_trailer_decode(mi_block_tag(block), *mi_trailer_of(page, block));
  uint64_t start = value >> MI_TRAILER_START_SHIFT;
  uint64_t user_end = value & MI_TRAILER_END_MASK;
  if (!mi_page_is_single_block(page) && user_end <= trailer_at && start <= user_end &&
      start != (uint64_t)((const uint8_t*)p - (const uint8_t*)block)) {
    mi_secure_fatal_op(op, NULL, p, page->block_size);
  }
  _mi_secure_fatal("heap buffer overflow detected in block", p, page->block_size - MI_SECURE_TRAILER);
}

/* The end of a live block: its trailer decodes to where the data ends, and
   the canary after the data is intact. Returns the requested size seen from p. */
static mi_forceinline size_t mi_validate_tail(const mi_page_t* page, const mi_block_t* block, const void* p,
                                              mi_secure_op_t op, bool single) {
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  uintptr_t tag = mi_block_tag(block);
  uint64_t value = mi_trailer_decode(tag, *mi_trailer_of(page, block));
  uint64_t offset = (uint64_t)((const uint8_t*)p - (const uint8_t*)block);
  uint64_t start_bits = (single ? 0 : offset << MI_TRAILER_START_SHIFT);
  if (op == MI_OP_VISIT && !single) {
    /* a visit names a block by its start, wherever its pointer lies */
    start_bits = value & ~MI_TRAILER_END_MASK;
    if (mi_unlikely((value >> MI_TRAILER_START_SHIFT) > trailer_at)) {
      if (mi_visit_finds_remote_free(page, block)) return MI_SECURE_VISIT_SKIP;
      mi_report_bad_trailer(page, block, p, op);
    }
  }
  uint64_t user_end = value - start_bits;
  if (mi_unlikely(user_end > trailer_at)) {
    if (op == MI_OP_VISIT && mi_visit_finds_remote_free(page, block)) return MI_SECURE_VISIT_SKIP;
    mi_report_bad_trailer(page, block, p, op);
  }
  if (mi_unlikely(!mi_canary_intact((const uint8_t*)block, (size_t)user_end, trailer_at, mi_canary_word(tag)))) {
    if (op == MI_OP_VISIT && mi_visit_finds_remote_free(page, block)) return MI_SECURE_VISIT_SKIP;
    _mi_secure_fatal("heap buffer overflow detected in block", p,
                     (size_t)user_end - (size_t)((const uint8_t*)p - (const uint8_t*)block));
  }
  return (size_t)user_end - (size_t)((const uint8_t*)p - (const uint8_t*)block);
}

/* The block of a pointer into a small or medium page, handed out and not
   freed since (its bit is set); anything else aborts with a report. The
   pointer may still be inside the block (see mi_validate_interior). */
static mi_forceinline mi_block_t* mi_locate_small(mi_segment_t* segment, const void* p, mi_secure_op_t op,
                                                  mi_page_t** page_out, size_t* idx_out) {
  /* the page index masked to the page table: a page shift written over
     picks a page of this header whose check word then fails */
  uint8_t kind = segment->kind;
  uint8_t shift = segment->page_shift;
  size_t pidx = ((uintptr_t)p - (uintptr_t)segment) >> (shift & 63);
  mi_page_t* page = &segment->pages[pidx & (MI_SMALL_PAGES_PER_SEGMENT - 1)];
  if (mi_unlikely(atomic_load_explicit(&page->state, memory_order_acquire) != MI_PAGE_IN_USE)) {
    mi_report_page_not_in_use(page, p, op);
  }
  /* each value read once, checked, then used */
  uint8_t* start = page->start;
  size_t block_size = page->block_size;
  uint32_t capacity = page->capacity;
  if (mi_unlikely((page->geometry != mi_page_geometry(page, mi_segment_bits(kind, shift))) |
                  (capacity > page->reserved))) {
    mi_report_corrupted_header(segment);
  }
  /* before the page's first block the offset wraps to a huge value; below a
     segment's size the index is exact (mi_block_index) */
  size_t offset = (size_t)((const uint8_t*)p - start);
  size_t idx = (size_t)((offset * page->block_size_inv) >> 40);
  if (mi_unlikely(offset >= MI_SEGMENT_SIZE || idx >= capacity)) mi_report_outside_blocks(segment, page, p, op);
  if (mi_unlikely(!mi_bit_get(page, idx))) {
    mi_report_freed(op, p, block_size);
  }
  *page_out = page;
  *idx_out = idx;
  return (mi_block_t*)(start + idx * block_size);
}

static mi_forceinline mi_block_t* mi_validate_small(mi_segment_t* segment, const void* p, mi_secure_op_t op,
                                                    mi_page_t** page_out, size_t* size_out) {
  mi_page_t* page;
  size_t idx;
  mi_block_t* block = mi_locate_small(segment, p, op, &page, &idx);
  if (mi_unlikely((void*)block != p)) mi_validate_interior(page, block, p, op);
  size_t size = mi_validate_tail(page, block, p, op, false);
  if (page_out != NULL) *page_out = page;
  if (size_out != NULL) *size_out = size;
  return block;
}

/* A pointer into a zero segment: a zero-size allocation's slot, handed out
   and not freed (freed now with `release`), or reported. */
static mi_noinline mi_block_t* mi_validate_zero(mi_segment_t* segment, const void* p, mi_secure_op_t op, bool release,
                                                size_t* size_out) {
  /* a zero segment has no check word (secure-zero.c): its shape tells it
     from another segment whose kind was written over, whose bitmap would
     not be where secure-zero.c reads and writes it */
  const mi_page_t* page = &segment->pages[0];
  if (segment->page_shift != 63 || segment->page_count != 1 || segment->segment_size != MI_SEGMENT_SIZE ||
      page->block_size != MI_MAX_ALIGN_SIZE || page->start != (uint8_t*)segment + segment->info_size ||
      segment->info_size >= MI_SEGMENT_SIZE / 2) {
    mi_report_corrupted_header(segment);
  }
  mi_zero_state_t state = _mi_zero_check(segment, p, release);
  if (state == MI_ZERO_FREED) mi_report_freed(op, p, 0);
  if (state != MI_ZERO_LIVE) mi_secure_fatal_op(op, NULL, p, 0);
  if (size_out != NULL) *size_out = 0;
  return (mi_block_t*)p;
}

/* The same for a single-block segment's block (large, huge, guarded). */
static mi_noinline mi_block_t* mi_validate_single(mi_segment_t* segment, const void* p, mi_secure_op_t op,
                                                  mi_page_t** page_out, size_t* size_out) {
  if (segment->kind == MI_SEGMENT_ZERO) {
    if (page_out != NULL) *page_out = NULL; /* no page to resize in */
    return mi_validate_zero(segment, p, op, false, size_out);
  }
  mi_page_t* page = &segment->pages[0];
  if (atomic_load_explicit(&page->state, memory_order_acquire) != MI_PAGE_IN_USE) {
    mi_report_page_not_in_use(page, p, op);
  }
  /* in use, so sealed as it is (a freed one may be changing: a guarded
     block's flag is cleared when it leaves its quarantine) */
  if (segment->kind != MI_SEGMENT_SINGLE || page->geometry != mi_single_geometry(segment, page)) {
    mi_report_corrupted_header(segment);
  }
  const uint8_t* b = (const uint8_t*)p;
  if (b < page->start || b >= page->start + page->block_size) mi_secure_fatal_op(op, NULL, p, 0);
  mi_block_t* block = (mi_block_t*)page->start;
  if (!mi_bit_get(page, 0)) {
    mi_report_freed(op, p, page->block_size);
  }
  size_t offset = (size_t)(b - (const uint8_t*)block);
  if (offset != 0) mi_validate_interior(page, block, p, op);
  /* not the pointer this block was handed out at: its start behind an
     aligned one, or an aligned pointer from before the segment was reused
     (large blocks are not zeroed on free: an old tag may still be there).
     A visit names the block by its start. */
  if (op != MI_OP_VISIT && offset != page->user_start) mi_secure_fatal_op(op, NULL, p, page->block_size);
  size_t size;
#if MI_GUARDED
  if (page->is_guarded) {
    size = (page->guarded_size > offset ? page->guarded_size - offset : 0);
    if (!mi_guarded_slack_intact(page, block)) _mi_secure_fatal("heap buffer overflow detected in block", p, size);
  } else
#endif
  {
    size = mi_validate_tail(page, block, p, op, true);
  }
  if (page_out != NULL) *page_out = page;
  if (size_out != NULL) *size_out = size;
  return block;
}

mi_block_t* _mi_secure_validate(const void* p, mi_secure_op_t op, mi_page_t** page_out, size_t* size_out) {
  mi_segment_t* segment = mi_validate_segment(p, op);
  /* or a zero segment's */
  if (segment->kind >= MI_SEGMENT_SINGLE) return mi_validate_single(segment, p, op, page_out, size_out);
  return mi_validate_small(segment, p, op, page_out, size_out);
}

/* The owner collects a block another thread freed: its bit must still be set. */
void _mi_secure_collected(mi_page_t* page, mi_block_t* block) {
  size_t idx;
  if (!mi_carved_block_index(page, block, &idx)) {
    _mi_secure_fatal("corrupted free list detected at", block, page->block_size);
  }
  if (!mi_bit_get(page, idx)) _mi_secure_fatal("double free detected of block", block, page->block_size);
  mi_bit_set(page, idx, false);
}

/* ---- Freeing ----------------------------------------------------------------- */

/* A block leaves the quarantine for its page's free list. Its first word,
   where its link now goes, must still be zero: a write there after the free
   would be overwritten, not seen (the rest of the block is checked when it
   is handed out). */
static mi_forceinline void mi_quarantine_release(mi_page_t* page, mi_block_t* block) {
  if (mi_unlikely(block->next != NULL) && _mi_option_get_after_init(mi_option_zero_on_free) != 0) {
    _mi_secure_fatal("use-after-free write detected in block", block, page->block_size);
  }
  _mi_free_local_release(page, block);
}

void _mi_secure_quarantine_flush(mi_tld_t* tld, const mi_heap_t* only) {
  for (size_t i = 0; i < MI_SECURE_QUARANTINE; i++) {
    mi_quarantined_t q = tld->quarantine[i];
    if (q.block == NULL) continue;
    if (only == NULL) {
      tld->quarantine[i].block = NULL;
      mi_quarantine_release(q.page, q.block);
    } else if (q.page->heap == only) {
      tld->quarantine[i].block = NULL; /* its page is about to be freed with its heap */
    }
  }
}

/* Zero on free switched on at run time: the calling thread's quarantined
   blocks may have been freed while it was off, unzeroed; zeroed now, they
   are not taken for written after free when they leave the quarantine or
   are handed out. (Blocks in other threads' quarantines and on free lists
   still are: docs/secure-mode.md.) */
void _mi_secure_zero_on_free_enabled(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  for (size_t i = 0; i < MI_SECURE_QUARANTINE; i++) {
    mi_quarantined_t q = heap->tld->quarantine[i];
    if (q.block != NULL) memset(q.block, 0, q.page->block_size);
  }
}

#if MI_GUARDED
/* A heap is destroyed with this guarded block live: it is freed as free
   frees it, fenced off and held, so that a use after the destroy faults. */
void _mi_secure_guarded_destroyed(mi_segment_t* segment, mi_page_t* page) {
  mi_bit_set(page, 0, false);
  _mi_guard_free(segment, page);
}
#endif

/* A free into a single-block segment (large, huge, guarded). */
static mi_noinline void mi_secure_free_single(mi_segment_t* segment, void* p) {
  if (segment->kind == MI_SEGMENT_ZERO) {
    mi_validate_zero(segment, p, MI_OP_FREE, true, NULL);
    return;
  }
  mi_page_t* page;
  mi_validate_single(segment, p, MI_OP_FREE, &page, NULL);
  mi_bit_set(page, 0, false);
#if MI_GUARDED
  if (page->is_guarded) {
    _mi_guard_free(segment, page);
    return;
  }
#endif
  _mi_secure_large_free(segment); /* its memory discarded and fenced off, the segment held (secure-large.c) */
}

/* A freed small block waits in the thread's quarantine: it takes a random
   slot, and the block that was there becomes reusable. */
static mi_forceinline void mi_quarantine_put(mi_tld_t* tld, mi_page_t* page, mi_block_t* block) {
  mi_quarantined_t* slot = &tld->quarantine[_mi_tld_random(tld) % MI_SECURE_QUARANTINE];
  mi_quarantined_t evicted = *slot;
  slot->block = block;
  slot->page = page;
  if (evicted.block != NULL) mi_quarantine_release(evicted.page, evicted.block);
}

/* A block its owner freed, zeroed: back to its page (blocks above the small
   sizes, or no heap to hold a quarantine) or into the quarantine. */
static mi_forceinline void mi_secure_free_zeroed(mi_page_t* page, mi_block_t* block, size_t block_size) {
  mi_heap_t* heap = mi_get_default_heap();
  if (block_size > MI_SMALL_BLOCK_MAX || mi_unlikely(!mi_heap_is_initialized(heap))) {
    _mi_free_local_release(page, block);
    return;
  }
  mi_quarantine_put(heap->tld, page, block);
}

/* A free by the owner of a block whose zeroing is a loop or a call (over 512
   bytes): out of line, so the path of the smaller blocks makes no call but
   its last. */
static mi_noinline void mi_secure_free_local_big(mi_page_t* page, mi_block_t* block) {
  size_t block_size = page->block_size;
  if (_mi_option_get_after_init(mi_option_zero_on_free) != 0) mi_block_zero(block, block_size);
  mi_secure_free_zeroed(page, block, block_size);
}

/* A free by the owner (its bit is cleared already). */
static mi_forceinline void mi_secure_free_local(mi_page_t* page, mi_block_t* block) {
  size_t block_size = page->block_size;
  if (block_size > 512) {
    mi_secure_free_local_big(page, block);
    return;
  }
  if (_mi_option_get_after_init(mi_option_zero_on_free) != 0) mi_block_zero(block, block_size);
  mi_secure_free_zeroed(page, block, block_size);
}

/* A free by a thread that does not own the segment: pushed for the owner,
   unless the segment has none and this thread claims it. */
static mi_noinline void mi_secure_free_remote(mi_segment_t* segment, uintptr_t owner, mi_page_t* page,
                                              mi_block_t* block, size_t idx) {
  if (_mi_free_claims(segment, owner)) {
    mi_bit_set(page, idx, false);
    mi_secure_free_local(page, block);
    return;
  }
  /* the mark first, visible before any of the zeroing (whose stores past
     the small sizes bypass the cache and are not ordered with it) */
  *mi_trailer_of(page, block) = mi_trailer_encode(mi_block_tag(block), MI_TRAILER_FREEING);
  atomic_thread_fence(memory_order_release);
  if (_mi_option_get_after_init(mi_option_zero_on_free) != 0) {
#if defined(__SSE2__)
    if (page->block_size > MI_SECURE_UAF_CHECK_MAX) _mm_sfence();
#endif
    mi_block_zero(block, page->block_size);
  }
  _mi_free_remote(page, block);
}

/* The rest of a free once the pointer is located and, when it lies inside
   its block, found to be an aligned allocation's. */
static mi_forceinline void mi_secure_free_located(mi_segment_t* segment, mi_page_t* page, mi_block_t* block, void* p,
                                                  size_t idx) {
  mi_validate_tail(page, block, p, MI_OP_FREE, false);
  uintptr_t owner = atomic_load_explicit(&segment->thread_id, memory_order_relaxed);
  if (mi_unlikely(owner != _mi_thread_id())) {
    mi_secure_free_remote(segment, owner, page, block, idx);
    return;
  }
  mi_bit_set(page, idx, false);
  mi_secure_free_local(page, block);
}

static mi_noinline void mi_secure_free_interior(mi_segment_t* segment, mi_page_t* page, mi_block_t* block, void* p,
                                                size_t idx) {
  mi_validate_interior(page, block, p, MI_OP_FREE);
  mi_secure_free_located(segment, page, block, p, idx);
}

/* A free of a pointer in a segment that passed the segment checks. */
static mi_forceinline void mi_secure_free_in(mi_segment_t* segment, void* p) {
  if (mi_unlikely(segment->kind >= MI_SEGMENT_SINGLE)) { /* or a zero segment */
    mi_secure_free_single(segment, p);
    return;
  }
  mi_page_t* page;
  size_t idx;
  mi_block_t* block = mi_locate_small(segment, p, MI_OP_FREE, &page, &idx);
  if (mi_unlikely((void*)block != p)) {
    mi_secure_free_interior(segment, page, block, p, idx);
    return;
  }
  mi_secure_free_located(segment, page, block, p, idx);
}

/* Past a segment's first chunk (a large block's interior) or not ours. */
static mi_noinline void mi_secure_free_far(void* p) {
  mi_secure_free_in(mi_validate_far_segment(p, MI_OP_FREE), p);
}

/* Every call on the way is a tail call or does not return: the common path
   makes no call that comes back (the register spills stay in one prologue
   on the path past the segment map; a call in the middle cost more). */
void _mi_secure_free(void* p) {
  if (p == NULL) return;
  if (mi_unlikely(!_mi_segment_map_contains(p))) {
    mi_secure_free_far(p);
    return;
  }
  mi_segment_t* segment = _mi_ptr_segment(p); /* a pointer in a segment's first chunk lies within it */
  mi_validate_cookie(segment, p, MI_OP_FREE);
  mi_secure_free_in(segment, p);
}

/* ---- Realloc ------------------------------------------------------------------ */

/* The old block of a reallocation that moved, just copied from: freed as
   any block is, zeroed in the cache (mi_zero_in_cache). */
void _mi_secure_free_copied(void* p) {
  mi_zero_in_cache = true;
  _mi_secure_free(p);
  mi_zero_in_cache = false;
}

/* The new block of a reallocation that moves. A large block sits at the end
   of its segment, against its guard page, with less than a page of slack: a
   buffer grown by realloc a little at a time (appended to) would be copied
   every page. So a block that grows into the large sizes gets half its size
   again as room to grow in place, as the default build's large blocks grow
   in their segment. The canary and trailer are laid out for the size asked;
   the room is slack (its pages stay untouched until the data grows into
   them), and the guard page is past it. The room is taken straight from a
   segment: no guarded sample (a sampled block ends at its guard page and has
   no room to give; the sampling countdown is left for the next allocation),
   and no error report when it cannot be had (the size asked is tried next;
   errno is kept). */
void* _mi_secure_realloc_block(mi_heap_t* heap, size_t oldsize, size_t newsize) {
  if (newsize > oldsize && newsize + MI_SECURE_TRAILER > MI_MEDIUM_BLOCK_MAX && newsize <= MI_LARGE_SEGMENT_MAX / 2 &&
      mi_heap_is_initialized(heap)) {
    size_t need = newsize + newsize / 2 + MI_SECURE_TRAILER; /* still a large block, not a huge one */
    int saved_errno = errno;
    mi_page_t* page = _mi_segment_single_alloc(heap, need, 0, false);
    errno = saved_errno;
    if (page != NULL) {
      mi_block_t* block = (mi_block_t*)page->start;
      mi_track_malloc(block, need, page->block_size, false);
      return _mi_secure_block_prepare(page, block, newsize);
    }
  }
  return _mi_secure_malloc(heap, newsize, false);
}

/* ---- Realloc in place ----------------------------------------------------------- */

/* `block` and `page`: p's, as _mi_secure_validate found them */
bool _mi_secure_resize_in_place(mi_page_t* page, mi_block_t* block, void* p, size_t newsize) {
  if (page == NULL) return false; /* a zero-size allocation's slot has no room */
#if MI_GUARDED
  if (page->is_guarded) return false; /* its end is fixed by its guard page */
#endif
  size_t offset = (size_t)((uint8_t*)p - (uint8_t*)block);
  if (newsize > page->block_size - MI_SECURE_TRAILER - offset) return false;
  mi_set_user(page, block, p, newsize);
  return true;
}

#endif
