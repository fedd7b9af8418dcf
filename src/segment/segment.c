/* Segments: 4 MiB-aligned spans that hold the pages of one thread (small and
   medium segments) or a single large or huge block. Also the abandoned list
   (segments of exited threads that still hold live blocks) and the list of
   large and huge blocks. */
#include "segment.h"
/* Above its floor until the abandonment protocol moves up a layer (issue 20,
   part 3): a page's set-up and a reclaimed segment's pages put into a heap's
   queues are the page layer's work (ci/layers.txt lists the exception). */
#include "../page/page.h"
#include "../dhat/hooks.h"

static mi_lock_t mi_abandoned_lock;
static mi_segment_t* mi_abandoned_first; /* under mi_abandoned_lock */
static _Atomic(size_t) mi_abandoned_count;

static mi_lock_t mi_single_lock;
static mi_page_t* mi_single_orphans; /* large/huge blocks whose thread has exited */

void _mi_segments_init(void) {
  _mi_lock_init(&mi_abandoned_lock, MI_LOCK_SEGMENT_ABANDONED);
  _mi_lock_init(&mi_single_lock, MI_LOCK_SINGLE);
  _mi_segment_cache_init();
}

/* Bytes before page 0's blocks: the header, and in secure builds a guard
   page between the header and the blocks. */
static size_t mi_segment_info_size(void) {
  return _mi_align_up(sizeof(mi_segment_t), _mi_os_page_size()) + (MI_SECURE ? _mi_os_page_size() : 0);
}

/* The block area of page `idx` of a small or medium segment; in secure
   builds each page ends with a guard page that is not part of it. */
size_t _mi_segment_page_area(const mi_segment_t* segment, size_t idx, uint8_t** start) {
  size_t psize = (size_t)1 << segment->page_shift;
  uint8_t* p = (uint8_t*)segment + idx * psize;
  size_t area = psize - (MI_SECURE ? _mi_os_page_size() : 0);
  if (idx == 0) {
    p += segment->info_size;
    area -= segment->info_size;
  }
  if (start != NULL) *start = p;
  return area;
}

/* The segment's page count, for a walk of its page table: in secure builds
   a count written over is reported, not walked past. */
static size_t mi_segment_pages(const mi_segment_t* segment) {
#if MI_SECURE
  size_t expected = (segment->kind == MI_SEGMENT_SMALL    ? MI_SMALL_PAGES_PER_SEGMENT
                     : segment->kind == MI_SEGMENT_MEDIUM ? MI_MEDIUM_PAGES_PER_SEGMENT
                                                          : 1);
  if (mi_unlikely(segment->page_count != expected)) _mi_secure_corrupted_header(segment);
#endif
  return segment->page_count;
}

/* ---- The owner word ----------------------------------------------------------- */

/* Generations come from one counter for the whole process, not from the
   segment: a segment unmapped and mapped again at the same address (the
   header gone) must not start over at a generation a thread may still hold
   from the old one. 61 bits do not wrap in the life of a process. */
static _Atomic(uint64_t) mi_owner_generation;

static uint64_t mi_owner_word(mi_owner_state_t state) {
  uint64_t gen = atomic_fetch_add_explicit(&mi_owner_generation, 1, memory_order_relaxed) + 1;
  return (gen << MI_OWNER_STATE_BITS) | (uint64_t)state;
}

static mi_owner_state_t mi_owner_state_of(uint64_t word) {
  return (mi_owner_state_t)(word & MI_OWNER_STATE_MASK);
}

/* The one step every owner transition takes: from the word as observed to
   `state` with a new generation. Fails if any transition happened since the
   observation, even one that came back to the same state. */
static bool mi_owner_cas(mi_segment_t* segment, uint64_t observed, mi_owner_state_t state) {
  return atomic_compare_exchange_strong_explicit(&segment->owner, &observed, mi_owner_word(state), memory_order_acq_rel,
                                                 memory_order_acquire);
}

/* A transition only the current holder may make (owner, claimer, or the
   cleanup under the abandoned lock): nobody else can move the word from
   `from`, so the CAS cannot fail unless the protocol is broken. */
static void mi_owner_move(mi_segment_t* segment, mi_owner_state_t from, mi_owner_state_t to) {
  uint64_t word = atomic_load_explicit(&segment->owner, memory_order_relaxed);
  mi_assert_internal(mi_owner_state_of(word) == from);
  (void)from;
  bool ok = mi_owner_cas(segment, word, to);
  mi_assert_internal(ok);
  (void)ok;
}

/* ---- Segment set-up and release ------------------------------------------ */

static void mi_segment_init_header(mi_segment_t* segment, mi_segment_kind_t kind, size_t segment_size) {
  segment->cookie = (uintptr_t)segment ^ _mi_process_key;
  segment->segment_size = segment_size;
  segment->kind = (uint8_t)kind;
  segment->info_size = mi_segment_info_size();
  if (kind == MI_SEGMENT_SINGLE) {
    segment->page_shift = 63;
    segment->page_count = 1;
  } else {
    segment->page_shift = (kind == MI_SEGMENT_SMALL ? MI_SMALL_PAGE_SHIFT : MI_MEDIUM_PAGE_SHIFT);
    segment->page_count = (uint32_t)(MI_SEGMENT_SIZE >> segment->page_shift);
  }
  segment->used_pages = 0;
  segment->in_purge_list = 0;
  segment->thp_hinted = 0;
  segment->thp_probe = 0;
  atomic_store_explicit(&segment->owner, mi_owner_word(MI_OWNER_RELEASED), memory_order_relaxed);
  segment->next = segment->prev = NULL;
  segment->free_next = segment->free_prev = NULL;
  segment->purge_next = segment->purge_prev = NULL;
  for (size_t i = 0; i < segment->page_count; i++) {
    mi_page_t* page = &segment->pages[i];
    memset(page, 0, sizeof(*page));
    page->index = (uint8_t)i;
    atomic_store_explicit(&page->state, MI_PAGE_FREE_CLEAN, memory_order_relaxed);
  }
}

