/* The abandonment protocol (docs/teardown-protocol.md, its Promela model
   docs/teardown-protocol.pml): a thread that exits leaves its segments that
   still hold live blocks on the abandoned list; another thread claims one
   (on its slow path, at its first allocation, or by freeing into it) and
   adopts its pages, and the background thread's cleanup frees what became
   empty. Also the fork child's orphaning of other threads' segments. */
#include "page.h"

static mi_lock_t mi_abandoned_lock;
static mi_segment_t* mi_abandoned_first; /* under mi_abandoned_lock */
static _Atomic(size_t) mi_abandoned_count;

void _mi_segments_abandoned_init(void) {
  _mi_lock_init(&mi_abandoned_lock, MI_LOCK_SEGMENT_ABANDONED);
}

/* Some page of `segment` has blocks in use (as far as its owner has
   collected their frees): the segment outlives its thread's exit. */
bool _mi_segment_has_live_blocks(const mi_segment_t* segment) {
  size_t left = segment->used_pages; /* pages in use: the walk stops at the last */
  for (size_t i = 0; left > 0 && i < _mi_segment_pages(segment); i++) {
    const mi_page_t* page = &segment->pages[i];
    if (atomic_load_explicit(&page->state, memory_order_relaxed) != MI_PAGE_IN_USE) continue;
    if (page->used > 0) return true;
    left--;
  }
  return false;
}

/* The segment becomes ABANDONED in the critical section that lists it, so
   whoever wins a claim finds it on the list to take it off. */
static void mi_abandoned_push(mi_segment_t* segment) {
  mi_assert_internal(segment->tld == NULL);    /* its thread let go of it */
  mi_assert_internal(segment->used_pages > 0); /* an empty one is released instead */
  mi_assert_internal(atomic_load_explicit(&segment->thread_id, memory_order_relaxed) == 0);
  _mi_lock_acquire(&mi_abandoned_lock);
  segment->prev = NULL;
  segment->next = mi_abandoned_first;
  if (mi_abandoned_first != NULL) mi_abandoned_first->prev = segment;
  mi_abandoned_first = segment;
  atomic_fetch_add_explicit(&mi_abandoned_count, 1, memory_order_relaxed);
  _mi_owner_move(segment, MI_OWNER_OWNED, MI_OWNER_OWNED, MI_OWNER_ABANDONED);
  _mi_lock_release(&mi_abandoned_lock);
  _mi_stat_increase(&_mi_stats.abandoned, 1);
}

/* Under mi_abandoned_lock: any listed segment, in O(1) (a claim on free
   takes its own segment from wherever it is on the list). */
static void mi_abandoned_unlink_locked(mi_segment_t* segment) {
  mi_lock_assert_held(&mi_abandoned_lock);
  /* only the claimer unlinks: the word says CLAIMED, and the segment is listed */
  mi_assert_internal(_mi_owner_state_of(atomic_load_explicit(&segment->owner, memory_order_relaxed)) ==
                     MI_OWNER_CLAIMED);
  mi_assert_internal(segment->prev != NULL || mi_abandoned_first == segment);
  mi_assert_internal(atomic_load_explicit(&mi_abandoned_count, memory_order_relaxed) > 0);
  if (segment->prev != NULL) segment->prev->next = segment->next;
  else mi_abandoned_first = segment->next;
  if (segment->next != NULL) segment->next->prev = segment->prev;
  segment->next = segment->prev = NULL;
  atomic_fetch_sub_explicit(&mi_abandoned_count, 1, memory_order_relaxed);
}

/* Claim one abandoned segment for `tld`: the first on the list whose owner
   word this thread moves ABANDONED -> CLAIMED. A segment whose CAS fails was
   claimed by a freeing thread that has not yet taken the lock to unlink it:
   it is skipped, and its claimer unlinks it. Off the list and onto the
   claimer's in one critical section, so a fork finds it on one of the two.
   Only of `kind` if it is not MI_SEGMENT_ANY_KIND. */
