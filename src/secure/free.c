/* The secure build's free (MI_SECURE), and what realloc needs of it.

   The free path, in call order (each arrow a tail call or a call that does
   not return; the common path makes no call that comes back):

     _mi_secure_free(p)
       -> not in the segment map: mi_secure_free_far
            -> _mi_secure_validate_far_segment (validate.c), then mi_secure_free_in
       -> mi_validate_cookie (validate.h), then mi_secure_free_in(segment, p)
     mi_secure_free_in
       -> single-block or zero segment: mi_secure_free_single
            -> _mi_secure_validate_zero / _mi_secure_validate_single (validate.c)
            -> guarded: _mi_guard_free; else _mi_secure_large_free (segment/secure-guard-quarantine.c, secure-large.c)
       -> mi_locate_small (validate.h: page state, check word, block index, bit)
       -> p inside its block: mi_secure_free_interior -> _mi_secure_validate_interior
       -> mi_secure_free_located: mi_validate_tail (trailer and canary), then
            -> another thread's segment: mi_secure_free_remote
                 -> claimed on free: as the owner's free below
                 -> else: mark the trailer, zero, _mi_free_remote (page.h)
            -> the owner's: clear the bit, mi_secure_free_local
                 -> over 512 bytes: mi_secure_free_local_big (out of line)
                 -> zero (memory.h), then mi_secure_free_zeroed
                      -> above the small sizes or the quarantine off:
                         _mi_free_local_release (page.h)
                      -> else mi_quarantine_put: a random slot; the block evicted
                         from it goes through mi_quarantine_release to its page */
#include "memory.h"
#include "stacks.h"
#include "../page/secure-validate.h"
#include "../api/api.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A block leaves the quarantine for its page's free list. Its first word,
   where its link now goes, must still be zero: a write there after the free
   would be overwritten, not seen (the rest of the block is checked when it
   is handed out). */
static mi_forceinline void mi_quarantine_release(mi_page_t* page, mi_block_t* block) {
  if (mi_unlikely(block->next != NULL) && _mi_option_get_after_init(mi_option_zero_on_free) != 0) {
    _mi_secure_report_stale_write(block, page->block_size, 0, "when the block left the quarantine");
  }
  _mi_free_local_release(page, block);
}

void _mi_secure_quarantine_flush(mi_tld_t* tld, const mi_heap_t* only) {
  for (size_t i = 0; i < MI_SECURE_QUARANTINE; i++) {
    mi_quarantined_t q = tld->quarantine[i];
    if (q.block == NULL) continue;
    if (only == NULL) {
      tld->quarantine[i].block = NULL;
      mi_quarantine_release(q.page, q.block);
    } else if (q.page->heap == only) {
      tld->quarantine[i].block = NULL; /* its page is about to be freed with its heap */
    }
  }
}

/* What the thread holds back goes: its quarantine and the destroyed heaps'
   pages it holds; with `everything` (mi_heap_collect(force)) also the
   process's guarded samples and fenced large blocks. */
void _mi_secure_thread_collect(mi_tld_t* tld, bool everything) {
  _mi_secure_quarantine_flush(tld, NULL);
  _mi_secure_pages_held_release(tld, 0, 0);
  if (!everything) return;
#if MI_GUARDED
  _mi_guard_quarantine_flush();
#endif
  _mi_secure_large_quarantine_flush();
}

/* Zero on free switched on at run time: the calling thread's quarantined
   blocks may have been freed while it was off, unzeroed; zeroed now, they
   are not taken for written after free when they leave the quarantine or
   are handed out. (Blocks in other threads' quarantines and on free lists
   still are: docs/secure-mode.md.) */
void _mi_secure_zero_on_free_enabled(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  for (size_t i = 0; i < MI_SECURE_QUARANTINE; i++) {
    mi_quarantined_t q = heap->tld->quarantine[i];
    if (q.block != NULL) memset(q.block, 0, q.page->block_size);
  }
}