#if MI_SECURE
/* Guard pages: one between the header and the blocks, and one at the end of
   every page of a small or medium segment, so a linear overflow off the end
   of a span of blocks faults instead of running into the next span or the
   metadata. A failure to protect is reported and the segment not used. */
static bool mi_segment_protect_guards(mi_segment_t* segment) {
  size_t psize = _mi_os_page_size();
  int err = _mi_os_protect((uint8_t*)segment + segment->info_size - psize, psize, true);
  for (size_t i = 0; err == 0 && segment->kind != MI_SEGMENT_SINGLE && i < segment->page_count; i++) {
    uint8_t* start;
    size_t area = _mi_segment_page_area(segment, i, &start);
    err = _mi_os_protect(start + area, psize, true);
  }
  if (err != 0) {
    _mi_error_message(err, "unable to protect the guard pages of segment %p\n", (void*)segment); /* fault path */
  }
  return (err == 0);
}
#endif

static void mi_segment_unmap(mi_segment_t* segment) {
  _mi_stat_decrease(&_mi_stats.committed, _mi_segment_committed(segment));
  _mi_stat_decrease(&_mi_stats.segments, 1);
  size_t size = segment->segment_size;
  _mi_segment_map_set(segment, size, false);
#if MI_SECURE
  _mi_secure_segment_unmapped(segment, size); /* a later free into it is a double free */
#endif
  /* an arena hands the range out again, maybe to small segments (os-thp.c) */
  if (segment->thp_hinted && _mi_arena_contains(segment)) _mi_os_hint_huge_pages(segment, size, false);
  /* whoever maps this range next must not inherit our poisoned blocks (the
     header is not read after this: memcheck would see it as undefined) */
  mi_track_mem_undefined(segment, size);
#if MI_DHAT
  _mi_dhat_segment_unmapped(segment); /* the profiler's records kept beside it */
#endif
  if (!_mi_arena_free(segment, size)) _mi_os_free(segment, size);
}

/* A segment of `kind`: a cached one of the same kind keeps its page states
   (and their committed memory), otherwise the header is laid out anew. */
/* `want`: about how many bytes of it the caller will touch (0: unknown) */
static mi_segment_t* mi_segment_alloc(mi_segment_kind_t kind, size_t segment_size, size_t want) {
  mi_segment_t* segment = NULL;
  if (segment_size <= MI_LARGE_SEGMENT_MAX) segment = _mi_segment_cache_pop(kind, segment_size, want);
  if (segment != NULL) {
    if (segment->kind == (uint8_t)kind && segment->cookie == ((uintptr_t)segment ^ _mi_process_key)) {
      /* dirty segment of the same kind: header and page states are valid */
      if (kind != MI_SEGMENT_SINGLE) _mi_purge_track_segment(segment);
      return segment;
    }
    /* a purged segment reads as zero: its header is gone (its guard pages,
       if any, are where this kind wants them: the cache matches kinds) */
    mi_segment_init_header(segment, kind, segment_size);
    _mi_stat_increase(&_mi_stats.committed, (int64_t)segment->info_size);
    return segment;
  }
  /* an arena first (if any were reserved), else the OS */
  bool is_pinned = false;
  segment = (mi_segment_t*)_mi_arena_alloc(segment_size, &is_pinned);
  if (segment == NULL) {
    bool allow_large = mi_option_is_enabled(mi_option_allow_large_os_pages);
    segment = (mi_segment_t*)_mi_os_alloc_aligned(segment_size, MI_SEGMENT_SIZE, true, allow_large, &is_pinned);
  }
  if (segment == NULL) return NULL;
  if (!_mi_segment_map_set(segment, segment_size, true)) {
    if (!_mi_arena_free(segment, segment_size)) _mi_os_free(segment, segment_size); /* fault path */
    return NULL;
  }
  _mi_stat_increase(&_mi_stats.segments, 1);
  mi_segment_init_header(segment, kind, segment_size);
  segment->is_pinned = is_pinned;
  _mi_stat_increase(&_mi_stats.committed, (int64_t)segment->info_size);
#if MI_SECURE
  if (!mi_segment_protect_guards(segment)) {
    mi_segment_unmap(segment); /* fault path */
    return NULL;
  }
#endif
  return segment;
}

/* Bytes of the segment counted as committed: its header and its pages' areas. */
int64_t _mi_segment_committed(const mi_segment_t* segment) {
  int64_t committed = (int64_t)segment->info_size;
  for (size_t i = 0; i < mi_segment_pages(segment); i++) committed += (int64_t)segment->pages[i].committed;
  return committed;
}

/* Release a segment that holds no live block: to the cache if it is a
   standard one and the cache has room, else to the OS. */
