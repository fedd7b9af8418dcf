/* Pages of destroyed heaps (MI_SECURE), held by their thread before reuse. */
#include "heap.h"
#include "../secure/secure.h"

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
   in them).

   The blocks a destroyed heap still held were never freed, so nothing
   checks them when they come back (the page's area is zeroed when it is
   set up again): a write through a stale pointer would go unseen, and a
   read would find the old contents. So a held page's area is made
   inaccessible while it is held: a read or a write of it faults at once,
   and the fault handler names the block (guard.c). Its neighbours' guard
   pages are inaccessible already: the fence joins them into one mapping, so
   it costs no mapping, only the two mprotect calls. A fence that cannot be
   set leaves the page held as before; one that cannot be lifted stays, and
   the slot is never set up again: its segment goes to the OS, not to the
   segment cache, when it empties (segment.c). */
#define MI_SECURE_HELD_PAGES 64
#define MI_SECURE_HELD_BYTES ((size_t)8 << 20)

static size_t mi_page_area_size(const mi_page_t* page) {
  return _mi_segment_page_area(_mi_page_segment(page), page->index, NULL);
}

/* The page's area made inaccessible (`fence`) or accessible again: 0 when done. */
static int mi_page_fence(const mi_page_t* page, bool fence) {
  uint8_t* start;
  size_t area = _mi_segment_page_area(_mi_page_segment(page), page->index, &start);
  return _mi_os_protect(start, area, fence);
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
    /* a fence that cannot be lifted stays (fault path): the segment then
       never sets the slot up again, and goes to the OS when it empties */
    if (page->held_fenced && mi_page_fence(page, false) == 0) page->held_fenced = false;
    _mi_segment_page_free(page);
  }
}

/* `page`, out of its destroyed heap, joins the newest end. */
void _mi_secure_page_hold(mi_tld_t* tld, mi_page_t* page) {
  page->needs_zero = true; /* live blocks go with it, unzeroed */
  _mi_segment_page_hold(page);
  page->held_fenced = (mi_page_fence(page, true) == 0);
  if (tld->held_last != NULL) tld->held_last->next = page;
  else tld->held_first = page;
  tld->held_last = page;
  tld->held_count++;
  tld->held_bytes += mi_page_area_size(page);
  _mi_secure_pages_held_release(tld, MI_SECURE_HELD_PAGES, MI_SECURE_HELD_BYTES);
}
