/* Pages and page queues: the allocation slow path. */
#include "page.h"
#if MI_SECURE
#include "secure-block.h"
#endif

size_t _mi_bin_size(size_t bin) {
  mi_assert(bin <= MI_BIN_MEDIUM_MAX);
  if (bin <= 8) return (bin == 0 ? 16 : bin * 16);
  if (bin == MI_BIN_MEDIUM_MAX) return MI_MEDIUM_BLOCK_MAX;
  size_t k = (bin - 9) / 8;
  size_t idx = (bin - 9) % 8;
  size_t b = 7 + k;
  return ((size_t)1 << b) + (idx + 1) * ((size_t)1 << (b - 3));
}

/* The bins of sizes up to 1 KiB by their size in words, w = (size + 7) / 8:
   the smallest bin whose _mi_bin_size holds 8 * w (16-byte steps up to 128
   bytes, then eight bins a doubling, all multiples of 8 bytes, so every
   size of a word count shares its bin). A size of 0 gets the smallest bin.
   One load in _mi_bin, where compares and a bsr were; test-bins checks each
   entry against _mi_bin_size. */
const uint8_t _mi_bin_of_wsize[MI_BIN_WSIZE_MAX + 1] = {
    1,  1,  1,  2,  2,  3,  3,  4,  4,  5,  5,  6,  6,  7,  7,  8,  8,  9,  9,  10, 10, 11, 11, 12, 12, 13,
    13, 14, 14, 15, 15, 16, 16, 17, 17, 17, 17, 18, 18, 18, 18, 19, 19, 19, 19, 20, 20, 20, 20, 21, 21, 21,
    21, 22, 22, 22, 22, 23, 23, 23, 23, 24, 24, 24, 24, 25, 25, 25, 25, 25, 25, 25, 25, 26, 26, 26, 26, 26,
    26, 26, 26, 27, 27, 27, 27, 27, 27, 27, 27, 28, 28, 28, 28, 28, 28, 28, 28, 29, 29, 29, 29, 29, 29, 29,
    29, 30, 30, 30, 30, 30, 30, 30, 30, 31, 31, 31, 31, 31, 31, 31, 31, 32, 32, 32, 32, 32, 32, 32, 32};

/* ---- Queues --------------------------------------------------------------------- */

mi_page_queue_t* _mi_page_queue_of(mi_heap_t* heap, const mi_page_t* page) {
  const uint8_t flags = mi_page_flags(page);
  if (flags & MI_PAGE_FLAG_SAMPLE_PAGE) return &heap->prof_pages[page->bin];
  size_t bin = (flags & MI_PAGE_FLAG_IN_FULL) ? MI_BIN_FULL : page->bin;
  return &heap->pages[bin];
}

/* The word counts whose bin is `bin` (<= MI_BIN_DIRECT_MAX): those above the
   previous bin's block size, up to its own; word count 0 goes with bin 1. */
static inline size_t mi_direct_first(size_t bin) {
  return (bin <= 1 ? 0 : _mi_bin_size(bin - 1) / 8 + 1);
}

/* A small bin's queue has a new first page: so do its entries of the direct
   table. Up to 8 entries (the widest bin below 1 KiB is 64 bytes). */
static inline void mi_direct_update(mi_heap_t* heap, const mi_page_queue_t* pq) {
  size_t bin = (size_t)(pq - heap->pages);
  if (bin > MI_BIN_DIRECT_MAX) return;
  mi_assert(bin >= 1);
  size_t last = _mi_bin_size(bin) / 8;
  for (size_t w = mi_direct_first(bin); w <= last; w++) heap->pages_direct[w] = pq->first;
}

/* Every entry of the direct table is the first page of its size's queue
   (_mi_heap_check in debug builds, test-bins). */
bool _mi_heap_direct_consistent(const mi_heap_t* heap) {
  for (size_t w = 0; w <= MI_BIN_WSIZE_MAX; w++) {
    if (heap->pages_direct[w] != heap->pages[_mi_bin_of_wsize[w]].first) return false;
  }
  return true;
}

static inline void mi_queue_set_first(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) {
  /* an empty queue points at the static empty page, so the fast path never tests for NULL */
  pq->first = (page != NULL ? page : (mi_page_t*)&_mi_page_empty);
  /* (a sample page's queue is no size's: the fast path never reads it) */
  if ((uintptr_t)pq - (uintptr_t)heap->pages < sizeof(heap->pages)) mi_direct_update(heap, pq);
}