static void mi_segment_release(mi_segment_t* segment) {
  atomic_store_explicit(&segment->thread_id, 0, memory_order_release);
  if (segment->kind != MI_SEGMENT_SINGLE) {
    /* by its owner, or by the cleanup holding it claimed */
    uint64_t word = atomic_load_explicit(&segment->owner, memory_order_relaxed);
    mi_assert_internal(mi_owner_state_of(word) == MI_OWNER_OWNED || mi_owner_state_of(word) == MI_OWNER_CLAIMED);
    bool ok = mi_owner_cas(segment, word, MI_OWNER_RELEASED);
    mi_assert_internal(ok);
    (void)ok;
  }
  segment->tld = NULL;
  /* pinned segments skip the cache: its purge would fail on them, and their
     memory is better back in its arena */
  if (!segment->is_pinned && segment->segment_size <= MI_LARGE_SEGMENT_MAX && _mi_segment_cache_push(segment)) return;
  mi_segment_unmap(segment);
}

/* ---- Thread-owned segment lists --------------------------------------------- */

static void mi_tld_free_list_add(mi_tld_t* tld, mi_segment_t* segment) {
  mi_segment_t** head = &tld->free_segments[segment->kind];
  segment->free_prev = NULL;
  segment->free_next = *head;
  if (*head != NULL) (*head)->free_prev = segment;
  *head = segment;
}

static void mi_tld_free_list_remove(mi_tld_t* tld, mi_segment_t* segment) {
  mi_segment_t** head = &tld->free_segments[segment->kind];
  if (segment->free_prev != NULL) segment->free_prev->free_next = segment->free_next;
  else if (*head == segment) *head = segment->free_next;
  if (segment->free_next != NULL) segment->free_next->free_prev = segment->free_prev;
  segment->free_next = segment->free_prev = NULL;
}

static bool mi_tld_free_list_contains(mi_tld_t* tld, mi_segment_t* segment) {
  return (segment->free_prev != NULL || tld->free_segments[segment->kind] == segment);
}

/* New or cached (RELEASED), or just claimed (CLAIMED): the taker is its only
   holder either way. */
static void mi_tld_segment_add(mi_tld_t* tld, mi_segment_t* segment) {
  uint64_t word = atomic_load_explicit(&segment->owner, memory_order_relaxed);
  mi_assert_internal(mi_owner_state_of(word) == MI_OWNER_RELEASED || mi_owner_state_of(word) == MI_OWNER_CLAIMED);
  bool ok = mi_owner_cas(segment, word, MI_OWNER_OWNED);
  mi_assert_internal(ok);
  (void)ok;
  segment->tld = tld;
  segment->prev = NULL;
  segment->next = tld->segments;
  if (tld->segments != NULL) tld->segments->prev = segment;
  tld->segments = segment;
  atomic_store_explicit(&segment->thread_id, tld->thread_id, memory_order_release);
  if (segment->used_pages < segment->page_count) mi_tld_free_list_add(tld, segment);
}

static void mi_tld_segment_remove(mi_tld_t* tld, mi_segment_t* segment) {
  if (segment->prev != NULL) segment->prev->next = segment->next;
  else tld->segments = segment->next;
  if (segment->next != NULL) segment->next->prev = segment->prev;
  segment->next = segment->prev = NULL;
  if (mi_tld_free_list_contains(tld, segment)) mi_tld_free_list_remove(tld, segment);
}

/* ---- Pages ------------------------------------------------------------------------ */

/* A slot in use, or (secure builds) held: a destroyed heap's page whose
   blocks must not be handed out again yet (page.c). */
static inline bool mi_page_slot_taken(uint32_t state) {
  return (state == MI_PAGE_IN_USE || (MI_SECURE && state == MI_PAGE_HELD));
}

/* Take a free page slot for use. The purge thread may be returning its memory
   right now (PURGING): then wait for it to finish, which is short. */
static bool mi_page_claim_slot(mi_page_t* page, bool* was_clean) {
  for (;;) {
    uint32_t state = atomic_load_explicit(&page->state, memory_order_acquire);
    if (mi_page_slot_taken(state)) return false;
    if (state == MI_PAGE_PURGING) {
      mi_prim_yield();
      continue;
    }
    mi_sched_point(MI_SCHED_PAGE_CLAIM_SLOT);
    if (atomic_compare_exchange_weak_explicit(&page->state, &state, MI_PAGE_IN_USE, memory_order_acq_rel,
                                              memory_order_relaxed)) {
      *was_clean = (state == MI_PAGE_FREE_CLEAN);
      _mi_purge_note_taken();
      if (state == MI_PAGE_FREE_CLEAN) _mi_purge_reused(atomic_load_explicit(&page->purge_at, memory_order_relaxed));
      return true;
    }
  }
}

static mi_page_t* mi_segment_take_page(mi_segment_t* segment) {
  mi_page_t* clean = NULL;
  for (size_t i = 0; i < mi_segment_pages(segment); i++) {
    mi_page_t* page = &segment->pages[i];
    uint32_t state = atomic_load_explicit(&page->state, memory_order_relaxed);
    if (state == MI_PAGE_FREE_DIRTY) {
      bool was_clean;
      if (mi_page_claim_slot(page, &was_clean)) return page; /* prefer memory that is still committed */
      state = atomic_load_explicit(&page->state, memory_order_relaxed);
    }
    if (clean == NULL && !mi_page_slot_taken(state)) clean = page;
  }
  if (clean != NULL) {
    bool was_clean;
    if (mi_page_claim_slot(clean, &was_clean)) return clean;
  }
  return NULL;
}

