/* Validation of a pointer the program hands back (MI_SECURE): the checks
   that free, realloc, mi_usable_size and a heap visit make before they
   touch anything of a block. Inline: the free path takes them; the reports
   and the rare cases are in validate.c. */
#ifndef MI_SECURE_VALIDATE_H
#define MI_SECURE_VALIDATE_H

#include "secure-block.h"
#include "../segment/secure-geometry.h"

/* reports: one line, then abort (report.c, validate.c) */
mi_decl_noreturn void _mi_secure_fatal_op(mi_secure_op_t op, const char* what, const void* p,
                                          size_t size) mi_decl_hidden;
mi_decl_noreturn void _mi_secure_report_freed(mi_secure_op_t op, const void* p, size_t size) mi_decl_hidden;
mi_decl_noreturn void _mi_secure_report_corrupted_header(const mi_segment_t* segment) mi_decl_hidden;
mi_decl_noreturn void _mi_secure_report_page_not_in_use(const mi_page_t* page, const void* p,
                                                        mi_secure_op_t op) mi_decl_hidden;
mi_decl_noreturn void _mi_secure_report_outside_blocks(const mi_segment_t* segment, const mi_page_t* page,
                                                       const void* p, mi_secure_op_t op) mi_decl_hidden;
/* the canary after the data written over: where, and how far past the end */
mi_decl_noreturn void _mi_secure_report_overflow(const mi_page_t* page, const mi_block_t* block, const void* p,
                                                 size_t user_end, mi_secure_op_t op) mi_decl_hidden;
mi_decl_noreturn void _mi_secure_report_bad_trailer(const mi_page_t* page, const mi_block_t* block, const void* p,
                                                    mi_secure_op_t op) mi_decl_hidden;
size_t _mi_secure_tail_other_kind(const mi_page_t* page, const mi_block_t* block, const void* p, mi_secure_op_t op,
                                  bool single, mi_alloc_kind_t kind) mi_decl_hidden;
mi_decl_noreturn void _mi_secure_report_kind_mismatch(mi_alloc_kind_t found, mi_alloc_kind_t expected,
                                                      mi_secure_op_t op, const void* p, size_t size) mi_decl_hidden;
/* the rare cases (validate.c) */
mi_segment_t* _mi_secure_validate_far_segment(const void* p, mi_secure_op_t op) mi_decl_hidden;
void _mi_secure_validate_interior(const mi_page_t* page, const mi_block_t* block, const void* p,
                                  mi_secure_op_t op) mi_decl_hidden;
bool _mi_secure_visit_finds_remote_free(const mi_page_t* page, const mi_block_t* block) mi_decl_hidden;
mi_block_t* _mi_secure_validate_zero(mi_segment_t* segment, const void* p, mi_secure_op_t op, bool release,
                                     size_t* size_out) mi_decl_hidden;
mi_block_t* _mi_secure_validate_single(mi_segment_t* segment, const void* p, mi_secure_op_t op, mi_alloc_kind_t kind,
                                       mi_page_t** page_out, size_t* size_out) mi_decl_hidden;

/* ---- The header's geometry: segment/secure-geometry.h ---- */

/* The segment header must carry our cookie. */
static inline void mi_validate_cookie(const mi_segment_t* segment, const void* p, mi_secure_op_t op) {
  if (mi_unlikely(segment->cookie != ((uintptr_t)segment ^ _mi_process_key))) {
    /* still ours (in the map) but its header reads as zero: a cached segment
       the cache has purged, which holds no live block; any other cookie in a
       segment the map holds was written over */
    if (segment->cookie == 0 && segment->segment_size == 0) {
      _mi_secure_report_freed(op, p, 0);
    }
    _mi_secure_report_corrupted_header(segment);
  }
}

/* The segment of a pointer: ours (in the segment map), with our cookie;
   anything else aborts with a report. */
static mi_forceinline mi_segment_t* mi_validate_segment(const void* p, mi_secure_op_t op) {
  if (mi_likely(_mi_segment_map_contains(p))) {
    mi_segment_t* segment = _mi_ptr_segment(p); /* a pointer in a segment's first chunk lies within it */
    mi_validate_cookie(segment, p, op);
    return segment;
  }
  return _mi_secure_validate_far_segment(p, op);
}

/* The end of a live block: its trailer decodes to where the data ends, and
   the canary after the data is intact. Returns the requested size seen from p.
   `kind`: what allocated the block, as the caller expects it (a constant
   where it is inlined; MI_KIND_ANY: whatever it was). The kind expected is
   subtracted with the start: a block of another kind decodes to an end out
   of range, looked at again out of line (accepted when it is mi_new's). */
