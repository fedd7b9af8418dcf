/* Freeing: the thread-local fast path, frees from other threads, and the
   rare cases (aligned interior pointers, full pages, single-block segments). */
#include "api.h"
#include "free-fast.h"

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
  mi_hook_sampled_page_free(segment, page, p); /* before the block goes anywhere */
  mi_track_unregister(p);                      /* the program's pointer, before the block goes anywhere */
  if (segment->kind == MI_SEGMENT_SINGLE) {
    /* a segment on its way back to the OS is made accessible whole there
       (segment.c): poisoning a huge block first wrote an eighth of its size
       to ASan's shadow for nothing (the alloc fuzz harness's huge blocks) */
    if (!_mi_segment_skips_cache(segment)) mi_track_free(page->start, page->block_size);
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

/* Free without telling the observers: for blocks whose record the caller
   handles itself (a reallocation that moves) or that were never handed to
   the program. */
void _mi_free_unobserved(void* p) {
  mi_free_inline(p);
}

/* The observers first: once the block is free another thread may get it.
   (The memory events take the block's size and record before the free and
   tell it after: observe.h.) */
static mi_forceinline void mi_free_observed(void* p, mi_alloc_kind_t kind) {
  mi_observe_free_held_t held;
  mi_observe_free_take(p, &held);
  mi_observe_free(p);
#if MI_SECURE_STACKS
  /* the free's stack, taken here (the walk from this frame), is kept by the
     secure free once the block passed its checks (a double free must still
     find the first free's) */
  if (p != NULL && (mi_observers_armed() & MI_OBSERVER_STACKS)) {
    _mi_secure_free_recorded(p, kind, _mi_secure_stack_here(__builtin_frame_address(0)));
  } else
#endif
    mi_free_inline_kind(p, kind);
  mi_observe_free_done(&held);
}

mi_noinline void _mi_free_observed(void* p) {
  mi_free_observed(p, MI_KIND_MALLOC);
}

mi_noinline void _mi_free_observed_kind(void* p, mi_alloc_kind_t kind) {
  mi_free_observed(p, kind);
}

void _mi_free_kind(void* p, mi_alloc_kind_t kind) {
  mi_delete_fast(p, kind);
}

void mi_free(void* p) {
  mi_free_fast(p);
}

/* As mimalloc's: memory that is not ours (another allocator's, a mapping
   of the program's) is ignored. The segment map tells without reading
   anything near p. Secure builds validate it as their free does, and
   report it. */
void mi_cfree(void* p) {
  if (!MI_SECURE && !_mi_segment_map_contains(p)) return;
  mi_free(p);
}