static mi_page_t* mi_segment_page_setup(mi_heap_t* heap, mi_segment_t* segment, size_t bin) {
  mi_page_t* page = mi_segment_take_page(segment);
  if (page == NULL) return NULL;
  uint8_t* start;
  size_t area = _mi_segment_page_area(segment, page->index, &start);
#if MI_SECURE
  _mi_secure_page_init(heap, page, page->committed != 0, area / _mi_bin_size(bin));
#endif
  if (page->committed != area) {
    _mi_stat_increase(&_mi_stats.committed, (int64_t)(area - page->committed));
    page->committed = area;
  }
  page->start = start;
  segment->used_pages++;
  _mi_stat_increase(&_mi_stats.pages, 1);
  if (segment->used_pages == segment->page_count) mi_tld_free_list_remove(segment->tld, segment);
  _mi_page_init(heap, page, bin, area);
#if MI_SECURE
  _mi_secure_page_seal(page); /* free checks what it reads of the page against it */
#endif
  return page;
}

static bool mi_segments_reclaim(mi_heap_t* heap, size_t max, int kind);

static mi_segment_kind_t mi_segment_kind_of_bin(size_t bin) {
  return (bin <= MI_BIN_SMALL_MAX ? MI_SEGMENT_SMALL : MI_SEGMENT_MEDIUM);
}

mi_page_t* _mi_segment_page_alloc(mi_heap_t* heap, size_t bin) {
  mi_tld_t* tld = heap->tld;
  mi_segment_kind_t kind = mi_segment_kind_of_bin(bin);
  for (int attempt = 0; attempt < 3; attempt++) {
    mi_segment_t* segment = tld->free_segments[kind];
    if (segment != NULL) {
      mi_page_t* page = mi_segment_page_setup(heap, segment, bin);
      if (page != NULL) return page;
    }
    /* no free slot: adopt segments abandoned by exited threads before asking
       the OS (of this kind: another would give no slot for this page, and
       a thread starting alongside may want it) */
    if (attempt == 0 && atomic_load_explicit(&mi_abandoned_count, memory_order_relaxed) > 0 &&
        mi_segments_reclaim(tld->heap_backing, 2, (int)kind)) {
      continue;
    }
    segment = mi_segment_alloc(kind, MI_SEGMENT_SIZE, 0);
    if (segment == NULL) {
      return NULL; /* fault path */
    }
    mi_tld_segment_add(tld, segment);
  }
  return NULL;
}

/* A page's blocks are all back: return the slot to its segment and schedule
   its memory to go back to the OS after the purge delay. */
#if MI_SECURE
/* A segment of ours, or none: in the segment map (which is never read
   through a pointer) and with our cookie, before anything else of it is
   read. */
bool _mi_segment_ours_or_null(const mi_segment_t* segment) {
  return (segment == NULL || (((uintptr_t)segment & MI_SEGMENT_MASK) == 0 && _mi_segment_map_contains(segment) &&
                              segment->cookie == ((uintptr_t)segment ^ _mi_process_key)));
}

/* Freeing a page reads and writes what free did not: the page's blocks
   (their links are cleared), the segment's count of pages in use, its
   sizes (when it goes), its owner's thread data and its links in that
   thread's lists. Checked first: the page's geometry again, the segment's
   sizes against its kind, the count against the page table, the owner
   against the calling thread (only the owner frees its pages; the purge
   thread frees abandoned ones, which have none), and each link as a
   segment that links back. The purge links are checked where they are
   written, under the purge lock (purge.c). */
static void mi_segment_page_free_check(mi_segment_t* segment, mi_page_t* page) {
  _mi_secure_page_check(page);
  size_t shift = (segment->kind == MI_SEGMENT_SMALL ? MI_SMALL_PAGE_SHIFT : MI_MEDIUM_PAGE_SHIFT);
  bool ok = (segment->page_count == (MI_SEGMENT_SIZE >> shift) && segment->segment_size == MI_SEGMENT_SIZE &&
             segment->info_size == mi_segment_info_size() && segment->used_pages >= 1 &&
             segment->used_pages <= segment->page_count);
  mi_tld_t* tld = segment->tld;
  if (ok && tld != NULL) {
    mi_heap_t* heap = mi_get_default_heap();
    ok = (!mi_heap_is_initialized(heap) || heap->tld == tld);
  }
  if (ok && tld != NULL) {
    const mi_segment_t* prev = segment->prev;
    const mi_segment_t* next = segment->next;
    ok = (_mi_segment_ours_or_null(prev) && _mi_segment_ours_or_null(next) &&
          (prev == NULL ? tld->segments == segment : prev->next == segment) && (next == NULL || next->prev == segment));
    const mi_segment_t* free_prev = segment->free_prev;
    const mi_segment_t* free_next = segment->free_next;
    bool listed = (free_prev != NULL || tld->free_segments[segment->kind] == segment);
    ok = ok && _mi_segment_ours_or_null(free_prev) && _mi_segment_ours_or_null(free_next) &&
         (listed ? (free_prev == NULL || free_prev->free_next == segment) &&
                       (free_next == NULL || free_next->free_prev == segment)
                 : free_next == NULL);
  }
  if (!ok) _mi_secure_corrupted_header(segment);
}

/* The last page in use is going: no other slot may still be taken. */
static void mi_segment_empty_check(const mi_segment_t* segment) {
  for (size_t i = 0; i < segment->page_count; i++) {
    uint32_t state = atomic_load_explicit(&segment->pages[i].state, memory_order_relaxed);
    if (state == MI_PAGE_IN_USE || state == MI_PAGE_HELD) _mi_secure_corrupted_header(segment);
  }
}
#endif

