/* The full heap-consistency check of debug builds (MI_DEBUG >= 3, the top of
   the assertion ladder): walks every page of a heap and verifies the
   invariants the fast paths rely on. Run at mi_heap_collect and at thread
   exit; a violation is an assertion failure. */
#include "heap.h"

#if MI_DEBUG >= 3

static size_t mi_check_free_list(const mi_page_t* page) {
  size_t count = 0;
  const uint8_t* end = page->start + (size_t)page->capacity * page->block_size;
  for (const mi_block_t* b = page->free; b != NULL; b = mi_block_next(page, b)) {
    const uint8_t* p = (const uint8_t*)b;
    mi_assert(p >= page->start && p < end);                       /* inside the carved area */
    mi_assert((size_t)(p - page->start) % page->block_size == 0); /* at a block start */
    count++;
    mi_assert(count <= page->capacity); /* no cycle */
  }
  return count;
}

static void mi_check_page(const mi_heap_t* heap, const mi_page_t* page, size_t bin) {
  const mi_segment_t* segment = _mi_page_segment(page);
  mi_assert(page->heap == heap);
  mi_assert(atomic_load_explicit(&page->state, memory_order_relaxed) == MI_PAGE_IN_USE);
  mi_assert(atomic_load_explicit(&segment->thread_id, memory_order_relaxed) == heap->thread_id);
  mi_assert(segment->cookie == ((uintptr_t)segment ^ _mi_process_key));
  mi_assert(page->capacity <= page->reserved);
  mi_assert(page->block_size == _mi_bin_size(page->bin));
  if (bin == MI_BIN_COUNT) mi_assert(mi_page_flags(page) & MI_PAGE_FLAG_SAMPLE_PAGE); /* the sample pages */
  else if (bin == MI_BIN_FULL) mi_assert(mi_page_flags(page) & MI_PAGE_FLAG_IN_FULL);
  else mi_assert(page->bin == bin && !(mi_page_flags(page) & MI_PAGE_FLAG_IN_FULL));
  if (bin != MI_BIN_COUNT) mi_assert(!(mi_page_flags(page) & MI_PAGE_FLAG_SAMPLE_PAGE));
  size_t free_count = mi_check_free_list(page);
  /* blocks freed by other threads are still counted in `used` */
  mi_assert(page->used + free_count + _mi_page_holes(page)->purged == page->capacity); /* (holes: page/holes.c) */
}

void _mi_heap_check(const mi_heap_t* heap) {
  if (heap == NULL || !mi_heap_is_initialized(heap)) return;
  size_t pages = 0;
  for (size_t q = 1; q < MI_BIN_COUNT + MI_BIN_SMALL_MAX + 1; q++) { /* the sizes', then the sample pages' */
    const mi_page_queue_t* pq = (q < MI_BIN_COUNT ? &heap->pages[q] : &heap->prof_pages[q - MI_BIN_COUNT]);
    const size_t bin = (q < MI_BIN_COUNT ? q : MI_BIN_COUNT); /* MI_BIN_COUNT: a sample page's queue */
    const mi_page_t* prev = NULL;
    for (const mi_page_t* page = (pq->last != NULL ? pq->first : NULL); page != NULL; page = page->next) {
      mi_assert(page->prev == prev);
      mi_check_page(heap, page, bin);
      prev = page;
      pages++;
    }
    mi_assert(pq->last == prev);
  }
  mi_assert(pages == heap->page_count);
  mi_assert(_mi_heap_direct_consistent(heap)); /* the fast path's table matches the queues */
}

#else
void _mi_heap_check(const mi_heap_t* heap) {
  (void)heap;
}
#endif
