/* Returning freed memory to the OS after a delay (option purge_delay), also
   when the threads that freed it go idle.

   Free pages inside thread-owned segments are listed per segment; a segment
   with at least one FREE_DIRTY page is on the global purge list. The purge
   thread (option purge_thread, started lazily) walks that list and the
   segment cache when something is due. It never touches a page in use: it
   takes a page only by moving its state FREE_DIRTY -> PURGING with a
   compare-and-swap, and an owner takes a free page only by moving it to
   IN_USE the same way, so exactly one of them wins. Segments leave the list
   under the purge lock before they are released, so the list never holds a
   segment that is gone. */
#include "segment.h"

mi_lock_t _mi_purge_lock;
static mi_segment_t* mi_purge_first; /* under _mi_purge_lock */
/* Held across a purge pass, from claiming pages to returning their memory:
   the fork handlers take it, so a child never inherits a page left PURGING
   by a thread it does not have (whoever waits for such a page would wait
   forever). */
static mi_lock_t mi_purge_run_lock;

void _mi_purge_init(void) {
  _mi_lock_init(&_mi_purge_lock, MI_LOCK_PURGE);
  _mi_lock_init(&mi_purge_run_lock, MI_LOCK_PURGE_RUN);
}

/* Under the purge lock. */
static void mi_purge_list_add(mi_segment_t* segment) {
  mi_lock_assert_held(&_mi_purge_lock);
  mi_assert_internal(!segment->is_pinned); /* pinned memory is never purged in parts */
  if (segment->in_purge_list) return;
  mi_assert_internal(segment->purge_prev == NULL && segment->purge_next == NULL);
  segment->in_purge_list = 1;
  segment->purge_prev = NULL;
  segment->purge_next = mi_purge_first;
  if (mi_purge_first != NULL) mi_purge_first->purge_prev = segment;
  mi_purge_first = segment;
}

/* Secure builds: under the purge lock, before the list is written through them: a
   segment's purge links are ours (or none) and link back. They are written
   under this lock by whoever lists or unlists a neighbour, so they are read
   under it too: read before it, a neighbour unlisted and released in
   between was taken for a scribble (the false alarm of
   teardown-reclaim-on-free-stress; test-teardown free-vs-neighbour-release). */
static inline void mi_purge_links_check(const mi_segment_t* segment, const mi_segment_t* prev,
                                        const mi_segment_t* next) {
  bool ok = _mi_secure_segment_ours_or_null(prev) && _mi_secure_segment_ours_or_null(next);
  if (ok && segment->in_purge_list) {
    ok = (prev == NULL ? mi_purge_first == segment : prev->purge_next == segment) &&
         (next == NULL || next->purge_prev == segment);
  } else if (ok) {
    ok = (prev == NULL && next == NULL);
  }
  if (!ok) {
    _mi_lock_release(&_mi_purge_lock); /* the report runs the program's error callback, which may free */
    _mi_secure_corrupted_header(segment);
  }
}

/* Called by the page's owner (or by whoever holds an abandoned segment). */
void _mi_purge_schedule_page(mi_segment_t* segment, mi_page_t* page) {
  if (segment->is_pinned) {
    /* pinned pages cannot be returned in parts: the page stays committed */
    atomic_store_explicit(&page->state, MI_PAGE_FREE_DIRTY, memory_order_release);
    return;
  }
  long delay = _mi_option_get_fast(mi_option_purge_delay);
  int64_t due = (delay < 0 ? INT64_MAX : mi_prim_clock_now() + delay);
  atomic_store_explicit(&page->purge_at, due, memory_order_relaxed);
  /* the plant reads the links before the lock: the false alarm put back */
  const mi_segment_t* stale_prev = (MI_TEARDOWN_PLANT_STALE_LINKS ? segment->purge_prev : NULL);
  const mi_segment_t* stale_next = (MI_TEARDOWN_PLANT_STALE_LINKS ? segment->purge_next : NULL);
  mi_sched_point(MI_SCHED_PAGE_FREE_LISTING);
  _mi_lock_acquire(&_mi_purge_lock);
  if (MI_SECURE) {
    mi_purge_links_check(segment, MI_TEARDOWN_PLANT_STALE_LINKS ? stale_prev : segment->purge_prev,
                         MI_TEARDOWN_PLANT_STALE_LINKS ? stale_next : segment->purge_next);
  }
  atomic_store_explicit(&page->state, MI_PAGE_FREE_DIRTY, memory_order_release);
  mi_purge_list_add(segment);
  _mi_lock_release(&_mi_purge_lock);
  if (delay >= 0 && _mi_background_due_at(due)) _mi_background_wake();
}