void _mi_segment_page_free(mi_page_t* page) {
  mi_segment_t* segment = _mi_page_segment(page);
#if MI_SECURE
  mi_segment_page_free_check(segment, page);
  _mi_secure_page_freed(page);
#endif
  page->heap = NULL;
  page->free = NULL;
  page->used = 0;
  mi_page_flags_store(page, 0);
  page->next = page->prev = NULL;
  atomic_store_explicit(&page->xthread_free, NULL, memory_order_relaxed);
  segment->used_pages--;
  _mi_stat_decrease(&_mi_stats.pages, 1);
  _mi_purge_schedule_page(segment, page);
  mi_tld_t* tld = segment->tld;
  if (tld == NULL) return; /* abandoned: whoever holds it decides about the segment */
  if (segment->used_pages == 0) {
#if MI_SECURE
    mi_segment_empty_check(segment);
#endif
    mi_tld_segment_remove(tld, segment);
    _mi_purge_unlink_segment(segment);
    mi_segment_release(segment);
  } else if (!mi_tld_free_list_contains(tld, segment)) {
    mi_tld_free_list_add(tld, segment);
  }
}

#if MI_SECURE
/* A destroyed heap's page, held by its thread (page.c) until it is freed
   with _mi_segment_page_free: its slot stays taken and counted in the
   segment's pages in use, so neither the slot nor the segment is reused,
   while validation, finding it not in use, reports a pointer into its
   blocks as freed (it keeps its geometry for that). The purge thread
   takes FREE_DIRTY slots only: it leaves it alone. */
void _mi_segment_page_hold(mi_page_t* page) {
  page->heap = NULL;
  page->free = NULL;
  page->next = page->prev = NULL;
  mi_page_flags_store(page, 0);
  atomic_store_explicit(&page->state, MI_PAGE_HELD, memory_order_release);
}
#endif

/* ---- Abandoning and reclaiming ------------------------------------------------ */

/* Some page of `segment` has blocks in use (as far as its owner has
   collected their frees): the segment outlives its thread's exit. */