static mi_segment_t* mi_abandoned_claim(mi_tld_t* tld, int kind) {
  if (atomic_load_explicit(&mi_abandoned_count, memory_order_relaxed) == 0) return NULL;
  _mi_lock_acquire(&mi_abandoned_lock);
  mi_segment_t* segment = mi_abandoned_first;
  for (; segment != NULL; segment = segment->next) {
    if (kind != MI_SEGMENT_ANY_KIND && segment->kind != (mi_segment_kind_t)kind) continue;
    uint64_t word = atomic_load_explicit(&segment->owner, memory_order_acquire);
    if (_mi_owner_state_of(word) == MI_OWNER_ABANDONED && _mi_owner_cas(segment, word, MI_OWNER_CLAIMED)) {
      mi_abandoned_unlink_locked(segment);
      _mi_tld_segment_add(tld, segment);
      break;
    }
  }
  _mi_lock_release(&mi_abandoned_lock);
  if (segment != NULL) {
    _mi_stat_decrease(&_mi_stats.abandoned, 1);
    atomic_fetch_add_explicit(&_mi_stats.reclaimed, 1, memory_order_relaxed);
  }
  return segment;
}

/* The thread of `tld` is exiting: its heaps' pages have been collected and the
   empty ones freed; segments that still hold live blocks are abandoned, and
   frees into them keep landing on the pages' atomic lists. */
void _mi_segments_abandon(mi_tld_t* tld) {
  while (tld->segments != NULL) {
    mi_segment_t* segment = tld->segments;
    mi_assert_internal(segment->tld == tld);
    _mi_tld_segment_remove(tld, segment);
    segment->tld = NULL;
    size_t left = segment->used_pages;
    for (size_t i = 0; left > 0 && i < _mi_segment_pages(segment); i++) {
      mi_page_t* page = &segment->pages[i];
      if (atomic_load_explicit(&page->state, memory_order_relaxed) != MI_PAGE_IN_USE) continue;
      left--;
      page->heap = NULL;
      page->next = page->prev = NULL;
      mi_page_flags_clear(page, MI_PAGE_FLAG_IN_FULL | MI_PAGE_FLAG_KEPT); /* its heap is gone */
    }
    if (segment->used_pages == 0) {
      _mi_purge_unlink_segment(segment);
      _mi_segment_release(segment);
    } else {
      atomic_store_explicit(&segment->thread_id, 0, memory_order_release);
      mi_abandoned_push(segment);
      mi_sched_point(MI_SCHED_ABANDON_PUSHED); /* from here a claimer may own it */
    }
  }
}

/* Fork child: `tld` belongs to a thread the child does not have. fork()
   copies the address space page by page while the other threads run on, so
   what the child sees of that thread's pages (free list, used count,
   cross-thread list, state) may mix moments and cannot be trusted: its
   segments are orphaned, never adopted. Their owner becomes
   MI_THREAD_ID_ORPHAN, which no thread has, so a free of one of their blocks
   takes the cross-thread path and touches only the page's atomic list, and
   a thread the child creates on the stack (and so with the thread id) of a
   parent thread that is gone does not take them for its own. The memory
   stays with the child (copy-on-write: shared with the parent until
   written). The walk is bounded and checks every segment against the
   segment map and its cookie, for the same reason. */
void _mi_segments_orphan_in_fork_child(mi_tld_t* tld) {
  mi_segment_t* segment = tld->segments;
  for (size_t n = 0; segment != NULL && n < ((size_t)1 << 20); n++) {
    if (!_mi_segment_map_contains(segment) || segment->cookie != ((uintptr_t)segment ^ _mi_process_key)) break;
    mi_segment_t* next = segment->next;
    atomic_store_explicit(&segment->thread_id, MI_THREAD_ID_ORPHAN, memory_order_relaxed);
    atomic_store_explicit(&segment->owner, _mi_owner_word(MI_OWNER_ORPHAN), memory_order_relaxed);
    segment->tld = NULL;
    /* its heaps' slots are freed and may come back as a new thread's heap,
       which must not take these pages for its own (mi_heap_contains_block) */
    for (size_t i = 0; i < segment->page_count && i < MI_SMALL_PAGES_PER_SEGMENT; i++) segment->pages[i].heap = NULL;
    segment->next = segment->prev = NULL;
    segment->free_next = segment->free_prev = NULL;
    segment = next;
  }
  tld->segments = NULL;
  tld->free_segments[0] = tld->free_segments[1] = NULL;
}