/* A free into a single-block segment (large, huge, guarded). */
static mi_noinline void mi_secure_free_single(mi_segment_t* segment, void* p, mi_alloc_kind_t kind, uint32_t stack) {
  if (segment->kind == MI_SEGMENT_ZERO) {
    _mi_secure_validate_zero(segment, p, MI_OP_FREE, true, NULL);
    return;
  }
  mi_page_t* page;
  _mi_secure_validate_single(segment, p, MI_OP_FREE, kind, &page, NULL);
#if MI_SECURE_STACKS
  if (stack != 0) mi_secure_stacks_freed(page, 0, stack);
#endif
  (void)stack;
  mi_bit_set(page, 0, false);
#if MI_GUARDED
  if (page->is_guarded) {
    mi_guard_stacks_record(segment, true); /* for a report's "freed by" */
    _mi_guard_free(segment, page);
    return;
  }
#endif
  _mi_secure_large_free(segment); /* its memory discarded and fenced off, the segment held (segment/secure-large.c) */
}

/* A freed small block waits in the thread's quarantine: it takes a random
   slot, and the block that was there becomes reusable. */
static mi_forceinline void mi_quarantine_put(mi_tld_t* tld, mi_page_t* page, mi_block_t* block) {
  mi_quarantined_t* slot = &tld->quarantine[_mi_tld_random(tld) % MI_SECURE_QUARANTINE];
  mi_quarantined_t evicted = *slot;
  slot->block = block;
  slot->page = page;
  if (evicted.block != NULL) mi_quarantine_release(evicted.page, evicted.block);
}

/* A block its owner freed, zeroed: back to its page (blocks above the small
   sizes, the quarantine off, or no heap to hold one) or into the quarantine.
   Blocks quarantined when the option goes off leave as they would have. */
static mi_forceinline void mi_secure_free_zeroed(mi_page_t* page, mi_block_t* block, size_t block_size) {
  if (_mi_option_get_after_init(mi_option_secure_quarantine) == 0 || block_size > MI_SMALL_BLOCK_MAX) {
    _mi_free_local_release(page, block);
    return;
  }
  mi_heap_t* heap = mi_get_default_heap();
  if (mi_unlikely(!mi_heap_is_initialized(heap))) {
    _mi_free_local_release(page, block);
    return;
  }
  mi_quarantine_put(heap->tld, page, block);
}

/* A free by the owner of a block whose zeroing is a loop or a call (over 512
   bytes): out of line, so the path of the smaller blocks makes no call but
   its last. */
static mi_noinline void mi_secure_free_local_big(mi_page_t* page, mi_block_t* block) {
  size_t block_size = page->block_size;
  if (_mi_option_get_after_init(mi_option_zero_on_free) != 0) mi_block_zero(block, block_size);
  mi_secure_free_zeroed(page, block, block_size);
}

/* A free by the owner (its bit is cleared already). */
static mi_forceinline void mi_secure_free_local(mi_page_t* page, mi_block_t* block) {
  size_t block_size = page->block_size;
  if (_mi_option_get_after_init(mi_option_zero_on_free) != 0) {
    if (block_size > 512) {
      mi_secure_free_local_big(page, block);
      return;
    }
    mi_block_zero(block, block_size);
  }
  mi_secure_free_zeroed(page, block, block_size);
}

/* A free by a thread that does not own the segment: pushed for the owner,
   unless the segment has none and this thread claims it. */
