/* The secure build's allocation (MI_SECURE): blocks handed
   out (checked untouched since their free, marked in the page's bitmap,
   canary and trailer laid out), the allocation fast and slow paths, and a
   block resized in place; the front's listener to the rare events. */
#include "../api/api.h"
#include "memory.h"
#include "stacks.h"
#include "../page/secure-validate.h"
#include "../base/listeners.h"

/* A single block's slack window (block.h) zeroed for its new layout, so
   that free can take anything else there for an overflow: all of it, or,
   when the data grew in place from `old_end`, only what lies past the window
   it had, which was zero already (an appending realloc zeroes at most a
   page per page it grows by). The window's memory may hold what a cached
   segment's block before left (MIMALLOC_LARGE_QUARANTINE=0, zero on free
   off), or old data and canary after a shrink. */
static void mi_single_slack_clear(mi_block_t* block, size_t user_end, size_t trailer_at, size_t old_end) {
  size_t from = mi_single_slack_from(user_end, trailer_at);
  size_t to = mi_single_slack_to(block, from, trailer_at);
  if (old_end < user_end) {
    size_t old_from = mi_single_slack_from(old_end, trailer_at);
    size_t old_to = mi_single_slack_to(block, old_from, trailer_at);
    if (old_to > from) from = old_to;
  }
  if (from < to) memset((uint8_t*)block + from, 0, to - from);
}

/* Lay out the caller's view of a block: data up to p+size, canary bytes,
   trailer. `old_end`: where the data ended before, for a block resized in
   place (SIZE_MAX: a block laid out the first time). */
static mi_forceinline void mi_set_user(mi_page_t* page, mi_block_t* block, void* p, size_t size, size_t old_end,
                                       mi_alloc_kind_t kind) {
#if MI_GUARDED
  if (page->is_guarded) {
    mi_guarded_set_user(page, block, p, size, kind);
    return;
  }
#endif
  size_t start = (size_t)((uint8_t*)p - (uint8_t*)block);
  size_t user_end = start + size;
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  uintptr_t tag = mi_block_tag(block);
  mi_canary_fill((uint8_t*)block, user_end, trailer_at, mi_canary_word(tag));
  size_t packed_start = start;
  if (mi_page_is_single_block(page)) {
    page->user_start = start;
    packed_start = 0;
    mi_single_slack_clear(block, user_end, trailer_at, old_end);
  }
  *mi_trailer_of(page, block) =
      mi_trailer_encode(tag, mi_trailer_pack(packed_start, user_end) + mi_trailer_kind_bits(kind));
  /* an aligned pointer closer than its tag to the block's start is one of a
     single-block page right after its header (segment/single.c), which
     its page's user_start names alone */
  if (start >= MI_MAX_ALIGN_SIZE) mi_tag_store(p);
}

/* an aligned allocation's pointer (the malloc family's; aligned new sets its kind after) */
void _mi_secure_set_user(mi_page_t* page, void* p, size_t size) {
  mi_set_user(page, (mi_block_t*)(page->start + mi_block_index(page, p) * page->block_size), p, size, SIZE_MAX,
              MI_KIND_MALLOC);
}

/* A block of a small or medium page just taken from its free list: check it
   was not written since it was freed, mark it handed out, lay out its canary
   and trailer. */
static mi_forceinline void mi_block_prepare_small(mi_page_t* page, mi_block_t* block, size_t size,
                                                  mi_alloc_kind_t kind) {
  size_t idx = mi_block_index(page, block);
  if (_mi_option_get_after_init(mi_option_zero_on_free) != 0) {
    bool untouched =
        (mi_likely(page->block_size <= MI_SECURE_UAF_CHECK_MAX) ? mi_block_untouched(block, page->block_size)
                                                                : _mi_secure_block_untouched_medium(page, block, idx));
    if (mi_unlikely(!untouched))
      _mi_secure_report_stale_write(block, page->block_size, sizeof(uint64_t), "when the block was handed out again");
  }
  mi_bit_set(page, idx, true);
  /* the link: an encoded pointer, a clue to the page's keys, is not the
     program's to read (before the canary, which may start in this word) */
  block->next = NULL;
  size_t trailer_at = page->block_size - MI_SECURE_TRAILER;
  uintptr_t tag = mi_block_tag(block);
  mi_canary_fill((uint8_t*)block, size, trailer_at, mi_canary_word(tag));
  *mi_trailer_of(page, block) = mi_trailer_encode(tag, mi_trailer_pack(0, size) + mi_trailer_kind_bits(kind));
}

/* Any block: also of a single-block segment, which has nothing to check
   (its memory came from the OS or the purge), and guarded ones, which have
   neither canary nor trailer. */
