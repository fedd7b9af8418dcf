/* Pages (layer above segments): size classes, free lists and their links,
   the page queues of a heap, the allocation slow path. Defined in page/. */
#ifndef MI_PAGE_H
#define MI_PAGE_H

#include "../segment/segment.h"

/* abandon.c: the abandonment protocol (docs/teardown-protocol.md) */
void _mi_segments_abandoned_init(void) mi_decl_hidden;
void _mi_segments_abandon(mi_tld_t* tld) mi_decl_hidden;
void _mi_segments_orphan_in_fork_child(mi_tld_t* tld) mi_decl_hidden;
bool _mi_segments_reclaim(mi_heap_t* heap, size_t max, bool force) mi_decl_hidden;
bool _mi_segments_reclaim_kind(mi_heap_t* heap, size_t max, mi_segment_kind_t kind) mi_decl_hidden;
void _mi_segments_take_over(mi_heap_t* heap, size_t bin) mi_decl_hidden;
bool _mi_segment_has_live_blocks(const mi_segment_t* segment) mi_decl_hidden;
bool _mi_segment_claim_on_free(mi_segment_t* segment) mi_decl_hidden;
void _mi_segments_abandoned_fork_child(void) mi_decl_hidden;
void _mi_segments_abandoned_cleanup(void) mi_decl_hidden;    /* _sweep(false) */
void _mi_segments_abandoned_sweep(bool full) mi_decl_hidden; /* and their pages' holes */
bool _mi_segments_abandoned_visit(bool (*fn)(mi_page_t* page, void* arg), void* arg) mi_decl_hidden;

/* A free into a small or medium segment of no thread (`owner` 0): with
   mi_option_abandoned_reclaim_on_free, try to claim it if it is abandoned;
   true if this thread owns it now and frees locally. */
static inline bool _mi_free_claims(mi_segment_t* segment, uintptr_t owner) {
  return (owner == 0 && _mi_option_get_fast(mi_option_abandoned_reclaim_on_free) != 0 &&
          _mi_segment_claim_on_free(segment));
}

/* page.c */
/* the allocation slow path of an initialised heap (heap.c: _mi_malloc_generic sets it up) */
void* _mi_page_malloc_slow(mi_heap_t* heap, size_t size, bool zero) mi_decl_hidden;
#if MI_PPROF
/* A block for a sample of the pprof sampler, on a page of the heap's sampled
   blocks; NULL without memory. */
void* _mi_page_malloc_sample(mi_heap_t* heap, size_t size) mi_decl_hidden;
#endif
void _mi_page_retire(mi_page_t* page) mi_decl_hidden;
void _mi_page_collect(mi_page_t* page) mi_decl_hidden;
void _mi_page_queue_push(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) mi_decl_hidden;
void _mi_page_queue_remove(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) mi_decl_hidden;
bool _mi_heap_direct_consistent(const mi_heap_t* heap) mi_decl_hidden;
mi_page_queue_t* _mi_page_queue_of(mi_heap_t* heap, const mi_page_t* page) mi_decl_hidden;
void _mi_page_unfull(mi_page_t* page) mi_decl_hidden;
void _mi_heap_collect_pages(mi_heap_t* heap) mi_decl_hidden;
bool _mi_heap_collect_pages_at_exit(mi_heap_t* heap) mi_decl_hidden;

/* the hook a program registers with mi_register_deferred_free */
void _mi_deferred_free(mi_heap_t* heap, bool force) mi_decl_hidden;

/* ---- Inline helpers ---------------------------------------------------------- */

/* Free-list links. Secure builds store them encoded with per-page keys, so an
   overwritten link or a leaked pointer cannot steer allocation, and with the
   address of the block that holds them (its slot), so a link copied into
   another block of the page never names a block. */
#if MI_SECURE
/* What a link's slot adds to it. A page's blocks lie in one slot of its
   segment, 2^16 or 2^19 bytes aligned, so two of them differ only in address
   bits 0 to 18, which this rotation moves to bits 45 to 63. A link copied
   from block a to block b decodes at b to what it named xor
   mi_link_slot(a) ^ mi_link_slot(b): a block of the page with a bit of 45 and
   up flipped, outside the page's slot (or, for a copied end of list, a
   segment's first address, before its first page's blocks). Never a block of
   the page, whatever the keys: the range check reports it. */
static inline uintptr_t mi_link_slot(const mi_block_t* block) {
  return mi_rotl((uintptr_t)block, 64 - MI_MEDIUM_PAGE_SHIFT);
}
static inline mi_block_t* mi_block_next(const mi_page_t* page, const mi_block_t* block) {
  return (mi_block_t*)(mi_rotr((uintptr_t)block->next - page->keys[1], page->keys[0]) ^ page->keys[0] ^
                       mi_link_slot(block));
}
static inline void mi_block_set_next(const mi_page_t* page, mi_block_t* block, const mi_block_t* next) {
  block->next =
      (mi_block_t*)(mi_rotl((uintptr_t)next ^ page->keys[0] ^ mi_link_slot(block), page->keys[0]) + page->keys[1]);
}
/* The next link of a block about to be handed out: a decoded link that does
   not point into the page's carved blocks means the list was corrupted; it is
   never followed. */