#if MI_DEBUG > 1
/* A page is in the queue of its bin, or in the full queue exactly when it
   is flagged full, and belongs to the queue's heap. */
static inline bool mi_page_queue_is_its(const mi_heap_t* heap, const mi_page_queue_t* pq, const mi_page_t* page) {
  if (mi_page_flags(page) & MI_PAGE_FLAG_SAMPLE_PAGE) return (page->heap == heap && pq == &heap->prof_pages[page->bin]);
  bool full = ((mi_page_flags(page) & MI_PAGE_FLAG_IN_FULL) != 0);
  return (page->heap == heap && pq == &heap->pages[full ? MI_BIN_FULL : page->bin]);
}
#endif

void _mi_page_queue_remove(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) {
  mi_assert_internal(mi_page_queue_is_its(heap, pq, page));
  mi_assert_internal(page->prev != NULL ? page->prev->next == page : pq->first == page);
  if (page->prev != NULL) page->prev->next = page->next;
  if (page->next != NULL) page->next->prev = page->prev;
  if (page == pq->last) pq->last = page->prev;
  if (page == pq->first) mi_queue_set_first(heap, pq, page->next);
  page->next = NULL;
  page->prev = NULL;
}

void _mi_page_queue_push(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) {
  mi_assert_internal(mi_page_queue_is_its(heap, pq, page));
  mi_assert_internal(page->used <= page->capacity && page->capacity <= page->reserved);
  page->prev = NULL;
  page->next = (pq->last != NULL ? pq->first : NULL);
  if (pq->last != NULL) pq->first->prev = page;
  else pq->last = page;
  mi_queue_set_first(heap, pq, page);
}

static void mi_page_queue_push_back(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) {
  mi_assert_internal(mi_page_queue_is_its(heap, pq, page));
  page->next = NULL;
  page->prev = pq->last;
  if (pq->last != NULL) pq->last->next = page;
  else mi_queue_set_first(heap, pq, page);
  pq->last = page;
}

static void mi_page_to_full(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) {
  mi_assert_internal(page->free == NULL && page->capacity == page->reserved); /* nothing left to hand out */
  _mi_page_queue_remove(heap, pq, page);
  mi_page_flags_add(page, MI_PAGE_FLAG_IN_FULL);
  mi_page_queue_push_back(heap, &heap->pages[MI_BIN_FULL], page);
}

/* A full page that got a block back goes to the back of its queue: at the
   front, the next allocation would take its one block and find it full
   again, a slow path per block when frees come in random order (`larson`). */
void _mi_page_unfull(mi_page_t* page) {
  mi_assert(mi_page_flags(page) & MI_PAGE_FLAG_IN_FULL);
  mi_heap_t* heap = page->heap;
  _mi_page_queue_remove(heap, &heap->pages[MI_BIN_FULL], page);
  mi_page_flags_clear(page, MI_PAGE_FLAG_IN_FULL);
  mi_page_queue_push_back(heap, &heap->pages[page->bin], page);
}

/* ---- Collecting frees ---------------------------------------------------------- */

#if MI_SECURE
/* A block another thread freed, taken by its owner: a block of the page's,
   handed out (its bit still set), and its bit goes. Inline, once a block of
   every list collected (as a call, 3.6% of `xmalloc-2t`'s samples at the
   light level, beside the walk's 26%); the reports out of line. */
static inline void mi_page_collected(mi_page_t* page, mi_block_t* block) {
  size_t idx = 0;
  if (mi_unlikely(!mi_carved_block_index(page, block, &idx) || !mi_bit_get(page, idx))) {
    _mi_secure_report_collected(page, block);
  }
  mi_bit_set(page, idx, false);
}
#else
#define mi_page_collected(page, block) ((void)(page), (void)(block))
#endif