static void mi_purge_list_remove(mi_segment_t* segment) {
  mi_lock_assert_held(&_mi_purge_lock);
  mi_assert_internal(segment->in_purge_list);
  mi_assert_internal(segment->purge_prev != NULL || mi_purge_first == segment);
  if (segment->purge_prev != NULL) segment->purge_prev->purge_next = segment->purge_next;
  else mi_purge_first = segment->purge_next;
  if (segment->purge_next != NULL) segment->purge_next->purge_prev = segment->purge_prev;
  segment->purge_next = segment->purge_prev = NULL;
  segment->in_purge_list = 0;
}

/* A cached segment taken back into use may still have dirty free pages:
   list it so they are purged in time. */
void _mi_purge_track_segment(mi_segment_t* segment) {
  if (segment->is_pinned) return;
  bool dirty = false;
  for (size_t i = 0; i < segment->page_count && !dirty; i++) {
    dirty = (atomic_load_explicit(&segment->pages[i].state, memory_order_relaxed) == MI_PAGE_FREE_DIRTY);
  }
  if (!dirty) return;
  _mi_lock_acquire(&_mi_purge_lock);
  mi_purge_list_add(segment);
  _mi_lock_release(&_mi_purge_lock);
  _mi_background_due_after_delay();
}

/* Before a segment is released: take it off the list, and wait for a purge
   of one of its pages that is under way to finish. The purger that holds a
   page PURGING may put the segment back on the list (its purge was refused)
   in the same critical section in which it lets go of the page, so "off the
   list and no page PURGING" is checked in one critical section, and again
   after every wait: once both hold, nothing can list the segment again (the
   purger finds pages only through the list). */
void _mi_purge_unlink_segment(mi_segment_t* segment) {
  mi_sched_point(MI_SCHED_SEGMENT_UNLINK);
  for (;;) {
    _mi_lock_acquire(&_mi_purge_lock);
    if (segment->in_purge_list) mi_purge_list_remove(segment);
    bool purging = false;
    for (size_t i = 0; i < segment->page_count && !purging; i++) {
      purging = (atomic_load_explicit(&segment->pages[i].state, memory_order_acquire) == MI_PAGE_PURGING);
    }
    mi_assert_internal(!segment->in_purge_list);
    _mi_lock_release(&_mi_purge_lock);
    if (!purging) return;
    mi_prim_yield();
  }
}

typedef struct mi_purge_item_s {
  mi_segment_t* segment;
  mi_page_t* page;
} mi_purge_item_t;

#define MI_PURGE_BATCH 64

/* Under the purge lock: with the delay grown and the program busy, how far
   back the budget of dirty free pages reaches (purge-delay.c): the due time
   at and before which a page goes though the grown delay has not passed
   (INT64_MIN: none). Otherwise every page past the plain delay goes anyway. */
static int64_t mi_purge_budget_cutoff(const mi_purge_pass_t* pass) {
  if (pass->extra == 0 || pass->idle) return INT64_MIN;
  mi_purge_budget_t budget;
  memset(&budget, 0, sizeof(budget));
  for (mi_segment_t* segment = mi_purge_first; segment != NULL; segment = segment->purge_next) {
    /* a page's full size: its `committed` is its owner's to write once it
       takes the page back, which it may be doing now */
    if (segment->page_shift >= 32) continue; /* single-block segments are never listed */
    int64_t page_size = (int64_t)1 << segment->page_shift;
    for (size_t i = 0; i < segment->page_count; i++) {
      mi_page_t* page = &segment->pages[i];
      if (atomic_load_explicit(&page->state, memory_order_relaxed) != MI_PAGE_FREE_DIRTY) continue;
      _mi_purge_budget_add(&budget, pass, atomic_load_explicit(&page->purge_at, memory_order_relaxed), page_size);
    }
  }
  int64_t in_use = atomic_load_explicit(&_mi_stats.committed.current, memory_order_relaxed) - budget.dirty -
                   _mi_segment_cache_dirty();
  return _mi_purge_budget_cutoff(&budget, pass, in_use);
}

/* Under the purge lock: claim up to `max` due pages (FREE_DIRTY -> PURGING),
   those due at or before `cutoff` too, drop segments with no dirty page left
   from the list, and lower *next_due to the earliest page not yet due. */