static mi_noinline void mi_secure_free_remote(mi_segment_t* segment, uintptr_t owner, mi_page_t* page,
                                              mi_block_t* block, size_t idx) {
  if (_mi_free_claims(segment, owner)) {
    mi_bit_set(page, idx, false);
    mi_secure_free_local(page, block);
    return;
  }
  /* the mark first, visible before any of the zeroing (whose stores past
     the medium sizes bypass the cache and are not ordered with it) */
  *mi_trailer_of(page, block) = mi_trailer_encode(mi_block_tag(block), MI_TRAILER_FREEING);
  atomic_thread_fence(memory_order_release);
  if (_mi_option_get_after_init(mi_option_zero_on_free) != 0) {
#if defined(__SSE2__)
    if (page->block_size > MI_MEDIUM_BLOCK_MAX) _mm_sfence();
#endif
    mi_block_zero(block, page->block_size);
  }
  _mi_free_remote(page, block);
}

#if MI_SECURE_PLANT_FALSE_ALARM
/* Test only: the real-suite job's planted false alarm (docs/real-suites.md).
   Every 2^20th free of a small or medium block in the process is reported
   as a double free, though it is a correct one: a correct program that frees
   that much aborts part way, as a wrong check would make it. */
static _Atomic(size_t) mi_plant_frees;
#define MI_PLANT_FALSE_ALARM_EVERY ((size_t)1 << 20)
#endif

/* The rest of a free once the pointer is located and, when it lies inside
   its block, found to be an aligned allocation's. */
static mi_forceinline void mi_secure_free_located(mi_segment_t* segment, mi_page_t* page, mi_block_t* block, void* p,
                                                  size_t idx, mi_alloc_kind_t kind, uint32_t stack) {
  mi_validate_tail(page, block, p, MI_OP_FREE, false, kind);
#if MI_SECURE_STACKS
  if (stack != 0) mi_secure_stacks_freed(page, idx, stack); /* checked: not a second free, which keeps the first's */
#endif
  (void)stack;
#if MI_SECURE_PLANT_FALSE_ALARM
  if ((atomic_fetch_add_explicit(&mi_plant_frees, 1, memory_order_relaxed) + 1) % MI_PLANT_FALSE_ALARM_EVERY == 0) {
    _mi_secure_report_freed(MI_OP_FREE, p, page->block_size);
  }
#endif
  uintptr_t owner = atomic_load_explicit(&segment->thread_id, memory_order_relaxed);
  if (mi_unlikely(owner != _mi_thread_id())) {
    mi_secure_free_remote(segment, owner, page, block, idx);
    return;
  }
  mi_bit_set(page, idx, false);
  mi_secure_free_local(page, block);
}

/* (six arguments, all in registers: the index is found again, so that the
   call into it stays a tail call) */
static mi_noinline void mi_secure_free_interior(mi_segment_t* segment, mi_page_t* page, mi_block_t* block, void* p,
                                                mi_alloc_kind_t kind, uint32_t stack) {
  _mi_secure_validate_interior(page, block, p, MI_OP_FREE);
  mi_secure_free_located(segment, page, block, p, mi_block_index(page, block), kind, stack);
}

static void mi_secure_free_sampled_page(mi_segment_t* segment, void* p, mi_alloc_kind_t kind, uint32_t stack);

/* A free of a pointer in a segment that passed the segment checks. The
   pprof sampler's blocks are told whoever frees them: a small or medium
   one where its page's check word says so (no test of the sampler's on
   the common path: the secure free's own entry serves while it samples); a
   large one or a zero-size slot where the sampler alone runs (the observed
   frees tell it themselves). */
static mi_forceinline void mi_secure_free_in(mi_segment_t* segment, void* p, bool tell, mi_alloc_kind_t kind,
                                             uint32_t stack) {
  if (mi_unlikely(segment->kind >= MI_SEGMENT_SINGLE)) { /* or a zero segment */
    if (mi_observers_armed() == MI_OBSERVER_PROF) mi_hook_secure_sampled_free(segment, p);
    mi_secure_free_single(segment, p, kind, stack);
    return;
  }
  mi_page_t* page;
  size_t idx;
  bool marked = false;
  mi_block_t* block = mi_locate_small(segment, p, MI_OP_FREE, &page, &idx, (tell ? &marked : NULL));
  if (mi_unlikely(marked)) {
    mi_secure_free_sampled_page(segment, p, kind, stack);
    return;
  }
  if (mi_unlikely((void*)block != p)) {
    mi_secure_free_interior(segment, page, block, p, kind, stack);
    return;
  }
  mi_secure_free_located(segment, page, block, p, idx, kind, stack);
}

