/* Segments: their life. 4 MiB-aligned spans that hold the pages of one
   thread (small and medium segments) or a single large or huge block: the
   header and its owner word, mapping and unmapping, the thread's lists of
   its segments, page slots taken and freed. The segments of one large or
   huge block are in single.c; the abandonment protocol, which hands
   segments between threads and their pages between heaps, is a layer up
   (page/abandon.c). */
#include "segment.h"

void _mi_segments_init(void) {
  _mi_segments_single_init();
  _mi_segment_cache_init();
}

/* Bytes before page 0's blocks: the header, and in secure builds a guard
   page between the header and the blocks. */
size_t _mi_segment_info_size(void) {
  size_t info = _mi_align_up(sizeof(mi_segment_t), _mi_os_page_size()) + (MI_SECURE ? _mi_os_page_size() : 0);
  mi_assert_internal(info >= MI_SEGMENT_HEADER_MIN); /* _mi_block_segment relies on it */
  return info;
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
size_t _mi_segment_pages(const mi_segment_t* segment) {
  if (MI_SECURE) {
    size_t expected = (segment->kind == MI_SEGMENT_SMALL    ? MI_SMALL_PAGES_PER_SEGMENT
                       : segment->kind == MI_SEGMENT_MEDIUM ? MI_MEDIUM_PAGES_PER_SEGMENT
                                                            : 1);
    if (mi_unlikely(segment->page_count != expected)) _mi_secure_corrupted_header(segment);
  }
  return segment->page_count;
}

/* ---- The owner word ----------------------------------------------------------- */

/* Generations come from one counter for the whole process, not from the
   segment: a segment unmapped and mapped again at the same address (the
   header gone) must not start over at a generation a thread may still hold
   from the old one. 61 bits do not wrap in the life of a process. */
static _Atomic(uint64_t) mi_owner_generation;

uint64_t _mi_owner_word(mi_owner_state_t state) {
  uint64_t gen = atomic_fetch_add_explicit(&mi_owner_generation, 1, memory_order_relaxed) + 1;
  return (gen << MI_OWNER_STATE_BITS) | (uint64_t)state;
}

/* The one step every owner transition takes: from the word as observed to
   `state` with a new generation. Fails if any transition happened since the
   observation, even one that came back to the same state. */
bool _mi_owner_cas(mi_segment_t* segment, uint64_t observed, mi_owner_state_t state) {
  return atomic_compare_exchange_strong_explicit(&segment->owner, &observed, _mi_owner_word(state),
                                                 memory_order_acq_rel, memory_order_acquire);
}

/* A transition only the current holder may make (owner, claimer, or the
   cleanup under the abandoned lock): nobody else can move the word from
   `from` (or `from_too`), so the CAS cannot fail unless the protocol is
   broken. */
void _mi_owner_move(mi_segment_t* segment, mi_owner_state_t from, mi_owner_state_t from_too, mi_owner_state_t to) {
  uint64_t word = atomic_load_explicit(&segment->owner, memory_order_relaxed);
  mi_assert_internal(_mi_owner_state_of(word) == from || _mi_owner_state_of(word) == from_too);
  (void)from, (void)from_too;
  bool ok = _mi_owner_cas(segment, word, to);
  mi_assert_internal(ok);
  (void)ok;
}

/* ---- Segment set-up and release ------------------------------------------ */

static void mi_segment_init_header(mi_segment_t* segment, mi_segment_kind_t kind, size_t segment_size) {
  segment->cookie = (uintptr_t)segment ^ _mi_process_key;
  segment->segment_size = segment_size;
  segment->kind = (uint8_t)kind;
  segment->info_size = _mi_segment_info_size();
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
  segment->is_sparse = 0;
  atomic_store_explicit(&segment->owner, _mi_owner_word(MI_OWNER_RELEASED), memory_order_relaxed);
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

/* What the segment's address range is given back to: its arena, or the OS.
   The bytes the OS took back (0: arena memory, or refused). */
static size_t mi_segment_range_free(mi_segment_t* segment, size_t size) {
  _mi_stat_decrease(&_mi_stats.segments, 1);
  _mi_segment_map_set(segment, size, false);
  /* whoever maps this range next must not inherit our poisoned blocks (the
     header is not read after this: memcheck would see it as undefined) */
  mi_track_mem_undefined(segment, size);
  _mi_raise_segment_unmapped(segment, size);
  if (_mi_arena_free(segment, size)) return 0;
  return (_mi_os_free(segment, size) ? size : 0);
}

size_t _mi_segment_unmap(mi_segment_t* segment) {
  _mi_stat_decrease(&_mi_stats.committed, _mi_segment_committed(segment));
  size_t size = segment->segment_size;
  /* an arena hands the range out again, maybe to small segments (os-thp.c) */
  if (segment->thp_hinted && _mi_arena_contains(segment)) _mi_os_hint_huge_pages(segment, size, false);
  return mi_segment_range_free(segment, size);
}

/* A cached segment whose memory was purged: its header reads as zero, and
   its committed bytes were counted off then. */
size_t _mi_segment_unmap_clean(mi_segment_t* segment, size_t size) {
  return mi_segment_range_free(segment, size);
}

/* A segment of `kind`: a cached one of the same kind keeps its page states
   (and their committed memory), otherwise the header is laid out anew. */
/* `want`: about how many bytes of it the caller will touch (0: unknown) */
/* `arena`: the asking heap's (0: none) */
mi_segment_t* _mi_segment_alloc_in(mi_segment_kind_t kind, size_t segment_size, size_t want, mi_arena_id_t arena) {
  mi_segment_t* segment = NULL;
  if (segment_size <= MI_LARGE_SEGMENT_MAX) segment = _mi_segment_cache_pop(kind, segment_size, want, arena);
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
  /* an arena first (if any were reserved), else the OS: not for a heap of
     an arena, nor when disallow_os_alloc keeps the program to its arenas */
  bool is_pinned = false;
  segment = (mi_segment_t*)_mi_arena_alloc(segment_size, arena, &is_pinned);
  if (segment == NULL && (arena != 0 || mi_option_is_enabled(mi_option_disallow_os_alloc))) {
    errno = ENOMEM;
    return NULL;
  }
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
  if (MI_SECURE && !_mi_secure_segment_guards_protect(segment)) {
    _mi_segment_unmap(segment); /* fault path */
    return NULL;
  }
  return segment;
}

mi_segment_t* _mi_segment_alloc(mi_segment_kind_t kind, size_t segment_size, size_t want) {
  return _mi_segment_alloc_in(kind, segment_size, want, 0);
}

/* A single-block segment whose block is aligned to more than a segment
   size: the header in the first chunk, the point `aligned_at` bytes in at an
   `alignment` boundary (the block's pointer: _mi_block_segment finds the
   header from it). Only the header and [commit_at, segment_size) are
   committed; the hole between, up to alignment + a chunk of address space,
   stays reserved and untouched, so it is never cached for another use. */
mi_segment_t* _mi_segment_alloc_sparse(size_t segment_size, size_t aligned_at, size_t alignment, size_t commit_at) {
  mi_segment_t* segment = (mi_segment_t*)_mi_os_reserve_aligned_at(segment_size, alignment, aligned_at);
  if (segment == NULL) return NULL;
  size_t info = _mi_segment_info_size();
  if (!_mi_os_commit(segment, info) || !_mi_os_commit((uint8_t*)segment + commit_at, segment_size - commit_at) ||
      !_mi_segment_map_set(segment, segment_size, true)) {
    _mi_os_free(segment, segment_size); /* fault path */
    return NULL;
  }
  _mi_stat_increase(&_mi_stats.segments, 1);
  mi_segment_init_header(segment, MI_SEGMENT_SINGLE, segment_size);
  segment->is_sparse = 1;
  _mi_stat_increase(&_mi_stats.committed, (int64_t)segment->info_size);
  if (MI_SECURE && !_mi_secure_segment_guards_protect(segment)) {
    _mi_segment_unmap(segment); /* fault path */
    return NULL;
  }
  return segment;
}

/* Bytes of the segment counted as committed: its header and its pages' areas. */
int64_t _mi_segment_committed(const mi_segment_t* segment) {
  int64_t committed = (int64_t)segment->info_size;
  for (size_t i = 0; i < _mi_segment_pages(segment); i++) committed += (int64_t)segment->pages[i].committed;
  return committed;
}

#if MI_SECURE
/* A destroyed heap's page whose fence could not be lifted (heap/secure-held-pages.c):
   its slot is never set up again, and its segment goes to the OS, not the cache. */
static bool mi_segment_has_fenced_page(const mi_segment_t* segment) {
  if (segment->kind == MI_SEGMENT_SINGLE) return false;
  for (size_t i = 0; i < _mi_segment_pages(segment); i++) {
    if (segment->pages[i].held_fenced) return true;
  }
  return false;
}
#endif

/* Release a segment that holds no live block: to the cache if it is a
   standard one and the cache has room, else to the OS. */
void _mi_segment_release(mi_segment_t* segment) {
  atomic_store_explicit(&segment->thread_id, 0, memory_order_release);
  if (segment->kind != MI_SEGMENT_SINGLE) {
    /* by its owner, or by the cleanup holding it claimed */
    _mi_owner_move(segment, MI_OWNER_OWNED, MI_OWNER_CLAIMED, MI_OWNER_RELEASED);
  }
  segment->tld = NULL;
  /* pinned segments skip the cache: its purge would fail on them, and their
     memory is better back in its arena */
#if MI_SECURE
  if (mi_segment_has_fenced_page(segment)) {
    _mi_segment_unmap(segment); /* fault path */
    return;
  }
#endif
  if (!_mi_segment_skips_cache(segment) && _mi_segment_cache_push(segment)) {
    return;
  }
  _mi_segment_unmap(segment);
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
void _mi_tld_segment_add(mi_tld_t* tld, mi_segment_t* segment) {
  _mi_owner_move(segment, MI_OWNER_RELEASED, MI_OWNER_CLAIMED, MI_OWNER_OWNED);
  segment->tld = tld;
  segment->prev = NULL;
  segment->next = tld->segments;
  if (tld->segments != NULL) tld->segments->prev = segment;
  tld->segments = segment;
  atomic_store_explicit(&segment->thread_id, tld->thread_id, memory_order_release);
  if (segment->used_pages < segment->page_count) mi_tld_free_list_add(tld, segment);
}

void _mi_tld_segment_remove(mi_tld_t* tld, mi_segment_t* segment) {
  if (segment->prev != NULL) segment->prev->next = segment->next;
  else tld->segments = segment->next;
  if (segment->next != NULL) segment->next->prev = segment->prev;
  segment->next = segment->prev = NULL;
  if (mi_tld_free_list_contains(tld, segment)) mi_tld_free_list_remove(tld, segment);
}

/* ---- Pages ------------------------------------------------------------------------ */

/* A slot in use, or (secure builds) held: a destroyed heap's page whose
   blocks must not be handed out again yet (heap/secure-held-pages.c). */
static inline bool mi_page_slot_taken(uint32_t state) {
  return (state == MI_PAGE_IN_USE || (MI_SECURE && state == MI_PAGE_HELD));
}

/* Take a free page slot for use. The background thread may be returning its memory
   right now (PURGING): then wait for it to finish, which is short. */
bool _mi_page_claim_slot(mi_page_t* page, bool* was_clean) {
#if MI_SECURE
  if (mi_unlikely(page->held_fenced)) return false; /* fault path: inaccessible for good */
#endif
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
  for (size_t i = 0; i < _mi_segment_pages(segment); i++) {
    mi_page_t* page = &segment->pages[i];
    uint32_t state = atomic_load_explicit(&page->state, memory_order_relaxed);
    if (state == MI_PAGE_FREE_DIRTY) {
      bool was_clean;
      if (_mi_page_claim_slot(page, &was_clean)) return page; /* prefer memory that is still committed */
      state = atomic_load_explicit(&page->state, memory_order_relaxed);
    }
    if (clean == NULL && !mi_page_slot_taken(state)) clean = page;
  }
  if (clean != NULL) {
    bool was_clean;
    if (_mi_page_claim_slot(clean, &was_clean)) return clean;
  }
  return NULL;
}

/* A free page slot of one of the thread's segments of `kind` with room, taken
   for use (NULL: none has one). The page layer sets it up: the secure wing
   first, then _mi_segment_page_setup, then the page itself (page.c). */
mi_page_t* _mi_segment_page_claim(mi_tld_t* tld, mi_segment_kind_t kind, mi_arena_id_t arena) {
  mi_segment_t* segment = tld->free_segments[kind];
  /* only where exclusive arenas or heaps of an arena exist is one passed over */
  while (segment != NULL && !_mi_arena_suits(segment, arena)) segment = segment->free_next;
  return (segment == NULL ? NULL : mi_segment_take_page(segment));
}

#if MI_DEBUG > 2
/* The slots of a small or medium segment taken (in use, or held): what
   used_pages counts. */
static size_t mi_segment_pages_taken(const mi_segment_t* segment) {
  size_t n = 0;
  for (size_t i = 0; i < segment->page_count; i++) {
    n += mi_page_slot_taken(atomic_load_explicit(&segment->pages[i].state, memory_order_relaxed));
  }
  return n;
}
#endif

/* The segment's side of a page's set-up: its area counted as committed, its
   blocks' start, and one more page in use. */
void _mi_segment_page_setup(mi_page_t* page, size_t area, uint8_t* start) {
  mi_segment_t* segment = _mi_page_segment(page);
  mi_assert_internal(atomic_load_explicit(&page->state, memory_order_relaxed) == MI_PAGE_IN_USE);
  mi_assert_internal(segment->kind != MI_SEGMENT_SINGLE && segment->used_pages < segment->page_count);
  if (page->committed != area) {
    _mi_stat_increase(&_mi_stats.committed, (int64_t)(area - page->committed));
    page->committed = area;
  }
  page->start = start;
  segment->used_pages++;
  mi_assert_expensive(mi_segment_pages_taken(segment) == segment->used_pages);
  _mi_stat_increase(&_mi_stats.pages, 1);
  if (segment->used_pages == segment->page_count) mi_tld_free_list_remove(segment->tld, segment);
}

/* A new (or cached) segment of `kind` for the thread; false if none could be
   had (fault path). */
bool _mi_segment_new(mi_tld_t* tld, mi_segment_kind_t kind, mi_arena_id_t arena) {
  mi_segment_t* segment = _mi_segment_alloc_in(kind, MI_SEGMENT_SIZE, 0, arena);
  if (segment == NULL) return false; /* fault path */
  _mi_tld_segment_add(tld, segment);
  return true;
}

/* The units of the page's never-carved tail, counted from the unit holding
   its first block: [*first, *last), those wholly past the carved blocks and
   within the page's blocks (hole purge, page/holes.c); the unit's size. */
size_t _mi_page_tail_units(const mi_page_t* page, size_t* first, size_t* last) {
  size_t unit = _mi_os_page_size() << _mi_page_holes(page)->shift;
  size_t lo = (size_t)((uintptr_t)page->start & (unit - 1));
  *first = (lo + (size_t)page->capacity * page->block_size + unit - 1) / unit;
  *last = (lo + (size_t)page->reserved * page->block_size) / unit;
  if (*last > (size_t)MI_HOLES_MAP_WORDS * 64) *last = (size_t)MI_HOLES_MAP_WORDS * 64;
  return unit;
}

/* The bytes of the tail that hole purge discarded and no block was carved
   in since: from the unit recorded, or past the carved blocks. */
size_t _mi_page_tail_discarded(const mi_page_t* page) {
  uint8_t tail = _mi_page_holes(page)->tail;
  if (tail == 0 || (tail & MI_HOLES_TAIL_DIRTY) != 0) return 0;
  size_t from, last;
  size_t unit = _mi_page_tail_units(page, &from, &last);
  if (from < (size_t)tail - 1) from = (size_t)tail - 1;
  return (last > from ? (last - from) * unit : 0);
}

/* The page's holes (page/holes.c) go with it: no longer counted (their
   memory stays committed and reads zero). */
static void mi_segment_page_holes_forget(mi_page_t* page) {
  size_t tail = _mi_page_tail_discarded(page);
  if (tail > 0) _mi_stat_decrease(&_mi_stats.unformed, (int64_t)tail);
  _mi_page_holes(page)->tail = 0;
  if (_mi_page_holes(page)->purged == 0) return;
  size_t units = 0;
  for (size_t i = 0; i < MI_HOLES_MAP_WORDS; i++) units += (size_t)__builtin_popcountll(_mi_page_holes(page)->map[i]);
  _mi_stat_decrease(&_mi_stats.holes, (int64_t)(units * (_mi_os_page_size() << _mi_page_holes(page)->shift)));
  atomic_fetch_sub_explicit(&_mi_stats.holes_blocks, (int64_t)_mi_page_holes(page)->purged, memory_order_relaxed);
  memset(_mi_page_holes(page)->map, 0, sizeof(_mi_page_holes(page)->map));
  _mi_page_holes(page)->purged = 0;
}

/* A page's blocks are all back: return the slot to its segment and schedule
   its memory to go back to the OS after the purge delay. */

void _mi_segment_page_free(mi_page_t* page) {
  mi_segment_t* segment = _mi_page_segment(page);
  mi_hook_page_freed(segment, page);
  mi_segment_page_holes_forget(page);
  mi_assert_internal(mi_page_slot_taken(atomic_load_explicit(&page->state, memory_order_relaxed)));
  mi_assert_internal(segment->kind != MI_SEGMENT_SINGLE && segment->used_pages >= 1 &&
                     segment->used_pages <= segment->page_count);
  page->heap = NULL;
  page->free = NULL;
  page->used = 0;
  mi_page_flags_store(page, 0);
  page->next = page->prev = NULL;
  atomic_store_explicit(&page->xthread_free, NULL, memory_order_relaxed);
  segment->used_pages--;
  _mi_stat_decrease(&_mi_stats.pages, 1);
  _mi_stat_decrease(&_mi_stats.page_bins[_mi_stat_bin_of(page->block_size)], 1);
  _mi_purge_schedule_page(segment, page);
  mi_tld_t* tld = segment->tld;
  if (tld != NULL && segment->used_pages == 0) mi_hook_segment_emptied(segment);
  /* after the listeners: a count the program scribbled over is the secure
     wing's to report, not an assertion of ours */
  mi_assert_expensive(mi_segment_pages_taken(segment) == segment->used_pages);
  if (tld == NULL) return; /* abandoned: whoever holds it decides about the segment */
  if (segment->used_pages == 0) {
    _mi_tld_segment_remove(tld, segment);
    _mi_purge_unlink_segment(segment);
    _mi_segment_release(segment);
  } else if (!mi_tld_free_list_contains(tld, segment)) {
    mi_tld_free_list_add(tld, segment);
  }
}

#if MI_SECURE
/* A destroyed heap's page, held by its thread (heap/secure-held-pages.c) until it is freed
   with _mi_segment_page_free: its slot stays taken and counted in the
   segment's pages in use, so neither the slot nor the segment is reused,
   while validation, finding it not in use, reports a pointer into its
   blocks as freed (it keeps its geometry for that). The background thread
   takes FREE_DIRTY slots only: it leaves it alone. */
void _mi_segment_page_hold(mi_page_t* page) {
  page->heap = NULL;
  page->free = NULL;
  page->next = page->prev = NULL;
  mi_page_flags_store(page, 0);
  atomic_store_explicit(&page->state, MI_PAGE_HELD, memory_order_release);
}
#endif
