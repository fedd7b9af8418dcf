/* Validation of a pointer the program hands back (MI_SECURE): the reports
   and the rare cases of the checks in validate.h, the header's check word,
   and the owner's check of the blocks other threads freed. */
#include "secure-validate.h"

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

/* The segment of a pointer outside every segment's first chunk: past the
   first 4 MiB of a large or huge block (and then maybe past its end), or not
   ours at all. Out of line: the free fast path never comes here. */
mi_noinline mi_segment_t* _mi_secure_validate_far_segment(const void* p, mi_secure_op_t op) {
  mi_segment_t* segment = _mi_segment_containing(p);
  if (segment == NULL) {
    if (mi_was_unmapped(p)) {
      _mi_secure_report_freed(op, p, 0);
    }
    _mi_secure_fatal_op(op, NULL, p, 0);
  }
  mi_validate_cookie(segment, p, op); /* before its size is read */
  if ((size_t)((const uint8_t*)p - (const uint8_t*)segment) >= segment->segment_size) {
    _mi_secure_fatal_op(op, NULL, p, 0);
  }
  return segment;
}

/* The page of a pointer is no longer in use. It keeps the geometry of its
   last use: a pointer into its blocks was freed with them, one elsewhere
   (the segment header, a guard page) never was a block. */
mi_noinline mi_decl_noreturn void _mi_secure_report_page_not_in_use(const mi_page_t* page, const void* p,
                                                                    mi_secure_op_t op) {
  /* no state it can have, or a free page with a heap, or a small or medium
     one with blocks in use: both are cleared before the state changes
     (_mi_segment_page_free; a single block's page is unlinked first) */
  uint32_t state = atomic_load_explicit(&page->state, memory_order_acquire);
  const mi_segment_t* segment = _mi_page_segment(page);
  if (state > MI_PAGE_HELD ||
      (state != MI_PAGE_HELD && (page->heap != NULL || (!mi_page_is_single_block(page) && page->used != 0)))) {
    _mi_secure_report_corrupted_header(segment);
  }
  /* a small or medium page keeps its geometry when freed: its check word
     holds, or it was never set up (and then the page was picked by a kind
     and page shift that agree) */
  if (segment->kind <= MI_SEGMENT_MEDIUM) {
    uint8_t shift = (segment->kind == MI_SEGMENT_SMALL ? MI_SMALL_PAGE_SHIFT : MI_MEDIUM_PAGE_SHIFT);
    bool never_set_up = (atomic_load_explicit(&page->geometry, memory_order_relaxed) == 0 && page->start == NULL);
    if (segment->page_shift != shift || segment->page_count != (MI_SEGMENT_SIZE >> shift) ||
        (!never_set_up && !mi_geometry_holds(page, mi_page_geometry(page, mi_segment_bits(segment->kind, shift))))) {
      _mi_secure_report_corrupted_header(segment);
    }
  }
  const uint8_t* b = (const uint8_t*)p;
  if (b >= page->start && b < page->start + (size_t)page->capacity * page->block_size) {
    _mi_secure_report_freed(op, p, page->block_size);
  }
  _mi_secure_fatal_op(op, NULL, p, 0);
}

/* A pointer past a page's carved blocks (or before them), whose geometry
   checked: an invalid one, unless the counts it was bounded by cannot be
   those of a page in use (a block of it is handed out). */
mi_noinline mi_decl_noreturn void _mi_secure_report_outside_blocks(const mi_segment_t* segment, const mi_page_t* page,
                                                                   const void* p, mi_secure_op_t op) {
  if (page->capacity == 0 || page->used > page->capacity) _mi_secure_report_corrupted_header(segment);
  _mi_secure_fatal_op(op, NULL, p, 0);
}

/* A pointer inside a live block: only an aligned allocation hands one out,
   and it leaves a keyed tag just before that pointer. Returns if it is one. */