/* A free in a small or medium page of the pprof sampler's (its check word
   marked: mi_locate_small), before the block goes anywhere: the sampler
   told (prof/hooks.h), then the free (the block located again). */
static mi_noinline void mi_secure_free_sampled_page(mi_segment_t* segment, void* p, mi_alloc_kind_t kind,
                                                    uint32_t stack) {
  mi_hook_sampled_page_free(segment, _mi_segment_page_of(segment, p), p);
  mi_secure_free_in(segment, p, false, kind, stack);
}

/* Past a segment's first chunk (a large block's interior) or not ours. */
static mi_noinline void mi_secure_free_far(void* p, mi_alloc_kind_t kind, uint32_t stack) {
  mi_segment_t* segment = _mi_secure_validate_far_segment(p, MI_OP_FREE);
  mi_secure_free_in(segment, p, true, kind, stack);
}

/* Every call on the way is a tail call or does not return: the common path
   makes no call that comes back (the register spills stay in one prologue
   on the path past the segment map; a call in the middle cost more).
   `stack`: the free's stack (MIMALLOC_SECURE_STACKS), kept for the block
   once it passed the checks; 0: none. */
static mi_forceinline void mi_secure_free(void* p, mi_alloc_kind_t kind, uint32_t stack) {
  if (p == NULL) return;
  if (mi_unlikely(!_mi_segment_map_contains(p))) {
    mi_secure_free_far(p, kind, stack);
    return;
  }
  mi_segment_t* segment = _mi_ptr_segment(p); /* a pointer in a segment's first chunk lies within it */
  mi_validate_cookie(segment, p, MI_OP_FREE);
  mi_secure_free_in(segment, p, true, kind, stack);
}

void _mi_secure_free(void* p) {
  mi_secure_free(p, MI_KIND_MALLOC, 0);
}

/* One copy for every delete: the kind it expects is a register here. */
void _mi_secure_delete(void* p, mi_alloc_kind_t kind) {
  mi_secure_free(p, kind, 0);
}

#if MI_SECURE_STACKS
/* A free or delete while the blocks' stacks are kept (api/free.c: the
   observers were told already). */
void _mi_secure_free_recorded(void* p, mi_alloc_kind_t kind, uint32_t stack) {
  mi_secure_free(p, kind, stack);
}

void _mi_secure_free_stacked(void* p, mi_alloc_kind_t kind) {
  if (p == NULL) return; /* nothing to record: no stack taken (nor the thread's stack asked for) */
  mi_secure_free(p, kind, mi_stacks_capture(__builtin_frame_address(0)));
}
#endif

/* ---- Realloc ------------------------------------------------------------------ */

/* The old block of a reallocation that moved, just copied from: freed as
   any block is, zeroed in the cache (_mi_secure_zero_in_cache). */
void _mi_secure_free_copied(void* p) {
  _mi_secure_zero_in_cache = true;
  /* its kind was checked by the realloc; with the blocks' stacks kept, the
     realloc is the old block's free */
  uint32_t stack = 0;
#if MI_SECURE_STACKS
  if (mi_observers_armed() & MI_OBSERVER_STACKS) stack = _mi_secure_stack_here(__builtin_frame_address(0));
#endif
  mi_secure_free(p, MI_KIND_ANY, stack);
  _mi_secure_zero_in_cache = false;
}