/* Move the blocks other threads freed into the owner's free list. */
void _mi_page_collect(mi_page_t* page) {
  if (atomic_load_explicit(&page->xthread_free, memory_order_relaxed) == NULL) return;
  mi_sched_point(MI_SCHED_PAGE_COLLECT);
  mi_block_t* list = atomic_exchange_explicit(&page->xthread_free, NULL, memory_order_acquire);
  if (list == NULL) return;
  uint32_t count = 1;
  mi_block_t* tail = list;
  mi_page_collected(page, tail);
  for (mi_block_t* next; (next = mi_block_next_checked(page, tail)) != NULL; tail = next) {
    mi_page_collected(page, next);
    count++;
  }
  mi_assert_internal(count <= page->used); /* frees of blocks handed out, each once */
  mi_block_set_next(page, tail, page->free);
  page->free = list;
  page->used -= count;
#if MI_PPROF
  /* a page flagged for a sampled block that none holds any more (its
     frees came from other threads, which may not take the owner's flag
     off) goes back to the fast path */
  if (mi_unlikely(mi_page_flags(page) & MI_PAGE_FLAG_SAMPLED) &&
      atomic_load_explicit(&page->prof_samples, memory_order_acquire) == 0) {
    mi_page_sampled_set(page, false);
  }
#endif
}

/* ---- Page set-up --------------------------------------------------------------- */

/* Carve more blocks out of the page's unused area: a few at a time, so a page
   that is barely used does not touch (and commit) all of its memory. */
static void mi_page_extend(mi_page_t* page) {
  size_t bsize = page->block_size;
  size_t want = (4096 + bsize - 1) / bsize;
  if (want < 4) want = 4;
  size_t avail = page->reserved - page->capacity;
  if (avail == 0) return; /* callers extend only pages with room; nothing to carve otherwise */
  /* secure builds shuffle the blocks (page/secure-carve.c): a random number per
     two, so tiny blocks are carved MI_SECURE_CARVE_MAX at a time */
  if (MI_SECURE && want > MI_SECURE_CARVE_MAX) want = MI_SECURE_CARVE_MAX;
  if (want > avail) want = avail;
  uint8_t* start = page->start + (size_t)page->capacity * bsize;
  /* carving into a tail hole purge discarded (holes.c): it reads zero and
     is committed, so nothing is asked of the OS; only counted */
  size_t tail_before = (_mi_page_holes(page)->tail != 0 ? _mi_page_tail_discarded(page) : 0);
  mi_block_t* first = (mi_block_t*)start;
  mi_block_t* last = first;
  if (MI_SECURE) {
    first = _mi_secure_carve(page, start, want, &last);
  } else {
    for (size_t i = 1; i < want; i++) {
      mi_block_t* next = (mi_block_t*)(start + i * bsize);
      mi_block_set_next(page, last, next);
      last = next;
    }
  }
  mi_block_set_next(page, last, page->free);
  page->free = first;
  page->capacity += (uint32_t)want;
  mi_assert_internal(page->capacity <= page->reserved);
  if (tail_before > 0) _mi_page_holes_tail_carved(page, tail_before);
  mi_track_mem_noaccess(start, want * bsize);
}

static void mi_page_init(mi_heap_t* heap, mi_page_t* page, size_t bin, size_t area) {
  size_t bsize = _mi_bin_size(bin);
  page->heap = heap;
  page->bin = (uint8_t)bin;
  page->block_size = bsize;
#if MI_SECURE
  page->block_size_inv = (((uint64_t)1 << 40) + bsize - 1) / bsize;
#endif
  page->reserved = (uint32_t)(area / bsize);
  /* no holes yet (holes.c): the unit for this page's size */
  mi_page_holes_t* holes = _mi_page_holes(page);
  memset(holes, 0, sizeof(*holes));
  holes->shift = _mi_page_holes_shift(page->start, area);
  holes->seen_used = UINT16_MAX;
#if MI_STAT >= 2
  if (!MI_SECURE) {
    /* room after the blocks for their requested sizes (requested.c) */
    page->reserved = (uint32_t)(area / (bsize + sizeof(uint32_t)));
  }
#endif
  _mi_stat_increase(&_mi_stats.page_bins[_mi_stat_bin_of(bsize)], 1);
  page->capacity = 0;
  page->used = 0;
  mi_page_flags_store(page, 0);
  page->free = NULL;
  page->next = page->prev = NULL;
  atomic_store_explicit(&page->xthread_free, NULL, memory_order_relaxed);
  mi_track_mem_noaccess(page->start, area); /* never-carved slack too, whatever it held before */
#if MI_STAT >= 2 || MI_SECURE_STACKS
  _mi_raise_page_init(page); /* (MI_STAT=2's request slots after the blocks; the secure stacks' records) */
#endif
  mi_page_extend(page);
}