/* A claimed segment, now on `heap`'s thread's list: collect its pages' frees
   and give `heap` its pages. With `keep_empty` (see _mi_segments_take_over)
   an empty small page is kept too, carved free list and all, when `heap` has
   no page of its size yet (flagged, so the heap's heartbeat gives it back if
   it stays empty); other empty pages are freed. True if that released the
   segment (all its pages were freed). */
static bool mi_segment_adopt(mi_heap_t* heap, mi_segment_t* segment, bool keep_empty) {
  mi_sched_point(MI_SCHED_RECLAIM_CLAIMED);
  size_t left = segment->used_pages; /* pages in use (only the holder changes it): the walk stops at the last */
  for (size_t i = 0; left > 0 && i < _mi_segment_pages(segment); i++) {
    mi_page_t* page = &segment->pages[i];
    if (atomic_load_explicit(&page->state, memory_order_relaxed) != MI_PAGE_IN_USE) continue;
    left--;
    _mi_page_collect(page);
    /* an exited thread's sample page becomes a page of its size: its live
       samples keep the sampler's flag (MI_PAGE_FLAG_SAMPLED) and its bits */
    mi_page_flags_clear(page, MI_PAGE_FLAG_SAMPLE_PAGE);
    mi_page_queue_t* pq = &heap->pages[page->bin];
    if (page->used == 0) {
      if (!keep_empty || pq->last != NULL || page->bin > MI_BIN_SMALL_MAX) {
        bool released = (segment->used_pages == 1); /* freeing the last page releases the segment */
        _mi_segment_page_free(page);
        if (released) return true; /* the segment is gone: stop here */
        continue;
      }
      mi_page_flags_add(page, MI_PAGE_FLAG_KEPT);
      heap->has_kept = true;
    }
    page->heap = heap;
    heap->page_count++;
    if (page->free == NULL && page->capacity >= page->reserved) {
      mi_page_flags_add(page, MI_PAGE_FLAG_IN_FULL);
      _mi_page_queue_push(heap, &heap->pages[MI_BIN_FULL], page);
    } else {
      _mi_page_queue_push(heap, pq, page);
    }
  }
  return false;
}

/* Adopt up to `max` abandoned segments of `kind` (or any) into `heap`. */
static bool mi_segments_reclaim(mi_heap_t* heap, size_t max, int kind) {
  bool reclaimed = false;
  mi_segment_t* segment;
  for (size_t count = 0; count < max && (segment = mi_abandoned_claim(heap->tld, kind)) != NULL; count++) {
    reclaimed = true;
    mi_segment_adopt(heap, segment, false);
  }
  return reclaimed;
}

/* Adopt up to `max` abandoned segments of `kind` into `heap`: the page
   layer's last try before it asks for a new segment. */
bool _mi_segments_reclaim_kind(mi_heap_t* heap, size_t max, mi_segment_kind_t kind) {
  return mi_segments_reclaim(heap, max, (int)kind);
}

/* Adopt up to `max` abandoned segments into `heap` (all with `force`). */
bool _mi_segments_reclaim(mi_heap_t* heap, size_t max, bool force) {
  return mi_segments_reclaim(heap, (force ? SIZE_MAX : max), MI_SEGMENT_ANY_KIND);
}