mi_noinline void _mi_secure_validate_interior(const mi_page_t* page, const mi_block_t* block, const void* p,
                                              mi_secure_op_t op) {
  if ((const uint8_t*)p - (const uint8_t*)block >= 16) {
    if (mi_tag_matches(p)) return;
    /* A free from another thread zeroes the block, the tag with it: an
       aligned pointer freed a second time before the owner collects the
       first free shows a zero tag and a zero trailer. */
    if (mi_freed_by_other_thread(page, block)) _mi_secure_report_freed(op, p, page->block_size);
  }
  if (op == MI_OP_FREE) { /* the block named, for its stacks (MIMALLOC_SECURE_STACKS) */
    _mi_secure_report_block("invalid free detected of interior pointer", p, block, page->block_size, MI_REPORT_UNKNOWN,
                            (size_t)((const uint8_t*)p - (const uint8_t*)block), NULL);
  }
  _mi_secure_fatal_op(op, NULL, p, page->block_size);
}

/* The owner visits its heap while another thread frees one of its blocks
   (the bit stays set until the owner collects it). That thread marks the
   trailer before it zeroes or links the block; a visit that read the block
   mid-way (a canary or trailer already changed) reads the trailer again
   after a fence: the mark, or the zero it ends as, says the block is being
   freed. An overrun of zeros over the trailer looks the same here; it is
   reported when the block is freed. */
mi_noinline bool _mi_secure_visit_finds_remote_free(const mi_page_t* page, const mi_block_t* block) {
  if (mi_page_is_single_block(page)) return false; /* freed under the lock the visit holds */
  atomic_thread_fence(memory_order_acquire);
  uint64_t trailer = *(const volatile uint64_t*)mi_trailer_of(page, block);
  if (trailer == 0) return _mi_option_get_fast(mi_option_zero_on_free) != 0;
  return mi_trailer_decode(mi_block_tag(block), trailer) == MI_TRAILER_FREEING;
}

/* When an overflow was found, after the write: at which call. */
static const char* mi_found_at(mi_secure_op_t op) {
  switch (op) {
    case MI_OP_FREE: return "at the block's free";
    case MI_OP_REALLOC: return "at the block's realloc";
    case MI_OP_USABLE_SIZE: return "at the block's mi_usable_size";
    default: return "at a visit of its heap";
  }
}

/* the first of the `len` bytes from `from` unlike the canary word's bytes;
   MI_REPORT_UNKNOWN if none */
static size_t mi_canary_first_bad(const uint8_t* b, size_t from, const uint8_t* w, size_t len) {
  for (size_t k = 0; k < len; k++) {
    if (b[from + k] != w[k]) return from + k;
  }
  return MI_REPORT_UNKNOWN;
}

mi_noinline mi_decl_noreturn void _mi_secure_report_overflow(const mi_page_t* page, const mi_block_t* block,
                                                             const void* p, size_t user_end, mi_secure_op_t op) {
  const uint8_t* b = (const uint8_t*)block;
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  uint64_t word = mi_canary_word(mi_block_tag(block));
  uint8_t w[8];
  memcpy(w, &word, 8);
  /* the canary's two words, as mi_canary_intact reads them */
  size_t n = trailer_at - user_end;
  if (n > MI_SECURE_CANARY_MAX) n = MI_SECURE_CANARY_MAX;
  size_t n1 = (n < 8 ? n : 8);
  size_t bad = mi_canary_first_bad(b, user_end, w, n1);
  if (bad == MI_REPORT_UNKNOWN) bad = mi_canary_first_bad(b, mi_canary_second(user_end, trailer_at), w, n - n1);
  size_t start = (size_t)((const uint8_t*)p - b);
  _mi_secure_report_block("heap buffer overflow detected in block", p, p, page->block_size - start, user_end - start,
                          bad == MI_REPORT_UNKNOWN ? MI_REPORT_UNKNOWN : bad - start, mi_found_at(op));
}

/* A trailer that does not decode: the block was freed by another thread
   (marked, or zeroed, and not yet collected), or written past its end. */