/* A fresh page of `bin` for `heap`: a free slot of one of its thread's
   segments, else of a segment adopted from an exited thread (of this kind:
   another would give no slot for this page, and a thread starting alongside
   may want it), else of a new segment. The slot's set-up: the listeners'
   first (the secure wing sees whether the slot's memory is still
   committed), then the segment's, then the page's own; then the listeners
   again (the secure wing seals what free will trust of it). */
static mi_page_t* mi_page_fresh(mi_heap_t* heap, size_t bin) {
  mi_tld_t* tld = heap->tld;
  mi_segment_kind_t kind = _mi_segment_kind_of_bin(bin);
  for (int attempt = 0; attempt < 3; attempt++) {
    mi_page_t* page = _mi_segment_page_claim(tld, kind, heap->arena_id);
    if (page != NULL) {
      uint8_t* start;
      size_t area = _mi_segment_page_area(_mi_page_segment(page), page->index, &start);
      bool reused = (page->committed != 0); /* its memory may hold what a page before left */
      mi_hook_page_setup_begin(heap, page, reused, _mi_bin_size(bin), area / _mi_bin_size(bin));
      _mi_segment_page_setup(page, area, start);
      mi_page_init(heap, page, bin, area);
      if (reused) _mi_page_holes(page)->tail = MI_HOLES_TAIL_DIRTY; /* its tail discarded at the next sweep */
      mi_hook_page_setup_end(page);
      return page;
    }
    /* max_segment_reclaim=0: never here, as in mimalloc; any other value: up to 2 a try */
    if (attempt == 0 && _mi_option_get_fast(mi_option_max_segment_reclaim) > 0 &&
        _mi_segments_reclaim_kind(tld->heap_backing, 2, kind)) {
      continue;
    }
    if (!_mi_segment_new(tld, kind, heap->arena_id)) return NULL;
  }
  return NULL;
}

/* ---- Retiring pages ------------------------------------------------------------ */

/* Out of its heap and back to its segment (every block of it is back). */
static void mi_heap_page_free(mi_heap_t* heap, mi_page_t* page) {
  _mi_page_queue_remove(heap, _mi_page_queue_of(heap, page), page);
  mi_page_flags_store(page, 0);
  heap->page_count--;
  _mi_segment_page_free(page);
}

/* Every block of the page is back. Keep a small page if it is the only page
   of its size class (the next allocation would just ask for a fresh one);
   otherwise give the page back to its segment. Medium pages are never kept:
   a thread that goes idle would hold up to 512 KiB per size class. */
void _mi_page_retire(mi_page_t* page) {
  mi_assert(page->used == 0);
  mi_heap_t* heap = page->heap;
  mi_page_queue_t* pq = _mi_page_queue_of(heap, page);
  if ((mi_page_flags(page) & MI_PAGE_FLAG_SAMPLE_PAGE) && pq->first == page && pq->last == page) {
    /* the only sample page of its size is kept: a page set up and given
       back at every sample of a size freed before the next was most of a
       sample's cost (the heap's collection and the thread's exit give it
       back: mi_heap_free_empty_samples) */
    return;
  }
  if (!(mi_page_flags(page) & MI_PAGE_FLAG_IN_FULL) && page->bin <= MI_BIN_SMALL_MAX && pq->first == page &&
      pq->last == page) {
    return;
  }
  mi_heap_page_free(heap, page);
}

/* ---- The slow path ------------------------------------------------------------- */

/* Look at a few full pages for blocks freed by other threads; pages that got
   blocks back return to their size-class queue. Bounded per call, so a heap
   with many full pages pays a constant amount per slow path. */