static mi_forceinline size_t mi_validate_tail(const mi_page_t* page, const mi_block_t* block, const void* p,
                                              mi_secure_op_t op, bool single, mi_alloc_kind_t kind) {
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  uintptr_t tag = mi_block_tag(block);
  uint64_t value = mi_trailer_decode(tag, *mi_trailer_of(page, block));
  uint64_t offset = (uint64_t)((const uint8_t*)p - (const uint8_t*)block);
  uint64_t start_bits = mi_trailer_pack(single ? 0 : offset, 0);
  if (op == MI_OP_VISIT && !single) {
    /* a visit names a block by its start, wherever its pointer lies */
    start_bits = mi_trailer_pack(mi_trailer_start(value), 0);
    if (mi_unlikely(mi_trailer_start(value) > trailer_at)) {
      if (_mi_secure_visit_finds_remote_free(page, block)) return MI_SECURE_VISIT_SKIP;
      _mi_secure_report_bad_trailer(page, block, p, op);
    }
  }
  start_bits += (kind == MI_KIND_ANY ? (value & MI_TRAILER_KIND_MASK) : mi_trailer_kind_bits(kind));
  uint64_t user_end = value - start_bits;
  if (mi_unlikely(user_end > trailer_at)) {
    if (op == MI_OP_VISIT && _mi_secure_visit_finds_remote_free(page, block)) return MI_SECURE_VISIT_SKIP;
    if (kind == MI_KIND_ANY) _mi_secure_report_bad_trailer(page, block, p, op);
    user_end = _mi_secure_tail_other_kind(page, block, p, op, single, kind);
  }
  if (mi_unlikely(!mi_canary_intact((const uint8_t*)block, (size_t)user_end, trailer_at, mi_canary_word(tag)))) {
    if (op == MI_OP_VISIT && _mi_secure_visit_finds_remote_free(page, block)) return MI_SECURE_VISIT_SKIP;
    _mi_secure_report_overflow(page, block, p, (size_t)user_end, op);
  }
  return (size_t)user_end - (size_t)((const uint8_t*)p - (const uint8_t*)block);
}

/* The block of a pointer into a small or medium page, handed out and not
   freed since (its bit is set); anything else aborts with a report. The
   pointer may still be inside the block (see _mi_secure_validate_interior).
   A page of the pprof sampler's (base.h, mi_page_sampled_set) fails the
   check word's compare, and passes it marked on the rare path, which sets
   `*marked` and returns NULL at once (`marked` NULL: not asked, and the
   page's block located as any other). */
static mi_forceinline mi_block_t* mi_locate_small(mi_segment_t* segment, const void* p, mi_secure_op_t op,
                                                  mi_page_t** page_out, size_t* idx_out, bool* marked) {
  /* the page index masked to the page table: a page shift written over
     picks a page of this header whose check word then fails */
  uint8_t kind = segment->kind;
  uint8_t shift = segment->page_shift;
  size_t pidx = ((uintptr_t)p - (uintptr_t)segment) >> (shift & 63);
  mi_page_t* page = &segment->pages[pidx & (MI_SMALL_PAGES_PER_SEGMENT - 1)];
  if (mi_unlikely(atomic_load_explicit(&page->state, memory_order_acquire) != MI_PAGE_IN_USE)) {
    _mi_secure_report_page_not_in_use(page, p, op);
  }
  /* each value read once, checked, then used. The check word is read as a
     plain word: an atomic load of it cost the free 3 instructions (the
     compiler neither folds it into the compare nor keeps what it read
     before it). Its owner changes it while other threads free into the
     page (marked or not), with an aligned whole-word store; either word
     read passes, and the rare path reads it again as an atomic. */
  _Static_assert(sizeof(page->geometry) == sizeof(uint64_t), "the check word is a plain word in memory");
  const uint64_t sealed = *(const uint64_t*)&page->geometry;
  uint8_t* start = page->start;
  size_t block_size = page->block_size;
  uint32_t capacity = page->capacity;
  const uint64_t geometry = mi_page_geometry(page, mi_segment_bits(kind, shift));
  if (mi_unlikely((sealed != geometry) | (capacity > page->reserved))) {
    /* marked, or marked a moment ago (read again: its owner may have
       unmarked it since) */
    uint64_t found = atomic_load_explicit(&page->geometry, memory_order_acquire);
    if (!mi_geometry_matches(found, geometry) || capacity > page->reserved) {
      _mi_secure_report_corrupted_header(segment);
    }
    if (marked != NULL && found != geometry) {
      *marked = true; /* nothing more read or set: the caller locates the block again */
      return NULL;
    }
  }
  /* before the page's first block the offset wraps to a huge value; below a
     segment's size the index is exact (mi_block_index) */
  size_t offset = (size_t)((const uint8_t*)p - start);
  size_t idx = (size_t)((offset * page->block_size_inv) >> 40);
  if (mi_unlikely(offset >= MI_SEGMENT_SIZE || idx >= capacity)) _mi_secure_report_outside_blocks(segment, page, p, op);
  if (mi_unlikely(!mi_bit_get(page, idx))) {
    _mi_secure_report_freed(op, p, block_size);
  }
  *page_out = page;
  *idx_out = idx;
  return (mi_block_t*)(start + idx * block_size);
}

static mi_forceinline mi_block_t* mi_validate_small(mi_segment_t* segment, const void* p, mi_secure_op_t op,
                                                    mi_alloc_kind_t kind, mi_page_t** page_out, size_t* size_out) {
  mi_page_t* page;
  size_t idx;
  mi_block_t* block = mi_locate_small(segment, p, op, &page, &idx, NULL);
  if (mi_unlikely((void*)block != p)) _mi_secure_validate_interior(page, block, p, op);
  size_t size = mi_validate_tail(page, block, p, op, false, kind);
  if (page_out != NULL) *page_out = page;
  if (size_out != NULL) *size_out = size;
  return block;
}

#endif