mi_noinline mi_decl_noreturn void _mi_secure_report_bad_trailer(const mi_page_t* page, const mi_block_t* block,
                                                                const void* p, mi_secure_op_t op) {
  if (!mi_page_is_single_block(page) &&
      mi_trailer_decode(mi_block_tag(block), *mi_trailer_of(page, block)) == MI_TRAILER_FREEING) {
    _mi_secure_report_freed(op, p, page->block_size);
  }
  if (mi_freed_by_other_thread(page, block)) {
    _mi_secure_report_freed(op, p, page->block_size);
  }
  /* intact, but the block was handed out at another pointer inside it */
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  uint64_t value = mi_trailer_decode(mi_block_tag(block), *mi_trailer_of(page, block));
  uint64_t start = mi_trailer_start(value);
  uint64_t user_end = mi_trailer_end(value);
  if (!mi_page_is_single_block(page) && user_end <= trailer_at && start <= user_end &&
      start != (uint64_t)((const uint8_t*)p - (const uint8_t*)block)) {
    _mi_secure_fatal_op(op, NULL, p, page->block_size);
  }
  /* the trailer itself written over: the size asked for is lost with it */
  size_t p_at = (size_t)((const uint8_t*)p - (const uint8_t*)block);
  mi_secure_report_t report = {.what = "heap buffer overflow detected in block",
                               .address = p,
                               .size = trailer_at, /* the first line as before: the block's room */
                               .block = p,
                               .block_size = page->block_size - p_at,
                               .requested = MI_REPORT_UNKNOWN,
                               .offset = trailer_at - p_at,
                               .late = mi_found_at(op)};
  _mi_secure_fatal_report(&report);
}

/* A block freed by another kind than its own (found only on the rare path):
   reported unless the process's operators are not all ours, or the user
   turned the check off (MIMALLOC_DEALLOC_KIND_CHECK=0: a known mismatch in
   code they cannot change, such as new[] freed by delete of chars, which
   every ABI frees alike) */
static bool mi_kind_mismatch_reported(void) {
  return mi_option_is_enabled(mi_option_dealloc_kind_check) && _mi_cxx_operators_ours();
}

/* A trailer that does not decode with the kind the caller expects (not
   MI_KIND_ANY): the block was freed (by another thread, not yet collected),
   written past its end, handed out at another pointer, or allocated by
   another kind. Of another kind, intact: mi_new's neutral blocks, and all
   blocks while the process's operator new or delete is not ours (a program
   that replaced some of them), go on (the size is returned); the rest are a
   mismatch. */
static mi_noinline size_t mi_tail_other_kind_slow(const mi_page_t* page, const mi_block_t* block, const void* p,
                                                  mi_secure_op_t op, bool single, mi_alloc_kind_t kind) {
  uintptr_t tag = mi_block_tag(block);
  uint64_t value = mi_trailer_decode(tag, *mi_trailer_of(page, block));
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  uint64_t offset = (uint64_t)((const uint8_t*)p - (const uint8_t*)block);
  mi_alloc_kind_t found = mi_trailer_kind(value);
  uint64_t user_end = value - mi_trailer_pack(single ? 0 : offset, 0) - (value & MI_TRAILER_KIND_MASK);
  if (!single && (value == MI_TRAILER_FREEING || mi_freed_by_other_thread(page, block))) {
    _mi_secure_report_freed(op, p, page->block_size);
  }
  if (found != kind && found < MI_KIND_NEUTRAL && user_end <= trailer_at && user_end >= offset &&
      mi_canary_intact((const uint8_t*)block, (size_t)user_end, trailer_at, mi_canary_word(tag))) {
    if (!mi_kind_mismatch_reported()) return (size_t)user_end;
    _mi_secure_report_kind_mismatch(found, kind, op, p, (size_t)(user_end - offset));
  }
  _mi_secure_report_bad_trailer(page, block, p, op);
}

/* mi_new's blocks, first and short (a frame of its own for the rest): the
   caller checks the canary */
mi_noinline size_t _mi_secure_tail_other_kind(const mi_page_t* page, const mi_block_t* block, const void* p,
                                              mi_secure_op_t op, bool single, mi_alloc_kind_t kind) {
  uint64_t value = mi_trailer_decode(mi_block_tag(block), *mi_trailer_of(page, block));
  uint64_t offset = (uint64_t)((const uint8_t*)p - (const uint8_t*)block);
  uint64_t user_end = value - mi_trailer_pack(single ? 0 : offset, 0) - mi_trailer_kind_bits(MI_KIND_NEUTRAL);
  if (mi_likely(user_end <= page->block_size - MI_SECURE_TRAILER)) return (size_t)user_end;
  return mi_tail_other_kind_slow(page, block, p, op, single, kind);
}

/* A pointer into a zero segment: a zero-size allocation's slot, handed out
   and not freed (freed now with `release`), or reported. */
