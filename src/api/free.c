/* Freeing: the thread-local fast path, frees from other threads, and the
   rare cases (aligned interior pointers, full pages, single-block segments). */
#include "../internal.h"
#include "free-fast.h"

mi_block_t* _mi_page_block_start(const mi_page_t* page, const void* p) {
  size_t diff = (size_t)((const uint8_t*)p - page->start);
  size_t adjust = diff % page->block_size;
  return (mi_block_t*)((uintptr_t)p - adjust);
}

/* A free by the owning thread that may need more than the fast path: the
   page is in the full queue or holds aligned blocks, or (secure builds) the
   block leaves the quarantine. */
void _mi_free_local_release(mi_page_t* page, mi_block_t* block) {
  mi_block_set_next(page, block, page->free);
  page->free = block;
  page->used--;
  if (mi_page_flags(page) & MI_PAGE_FLAG_IN_FULL) _mi_page_unfull(page);
  if (page->used == 0) _mi_page_retire(page);
}

/* A free from a thread that does not own the page: push onto the page's
   atomic list, which the owner (or whoever reclaims the page after the owner
   is gone) collects. After the push this thread touches nothing of the page:
   once the block is on the list the owner may free the page at any time. */
void _mi_free_remote(mi_page_t* page, mi_block_t* block) {
  mi_block_t* head = atomic_load_explicit(&page->xthread_free, memory_order_relaxed);
  mi_sched_point(MI_SCHED_FREE_REMOTE_READ);
  do {
    mi_block_set_next(page, block, head);
  } while (!atomic_compare_exchange_weak_explicit(&page->xthread_free, &head, block, memory_order_release,
                                                  memory_order_relaxed));
  mi_sched_point(MI_SCHED_FREE_REMOTE_PUSHED);
}

/* A free into a segment of no thread (abandoned, most likely): with reclaim
   on free, try to claim it. Out of line, option test included: a call in
   _mi_free_generic's body gave every cross-thread free a stack frame (15
   more instructions a free, counted with callgrind), which a tail call does
   not. */
static mi_noinline void mi_free_claim_or_push(mi_segment_t* segment, mi_page_t* page, mi_block_t* block) {
  if (_mi_free_claims(segment, 0)) _mi_free_local_release(page, block);
  else _mi_free_remote(page, block);
}

mi_noinline void _mi_free_generic(mi_segment_t* segment, mi_page_t* page, void* p) {
  mi_track_unregister(p); /* the program's pointer, before the block goes anywhere */
  if (segment->kind == MI_SEGMENT_SINGLE) {
    mi_track_free(page->start, page->block_size);
    _mi_segment_single_free(segment);
    return;
  }
  mi_block_t* block = (mi_page_flags(page) & MI_PAGE_FLAG_HAS_ALIGNED) ? _mi_page_block_start(page, p) : (mi_block_t*)p;
  /* before the block goes on a list: from then on it may be handed out again */
  mi_track_free(block, page->block_size);
  uintptr_t owner = atomic_load_explicit(&segment->thread_id, memory_order_relaxed);
  if (owner == _mi_thread_id()) {
    _mi_free_local_release(page, block);
  } else if (mi_unlikely(owner == 0)) {
    mi_free_claim_or_push(segment, page, block);
  } else {
    _mi_free_remote(page, block);
  }
}

/* Free without telling the profiler: for blocks whose record the caller
   handles itself (a reallocation that moves) or that were never handed to
   the program. */
void _mi_free_unrecorded(void* p) {
  mi_free_inline(p);
}

#if MI_DHAT
/* The record goes first: once the block is free another thread may get it. */
mi_noinline void _mi_free_recorded(void* p) {
  mi_dhat_free(p);
  mi_free_inline(p);
}
#endif

void mi_free(void* p) {
  mi_free_fast(p);
}

void mi_cfree(void* p) {
  mi_free(p);
}