/* A heap's first page, once (a thread's first allocation): if it is a
   backing heap with no page yet while other threads have exited, adopt
   their segments of the kind that holds pages of `bin`, one at a time until
   the heap holds a page (one each for threads that start together), and
   keep their empty small pages ready, one per size. A thread that starts as
   another exits then takes over pages with their free lists carved instead
   of setting up fresh ones (in secure builds each costs keys, a bitmap and
   a shuffled carve). Those it does not use go back at its heap's next
   periodic heartbeat (mi_heap_free_kept). */
void _mi_segments_take_over(mi_heap_t* heap, size_t bin) {
  heap->took_over = true;
  if (heap != heap->tld->heap_backing) return;
  while (heap->page_count == 0) {
    mi_segment_t* segment = mi_abandoned_claim(heap->tld, _mi_segment_kind_of_bin(bin));
    if (segment == NULL) return;
    mi_segment_adopt(heap, segment, true);
  }
}

/* Reclaim on free (mi_option_abandoned_reclaim_on_free): the calling thread
   is freeing a block into `segment`, which belongs to no thread. If the
   segment is abandoned, claim it without the lock by one CAS from the owner
   word as read; then take it off the abandoned list and adopt it. True: the
   caller owns the segment now and frees its block locally. False: not
   abandoned, or the claim lost (someone else moved the word since it was
   read): the caller pushes the block as any cross-thread free. The block
   being freed is counted in its page, so the segment stays mapped and
   cannot be released before the CAS; the generation is what makes a CAS on
   an observation that has since gone stale fail, whatever the state came
   back to. */
bool _mi_segment_claim_on_free(mi_segment_t* segment) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap) || heap->tld->exiting) return false;
  uint64_t word = atomic_load_explicit(&segment->owner, memory_order_acquire);
  if (_mi_owner_state_of(word) != MI_OWNER_ABANDONED) return false;
  mi_sched_point(MI_SCHED_FREE_CLAIM_READ);
#if MI_TEARDOWN_PLANT_SKIP_TAG
  /* test only: compare the state alone, as if the word had no generation */
  uint64_t now = atomic_load_explicit(&segment->owner, memory_order_acquire);
  if (_mi_owner_state_of(now) == _mi_owner_state_of(word)) word = now;
#endif
  if (!_mi_owner_cas(segment, word, MI_OWNER_CLAIMED)) return false;
  mi_sched_point(MI_SCHED_FREE_CLAIMED); /* listed but CLAIMED: claimers under the lock pass it by */
  mi_tld_t* tld = heap->tld;
  _mi_lock_acquire(&mi_abandoned_lock);
  mi_abandoned_unlink_locked(segment); /* ABANDONED meant listed, and only the claimer unlinks a CLAIMED one */
  _mi_tld_segment_add(tld, segment);
  mi_assert_internal(segment->tld == tld && segment->next != segment);
  _mi_lock_release(&mi_abandoned_lock);
  _mi_stat_decrease(&_mi_stats.abandoned, 1);
  atomic_fetch_add_explicit(&_mi_stats.reclaimed, 1, memory_order_relaxed);
  mi_segment_adopt(tld->heap_backing, segment, false); /* never releases it: the caller's block keeps a page in use */
  return true;
}

/* Fork child: a segment CLAIMED on the abandoned list was claimed on free by
   a thread the child does not have, between its CAS and its unlink; nothing
   of it was touched yet, so it goes back to ABANDONED for others to claim. */
void _mi_segments_abandoned_fork_child(void) {
  _mi_lock_acquire(&mi_abandoned_lock);
  for (mi_segment_t* segment = mi_abandoned_first; segment != NULL; segment = segment->next) {
    uint64_t word = atomic_load_explicit(&segment->owner, memory_order_relaxed);
    if (_mi_owner_state_of(word) == MI_OWNER_CLAIMED) _mi_owner_cas(segment, word, MI_OWNER_ABANDONED);
  }
  _mi_lock_release(&mi_abandoned_lock);
}

/* For the background thread: release abandoned segments whose blocks have all been
   freed since, without adopting the others, whose pages still in use have
   their holes swept (hole purge, holes.c: their thread is gone, so they are
   idle; `full`: pages unchanged since the last sweep too). The list is
   walked under its lock (the page and segment releases take only locks of
   higher rank), so a fork never finds a segment on neither list. */
