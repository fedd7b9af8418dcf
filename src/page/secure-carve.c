/* The secure build's carve (MI_SECURE): the blocks a page's extension adds
   are linked in random order, so neighbours in memory are not neighbours in
   allocation order. The shuffle costs a random number per two blocks: the
   page layer carves at most MI_SECURE_CARVE_MAX at a time (page.c), still
   as many to choose the next among as a 4 KiB carve of 128-byte blocks
   gives. */
#include "page.h"
#include "../secure/secure.h"

/* `want` (1 to MI_SECURE_CARVE_MAX) blocks from `start`, linked: the first
   returned, the last in *last_out. */
mi_block_t* _mi_secure_carve(mi_page_t* page, uint8_t* start, size_t want, mi_block_t** last_out) {
  size_t bsize = page->block_size;
  uint16_t order[MI_SECURE_CARVE_MAX];
  order[0] = 0;
  mi_tld_t* tld = page->heap->tld;
  uint64_t r = 0;
  for (size_t i = 1; i < want; i++) {
    /* the inside-out shuffle: block i joins at a random place j in [0, i]
       (the high half of a 32x32-bit product, no division), the one there
       moves to the end. Each random number serves two steps. */
    r = ((i & 1) ? _mi_tld_random(tld) : r << 32);
    size_t j = (size_t)(((r >> 32) * (uint64_t)(i + 1)) >> 32);
    order[i] = (uint16_t)i;
    uint16_t t = order[j];
    order[j] = order[i];
    order[i] = t;
  }
  /* Medium blocks its slot's earlier page handed out (alloc.c: the bits it
     inherits) are zero since that page went; their first word is about to
     hold a link, which would hide a stale write there: checked first. */
  if (page->handed_out != 0 && _mi_option_get_after_init(mi_option_zero_on_free) != 0) {
    size_t first_idx = (size_t)(start - page->start) / bsize;
    for (size_t i = 0; i < want && first_idx + i < 64; i++) {
      const mi_block_t* b = (const mi_block_t*)(start + i * bsize);
      if (((page->handed_out >> (first_idx + i)) & 1) != 0 && b->next != NULL) {
        _mi_secure_report_stale_write(b, bsize, 0, "when its page was extended");
      }
    }
  }
  /* want >= 1 (the caller carves from a page with room), so order[0] was set */
  /* cppcheck-suppress uninitvar */
  mi_block_t* first = (mi_block_t*)(start + (size_t)order[0] * bsize);
  mi_block_t* last = first;
  for (size_t i = 1; i < want; i++) {
    mi_block_t* next = (mi_block_t*)(start + (size_t)order[i] * bsize);
    mi_block_set_next(page, last, next);
    last = next;
  }
  *last_out = last;
  return first;
}