static inline mi_block_t* mi_block_next_checked(const mi_page_t* page, const mi_block_t* block) {
  mi_block_t* next = mi_block_next(page, block);
  if (mi_unlikely(next != NULL && ((uint8_t*)next < page->start ||
                                   (uint8_t*)next >= page->start + (size_t)page->capacity * page->block_size))) {
    _mi_secure_report_free_list(block, page->block_size);
  }
  return next;
}
#else
/* the link lives inside a free block, which a memory checker sees as
   inaccessible: opened for the access (track.h; nothing without one) */
static inline mi_block_t* mi_block_next(const mi_page_t* page, const mi_block_t* block) {
  (void)page;
  mi_track_link_open(block);
  mi_block_t* next = block->next;
  mi_track_link_close(block);
  return next;
}
#define mi_block_next_checked mi_block_next
static inline void mi_block_set_next(const mi_page_t* page, mi_block_t* block, const mi_block_t* next) {
  (void)page;
  mi_track_link_open(block);
  block->next = (mi_block_t*)next;
  mi_track_link_close(block);
}
#endif

/* Size class of a request; requests above MI_MEDIUM_BLOCK_MAX have no bin. */
/* page.c: the bins of sizes up to MI_BIN_WSIZE_MAX words, by word count */
extern const uint8_t _mi_bin_of_wsize[MI_BIN_WSIZE_MAX + 1] mi_decl_hidden;

static inline size_t _mi_bin(size_t size) {
  if (mi_likely(size <= MI_BIN_WSIZE_BYTES_MAX)) return _mi_bin_of_wsize[(size + 7) >> 3];
  size_t s = size - 1;
  size_t b = mi_bsr64((unsigned long long)s);
  return 9 + (b - 7) * 8 + ((s >> (b - 3)) & 7);
}
/* holes.c: hole purge, the free OS pages inside used pages (docs/memory-return.md) */
uint8_t _mi_page_holes_shift(const uint8_t* start, size_t area) mi_decl_hidden;
size_t _mi_page_holes_sweep(mi_page_t* page, bool full, bool eager_zero) mi_decl_hidden;
void _mi_page_holes_unpurge(mi_page_t* page) mi_decl_hidden;
/* blocks were carved into its discarded tail, which held `before` bytes */
void _mi_page_holes_tail_carved(mi_page_t* page, size_t before) mi_decl_hidden;
void _mi_page_holes_mark_free(const mi_page_t* page, uint64_t* map) mi_decl_hidden;
void _mi_page_holes_census(const mi_page_t* page, size_t* free_bytes, size_t* hole_bytes,
                           size_t* pinned_bytes) mi_decl_hidden;
void _mi_holes_sweep_begin(void) mi_decl_hidden;
void _mi_holes_note_sweep(bool full) mi_decl_hidden;
void _mi_holes_note_pages_freed(size_t n) mi_decl_hidden;
/* page.c: a heap's pages swept; the bytes discarded */
size_t _mi_heap_holes_sweep(mi_heap_t* heap, bool owner, bool full, bool eager_zero) mi_decl_hidden;

/* the block size of a bin: the largest request _mi_bin gives it (page.c) */
size_t _mi_bin_size(size_t bin) mi_decl_hidden;

/* ---- Blocks back on a page's lists: the owner's, and the one other threads
   push to. Inline: free's slow path (api/free.c) and the secure wing take
   them on every free the fast path does not finish. */

/* The block an interior pointer of an aligned allocation lies in. */
static inline mi_block_t* _mi_page_block_start(const mi_page_t* page, const void* p) {
  size_t diff = (size_t)((const uint8_t*)p - page->start);
  size_t adjust = diff % page->block_size;
  return (mi_block_t*)((uintptr_t)p - adjust);
}

/* A free by the owning thread that may need more than the fast path: the
   page is in the full queue or holds aligned blocks, or (secure builds) the
   block leaves the quarantine. */
static inline void _mi_free_local_release(mi_page_t* page, mi_block_t* block) {
  mi_assert(page->used > 0); /* a block of the page was handed out */
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
static inline void _mi_free_remote(mi_page_t* page, mi_block_t* block) {
  mi_block_t* head = atomic_load_explicit(&page->xthread_free, memory_order_relaxed);
  mi_sched_point(MI_SCHED_FREE_REMOTE_READ);
  do {
    mi_block_set_next(page, block, head);
  } while (!atomic_compare_exchange_weak_explicit(&page->xthread_free, &head, block, memory_order_release,
                                                  memory_order_relaxed));
  mi_sched_point(MI_SCHED_FREE_REMOTE_PUSHED);
}

#endif
