/* A thread at an idle point gives back what it can (docs/memory-return.md):
   its pending frees collected, the holes of its pages discarded
   (page/holes.c), its free pages purged now. */
#include "heap.h"

#include <stdio.h>

void mi_on_thread_idle(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  if (mi_option_get(mi_option_purge_delay) < 0) return; /* every purge off, holes included */
  mi_tld_t* tld = heap->tld;
  for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) _mi_deferred_free(h, false);
  if (mi_option_is_enabled(mi_option_purge_holes)) {
    /* paced start to start, per thread */
    int64_t now = mi_prim_clock_now();
    long interval = mi_option_get_clamp(mi_option_purge_holes_min_interval, 0, 3600000);
    if (tld->holes_last == 0 || now - tld->holes_last >= interval) {
      tld->holes_last = (now != 0 ? now : 1);
      long every = mi_option_get_clamp(mi_option_purge_holes_full_every, 1, 1L << 30);
      bool full = (tld->holes_sweeps++ % (uint64_t)every == 0);
      bool eager_zero = mi_option_is_enabled(mi_option_purge_holes_eager_zero);
      _mi_holes_sweep_begin();
      _mi_holes_note_sweep(full);
      for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) (void)_mi_heap_holes_sweep(h, full, eager_zero);
    }
  } else {
    for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) _mi_heap_collect_pages(h);
  }
  _mi_purge_run(true); /* the free pages' memory now, not after the delay */
}

/* Per size class of the calling thread's pages: the free bytes, those in
   holes, and those a live block pins (it shares their unit). */
void mi_purge_holes_report(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  char line[160];
  _mi_message("hole purge: the calling thread's pages, per block size\n");
  _mi_message("%10s %8s %14s %14s %14s\n", "block", "pages", "free", "in holes", "pinned");
  size_t total_free = 0, total_holes = 0, total_pinned = 0;
  for (size_t bin = 1; bin <= MI_BIN_MEDIUM_MAX; bin++) {
    size_t pages = 0, free_bytes = 0, hole_bytes = 0, pinned = 0;
    for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) {
      for (size_t q = 0; q < 2; q++) {
        const mi_page_queue_t* pq = &h->pages[q == 0 ? bin : MI_BIN_FULL];
        for (const mi_page_t* page = (pq->last != NULL ? pq->first : NULL); page != NULL; page = page->next) {
          if (page->bin != bin) continue;
          pages++;
          _mi_page_holes_census(page, &free_bytes, &hole_bytes, &pinned);
        }
      }
    }
    if (pages == 0) continue;
    (void)snprintf(line, sizeof(line), "%10zu %8zu %14zu %14zu %14zu\n", _mi_bin_size(bin), pages, free_bytes,
                   hole_bytes, pinned);
    _mi_message("%s", line);
    total_free += free_bytes;
    total_holes += hole_bytes;
    total_pinned += pinned;
  }
  _mi_message("%10s %8s %14zu %14zu %14zu\n", "total", "", total_free, total_holes, total_pinned);
}