static void* mi_block_prepare(mi_page_t* page, mi_block_t* block, size_t size, mi_alloc_kind_t kind) {
#if MI_GUARDED
  if (page->is_guarded) {
    _mi_secure_page_seal(page); /* its block was just placed (guard.c) */
    mi_bit_set(page, 0, true);
    mi_guarded_set_user(page, block, block, size, kind);
    return block;
  }
#endif
  if (!mi_page_is_single_block(page)) {
    mi_block_prepare_small(page, block, size, kind);
    return block;
  }
  _mi_secure_page_seal(page); /* its block was just placed (segment.c) */
  mi_bit_set(page, 0, true);
  mi_set_user(page, block, block, size, SIZE_MAX, kind);
  return block;
}

void* _mi_secure_block_prepare(mi_page_t* page, mi_block_t* block, size_t size) {
  return mi_block_prepare(page, block, size, MI_KIND_MALLOC);
}

/* A block just laid out: its allocation's stack recorded (MIMALLOC_SECURE_
   STACKS; `stack` 0, a constant on every path but the recording one: none) */
static mi_forceinline void mi_stacks_put(mi_page_t* page, mi_block_t* block, uint32_t stack) {
#if MI_SECURE_STACKS
  if (stack != 0) mi_secure_stacks_put(page, mi_block_index(page, block), stack);
#endif
  (void)page, (void)block, (void)stack;
}

/* Everything but a pop from a page of the heap's queues: the size check, the
   guarded sample, a fresh page or a single-block segment. */
static mi_noinline void* mi_secure_malloc_slow(mi_heap_t* heap, size_t size, bool zero, mi_alloc_kind_t kind,
                                               uint32_t stack) {
  /* a heap set for an earlier epoch of the observers ends its count (the
     sampler's heap countdown: alloc-fast.h) */
  mi_observe_refill(heap);
  if (size == 0) return _mi_zero_malloc(heap, MI_MAX_ALIGN_SIZE, 0); /* a slot no access reaches */
  if (mi_unlikely(size > MI_MAX_ALLOC_SIZE - MI_SECURE_TRAILER)) {
    _mi_error_message(ENOMEM, "allocation request is too large (%zu bytes)\n", size);
    errno = ENOMEM;
    return NULL;
  }
#if MI_GUARDED
  /* the fast path counted down already if it came here for this */
  if (mi_heap_is_initialized(heap) && heap->guard_countdown-- <= 1) {
    void* g = _mi_guard_malloc_sampled(heap, size, zero);
    if (g != NULL) {
      if (kind != MI_KIND_MALLOC) _mi_secure_kind_set(g, kind); /* sampled as malloc's */
      return g;                                                 /* (its segment keeps its stacks) */
    }
  }
#endif
  size_t need = size + MI_SECURE_TRAILER;
  /* single-block segments come zeroed when asked; small blocks are zeroed below */
  mi_block_t* block = (mi_block_t*)_mi_malloc_generic(heap, need, zero && need > MI_MEDIUM_BLOCK_MAX);
  if (block == NULL) return NULL;
  mi_page_t* page = _mi_segment_page_of(_mi_ptr_segment(block), block);
  mi_block_prepare(page, block, size, kind);
  if (zero && !mi_page_is_single_block(page)) memset(block, 0, size);
  mi_stacks_put(page, block, stack);
  return block;
}

/* A block above MI_SECURE_UAF_CHECK_MAX popped by the fast path: its check
   is a call, which would have the fast path keep its values across it (in
   callee-saved registers, pushed and popped on every allocation). */
static mi_noinline void* mi_secure_malloc_medium(mi_page_t* page, mi_block_t* block, size_t size, bool zero,
                                                 mi_alloc_kind_t kind, uint32_t stack) {
  mi_block_prepare_small(page, block, size, kind);
  mi_stacks_put(page, block, stack);
  if (zero) return memset(block, 0, size);
  return block;
}

/* `stack`: the allocation's stack (MIMALLOC_SECURE_STACKS), recorded for
   the block; 0 (a constant in every other caller): none. */
static mi_forceinline void* mi_secure_malloc(mi_heap_t* heap, size_t size, bool zero, mi_alloc_kind_t kind,
                                             uint32_t stack) {
  /* size 0 wraps around: the slow path, with no compare of its own here */
  if (mi_likely(size - 1 < MI_MEDIUM_BLOCK_MAX - MI_SECURE_TRAILER)) {
    /* the page of the request with its trailer (size 0 never comes here: it
       goes to the slow path, secure-zero.c) */
    mi_page_t* page = _mi_heap_page_for(heap, size + MI_SECURE_TRAILER);
    mi_block_t* block = page->free;
    /* a block on the list: the heap is a real one (the empty heap's pages have none) */
    if (mi_likely(block != NULL)) {
#if MI_GUARDED
      /* the sampling decision costs one decrement until the countdown runs out */
      if (mi_unlikely(heap->guard_countdown <= 1)) return mi_secure_malloc_slow(heap, size, zero, kind, stack);
      heap->guard_countdown--;
#endif
      page->free = mi_block_next_checked(page, block);
      page->used++;
#if MI_STAT
      heap->stat_malloc[page->bin]++; /* (as the core's fast path counts) */
#endif
      if (mi_unlikely(page->block_size > MI_SECURE_UAF_CHECK_MAX))
        return mi_secure_malloc_medium(page, block, size, zero, kind, stack);
      mi_block_prepare_small(page, block, size, kind);
      mi_stacks_put(page, block, stack);
      /* with zero on free, the reuse check just found the block all zero
         (its link cleared): a zeroing allocation has nothing left to do */
      if (zero && _mi_option_get_after_init(mi_option_zero_on_free) == 0) return memset(block, 0, size);
      return block;
    }
  }
  return mi_secure_malloc_slow(heap, size, zero, kind, stack);
}