static void mi_heap_scan_full(mi_heap_t* heap, size_t max) {
  mi_page_queue_t* fq = &heap->pages[MI_BIN_FULL];
  if (max == SIZE_MAX) {
    mi_page_t* page = (fq->last != NULL ? fq->first : NULL);
    while (page != NULL) {
      mi_page_t* next = page->next;
      if (atomic_load_explicit(&page->xthread_free, memory_order_relaxed) != NULL) {
        _mi_page_collect(page);
        _mi_page_unfull(page);
        if (page->used == 0) _mi_page_retire(page);
      }
      page = next;
    }
    return;
  }
  for (size_t n = 0; n < max && fq->last != NULL; n++) {
    mi_page_t* page = fq->first;
    if (atomic_load_explicit(&page->xthread_free, memory_order_relaxed) != NULL) {
      _mi_page_collect(page);
      _mi_page_unfull(page);
      if (page->used == 0) _mi_page_retire(page);
    } else if (page != fq->last) {
      /* rotate, so the next scan starts with pages not looked at yet */
      _mi_page_queue_remove(heap, fq, page);
      mi_page_queue_push_back(heap, fq, page);
    }
  }
}

/* Find a page of the size class with a free block: collect frees, extend,
   retire pages that have nothing, and as a last resort take a fresh page. */
static mi_page_t* mi_find_page(mi_heap_t* heap, size_t bin) {
  mi_page_queue_t* pq = &heap->pages[bin];
  if (mi_unlikely(!heap->took_over)) _mi_segments_take_over(heap, bin); /* may fill `pq` */
  mi_page_t* page = (pq->last != NULL ? pq->first : NULL);
  while (page != NULL) {
    mi_page_t* next = page->next;
    _mi_page_collect(page);
    if (page->free == NULL && page->capacity < page->reserved) mi_page_extend(page);
    if (page->free == NULL && _mi_page_holes(page)->purged != 0) _mi_page_holes_unpurge(page); /* its holes back */
    if (page->free != NULL) {
      if (page != pq->first) {
        _mi_page_queue_remove(heap, pq, page);
        _mi_page_queue_push(heap, pq, page);
      }
      return page;
    }
    mi_page_to_full(heap, pq, page);
    page = next;
  }
  /* before taking new memory, see whether other threads gave blocks back */
  mi_heap_scan_full(heap, MI_FULL_SCAN_BATCH);
  page = (pq->last != NULL ? pq->first : NULL);
  if (page != NULL && page->free != NULL) return page;
  page = mi_page_fresh(heap, bin);
  if (page == NULL) {
    /* out of memory: scan every full page, then try once more */
    mi_heap_scan_full(heap, SIZE_MAX);
    page = (pq->last != NULL ? pq->first : NULL);
    if (page != NULL && page->free != NULL) return page;
    page = mi_page_fresh(heap, bin);
    if (page == NULL) return NULL;
  }
  heap->page_count++;
  _mi_page_queue_push(heap, pq, page);
  return page;
}

static void mi_heap_free_kept(mi_heap_t* heap);

static void mi_heap_heartbeat(mi_heap_t* heap) {
  heap->heartbeat++;
  _mi_deferred_free(heap, false);
  if ((heap->heartbeat & 63) == 0) {
    if (mi_unlikely(heap->has_kept)) mi_heap_free_kept(heap);
    mi_heap_scan_full(heap, MI_FULL_SCAN_BATCH);
    /* generic_collect: every N slow-path calls (at most every 64th) the whole
       heap is collected, so pages emptied by other threads' frees go back */
    long every = _mi_option_get_fast(mi_option_generic_collect);
    if (every > 0 && heap->heartbeat % (uint64_t)every < 64) _mi_heap_collect_pages(heap);
    _mi_background_maybe();
  }
}

void* _mi_page_malloc_slow(mi_heap_t* heap, size_t size, bool zero) {
  mi_assert(mi_heap_is_initialized(heap)); /* the heap layer sets the thread up first */
  if (mi_unlikely(size > MI_MAX_ALLOC_SIZE)) {
    _mi_error_message(ENOMEM, "allocation request is too large (%zu bytes)\n", size);
    errno = ENOMEM;
    return NULL;
  }
  mi_heap_heartbeat(heap);
  if (size > MI_MEDIUM_BLOCK_MAX) {
    mi_page_t* page = _mi_segment_single_alloc(heap, size, 0, zero);
    if (page == NULL) {
      _mi_error_message(ENOMEM, "unable to allocate memory (%zu bytes)\n", size); /* fault path */
      errno = ENOMEM;
      return NULL;
    }
    mi_track_malloc(page->start, size, page->block_size, zero);
    return page->start;
  }
  size_t bin = _mi_bin(size);
  mi_page_t* page = heap->pages[bin].first;
  if (page->free == NULL) {
    page = mi_find_page(heap, bin);
    if (page == NULL) {
      _mi_error_message(ENOMEM, "unable to allocate memory (%zu bytes)\n", size); /* fault path */
      errno = ENOMEM;
      return NULL;
    }
  }
  mi_block_t* block = page->free;
  mi_assert_internal(page->heap == heap && page->bin == bin && block != NULL);
  page->free = mi_block_next_checked(page, block);
  page->used++;
  mi_assert_internal(page->used <= page->capacity);
#if MI_STAT
  heap->stat_malloc[bin]++;
#endif
  if (zero) {
    mi_track_mem_undefined(block, page->block_size);
    memset(block, 0, page->block_size);
  }
  mi_track_malloc(block, size, page->block_size, zero);
  return block;
}