mi_noinline mi_block_t* _mi_secure_validate_zero(mi_segment_t* segment, const void* p, mi_secure_op_t op, bool release,
                                                 size_t* size_out) {
  /* a zero segment has no check word (secure-zero.c): its shape tells it
     from another segment whose kind was written over, whose bitmap would
     not be where secure-zero.c reads and writes it */
  const mi_page_t* page = &segment->pages[0];
  if (segment->page_shift != 63 || segment->page_count != 1 || segment->segment_size != MI_SEGMENT_SIZE ||
      page->block_size != MI_MAX_ALIGN_SIZE || page->start != (uint8_t*)segment + segment->info_size ||
      segment->info_size >= MI_SEGMENT_SIZE / 2) {
    _mi_secure_report_corrupted_header(segment);
  }
  mi_zero_state_t state = _mi_zero_check(segment, p, release);
  if (state == MI_ZERO_FREED) _mi_secure_report_freed(op, p, 0);
  if (state != MI_ZERO_LIVE) _mi_secure_fatal_op(op, NULL, p, 0);
  if (size_out != NULL) *size_out = 0;
  return (mi_block_t*)p;
}

/* A large block's slack window after its canary (block.h) still zero, as
   each layout left it: an overflow that skipped the canary and landed
   before the trailer, in an aligned allocation's slack or a reallocation's
   room, is seen when the block is freed (at most a page read; nothing for a
   block that ends at its guard page). */
static bool mi_single_slack_zero(const mi_page_t* page, const mi_block_t* block, size_t user_end) {
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  size_t from = mi_single_slack_from(user_end, trailer_at);
  const uint8_t* q = (const uint8_t*)block + from;
  const uint8_t* end = (const uint8_t*)block + mi_single_slack_to(block, from, trailer_at);
  uint64_t acc = 0;
  for (; q < end && ((uintptr_t)q & 7) != 0; q++) acc |= *q;
  for (; q + 8 <= end; q += 8) acc |= *(const uint64_t*)q;
  for (; q < end; q++) acc |= *q;
  return (acc == 0);
}

/* The same for a single-block segment's block (large, huge, guarded). */
mi_noinline mi_block_t* _mi_secure_validate_single(mi_segment_t* segment, const void* p, mi_secure_op_t op,
                                                   mi_alloc_kind_t kind, mi_page_t** page_out, size_t* size_out) {
  if (segment->kind == MI_SEGMENT_ZERO) {
    if (page_out != NULL) *page_out = NULL; /* no page to resize in */
    return _mi_secure_validate_zero(segment, p, op, false, size_out);
  }
  mi_page_t* page = &segment->pages[0];
  if (atomic_load_explicit(&page->state, memory_order_acquire) != MI_PAGE_IN_USE) {
    _mi_secure_report_page_not_in_use(page, p, op);
  }
  /* in use, so sealed as it is (a freed one may be changing: a guarded
     block's flag is cleared when it leaves its quarantine) */
  if (segment->kind != MI_SEGMENT_SINGLE ||
      atomic_load_explicit(&page->geometry, memory_order_relaxed) != mi_single_geometry(segment, page)) {
    _mi_secure_report_corrupted_header(segment);
  }
  const uint8_t* b = (const uint8_t*)p;
  if (b < page->start || b >= page->start + page->block_size) _mi_secure_fatal_op(op, NULL, p, 0);
  mi_block_t* block = (mi_block_t*)page->start;
  if (!mi_bit_get(page, 0)) {
    _mi_secure_report_freed(op, p, page->block_size);
  }
  size_t offset = (size_t)(b - (const uint8_t*)block);
  /* a pointer closer than a tag to the start has none (secure/alloc.c:
     mi_set_user): the user_start check below is its validation */
  if (offset != 0 && (offset >= MI_MAX_ALIGN_SIZE || offset != page->user_start)) {
    _mi_secure_validate_interior(page, block, p, op);
  }
  /* not the pointer this block was handed out at: its start behind an
     aligned one, or an aligned pointer from before the segment was reused
     (large blocks are not zeroed on free: an old tag may still be there).
     A visit names the block by its start. */
  if (op != MI_OP_VISIT && offset != page->user_start) _mi_secure_fatal_op(op, NULL, p, page->block_size);
  size_t size;
#if MI_GUARDED
  if (page->is_guarded) {
    size = (page->guarded_size > offset ? page->guarded_size - offset : 0);
    if (!mi_guarded_slack_intact(page, block)) _mi_secure_fatal("heap buffer overflow detected in block", p, size);
    mi_alloc_kind_t found = (mi_alloc_kind_t)page->guarded_kind;
    if (kind != MI_KIND_ANY && found != kind && found != MI_KIND_NEUTRAL && mi_kind_mismatch_reported()) {
      _mi_secure_report_kind_mismatch(found, kind, op, p, size);
    }
  } else
#endif
  {
    size = mi_validate_tail(page, block, p, op, true, kind);
    if (op == MI_OP_FREE && !mi_single_slack_zero(page, block, offset + size)) {
      _mi_secure_report_block("heap buffer overflow detected in block", p, p, 0, size, MI_REPORT_UNKNOWN,
                              mi_found_at(op));
    }
  }
  if (page_out != NULL) *page_out = page;
  if (size_out != NULL) *size_out = size;
  return block;
}

