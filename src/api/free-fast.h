/* The thread-local free fast path, shared by mi_free (free.c) and the
   exported free and operator delete (override.c, new-delete.c), which
   inline it: a tail call into mi_free from another file went through the
   PLT. */
#ifndef MI_FREE_FAST_H
#define MI_FREE_FAST_H

#include "api.h"

/* free.c: the observers' hook, then the free (of a block of that kind) */
void _mi_free_observed(void* p) mi_decl_hidden;
void _mi_free_observed_kind(void* p, mi_alloc_kind_t kind) mi_decl_hidden;

/* No lock, no atomic read-modify-write: the block goes on its page's list.
   Secure builds check the block's kind (malloc's, from free). */
static inline void mi_free_inline_kind(void* p, mi_alloc_kind_t kind) {
  if (MI_SECURE) {
    if (kind == MI_KIND_MALLOC) _mi_secure_free(p);
    else _mi_secure_delete(p, kind);
    return;
  }
  mi_segment_t* segment = _mi_block_segment(p);
  if (mi_unlikely((intptr_t)segment <= 0)) return; /* NULL (and the first 4 MiB of address space) */
  mi_page_t* page = _mi_segment_page_of(segment, p);
  if (mi_likely(atomic_load_explicit(&segment->thread_id, memory_order_relaxed) == _mi_thread_id() &&
                mi_page_flags(page) == 0)) {
    mi_block_t* block = (mi_block_t*)p;
    mi_track_unregister(block);
    mi_track_free(block, page->block_size);
    mi_block_set_next(page, block, page->free);
    page->free = block;
    if (mi_unlikely(--page->used == 0)) _mi_page_retire(page);
    return;
  }
  _mi_free_generic(segment, page, p);
}

static inline void mi_free_inline(void* p) {
  mi_free_inline_kind(p, MI_KIND_MALLOC);
}

/* A free the program called: the observers' test first, so that both exits
   are tail calls and the fast path needs no frame. The observers' word is
   read once (each read of an atomic is a load of its own). */
static inline void mi_free_fast(void* p) {
  const uint8_t armed = mi_observers_armed();
  if (mi_unlikely(mi_observing_frees_of(armed))) {
#if MI_SECURE_STACKS
    if (armed == MI_OBSERVER_STACKS) { /* the blocks' stacks alone */
      _mi_secure_free_stacked(p, MI_KIND_MALLOC);
      return;
    }
#endif
    _mi_free_observed(p);
    return;
  }
  mi_free_inline(p);
}

/* operator delete's (new-delete.c): the same, the block's kind expected to
   be `kind` in secure builds (a constant at each call site) */
static inline void mi_delete_fast(void* p, mi_alloc_kind_t kind) {
  if (!MI_SECURE) {
    mi_free_fast(p);
    return;
  }
  const uint8_t armed = mi_observers_armed();
  if (mi_unlikely(mi_observing_frees_of(armed))) {
#if MI_SECURE_STACKS
    if (armed == MI_OBSERVER_STACKS) {
      _mi_secure_free_stacked(p, kind);
      return;
    }
#endif
    _mi_free_observed_kind(p, kind);
    return;
  }
  _mi_secure_delete(p, kind);
}

#endif