#if MI_PPROF
/* A block of `size` bytes (at most MI_SMALL_BLOCK_MAX) for a sample of the
   pprof sampler, from a page of the heap's sampled blocks (prof_pages), so
   that the other pages' frees and resizes keep their fast paths and the
   flag of a sample page alone tells the sampler's. A size's queue holds a
   page or a few. NULL without memory (the sample stays where it is). */
void* _mi_page_malloc_sample(mi_heap_t* heap, size_t size) {
  mi_assert(mi_heap_is_initialized(heap) && size <= MI_SMALL_BLOCK_MAX);
  size_t bin = _mi_bin(size);
  mi_page_queue_t* pq = &heap->prof_pages[bin];
  mi_page_t* page = (pq->last != NULL ? pq->first : NULL);
  for (; page != NULL; page = page->next) {
    if (page->free == NULL) _mi_page_collect(page);
    if (page->free == NULL && page->capacity < page->reserved) mi_page_extend(page);
    if (page->free != NULL) break;
  }
  if (page == NULL) {
    page = mi_page_fresh(heap, bin);
    if (page == NULL) return NULL;
    heap->page_count++;
    mi_page_flags_add(page, MI_PAGE_FLAG_SAMPLE_PAGE);
    _mi_page_queue_push(heap, pq, page);
  }
  mi_block_t* block = page->free;
  page->free = mi_block_next_checked(page, block);
  page->used++;
  mi_track_malloc(block, size, page->block_size, false);
  return block;
}
#endif

/* ---- Collection ----------------------------------------------------------------- */

/* Bins of a heap that hold an empty page, one bit each. */
typedef struct mi_bin_set_s {
  uint64_t bits[2];
} mi_bin_set_t;
_Static_assert(MI_BIN_COUNT <= 128, "mi_bin_set_t holds 128 bins");

/* Take in every page's frees (pages that got room leave the full queue) and
   note the bins where a page is left empty; free none of them yet. */
static mi_bin_set_t mi_heap_collect_all(mi_heap_t* heap) {
  mi_bin_set_t empty = {{0, 0}};
  for (size_t bin = 1; bin < MI_BIN_COUNT; bin++) {
    mi_page_queue_t* pq = &heap->pages[bin];
    mi_page_t* page = (pq->last != NULL ? pq->first : NULL);
    while (page != NULL) {
      mi_page_t* next = page->next;
      _mi_page_collect(page);
      if ((mi_page_flags(page) & MI_PAGE_FLAG_IN_FULL) && page->free != NULL) _mi_page_unfull(page);
      if (page->used == 0) empty.bits[page->bin / 64] |= (uint64_t)1 << (page->bin % 64);
      page = next;
    }
  }
  for (size_t bin = 1; bin <= MI_BIN_SMALL_MAX; bin++) {
    const mi_page_queue_t* pq = &heap->prof_pages[bin];
    for (mi_page_t* page = (pq->last != NULL ? pq->first : NULL); page != NULL; page = page->next) {
      _mi_page_collect(page);
    }
  }
  return empty;
}

/* The sample pages left empty go back (never kept: the next sample of their
   size takes a fresh page or another's room). */
static void mi_heap_free_empty_samples(mi_heap_t* heap) {
  for (size_t bin = 1; bin <= MI_BIN_SMALL_MAX; bin++) {
    mi_page_t* page = (heap->prof_pages[bin].last != NULL ? heap->prof_pages[bin].first : NULL);
    while (page != NULL) {
      mi_page_t* next = page->next;
      if (page->used == 0) mi_heap_page_free(heap, page);
      page = next;
    }
  }
}