bool _mi_segment_has_live_blocks(const mi_segment_t* segment) {
  size_t left = segment->used_pages; /* pages in use: the walk stops at the last */
  for (size_t i = 0; left > 0 && i < mi_segment_pages(segment); i++) {
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
  _mi_lock_acquire(&mi_abandoned_lock);
  segment->prev = NULL;
  segment->next = mi_abandoned_first;
  if (mi_abandoned_first != NULL) mi_abandoned_first->prev = segment;
  mi_abandoned_first = segment;
  atomic_fetch_add_explicit(&mi_abandoned_count, 1, memory_order_relaxed);
  mi_owner_move(segment, MI_OWNER_OWNED, MI_OWNER_ABANDONED);
  _mi_lock_release(&mi_abandoned_lock);
  _mi_stat_increase(&_mi_stats.abandoned, 1);
}

/* Under mi_abandoned_lock: any listed segment, in O(1) (a claim on free
   takes its own segment from wherever it is on the list). */
static void mi_abandoned_unlink_locked(mi_segment_t* segment) {
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
    if (mi_owner_state_of(word) == MI_OWNER_ABANDONED && mi_owner_cas(segment, word, MI_OWNER_CLAIMED)) {
      mi_abandoned_unlink_locked(segment);
      mi_tld_segment_add(tld, segment);
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
    mi_tld_segment_remove(tld, segment);
    segment->tld = NULL;
    size_t left = segment->used_pages;
    for (size_t i = 0; left > 0 && i < mi_segment_pages(segment); i++) {
      mi_page_t* page = &segment->pages[i];
      if (atomic_load_explicit(&page->state, memory_order_relaxed) != MI_PAGE_IN_USE) continue;
      left--;
      page->heap = NULL;
      page->next = page->prev = NULL;
      mi_page_flags_clear(page, MI_PAGE_FLAG_IN_FULL | MI_PAGE_FLAG_KEPT); /* its heap is gone */
    }
    if (segment->used_pages == 0) {
      _mi_purge_unlink_segment(segment);
      mi_segment_release(segment);
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
    atomic_store_explicit(&segment->owner, mi_owner_word(MI_OWNER_ORPHAN), memory_order_relaxed);
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
  for (size_t i = 0; left > 0 && i < mi_segment_pages(segment); i++) {
    mi_page_t* page = &segment->pages[i];
    if (atomic_load_explicit(&page->state, memory_order_relaxed) != MI_PAGE_IN_USE) continue;
    left--;
    _mi_page_collect(page);
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
    mi_segment_t* segment = mi_abandoned_claim(heap->tld, mi_segment_kind_of_bin(bin));
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
  if (mi_owner_state_of(word) != MI_OWNER_ABANDONED) return false;
  mi_sched_point(MI_SCHED_FREE_CLAIM_READ);
#if MI_TEARDOWN_PLANT_SKIP_TAG
  /* test only: compare the state alone, as if the word had no generation */
  uint64_t now = atomic_load_explicit(&segment->owner, memory_order_acquire);
  if (mi_owner_state_of(now) == mi_owner_state_of(word)) word = now;
#endif
  if (!mi_owner_cas(segment, word, MI_OWNER_CLAIMED)) return false;
  mi_sched_point(MI_SCHED_FREE_CLAIMED); /* listed but CLAIMED: claimers under the lock pass it by */
  mi_tld_t* tld = heap->tld;
  _mi_lock_acquire(&mi_abandoned_lock);
  mi_abandoned_unlink_locked(segment); /* ABANDONED meant listed, and only the claimer unlinks a CLAIMED one */
  mi_tld_segment_add(tld, segment);
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
    if (mi_owner_state_of(word) == MI_OWNER_CLAIMED) mi_owner_cas(segment, word, MI_OWNER_ABANDONED);
  }
  _mi_lock_release(&mi_abandoned_lock);
}

/* For the purge thread: release abandoned segments whose blocks have all been
   freed since, without adopting the others. The list is walked under its
   lock (the page and segment releases take only locks of higher rank), so
   a fork never finds a segment on neither list. */
void _mi_segments_abandoned_cleanup(void) {
  if (atomic_load_explicit(&mi_abandoned_count, memory_order_relaxed) == 0) return;
  size_t released = 0;
  _mi_lock_acquire(&mi_abandoned_lock);
  mi_segment_t* segment = mi_abandoned_first;
  while (segment != NULL) {
    mi_segment_t* next = segment->next;
    /* the walk holds each segment CLAIMED, so a claim on free cannot take it
       meanwhile (and one that read it before fails on the generation) */
    uint64_t word = atomic_load_explicit(&segment->owner, memory_order_acquire);
    if (mi_owner_state_of(word) != MI_OWNER_ABANDONED || !mi_owner_cas(segment, word, MI_OWNER_CLAIMED)) {
      segment = next; /* claimed on free: its claimer unlinks it */
      continue;
    }
    size_t left = segment->used_pages;
    for (size_t i = 0; left > 0 && i < mi_segment_pages(segment); i++) {
      mi_page_t* page = &segment->pages[i];
      if (atomic_load_explicit(&page->state, memory_order_relaxed) != MI_PAGE_IN_USE) continue;
      left--;
      _mi_page_collect(page);
      if (page->used == 0) _mi_segment_page_free(page); /* its memory is purged in time */
    }
    if (segment->used_pages == 0) {
      mi_abandoned_unlink_locked(segment);
      released++;
      _mi_purge_unlink_segment(segment);
      mi_segment_release(segment);
    } else {
      mi_owner_move(segment, MI_OWNER_CLAIMED, MI_OWNER_ABANDONED);
    }
    segment = next;
  }
  _mi_lock_release(&mi_abandoned_lock);
  if (released > 0) _mi_stat_decrease(&_mi_stats.abandoned, (int64_t)released);
}

/* ---- Large and huge blocks ------------------------------------------------------ */
/* Each lives alone in its own segment. They belong to no thread: any thread
   frees one directly (large ones go to the segment cache, huge ones to the
   OS at once), so they are kept on their heap's list under one lock. */

#if MI_SECURE
/* A page's links are followed and written when it is unlinked (its block
   freed): links written over are reported, not followed. A neighbour must
   be the page of a single-block segment (in the segment map, with our
   cookie, before it is read) that links back; nothing tells a heap from
   other memory, so the page keeps a keyed copy of its heap pointer,
   checked before the heap is read. */
static uintptr_t mi_single_heap_check(const mi_page_t* page, const mi_heap_t* heap) {
  return (((uintptr_t)heap ^ _mi_process_key) * 0x9E3779B97F4A7C15ULL) ^ (uintptr_t)page;
}

static bool mi_single_page_at(const mi_page_t* q) {
  if (((uintptr_t)q & MI_SEGMENT_MASK) != offsetof(mi_segment_t, pages) || !_mi_segment_map_contains(q)) return false;
  const mi_segment_t* segment = _mi_page_segment(q);
  return (segment->cookie == ((uintptr_t)segment ^ _mi_process_key) && segment->kind == MI_SEGMENT_SINGLE);
}

static void mi_single_links_check(const mi_page_t* page, mi_page_t* const* head) {
  const mi_page_t* prev = page->prev;
  const mi_page_t* next = page->next;
  bool ok = (prev == NULL ? *head == page : mi_single_page_at(prev) && prev->next == page);
  if (ok && next != NULL) ok = (mi_single_page_at(next) && next->prev == page);
  if (!ok) _mi_secure_corrupted_header(_mi_page_segment(page));
}
#endif

static void mi_single_link(mi_heap_t* heap, mi_page_t* page) {
  page->heap = heap;
#if MI_SECURE
  page->heap_check = mi_single_heap_check(page, heap);
#endif
  page->prev = NULL;
  mi_page_t** head = (heap != NULL ? &heap->single_first : &mi_single_orphans);
  page->next = *head;
  if (*head != NULL) (*head)->prev = page;
  *head = page;
}

static void mi_single_unlink(mi_page_t* page) {
#if MI_SECURE
  /* the heap checked before it is read */
  if (page->heap_check != mi_single_heap_check(page, page->heap)) _mi_secure_corrupted_header(_mi_page_segment(page));
#endif
  mi_page_t** head = (page->heap != NULL ? &page->heap->single_first : &mi_single_orphans);
#if MI_SECURE
  mi_single_links_check(page, head);
#endif
  if (page->prev != NULL) page->prev->next = page->next;
  else *head = page->next;
  if (page->next != NULL) page->next->prev = page->prev;
  page->next = page->prev = NULL;
}

/* Huge pages for a large block's segment while the program's large blocks
   are used densely, or the block is a probe that measures it (os-thp.c).
   Only past one segment size: every block such a segment holds is more than
   MI_SEGMENT_SIZE - a page, so at most its last huge page is partly unused,
   where a 200 KiB block in a huge page would keep 2 MiB resident. */
static void mi_segment_thp_advise(mi_segment_t* segment, const mi_page_t* page, bool clean) {
  segment->thp_probe = 0;
  if (segment->is_pinned || segment->segment_size <= MI_SEGMENT_SIZE) return;
  mi_thp_use_t use = _mi_os_thp_decide(clean);
  bool want = (use == MI_THP_ASK);
  if (want != (segment->thp_hinted != 0)) {
    _mi_os_hint_huge_pages(segment, segment->segment_size, want);
    segment->thp_hinted = (uint8_t)want;
  }
  if (use != MI_THP_PROBE) return;
  size_t measured;
  segment->thp_resident = _mi_os_thp_resident(page->start, page->block_size, &measured);
  segment->thp_probe = (segment->thp_resident != SIZE_MAX);
}

/* A probe's block freed (its memory as the program left it). */
void _mi_segment_thp_measure(mi_segment_t* segment) {
  if (!segment->thp_probe) return;
  segment->thp_probe = 0;
  const mi_page_t* page = &segment->pages[0];
  size_t measured;
  size_t after = _mi_os_thp_resident(page->start, page->block_size, &measured);
  _mi_os_thp_note(segment->thp_resident, after, measured);
}

mi_page_t* _mi_segment_single_alloc(mi_heap_t* heap, size_t size, size_t alignment, bool zero) {
  size_t info = mi_segment_info_size();
  size_t psize = _mi_os_page_size();
  /* the block starts at the first `alignment` boundary after the header (the
     header is page aligned, so smaller alignments come for free); secure
     builds move it up to end at the guard page, and read `alignment` as how
     far into the block the caller will hand out a pointer */
  size_t offset = (alignment > psize && !MI_SECURE ? _mi_align_up(info, alignment) : info);
  if (size > MI_MAX_ALLOC_SIZE - offset - psize) return NULL;
  size_t needed = _mi_align_up(offset + size, psize);
  size_t guard = (MI_SECURE ? psize : 0); /* secure: a guard page right after the block */
  /* large segments come in whole multiples of the segment size so the cache
     can reuse them; huge ones are mapped to measure */
  size_t segment_size =
      (needed + guard <= MI_LARGE_SEGMENT_MAX ? _mi_align_up(needed + guard, MI_SEGMENT_SIZE) : needed + guard);
  mi_segment_t* segment = mi_segment_alloc(MI_SEGMENT_SINGLE, segment_size, info + needed - offset);
  if (segment == NULL) return NULL;
  mi_page_t* page = &segment->pages[0];
  bool was_clean = false;
  mi_page_claim_slot(page, &was_clean);
#if MI_SECURE
  /* The guard page is the segment's last page, so it stays put while the
     segment is cached and reused for blocks of other sizes (moving it cost two
     mprotect calls per large allocation), and the block runs up to it: a
     linear overflow off its end crosses the canary and the trailer and then
     faults. The memory a block may have touched is a suffix of the area, and
     `committed` counts that suffix. */
  size_t guard_at = segment_size - psize;
  /* the block starts on a page boundary: the slack before the guard (under
     a page) lets a realloc grow in place, as a left-aligned block could */
  size_t block_at = (guard_at - size) & ~(psize - 1);
  if (block_at < offset) block_at = offset;
  /* every pointer handed out from the block (an aligned one lies up to
     twice its alignment inside) must fall in the segment's first
     MI_SEGMENT_SIZE bytes, where _mi_ptr_segment finds the header */
  size_t reach = (alignment > MI_MAX_ALIGN_SIZE ? 2 * alignment : 0) + 2 * (size_t)MI_MAX_ALIGN_SIZE;
  size_t max_at =
      (MI_SEGMENT_SIZE > reach + offset ? (MI_SEGMENT_SIZE - reach) & ~(size_t)(MI_MAX_ALIGN_SIZE - 1) : offset);
  if (block_at > max_at) block_at = max_at;
  size_t area = guard_at - (block_at & ~(psize - 1));
  size_t block_end = guard_at;
#else
  size_t block_at = offset;
  size_t area = needed - info;
  size_t block_end = needed;
#endif
  bool is_zero = (was_clean || page->committed == 0);
  if (page->committed < area) {
    _mi_stat_increase(&_mi_stats.committed, (int64_t)(area - page->committed));
    page->committed = area;
  }
#if !MI_SECURE
  else {
    /* a larger cached segment (segment-cache.c) gives back what this block
       leaves of it, from a huge page boundary on (splitting none) */
    size_t huge = _mi_os_large_page_size();
    size_t keep = (huge != 0 ? _mi_align_up(info + area, huge) : _mi_align_up(info + area, psize)) - info;
    if (page->committed > keep && !segment->is_pinned &&
        _mi_os_purge((uint8_t*)segment + info + keep, page->committed - keep)) {
      _mi_stat_decrease(&_mi_stats.committed, (int64_t)(page->committed - keep));
      page->committed = keep;
    }
  }
#endif
#if MI_SECURE
  if (page->guard_offset != guard_at) {
    int err = 0;
    if (page->guard_offset != 0) err = _mi_os_protect((uint8_t*)segment + page->guard_offset, psize, false);
    if (err == 0) {
      page->guard_offset = 0;
      err = _mi_os_protect((uint8_t*)segment + guard_at, psize, true);
    }
    if (err != 0) {
      void* block = (uint8_t*)segment + block_at;
      _mi_error_message(err, "unable to protect the guard page after block %p\n", block); /* fault path */
      atomic_store_explicit(&page->state, MI_PAGE_FREE_DIRTY, memory_order_relaxed);
      mi_segment_unmap(segment);
      return NULL;
    }
    page->guard_offset = guard_at;
  }
#endif
  page->start = (uint8_t*)segment + block_at;
  page->block_size = block_end - block_at;
  mi_segment_thp_advise(segment, page, is_zero);
#if MI_SECURE
  page->block_size_inv = 0; /* its one block has index 0 whatever the offset */
  page->is_guarded = false; /* a reused segment must not inherit it: the sampling sets it after this */
  page->guarded_freed = false;
  page->large_fenced = false;
#endif
  page->reserved = 1;
  page->capacity = 1;
  page->used = 1;
  page->bin = MI_BIN_FULL;
  mi_page_flags_store(page, 0);
  page->free = NULL;
  atomic_store_explicit(&page->xthread_free, NULL, memory_order_relaxed);
  segment->used_pages = 1;
  atomic_store_explicit(&segment->thread_id, 0, memory_order_release);
  if (zero && !is_zero) {
    mi_track_mem_undefined(page->start, page->block_size);
    memset(page->start, 0, page->block_size);
  }
  _mi_stat_increase(&_mi_stats.large, 1);
  _mi_lock_acquire(&mi_single_lock);
  mi_single_link(heap, page);
  _mi_lock_release(&mi_single_lock);
  return page;
}

/* Take a freed large or huge block off its heap's list ... */
void _mi_segment_single_unlink(mi_segment_t* segment) {
  mi_page_t* page = &segment->pages[0];
  _mi_lock_acquire(&mi_single_lock);
  mi_single_unlink(page);
  page->heap = NULL;
  _mi_lock_release(&mi_single_lock);
  _mi_stat_decrease(&_mi_stats.large, 1);
}

void _mi_segment_single_free(mi_segment_t* segment) {
  _mi_segment_thp_measure(segment);
  _mi_segment_single_unlink(segment);
  _mi_segment_single_release(segment);
}

/* ... and give its segment back (to the cache or the OS). */
void _mi_segment_single_release(mi_segment_t* segment) {
  mi_page_t* page = &segment->pages[0];
  page->used = 0;
  segment->used_pages = 0;
  atomic_store_explicit(&page->state, MI_PAGE_FREE_DIRTY, memory_order_relaxed);
  mi_segment_release(segment);
}

/* Give a single-block segment straight back to the OS (or its arena),
   never to the cache: its block's memory cannot be trusted to be usable. */
void _mi_segment_single_discard(mi_segment_t* segment) {
  mi_page_t* page = &segment->pages[0];
  page->used = 0;
  segment->used_pages = 0;
  atomic_store_explicit(&page->state, MI_PAGE_FREE_DIRTY, memory_order_relaxed);
  atomic_store_explicit(&segment->thread_id, 0, memory_order_release);
  segment->tld = NULL;
  mi_segment_unmap(segment);
}

/* Grow or shrink a large block within its segment. */
bool _mi_segment_single_resize(mi_segment_t* segment, size_t newsize) {
  mi_page_t* page = &segment->pages[0];
  size_t psize = _mi_os_page_size();
  size_t offset = (size_t)(page->start - (uint8_t*)segment);
  if (newsize > segment->segment_size - offset) return false;
  size_t needed = _mi_align_up(offset + newsize, psize);
  size_t area = needed - segment->info_size;
  if (page->committed < area) {
    _mi_stat_increase(&_mi_stats.committed, (int64_t)(area - page->committed));
    page->committed = area;
  }
  page->block_size = needed - offset;
  segment->thp_probe = 0; /* what it measured was another size */
#if MI_SECURE
  _mi_secure_page_seal(page);
#endif
  return true;
}

void _mi_single_heap_delete(mi_heap_t* from, mi_heap_t* to) {
  _mi_lock_acquire(&mi_single_lock);
  while (from->single_first != NULL) {
    mi_page_t* page = from->single_first;
    mi_single_unlink(page);
    mi_single_link(to, page);
  }
  _mi_lock_release(&mi_single_lock);
}

void _mi_single_heap_destroy(mi_heap_t* heap) {
  for (;;) {
    _mi_lock_acquire(&mi_single_lock);
    mi_page_t* page = heap->single_first;
    _mi_lock_release(&mi_single_lock);
    if (page == NULL) break;
#if MI_DHAT
    if (mi_unlikely(mi_dhat_is_on())) _mi_dhat_record_page_gone(page); /* its block is freed */
#endif
#if MI_GUARDED
    if (page->is_guarded) {
      _mi_secure_guarded_destroyed(_mi_page_segment(page), page);
      continue;
    }
#endif
#if MI_SECURE
    _mi_secure_large_free(_mi_page_segment(page)); /* as free does: a stale use faults or is reported */
#else
    _mi_segment_single_free(_mi_page_segment(page));
#endif
  }
}

bool _mi_single_visit(const mi_heap_t* heap, bool (*fn)(mi_page_t* page, void* arg), void* arg) {
  _mi_lock_acquire(&mi_single_lock);
  bool ok = true;
  for (mi_page_t* page = heap->single_first; page != NULL && ok; page = page->next) ok = fn(page, arg);
  _mi_lock_release(&mi_single_lock);
  return ok;
}