void _mi_segments_abandoned_sweep(bool full) {
  if (atomic_load_explicit(&mi_abandoned_count, memory_order_relaxed) == 0) return;
  const bool holes = (mi_option_is_enabled(mi_option_purge_holes) && mi_option_get(mi_option_purge_delay) >= 0);
  const bool eager_zero = mi_option_is_enabled(mi_option_purge_holes_eager_zero);
  size_t released = 0;
  _mi_lock_acquire(&mi_abandoned_lock);
  mi_segment_t* segment = mi_abandoned_first;
  while (segment != NULL) {
    mi_segment_t* next = segment->next;
    /* the walk holds each segment CLAIMED, so a claim on free cannot take it
       meanwhile (and one that read it before fails on the generation) */
    uint64_t word = atomic_load_explicit(&segment->owner, memory_order_acquire);
    if (_mi_owner_state_of(word) != MI_OWNER_ABANDONED || !_mi_owner_cas(segment, word, MI_OWNER_CLAIMED)) {
      segment = next; /* claimed on free: its claimer unlinks it */
      continue;
    }
    size_t left = segment->used_pages;
    for (size_t i = 0; left > 0 && i < _mi_segment_pages(segment); i++) {
      mi_page_t* page = &segment->pages[i];
      if (atomic_load_explicit(&page->state, memory_order_relaxed) != MI_PAGE_IN_USE) continue;
      left--;
      _mi_page_collect(page);
      if (page->used == 0) {
        _mi_segment_page_free(page); /* its memory is purged in time */
      } else if (holes) {
        (void)_mi_page_holes_sweep(page, full, eager_zero);
      }
    }
    if (segment->used_pages == 0) {
      mi_abandoned_unlink_locked(segment);
      released++;
      _mi_purge_unlink_segment(segment);
      _mi_segment_release(segment);
    } else {
      _mi_owner_move(segment, MI_OWNER_CLAIMED, MI_OWNER_CLAIMED, MI_OWNER_ABANDONED);
    }
    segment = next;
  }
  _mi_lock_release(&mi_abandoned_lock);
  if (released > 0) _mi_stat_decrease(&_mi_stats.abandoned, (int64_t)released);
}

void _mi_segments_abandoned_cleanup(void) {
  _mi_segments_abandoned_sweep(false);
}

/* mi_abandoned_visit_blocks: `fn` on every page in use of the listed
   segments, each held CLAIMED meanwhile as the cleanup walk holds it, so
   that neither a claim on free nor a claimer's adoption changes its pages
   under the visitor. The list's lock is held throughout (a segment off the
   list would be lost to a fork): `fn` must neither allocate nor free. */
bool _mi_segments_abandoned_visit(bool (*fn)(mi_page_t* page, void* arg), void* arg) {
  bool go_on = true;
  _mi_lock_acquire(&mi_abandoned_lock);
  for (mi_segment_t* segment = mi_abandoned_first; segment != NULL && go_on; segment = segment->next) {
    uint64_t word = atomic_load_explicit(&segment->owner, memory_order_acquire);
    if (_mi_owner_state_of(word) != MI_OWNER_ABANDONED || !_mi_owner_cas(segment, word, MI_OWNER_CLAIMED)) {
      continue; /* claimed on free: no longer abandoned */
    }
    size_t left = segment->used_pages;
    for (size_t i = 0; go_on && left > 0 && i < _mi_segment_pages(segment); i++) {
      mi_page_t* page = &segment->pages[i];
      if (atomic_load_explicit(&page->state, memory_order_relaxed) != MI_PAGE_IN_USE) continue;
      left--;
      go_on = fn(page, arg);
    }
    _mi_owner_move(segment, MI_OWNER_CLAIMED, MI_OWNER_CLAIMED, MI_OWNER_ABANDONED);
  }
  _mi_lock_release(&mi_abandoned_lock);
  return go_on;
}
