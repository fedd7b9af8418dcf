/* The secure policy on the segment floor (MI_SECURE): where the guard
   pages go and the checks of a segment's header and links. segment.c calls
   it where it lays a segment out and (through secure/hooks.h's page freed and
   segment emptied events) where it frees a page slot; single.c where it
   places a large block, links and unlinks it (a destroyed heap's large
   block is fenced and held as a free would: heap/secure-single-destroyed.c). */
#include "segment.h"

/* Guard pages: one between the header and the blocks, and one at the end of
   every page of a small or medium segment, so a linear overflow off the end
   of a span of blocks faults instead of running into the next span or the
   metadata. A failure to protect is reported and the segment not used. */
bool _mi_secure_segment_guards_protect(mi_segment_t* segment) {
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

/* A segment of ours, or none: in the segment map (which is never read
   through a pointer) and with our cookie, before anything else of it is
   read. */
bool _mi_secure_segment_ours_or_null(const mi_segment_t* segment) {
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
void _mi_secure_page_free_check(mi_segment_t* segment, mi_page_t* page) {
  _mi_secure_page_check(page);
  size_t shift = (segment->kind == MI_SEGMENT_SMALL ? MI_SMALL_PAGE_SHIFT : MI_MEDIUM_PAGE_SHIFT);
  bool ok = (segment->page_count == (MI_SEGMENT_SIZE >> shift) && segment->segment_size == MI_SEGMENT_SIZE &&
             segment->info_size == _mi_segment_info_size() && segment->used_pages >= 1 &&
             segment->used_pages <= segment->page_count);
  mi_tld_t* tld = segment->tld;
  if (ok && tld != NULL) {
    mi_heap_t* heap = mi_get_default_heap();
    ok = (!mi_heap_is_initialized(heap) || heap->tld == tld);
  }
  if (ok && tld != NULL) {
    const mi_segment_t* prev = segment->prev;
    const mi_segment_t* next = segment->next;
    ok = (_mi_secure_segment_ours_or_null(prev) && _mi_secure_segment_ours_or_null(next) &&
          (prev == NULL ? tld->segments == segment : prev->next == segment) && (next == NULL || next->prev == segment));
    const mi_segment_t* free_prev = segment->free_prev;
    const mi_segment_t* free_next = segment->free_next;
    bool listed = (free_prev != NULL || tld->free_segments[segment->kind] == segment);
    ok = ok && _mi_secure_segment_ours_or_null(free_prev) && _mi_secure_segment_ours_or_null(free_next) &&
         (listed ? (free_prev == NULL || free_prev->free_next == segment) &&
                       (free_next == NULL || free_next->free_prev == segment)
                 : free_next == NULL);
  }
  if (!ok) _mi_secure_corrupted_header(segment);
}

/* The last page in use is going: no other slot may still be taken. */
void _mi_secure_segment_empty_check(const mi_segment_t* segment) {
  for (size_t i = 0; i < segment->page_count; i++) {
    uint32_t state = atomic_load_explicit(&segment->pages[i].state, memory_order_relaxed);
    if (state == MI_PAGE_IN_USE || state == MI_PAGE_HELD) _mi_secure_corrupted_header(segment);
  }
}

/* ---- Single-block segments (segment/single.c) ---------------------------- */

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

void _mi_secure_single_links_check(const mi_page_t* page, mi_page_t* const* head) {
  const mi_page_t* prev = page->prev;
  const mi_page_t* next = page->next;
  bool ok = (prev == NULL ? *head == page : mi_single_page_at(prev) && prev->next == page);
  if (ok && next != NULL) ok = (mi_single_page_at(next) && next->prev == page);
  if (!ok) _mi_secure_corrupted_header(_mi_page_segment(page));
}

void _mi_secure_single_linked(mi_page_t* page, const mi_heap_t* heap) {
  page->heap_check = mi_single_heap_check(page, heap);
}

void _mi_secure_single_heap_check(const mi_page_t* page) {
  if (page->heap_check != mi_single_heap_check(page, page->heap)) _mi_secure_corrupted_header(_mi_page_segment(page));
}

/* Where the block of a single-block segment of `segment_size` (the size
   asked for: a cached one may be larger) starts (returned), how much of the
   segment it may touch (`area`, past the header) and where it ends. */
size_t _mi_secure_single_place(size_t segment_size, size_t size, size_t alignment, size_t offset, size_t* area,
                               size_t* block_end) {
  size_t psize = _mi_os_page_size();
  /* The guard page is the segment's last page, so it stays put while the
     segment is cached and reused for blocks of other sizes (moving it cost two
     mprotect calls per large allocation), and the block runs up to it: a
     linear overflow off its end crosses the canary and the trailer and then
     faults. The memory a block may have touched is a suffix of the area, and
     `committed` counts that suffix. */
  size_t guard_at = segment_size - psize;
  /* The block ends at the guard page to the 16 bytes: its slack (under a
     page) lies before it, so the caller's data ends within the canary's
     reach of the trailer, and a write past the trailer faults (a write into
     slack after the data went unseen). An aligned allocation's block starts
     on a page boundary, as before: the caller places its pointer inside it
     (alloc-aligned.c), and the slack after that pointer's data stays. */
  size_t granule = (alignment > MI_MAX_ALIGN_SIZE ? psize : MI_MAX_ALIGN_SIZE);
  size_t block_at = (guard_at - size) & ~(granule - 1);
  if (block_at < offset) block_at = offset;
  /* every pointer handed out from the block (an aligned one lies up to
     twice its alignment inside) must fall in the segment's first
     MI_SEGMENT_SIZE bytes, where _mi_ptr_segment finds the header */
  size_t reach = (alignment > MI_MAX_ALIGN_SIZE ? 2 * alignment : 0) + 2 * (size_t)MI_MAX_ALIGN_SIZE;
  size_t max_at =
      (MI_SEGMENT_SIZE > reach + offset ? (MI_SEGMENT_SIZE - reach) & ~(size_t)(MI_MAX_ALIGN_SIZE - 1) : offset);
  if (block_at > max_at) block_at = max_at;
  *area = guard_at - (block_at & ~(psize - 1));
  *block_end = guard_at;
  return block_at;
}

/* The guard page after the block of a single-block segment, where the
   segment is reused with another guard place, and the page's secure state
   set anew. false: the guard could not be placed (reported). */
bool _mi_secure_single_guard(mi_segment_t* segment, size_t segment_size, mi_page_t* page, size_t block_at) {
  size_t psize = _mi_os_page_size();
  size_t guard_at = segment_size - psize;
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
      return false;
    }
    page->guard_offset = guard_at;
  }
  page->block_size_inv = 0; /* its one block has index 0 whatever the offset */
  page->is_guarded = false; /* a reused segment must not inherit it: the sampling sets it after this */
  page->guarded_freed = false;
  page->large_fenced = false;
  return true;
}

/* A cached segment is purged: purging zeroes the header, and with it where
   a large block's guard page is, so that guard is lifted first (the other
   guard pages sit where every segment of the kind has them). false: it
   could not be (warned; the segment is not purged). */
bool _mi_secure_single_guard_lift(mi_segment_t* segment) {
  mi_page_t* single = &segment->pages[0];
  if (segment->kind != MI_SEGMENT_SINGLE || single->guard_offset == 0) return true;
  if (_mi_os_protect((uint8_t*)segment + single->guard_offset, _mi_os_page_size(), false) != 0) {
    _mi_warning_message("unable to lift the guard of cached segment %p\n", (void*)segment); /* fault path */
    return false;
  }
  single->guard_offset = 0;
  return true;
}
