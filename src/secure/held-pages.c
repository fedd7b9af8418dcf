/* Pages of destroyed heaps (MI_SECURE), held by their thread before reuse. */
#include "../api/api.h"
#include "secure.h"

/* A destroyed heap's blocks were never freed one by one: a stale pointer to
   one is reported (a double free, a use of a freed block) only as long as
   its page is not set up again; after that the block may be handed out
   again, and the pointer is a valid one once more. So a destroyed heap's
   pages are held, oldest first, by their thread, their slots taken (see
   _mi_segment_page_hold): no amount of allocation reuses them. A thread
   holds its last MI_SECURE_HELD_PAGES destroyed pages, of at most
   MI_SECURE_HELD_BYTES together (64 small pages, or 16 medium ones); older
   ones are freed as newer ones come, all of them at a forced collect and
   when the thread exits (its segments are abandoned with only pages in use
   in them). */
#define MI_SECURE_HELD_PAGES 64
#define MI_SECURE_HELD_BYTES ((size_t)8 << 20)

static size_t mi_page_area_size(const mi_page_t* page) {
  return _mi_segment_page_area(_mi_page_segment(page), page->index, NULL);
}

/* Free the oldest held pages until at most `max_pages` pages of at most
   `max_bytes` are left (0, 0: all). */
void _mi_secure_pages_held_release(mi_tld_t* tld, size_t max_pages, size_t max_bytes) {
  while (tld->held_first != NULL && (tld->held_count > max_pages || tld->held_bytes > max_bytes)) {
    mi_page_t* page = tld->held_first;
    tld->held_first = page->next;
    if (tld->held_first == NULL) tld->held_last = NULL;
    page->next = NULL;
    tld->held_count--;
    tld->held_bytes -= mi_page_area_size(page);
    _mi_segment_page_free(page);
  }
}

/* `page`, out of its destroyed heap, joins the newest end. */
void _mi_secure_page_hold(mi_tld_t* tld, mi_page_t* page) {
  page->needs_zero = true; /* live blocks go with it, unzeroed */
  _mi_segment_page_hold(page);
  if (tld->held_last != NULL) tld->held_last->next = page;
  else tld->held_first = page;
  tld->held_last = page;
  tld->held_count++;
  tld->held_bytes += mi_page_area_size(page);
  _mi_secure_pages_held_release(tld, MI_SECURE_HELD_PAGES, MI_SECURE_HELD_BYTES);
}