/* The new block of a reallocation that moves. A large block sits at the end
   of its segment, against its guard page, with less than a page of slack: a
   buffer grown by realloc a little at a time (appended to) would be copied
   every page. So a block that grows into the large sizes gets half its size
   again as room to grow in place, as the default build's large blocks grow
   in their segment. The canary and trailer are laid out for the size asked;
   the room is slack (its pages stay untouched until the data grows into
   them), and the guard page is past it. The room is taken straight from a
   segment: no guarded sample (a sampled block ends at its guard page and has
   no room to give; the sampling countdown is left for the next allocation),
   and no error report when it cannot be had (the size asked is tried next;
   errno is kept). */
void* _mi_secure_realloc_block(mi_heap_t* heap, size_t oldsize, size_t newsize) {
  if (newsize > oldsize && newsize + MI_SECURE_TRAILER > MI_MEDIUM_BLOCK_MAX && newsize <= MI_LARGE_SEGMENT_MAX / 2 &&
      mi_heap_is_initialized(heap)) {
    size_t need = newsize + newsize / 2 + MI_SECURE_TRAILER; /* still a large block, not a huge one */
    int saved_errno = errno;
    mi_page_t* page = _mi_segment_single_alloc(heap, need, 0, false);
    errno = saved_errno;
    if (page != NULL) {
      mi_block_t* block = (mi_block_t*)page->start;
      mi_track_malloc(block, need, page->block_size, false);
      return _mi_secure_block_prepare(page, block, newsize);
    }
  }
  return _mi_secure_malloc(heap, newsize, false);
}

/* realloc in secure builds (api/alloc.c chooses it): the pointer validated
   first (a size that cannot be had does not excuse a bad pointer); in place
   when the new size fits the block (the canary and trailer move with the
   size); else a new block, the contents copied and the old one freed. */
/* With `sampling` (the pprof sampler alone runs): a block kept in place
   whose page is flagged tells the sampler its new size; the new block's
   sampling decision is api/alloc.c's. (The old block of a move is freed as
   every block is: a sampled one's record goes.) */
static mi_forceinline void* mi_secure_realloc(mi_heap_t* heap, void* p, size_t newsize, bool zero, bool sampling) {
  size_t size;
  mi_page_t* page;
  mi_block_t* block = _mi_secure_validate_kind(p, MI_OP_REALLOC, MI_KIND_MALLOC, &page, &size);
  if (newsize > MI_MAX_ALLOC_SIZE) {
    errno = ENOMEM;
    return NULL; /* the original block stays valid */
  }
  if (newsize > 0 && newsize >= (size / 2) && _mi_secure_resize_in_place(page, block, p, newsize)) {
    if (zero && newsize > size) memset((uint8_t*)p + size, 0, newsize - size);
    if (sampling) mi_hook_secure_resized(page, p, newsize);
    return p;
  }
  void* newp = _mi_secure_realloc_block(heap, size, newsize);
  if (mi_unlikely(newp == NULL)) return NULL; /* errno set; the original block stays valid */
  /* (a block's usable size is the size asked for) */
  mi_realloc_copy(p, size, newp, newsize, newsize, zero);
  /* unobserved: the observers move the old block's record to newp (while
     the sampler alone runs, the old block's free tells it; the new block's
     sampling decision is the caller's, api/alloc.c) */
  _mi_secure_free_copied(p);
  return newp;
}

void* _mi_secure_realloc(mi_heap_t* heap, void* p, size_t newsize, bool zero) {
  return mi_secure_realloc(heap, p, newsize, zero, false);
}

/* (defined without the pprof sampler too: an unoptimized build keeps the
   call site the sampler's absence makes dead) */
void* _mi_secure_realloc_sampling(mi_heap_t* heap, void* p, size_t newsize, bool zero) {
  return mi_secure_realloc(heap, p, newsize, zero, true);
}

size_t _mi_secure_quarantine_count(const mi_tld_t* tld) {
  size_t n = 0;
  for (size_t i = 0; i < MI_SECURE_QUARANTINE; i++) n += (tld->quarantine[i].block != NULL);
  return n;
}