void* _mi_secure_malloc(mi_heap_t* heap, size_t size, bool zero) {
  return mi_secure_malloc(heap, size, zero, MI_KIND_MALLOC, 0);
}

/* One copy for every new: the kind is a register here. */
void* _mi_secure_new(mi_heap_t* heap, size_t size, mi_alloc_kind_t kind) {
  return mi_secure_malloc(heap, size, false, kind, 0);
}

#if MI_SECURE_STACKS
/* malloc and new while the blocks' stacks are kept and no other observer
   runs (api/alloc-fast.h, new-delete.c): the stack is taken first, the
   block's record written where its page and index are at hand. */
void* _mi_secure_new_stacked(mi_heap_t* heap, size_t size, mi_alloc_kind_t kind) {
  uint32_t stack = mi_stacks_capture(__builtin_frame_address(0));
  return mi_secure_malloc(heap, size, false, kind, stack);
}
#endif

/* A block just allocated by one of the other paths (aligned, observed):
   its trailer (a guarded block's page) takes the kind. A zero-size slot
   keeps none. */
void _mi_secure_kind_set(void* p, mi_alloc_kind_t kind) {
  if (p == NULL) return;
  mi_page_t* page;
  mi_block_t* block = _mi_secure_validate(p, MI_OP_USABLE_SIZE, &page, NULL);
  if (page == NULL) return;
#if MI_GUARDED
  if (page->is_guarded) {
    page->guarded_kind = (uint8_t)kind;
    return;
  }
#endif
  uint64_t* trailer = mi_trailer_of(page, block);
  uintptr_t tag = mi_block_tag(block);
  uint64_t value = mi_trailer_decode(tag, *trailer);
  *trailer = mi_trailer_encode(tag, (value & ~MI_TRAILER_KIND_MASK) + mi_trailer_kind_bits(kind));
}

/* `block` and `page`: p's, as _mi_secure_validate found them */
bool _mi_secure_resize_in_place(mi_page_t* page, mi_block_t* block, void* p, size_t newsize) {
  if (page == NULL) return false; /* a zero-size allocation's slot has no room */
#if MI_GUARDED
  if (page->is_guarded) return false; /* its end is fixed by its guard page */
#endif
  size_t offset = (size_t)((uint8_t*)p - (uint8_t*)block);
  if (newsize > page->block_size - MI_SECURE_TRAILER - offset) return false;
  /* validated: a single block's trailer holds where its data ends; the
     block keeps its kind */
  uint64_t value = mi_trailer_decode(mi_block_tag(block), *mi_trailer_of(page, block));
  size_t old_end = (mi_page_is_single_block(page) ? (size_t)mi_trailer_end(value) : SIZE_MAX);
  mi_set_user(page, block, p, newsize, old_end, mi_trailer_kind(value));
  return true;
}

/* ---- The secure front's part in the rare events (base/listeners.h) ------------------- */

/* Here, with the allocation every secure block passes through, so that a
   static link which takes the front takes its listener: its fault handler
   installed once the allocator is set up, the changed options it follows,
   the unmapped segments it remembers, what it holds back of a heap's and a
   thread's blocks. (Its keys and zero-size segments are the core's, made by
   heap/init.c before the first lock.) */
static void mi_secure_process_ready(void) {
  /* a fault on one of our guard pages says what it hit before the process dies */
  mi_prim_fault_handler_install(&_mi_guard_fault_report);
}

static void mi_secure_option_changed(mi_option_t option, long value) {
#if MI_GUARDED
  if (option == mi_option_guarded_sample_rate || option == mi_option_guarded_sample_seed ||
      option == mi_option_guarded_min || option == mi_option_guarded_max) {
    _mi_guard_options_changed();
  }
#endif
  if (option == mi_option_zero_on_free && value != 0) _mi_secure_zero_on_free_enabled();
}

static void mi_secure_heap_flush(mi_heap_t* heap) {
  _mi_secure_quarantine_flush(heap->tld, heap);
}

mi_listener_define(mi_secure_listener) = {
    .name = "secure",
    .order = MI_LISTEN_SECURE,
    .process_ready = &mi_secure_process_ready,
    .option_changed = &mi_secure_option_changed,
    .segment_unmapped = &_mi_secure_segment_unmapped, /* a later free into it is a double free */
    .heap_flush = &mi_secure_heap_flush,              /* its quarantined blocks back to their pages */
    .thread_collect = &_mi_secure_thread_collect,     /* quarantines, held pages, fenced large blocks */
    .secure_report = &_mi_secure_report_detail,       /* the stack where a misuse was seen; the JSON copy */
};
