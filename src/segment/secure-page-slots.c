/* The secure build's page slots (MI_SECURE): a slot set up for a page (its
   free-list keys, its bitmap cleared, what it inherits of the blocks its
   page before handed out, so that a write after free into them is seen at
   their first hand-out), and a page's slot given back to its segment (its
   blocks' links cleared). */
#include "segment.h"

#if MI_SECURE
/* The medium blocks of a page set up on a slot whose memory is still
   committed that cover memory its earlier page handed out: zeroed when they
   were freed (and their links cleared when that page went), so checking
   them reads nothing the OS has to fault in, and a write through a stale
   pointer into them, made after that page went, is seen at their first
   hand-out (memory.c). The slot's page before was medium too (a medium
   segment has no other kind); its size and bits are still in the slot. */
static uint64_t mi_handed_out_inherited(const mi_page_t* page, size_t block_size, size_t blocks) {
  uint64_t old = page->handed_out;
  size_t old_size = page->block_size;
  if (block_size <= MI_SECURE_UAF_CHECK_MAX || old_size <= MI_SECURE_UAF_CHECK_MAX) return 0;
  if (old_size == block_size) return old;
  uint64_t bits = 0;
  for (; old != 0; old &= old - 1) {
    size_t i = mi_bsf64(old);
    size_t last = ((i + 1) * old_size - 1) / block_size;
    for (size_t j = i * old_size / block_size; j <= last && j < blocks; j++) bits |= (uint64_t)1 << j;
  }
  return bits;
}

/* The slot's memory went back to the OS since its page before handed out
   blocks (purged, so it reads zero), and some of it is mapped again: only a
   write (or read) through a stale pointer maps it again while the slot is
   free. Its blocks are then checked as if still committed; mincore tells,
   one call for the area, at the set-up of a slot that has such history. */
static bool mi_slot_touched_since_purge(const mi_page_t* page) {
  if (page->handed_out == 0) return false;
  uint8_t* start;
  size_t area = _mi_segment_page_area(_mi_page_segment(page), page->index, &start);
  size_t resident = 0;
  return (mi_prim_resident(start, area, &resident) == 0 && resident > 0);
}

/* `blocks`: how many the page will hold, of `block_size`; the bits past
   them are never read (every index is checked against the page's capacity
   first) */
void _mi_secure_page_init(mi_heap_t* heap, mi_page_t* page, bool was_dirty, size_t block_size, size_t blocks) {
  page->keys[0] = _mi_tld_random(heap->tld);
  page->keys[1] = _mi_tld_random(heap->tld);
  /* _mi_secure_block_untouched_medium: memory given back reads zero */
  bool inherit = (was_dirty || mi_slot_touched_since_purge(page));
  page->handed_out = (inherit ? mi_handed_out_inherited(page, block_size, blocks) : 0);
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
#endif