static size_t mi_purge_claim(const mi_purge_pass_t* pass, bool force, int64_t cutoff, int64_t* next_due,
                             mi_purge_item_t* items, size_t max) {
  size_t n = 0;
  mi_segment_t* segment = mi_purge_first;
  while (segment != NULL && n < max) {
    mi_segment_t* next = segment->purge_next;
    bool dirty_left = false;
    for (size_t i = 0; i < segment->page_count; i++) {
      mi_page_t* page = &segment->pages[i];
      uint32_t state = atomic_load_explicit(&page->state, memory_order_acquire);
      if (state != MI_PAGE_FREE_DIRTY) continue;
      int64_t due = atomic_load_explicit(&page->purge_at, memory_order_relaxed);
      if (n >= max) {
        dirty_left = true;
        if (due < *next_due) *next_due = due;
        continue;
      }
      if (!force && due > cutoff && !_mi_purge_pass_due(pass, due, next_due)) {
        dirty_left = true;
        continue;
      }
      if (atomic_compare_exchange_strong_explicit(&page->state, &state, MI_PAGE_PURGING, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
        items[n].segment = segment;
        items[n].page = page;
        n++;
      }
    }
    if (!dirty_left) mi_purge_list_remove(segment);
    segment = next;
  }
  return n;
}

/* Outside the lock: return the memory of claimed pages. A segment cannot be
   released while one of its pages is PURGING (see _mi_purge_unlink_segment). */
static size_t mi_purge_items(mi_purge_item_t* items, size_t n, int64_t now) {
  size_t failed = 0;
  for (size_t i = 0; i < n; i++) {
    mi_segment_t* segment = items[i].segment;
    mi_page_t* page = items[i].page;
    bool ok = true;
    int64_t purged_at = 0; /* nothing to return: no regret if it comes back */
    if (page->committed > 0) {
      uint8_t* start;
      size_t area = _mi_segment_page_area(segment, page->index, &start);
      ok = _mi_os_purge(start, area);
      if (ok) {
        _mi_stat_decrease(&_mi_stats.committed, (int64_t)page->committed);
        page->committed = 0;
        purged_at = now;
      }
    }
    if (ok) atomic_store_explicit(&page->purge_at, purged_at, memory_order_relaxed); /* purge-delay.c */
    if (!ok) {
      /* the OS refused: the memory stays committed and is tried again one
         delay later (not at once, which would spin while the OS refuses) */
      long delay = _mi_option_get_fast(mi_option_purge_delay);
      atomic_store_explicit(&page->purge_at, (delay < 0 ? INT64_MAX : now + (delay > 0 ? delay : 1)),
                            memory_order_relaxed);
      failed++; /* fault path */
    }
    if (ok) {
      atomic_store_explicit(&page->state, MI_PAGE_FREE_CLEAN, memory_order_release);
    } else {
#if MI_TEARDOWN_PLANT_PURGE_RACE
      /* test only (the positive control of tests/teardown): the old order,
         letting go of the page before listing its segment again; the owner
         may release the segment in between */
      atomic_store_explicit(&page->state, MI_PAGE_FREE_DIRTY, memory_order_release);
      mi_sched_point(MI_SCHED_PURGE_SETTLED);
      _mi_purge_track_segment(segment);
      continue;
#else
      /* list the segment again and let go of the page in one critical
         section: from the moment the page is not PURGING its owner may
         release the segment, which it does only after taking it off the
         list under this lock (_mi_purge_unlink_segment) */
      _mi_lock_acquire(&_mi_purge_lock);
      atomic_store_explicit(&page->state, MI_PAGE_FREE_DIRTY, memory_order_release);
      mi_purge_list_add(segment);
      _mi_lock_release(&_mi_purge_lock);
      _mi_background_due_after_delay();
#endif
    }
    mi_sched_point(MI_SCHED_PURGE_SETTLED); /* the segment may be gone from here */
  }
  return failed;
}

/* Purge everything that is due (everything with `force`). */
void _mi_purge_run(bool force) {
  int64_t now = mi_prim_clock_now();
  _mi_background_due_reset();
  mi_purge_pass_t pass;
  _mi_purge_pass_begin(&pass, now, _mi_option_get_fast(mi_option_purge_delay));
  mi_purge_item_t items[MI_PURGE_BATCH];
  int64_t cutoff = INT64_MIN;
  if (!force) {
    _mi_lock_acquire(&_mi_purge_lock);
    cutoff = mi_purge_budget_cutoff(&pass);
    _mi_lock_release(&_mi_purge_lock);
  }
  for (;;) {
    int64_t next_due = INT64_MAX;
    _mi_lock_acquire(&mi_purge_run_lock);
    _mi_lock_acquire(&_mi_purge_lock);
    size_t n = mi_purge_claim(&pass, force, cutoff, &next_due, items, MI_PURGE_BATCH);
    _mi_lock_release(&_mi_purge_lock);
    if (n > 0) mi_sched_point(MI_SCHED_PURGE_CLAIMED);
    if (next_due != INT64_MAX) _mi_background_due_at(next_due);
    size_t failed = (n > 0 ? mi_purge_items(items, n, now) : 0);
    _mi_lock_release(&mi_purge_run_lock);
    /* a refusal ends the run: a forced run would claim the same pages again */
    if (n == 0 || failed > 0) break;
  }
  _mi_lock_acquire(&mi_purge_run_lock);
  int64_t cache_next = _mi_segment_cache_purge(force, &pass);
  _mi_lock_release(&mi_purge_run_lock);
  if (cache_next != INT64_MAX) _mi_background_due_at(cache_next);
}
