/* Segments of one large or huge block. Each lives alone in its own
   segment. They belong to no thread: any thread frees one directly (large
   ones go to the segment cache, huge ones to the OS at once), so they are
   kept on their heap's list under one lock. */
#include "segment.h"

static mi_lock_t mi_single_lock;
static mi_page_t* mi_single_orphans; /* large/huge blocks whose thread has exited */

void _mi_segments_single_init(void) {
  _mi_lock_init(&mi_single_lock, MI_LOCK_SINGLE);
}

static void mi_single_link(mi_heap_t* heap, mi_page_t* page) {
  page->heap = heap;
  if (MI_SECURE) _mi_secure_single_linked(page, heap);
  page->prev = NULL;
  mi_page_t** head = (heap != NULL ? &heap->single_first : &mi_single_orphans);
  page->next = *head;
  if (*head != NULL) (*head)->prev = page;
  *head = page;
}

static void mi_single_unlink(mi_page_t* page) {
  if (MI_SECURE) _mi_secure_single_heap_check(page); /* the heap checked before it is read */
  mi_page_t** head = (page->heap != NULL ? &page->heap->single_first : &mi_single_orphans);
  if (MI_SECURE) _mi_secure_single_links_check(page, head);
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

/* Its block in the statistics (in or out, `sign`): the pages and bytes of
   single blocks, by upstream's bin of its size. */
static void mi_single_stat(const mi_page_t* page, int64_t sign) {
  int64_t bsize = (int64_t)page->block_size;
  mi_stat_atomic_t* bin = &_mi_stats.page_bins[_mi_stat_bin_of(page->block_size)];
  if (sign > 0) {
    _mi_stat_increase(bin, 1);
    _mi_stat_increase(&_mi_stats.single_bytes, bsize);
  } else {
    _mi_stat_decrease(bin, 1);
    _mi_stat_decrease(&_mi_stats.single_bytes, bsize);
  }
}

void _mi_segment_single_set_block_size(mi_page_t* page, size_t block_size) {
  mi_single_stat(page, -1);
  page->block_size = block_size;
  mi_single_stat(page, +1);
}

/* The page of a single-block segment handed out, its one block placed:
   zeroed if asked, on its heap's list. */
static void mi_single_ready(mi_heap_t* heap, mi_segment_t* segment, mi_page_t* page, bool zero) {
  page->reserved = 1;
  page->capacity = 1;
  page->used = 1;
  page->bin = MI_BIN_FULL;
#if MI_STAT >= 2
  page->stat_requested = 0; /* (its allocation's observer sets it) */
#endif
  mi_page_flags_store(page, 0);
  page->free = NULL;
  atomic_store_explicit(&page->xthread_free, NULL, memory_order_relaxed);
  segment->used_pages = 1;
  atomic_store_explicit(&segment->thread_id, 0, memory_order_release);
  if (zero) {
    mi_track_mem_undefined(page->start, page->block_size);
    memset(page->start, 0, page->block_size);
  }
  _mi_stat_increase(&_mi_stats.large, 1);
  mi_single_stat(page, +1);
  _mi_lock_acquire(&mi_single_lock);
  mi_single_link(heap, page);
  _mi_lock_release(&mi_single_lock);
}

mi_page_t* _mi_segment_single_alloc(mi_heap_t* heap, size_t size, size_t alignment, bool zero) {
  size_t info = _mi_segment_info_size();
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
  mi_segment_t* segment = _mi_segment_alloc_in(MI_SEGMENT_SINGLE, segment_size, info + needed - offset, heap->arena_id);
  if (segment == NULL) return NULL;
  mi_page_t* page = &segment->pages[0];
  bool was_clean = false;
  _mi_page_claim_slot(page, &was_clean);
  size_t area = needed - info;
  size_t block_end = needed;
  size_t block_at =
      (MI_SECURE ? _mi_secure_single_place(segment_size, size, alignment, offset, &area, &block_end) : offset);
  bool is_zero = (was_clean || page->committed == 0);
  if (page->committed < area) {
    _mi_stat_increase(&_mi_stats.committed, (int64_t)(area - page->committed));
    page->committed = area;
  } else {
    /* a cached segment whose last block was larger (segment-cache.c) gives
       back what this block leaves of it, from a huge page boundary on
       (splitting none): the secure build's guarded samples, a page each,
       took segments that had held blocks of up to 4 MiB, and kept their
       memory (`mstress` at 2.8 times the default build's peak RSS) */
    size_t huge = _mi_os_large_page_size();
    size_t unit = (huge != 0 ? huge : psize);
#if MI_SECURE
    /* the block and what it touched are the area's suffix, up to the
       guard; where the guard moves (a larger segment), that suffix ended at
       the old one: left as it was. A segment never hinted for huge pages
       (one of MI_SEGMENT_SIZE: the THP note above) is cut to the page: a
       sample's 4 KiB would keep up to 2 MiB otherwise */
    if (!segment->thp_hinted) unit = psize;
    size_t keep = (page->guard_offset == block_end ? block_end - ((block_end - area) & ~(unit - 1)) : page->committed);
    if (page->committed > block_end - info) keep = page->committed; /* (never the header) */
    uint8_t* excess = (uint8_t*)segment + block_end - page->committed;
#else
    size_t keep = _mi_align_up(info + area, unit) - info;
    uint8_t* excess = (uint8_t*)segment + info + keep;
#endif
    if (page->committed > keep && !segment->is_pinned && _mi_os_purge(excess, page->committed - keep)) {
      _mi_stat_decrease(&_mi_stats.committed, (int64_t)(page->committed - keep));
      page->committed = keep;
    }
  }
  if (MI_SECURE && !_mi_secure_single_guard(segment, segment_size, page, block_at)) {
    atomic_store_explicit(&page->state, MI_PAGE_FREE_DIRTY, memory_order_relaxed); /* fault path */
    _mi_segment_unmap(segment);
    return NULL;
  }
  page->start = (uint8_t*)segment + block_at;
  page->block_size = block_end - block_at;
  mi_segment_thp_advise(segment, page, is_zero);
  mi_single_ready(heap, segment, page, zero && !is_zero);
  return page;
}

/* A block whose pointer, `offset` bytes into it, lies on an `alignment`
   boundary, the alignment being more than the block could have inside a
   segment's first chunk: a sparse segment of its own (segment.c). The
   alignment fixes where in a 4 MiB chunk the pointer falls; it goes in the
   segment's first chunk past the header, or, where that place is inside the
   header (an offset just under a multiple of the chunk size), at that place
   in the next chunk, less than MI_SEGMENT_HEADER_MIN into it, where
   _mi_block_segment still finds the header. The block starts on the page of
   the pointer (secure builds: of its tag, or right after the header where
   the tag has no room: the page then names the pointer alone), so the
   alignment costs address space, never memory. NULL (ENOMEM) only where
   the pointer would fall in a header larger than that least size (OS pages
   larger than 4 KiB). */
mi_page_t* _mi_segment_single_alloc_aligned(mi_heap_t* heap, size_t size, size_t alignment, size_t offset) {
  /* a sparse segment is OS memory: not for a heap of an arena, nor under
     disallow_os_alloc (mimalloc fails these too) */
  if (heap->arena_id != 0 || mi_option_is_enabled(mi_option_disallow_os_alloc)) {
    errno = ENOMEM;
    return NULL;
  }
  size_t psize = _mi_os_page_size();
  size_t skew = offset & (alignment - 1);
  size_t in_chunk = (MI_SEGMENT_SIZE - (skew & MI_SEGMENT_MASK)) & MI_SEGMENT_MASK;
  /* the pointer's place in the segment */
  size_t at = (in_chunk < MI_SEGMENT_HEADER_MIN ? MI_SEGMENT_SIZE + in_chunk : in_chunk);
  size_t info = _mi_segment_info_size();
  if (at < info) {
    errno = ENOMEM;
    return NULL;
  }
  size_t tag = (MI_SECURE ? MI_MAX_ALIGN_SIZE : 0); /* secure builds: a tag before it, if there is room */
  size_t block_at = (at - tag) & ~(psize - 1);
  if (block_at < info) block_at = info;
  size_t guard = (MI_SECURE ? psize : 0);
  if (size > MI_MAX_ALLOC_SIZE - 2 * MI_SEGMENT_SIZE - 2 * psize - MI_SECURE_TRAILER) return NULL;
  size_t block_end = _mi_align_up(at + (size == 0 ? 1 : size) + (MI_SECURE ? MI_SECURE_TRAILER : 0), psize);
  size_t segment_size = block_end + guard;
  mi_segment_t* segment = _mi_segment_alloc_sparse(segment_size, at + skew, alignment, block_at);
  if (segment == NULL) return NULL;
  mi_page_t* page = &segment->pages[0];
  bool was_clean = false;
  _mi_page_claim_slot(page, &was_clean);
  page->committed = block_end - block_at;
  _mi_stat_increase(&_mi_stats.committed, (int64_t)page->committed);
  if (MI_SECURE && !_mi_secure_single_guard(segment, segment_size, page, block_at)) {
    atomic_store_explicit(&page->state, MI_PAGE_FREE_DIRTY, memory_order_relaxed); /* fault path */
    _mi_segment_unmap(segment);
    return NULL;
  }
  page->start = (uint8_t*)segment + block_at;
  page->block_size = block_end - block_at;
  segment->thp_probe = 0;
  mi_single_ready(heap, segment, page, false); /* fresh from the OS: zero */
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
  mi_single_stat(page, -1);
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
  _mi_segment_release(segment);
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
  _mi_segment_unmap(segment);
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
  _mi_segment_single_set_block_size(page, needed - offset);
  segment->thp_probe = 0;       /* what it measured was another size */
  mi_hook_page_setup_end(page); /* its geometry changed */
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

void _mi_single_heap_destroy(mi_heap_t* heap, void (*release)(mi_page_t* page)) {
  for (;;) {
    _mi_lock_acquire(&mi_single_lock);
    mi_page_t* page = heap->single_first;
    _mi_lock_release(&mi_single_lock);
    if (page == NULL) break;
    _mi_raise_page_gone(page);
    if (release != NULL) release(page);
    else _mi_segment_single_free(_mi_page_segment(page));
  }
}

bool _mi_single_visit(const mi_heap_t* heap, bool (*fn)(mi_page_t* page, void* arg), void* arg) {
  _mi_lock_acquire(&mi_single_lock);
  bool ok = true;
  for (mi_page_t* page = heap->single_first; page != NULL && ok; page = page->next) ok = fn(page, arg);
  _mi_lock_release(&mi_single_lock);
  return ok;
}