/* Free the empty pages of the bins in `empty`; with `keep_one`, not the
   first of each small bin found in a segment that holds live blocks (medium
   pages are 512 KiB: never kept, as in _mi_page_retire). True if a page was
   kept. */
static bool mi_heap_free_empty(mi_heap_t* heap, mi_bin_set_t empty, bool keep_one) {
  bool kept_any = false;
  for (size_t w = 0; w < 2; w++) {
    for (uint64_t bits = empty.bits[w]; bits != 0; bits &= bits - 1) {
      size_t bin = w * 64 + mi_bsf64(bits);
      mi_page_queue_t* pq = &heap->pages[bin];
      mi_page_t* page = (pq->last != NULL ? pq->first : NULL);
      bool kept = !keep_one || bin > MI_BIN_SMALL_MAX;
      while (page != NULL) {
        mi_page_t* next = page->next;
        if (page->used == 0) {
          if (!kept && _mi_segment_has_live_blocks(_mi_page_segment(page))) kept = kept_any = true;
          else mi_heap_page_free(heap, page);
        }
        page = next;
      }
    }
  }
  return kept_any;
}

void _mi_heap_collect_pages(mi_heap_t* heap) {
  mi_heap_free_empty(heap, mi_heap_collect_all(heap), false);
  mi_heap_free_empty_samples(heap);
}

/* Hole purge of the heap's pages (holes.c), the blocks other threads freed
   collected first. By the heap's owner (`owner`), its full pages that got
   blocks back and its empty pages are seen to first; by a thread that
   sweeps a parked owner's heap, nothing but the pages' own lists changes
   (no page changes queue or goes back to its segment). Returns the bytes
   discarded. */
size_t _mi_heap_holes_sweep(mi_heap_t* heap, bool owner, bool full, bool eager_zero) {
  if (owner) {
    mi_heap_scan_full(heap, SIZE_MAX); /* full pages that got blocks back are swept too */
    size_t pages = heap->page_count;
    _mi_heap_collect_pages(heap);
    if (heap->page_count < pages) _mi_holes_note_pages_freed(pages - heap->page_count);
  }
  size_t discarded = 0;
  for (size_t bin = 1; bin <= MI_BIN_MEDIUM_MAX; bin++) {
    mi_page_queue_t* pq = &heap->pages[bin];
    for (mi_page_t* page = (pq->last != NULL ? pq->first : NULL); page != NULL; page = page->next) {
      if (!owner) _mi_page_collect(page);
      discarded += _mi_page_holes_sweep(page, full, eager_zero);
    }
  }
  return discarded;
}

/* The thread of `heap` (its backing heap, which holds all its pages by now)
   is exiting. Its empty pages are freed but for one of each small size in
   a segment that holds live blocks: that segment is abandoned anyway, and
   the page goes with it ready, free list carved, for a thread that starts
   next to take over (_mi_segments_take_over). Every page is collected
   first, so that `used` tells which segments hold live blocks. True if a
   page was kept: the caller makes a purge due once the segment is on the
   abandoned list, so the cleanup of abandoned segments (purge.c) frees the
   page if no thread takes it. */
bool _mi_heap_collect_pages_at_exit(mi_heap_t* heap) {
  bool kept = mi_heap_free_empty(heap, mi_heap_collect_all(heap), true);
  mi_heap_free_empty_samples(heap);
  return kept;
}

/* A heap that took over kept empty pages keeps them until its periodic
   heartbeat: then those still empty go back (a thread that starts needs
   them at once or not at all), and none is flagged any more. */
static void mi_heap_free_kept(mi_heap_t* heap) {
  heap->has_kept = false;
  for (size_t bin = 1; bin <= MI_BIN_SMALL_MAX; bin++) {
    mi_page_queue_t* pq = &heap->pages[bin];
    mi_page_t* page = (pq->last != NULL ? pq->first : NULL);
    while (page != NULL) {
      mi_page_t* next = page->next;
      if (mi_page_flags(page) & MI_PAGE_FLAG_KEPT) {
        mi_page_flags_clear(page, MI_PAGE_FLAG_KEPT);
        _mi_page_collect(page);
        if (page->used == 0) mi_heap_page_free(heap, page);
      }
      page = next;
    }
  }
}