mi_block_t* _mi_secure_validate_kind(const void* p, mi_secure_op_t op, mi_alloc_kind_t kind, mi_page_t** page_out,
                                     size_t* size_out) {
  mi_segment_t* segment = mi_validate_segment(p, op);
  /* or a zero segment's */
  if (segment->kind >= MI_SEGMENT_SINGLE) return _mi_secure_validate_single(segment, p, op, kind, page_out, size_out);
  return mi_validate_small(segment, p, op, kind, page_out, size_out);
}

mi_block_t* _mi_secure_validate(const void* p, mi_secure_op_t op, mi_page_t** page_out, size_t* size_out) {
  return _mi_secure_validate_kind(p, op, MI_KIND_ANY, page_out, size_out);
}

/* The owner collected a block another thread freed that is no block of the
   page's carved ones, or whose bit was clear (page/page.c). */
void _mi_secure_report_collected(const mi_page_t* page, const mi_block_t* block) {
  size_t idx;
  if (mi_carved_block_index(page, block, &idx) && !mi_bit_get(page, idx)) {
    _mi_secure_report_freed(MI_OP_FREE, block, page->block_size);
  }
  _mi_secure_fatal("corrupted free list detected at", block, page->block_size);
}

/* mi_heap_visit_blocks over a page: blocks in the quarantine are freed but
   not on the free list, so the bitmap tells which are live, and each
   block's trailer the caller's size (everything after it is canary). */
bool _mi_secure_visit_page(const mi_heap_t* heap, mi_page_t* page, const mi_heap_area_t* area,
                           mi_block_visit_fun* visitor, void* arg) {
  for (size_t i = 0; i < page->capacity; i++) {
    if (!mi_bit_get(page, i)) continue;
    void* block = page->start + i * page->block_size;
    size_t size;
    _mi_secure_validate(block, MI_OP_VISIT, NULL, &size);
    if (size == MI_SECURE_VISIT_SKIP) continue; /* another thread is freeing it */
    if (!visitor(heap, area, block, size, arg)) return false;
  }
  return true;
}

#if MI_STAT >= 2
/* Detailed statistics (stats/requested.c): the bytes the program asked for
   of a page's live blocks, from their trailers, when its heap is destroyed
   with them. */
size_t _mi_secure_page_requested(const mi_page_t* page) {
  if (_mi_page_segment(page)->kind >= MI_SEGMENT_SINGLE) {
    if (!mi_bit_get(page, 0)) return 0;
    size_t size;
    (void)_mi_secure_validate(page->start + page->user_start, MI_OP_VISIT, NULL, &size);
    return (size == MI_SECURE_VISIT_SKIP ? 0 : size);
  }
  size_t total = 0;
  for (size_t i = 0; i < page->capacity; i++) {
    if (!mi_bit_get(page, i)) continue;
    const mi_block_t* block = (const mi_block_t*)(page->start + i * page->block_size);
    size_t end; /* a visit names the block by its start: the request's end */
    (void)_mi_secure_validate(block, MI_OP_VISIT, NULL, &end);
    if (end == MI_SECURE_VISIT_SKIP) continue; /* another thread is freeing it: counted there */
    uint64_t value = mi_trailer_decode(mi_block_tag(block), *mi_trailer_of(page, block));
    total += end - (size_t)mi_trailer_start(value);
  }
  return total;
}
#endif
