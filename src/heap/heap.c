/* First-class heaps: creation, deletion, destruction, collection and
   inspection. A heap belongs to the thread that created it. */
#include "heap.h"

void _mi_heap_init(mi_heap_t* heap, mi_tld_t* tld, bool is_backing) {
  memcpy(heap, &_mi_heap_empty, sizeof(*heap));
  heap->tld = tld;
  heap->thread_id = tld->thread_id;
  heap->is_backing = is_backing;
#if MI_SECURE
  heap->handle_check = _mi_heap_handle_word(heap);
#endif
}

/* A heap that has gone gives its slot back (a thread's data, for its
   backing heap); secure builds retire it first, its handle check cleared,
   so that a stale handle does not name the next heap (heap/secure-heap-handles.c). */
void _mi_heap_slot_free(mi_heap_t* heap) {
  if (MI_SECURE) _mi_secure_heap_retire(heap);
  else _mi_meta_free(heap);
}

mi_heap_t* mi_heap_get_default(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) heap = _mi_heap_init_thread();
  return heap;
}

mi_heap_t* mi_heap_get_backing(void) {
  mi_heap_t* heap = mi_heap_get_default();
  return (heap != NULL ? heap->tld->heap_backing : NULL);
}

mi_heap_t* mi_heap_set_default(mi_heap_t* heap) {
  mi_heap_t* old = mi_heap_get_default();
  if (heap == NULL) return old;
  mi_heap_handle_check(heap);
  if (!mi_heap_is_initialized(heap)) return old;
  _mi_heap_default = heap;
  return old;
}

mi_heap_t* mi_heap_new(void) {
  mi_heap_t* backing = mi_heap_get_backing();
  if (backing == NULL) return NULL;
  mi_heap_t* heap = (mi_heap_t*)_mi_meta_alloc();
  if (heap == NULL) {
    errno = ENOMEM; /* fault path */
    return NULL;
  }
  mi_tld_t* tld = backing->tld;
  _mi_heap_init(heap, tld, false);
  heap->next = tld->heaps;
  tld->heaps = heap;
  return heap;
}

/* A heap of an arena takes its segments from that arena only: when it is
   full, allocation fails with ENOMEM (os/arena.c). */
mi_heap_t* mi_heap_new_ex(int heap_tag, bool allow_destroy, mi_arena_id_t arena_id) {
  (void)allow_destroy; /* any heap may be destroyed here: its blocks are its own */
  if (arena_id != 0 && !_mi_arena_id_valid(arena_id)) {
    errno = EINVAL;
    return NULL;
  }
  mi_heap_t* heap = mi_heap_new();
  if (heap == NULL) return NULL;
  heap->arena_id = arena_id;
  heap->tag = heap_tag;
  return heap;
}

mi_heap_t* mi_heap_new_in_arena(mi_arena_id_t arena_id) {
  if (arena_id == 0) {
    errno = EINVAL;
    return NULL;
  }
  return mi_heap_new_ex(0, true, arena_id);
}

static void mi_heap_unlink(mi_heap_t* heap) {
  mi_tld_t* tld = heap->tld;
  mi_heap_t** p = &tld->heaps;
  while (*p != NULL && *p != heap) p = &(*p)->next;
  if (*p == heap) *p = heap->next;
  if (_mi_heap_default == heap) _mi_heap_default = tld->heap_backing;
}

/* Move every page of `from` to `to` (both of this thread). */
static void mi_heap_absorb(mi_heap_t* to, mi_heap_t* from) {
  for (size_t bin = 1; bin < MI_BIN_COUNT; bin++) {
    mi_page_queue_t* pq = &from->pages[bin];
    while (pq->last != NULL) {
      mi_page_t* page = pq->first;
      _mi_page_queue_remove(from, pq, page);
      page->heap = to;
      _mi_page_queue_push(to, &to->pages[bin], page);
      to->page_count++;
    }
  }
  for (size_t bin = 1; bin <= MI_BIN_SMALL_MAX; bin++) { /* the sample pages */
    mi_page_queue_t* pq = &from->prof_pages[bin];
    while (pq->last != NULL) {
      mi_page_t* page = pq->first;
      _mi_page_queue_remove(from, pq, page);
      page->heap = to;
      _mi_page_queue_push(to, &to->prof_pages[bin], page);
      to->page_count++;
    }
  }
  from->page_count = 0;
  _mi_single_heap_delete(from, to);
  if (MI_SECURE) _mi_zero_heap_delete(from, to);
  if (MI_STAT) _mi_stats_merge_heap(from);
}

void mi_heap_delete(mi_heap_t* heap) {
  if (heap == NULL) return;
  mi_heap_handle_check(heap);
  if (!mi_heap_is_initialized(heap)) return;
  if (heap->is_backing) return; /* the backing heap lives as long as its thread */
  mi_heap_absorb(heap->tld->heap_backing, heap);
  mi_sched_point(MI_SCHED_HEAP_DELETE_ABSORBED);
  mi_heap_unlink(heap);
  _mi_heap_slot_free(heap);
  mi_sched_point(MI_SCHED_HEAP_FREED);
}

/* Free every page of the heap, whatever blocks it still holds. */
static void mi_heap_free_all_pages(mi_heap_t* heap) {
  for (size_t q = 1; q < MI_BIN_COUNT + MI_BIN_SMALL_MAX + 1; q++) { /* the sizes', then the sample pages' */
    mi_page_queue_t* pq = (q < MI_BIN_COUNT ? &heap->pages[q] : &heap->prof_pages[q - MI_BIN_COUNT]);
    while (pq->last != NULL) {
      mi_page_t* page = pq->first;
      _mi_page_queue_remove(heap, pq, page);
      mi_page_flags_store(page, 0);
      mi_sched_point(MI_SCHED_HEAP_DESTROY_PAGE);
      _mi_raise_page_gone(page);
      /* secure builds: not reused at once, so a stale pointer into it stays reported */
      if (MI_SECURE) _mi_secure_page_hold(heap->tld, page);
      else _mi_segment_page_free(page);
    }
  }
  heap->page_count = 0;
#if MI_SECURE
  _mi_single_heap_destroy(heap, &_mi_secure_single_destroyed); /* a stale use faults or is reported */
#else
  _mi_single_heap_destroy(heap, NULL);
#endif
  if (MI_SECURE) _mi_zero_heap_destroy(heap);
}

#if MI_TRACK_VALGRIND
/* memcheck holds a record of every block handed out (src/base/track.h). The
   blocks a destroyed heap still holds go with their pages, with no free
   call, so their records go here. A block handed out at an aligned pointer
   inside it is registered at that pointer, which the page does not keep:
   the blocks of a page marked as holding such blocks keep their record
   (a known gap, docs/sanitizers.md). */
static bool mi_heap_destroy_unregister(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size,
                                       void* arg) {
  (void)heap;
  (void)area;
  (void)size;
  (void)arg;
  if (block == NULL) return true;
  mi_page_t* page = _mi_segment_page_of(_mi_block_segment(block), block);
  if ((mi_page_flags(page) & MI_PAGE_FLAG_HAS_ALIGNED) == 0) mi_track_unregister(block);
  return true;
}
#endif

void mi_heap_destroy(mi_heap_t* heap) {
  if (heap == NULL) return;
  mi_heap_handle_check(heap);
  if (!mi_heap_is_initialized(heap)) return;
  if (heap->is_backing) {
    /* mimalloc semantics: the backing heap cannot be destroyed; collect it instead */
    mi_heap_collect(heap, true);
    return;
  }
  if (MI_STAT) _mi_stats_merge_heap(heap);
  _mi_raise_heap_flush(heap); /* (secure: its quarantined blocks back to their pages) */
#if MI_TRACK_VALGRIND
  mi_heap_visit_blocks(heap, true, &mi_heap_destroy_unregister, NULL);
#endif
  mi_heap_free_all_pages(heap);
  mi_heap_unlink(heap);
  _mi_heap_slot_free(heap);
  mi_sched_point(MI_SCHED_HEAP_FREED);
}

/* At thread exit: fold the thread's heaps into its backing heap, free the
   pages that are empty and abandon the rest. */
void _mi_heap_free_all_of_thread(mi_tld_t* tld) {
  /* an abandoned segment holds only pages in use: the secure wing's held pages go first */
  _mi_raise_thread_collect(tld, false);
  mi_heap_t* backing = tld->heap_backing;
  mi_heap_t* heap = tld->heaps;
  while (heap != NULL) {
    mi_heap_t* next = heap->next;
    if (heap != backing) {
      mi_heap_absorb(backing, heap);
      _mi_heap_slot_free(heap);
    }
    heap = next;
  }
  tld->heaps = backing;
  backing->next = NULL;
  _mi_heap_check(backing);
  bool kept = _mi_heap_collect_pages_at_exit(backing);
  _mi_single_heap_delete(backing, NULL);
  if (MI_SECURE) _mi_zero_heap_delete(backing, NULL);
  if (MI_STAT) _mi_stats_merge_heap(backing);
  mi_sched_point(MI_SCHED_ABANDON_BEGIN);
  _mi_segments_abandon(tld);
  /* only now: a purge run between the keeping and the abandoning would
     find the segment on no list and use up the due time */
  if (kept) _mi_background_due_after_delay();
  /* abandoned_page_purge: what waits for its purge delay goes now */
  if (mi_option_is_enabled(mi_option_abandoned_page_purge)) _mi_purge_run(true);
}

/* Fork child: the thread of `tld` does not exist here. Its large blocks
   become orphans (their list is under the single lock, so it is intact) and
   its segments are orphaned (see _mi_segments_orphan_in_fork_child); its
   heaps' slots go back to the meta pool. Nothing walks its page queues. */
void _mi_heap_orphan_in_fork_child(mi_tld_t* tld) {
  mi_heap_t* heap = tld->heaps;
  for (size_t n = 0; heap != NULL && n < 4096; n++) { /* bounded: see the segment walk */
    mi_heap_t* next = heap->next;
    _mi_single_heap_delete(heap, NULL);
    if (MI_SECURE) _mi_zero_heap_delete(heap, NULL);
    if (heap != tld->heap_backing) _mi_heap_slot_free(heap);
    heap = next;
  }
  tld->heaps = NULL;
  _mi_segments_orphan_in_fork_child(tld);
}

void mi_heap_collect(mi_heap_t* heap, bool force) {
  if (heap == NULL) return;
  mi_heap_handle_check(heap);
  if (!mi_heap_is_initialized(heap)) return;
  _mi_deferred_free(heap, force);
  if (force) _mi_raise_thread_collect(heap->tld, true);
  _mi_heap_check(heap);
  _mi_heap_collect_pages(heap);
  if (force) {
    _mi_threads_finish_ended();
    _mi_segments_reclaim(heap->tld->heap_backing, SIZE_MAX, true);
    _mi_heap_collect_pages(heap->tld->heap_backing);
  } else {
    _mi_segments_abandoned_cleanup(); /* what the background thread does when due (force adopted them all) */
  }
  _mi_purge_run(force);
}

/* destroy_on_exit: the exiting thread's heaps are freed whole, live blocks
   and all, and their memory goes back at once, as for a library unloaded
   while its program runs on. A block of them freed later is not ours any
   more (mimalloc warns of the same). Other threads' heaps are theirs. */
void _mi_heap_destroy_all_at_exit(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  mi_tld_t* tld = heap->tld;
  for (mi_heap_t* h = tld->heaps; h != NULL;) {
    mi_heap_t* next = h->next;
    if (!h->is_backing) mi_heap_destroy(h);
    h = next;
  }
  mi_heap_t* backing = tld->heap_backing;
  _mi_heap_default = backing;
  if (MI_STAT) _mi_stats_merge_heap(backing);
  _mi_raise_heap_flush(backing);
  mi_heap_free_all_pages(backing);
  mi_heap_collect(backing, true);
}

void mi_collect(bool force) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) {
    if (force) _mi_threads_finish_ended();
    _mi_purge_run(force);
    return;
  }
  mi_heap_collect(heap, force);
}

/* ---- Inspection --------------------------------------------------------------- */

static bool mi_ptr_is_in_page(const mi_page_t* page, const void* p) {
  const uint8_t* b = (const uint8_t*)p;
  return (b >= page->start && b < page->start + (size_t)page->reserved * page->block_size);
}

/* The page that holds `p`, if `p` is inside one of our segments and a page in use. */
static mi_page_t* mi_checked_page_of(const void* p) {
  if (p == NULL) return NULL;
  mi_segment_t* segment = _mi_segment_containing(p);
  if (segment == NULL || segment->cookie != ((uintptr_t)segment ^ _mi_process_key)) return NULL;
  if ((uintptr_t)p - (uintptr_t)segment >= segment->segment_size) return NULL;
  mi_page_t* page = _mi_segment_page_of(segment, p);
  if (atomic_load_explicit(&page->state, memory_order_relaxed) != MI_PAGE_IN_USE) return NULL;
  if (!mi_ptr_is_in_page(page, p)) return NULL;
  return page;
}

bool mi_heap_contains_block(mi_heap_t* heap, const void* p) {
  if (heap == NULL) return false;
  mi_heap_handle_check(heap);
  if (!mi_heap_is_initialized(heap)) return false;
  mi_page_t* page = mi_checked_page_of(p);
  return (page != NULL && page->heap == heap);
}

bool mi_heap_check_owned(mi_heap_t* heap, const void* p) {
  if (heap == NULL) return false;
  mi_heap_handle_check(heap);
  if (!mi_heap_is_initialized(heap)) return false;
  if (((uintptr_t)p & (sizeof(void*) - 1)) != 0) return false;
  return mi_heap_contains_block(heap, p);
}

bool mi_check_owned(const void* p) {
  return mi_heap_check_owned(mi_get_default_heap(), p);
}

bool mi_is_in_heap_region(const void* p) {
  return (mi_checked_page_of(p) != NULL);
}

/* ---- Visiting ------------------------------------------------------------------ */

typedef struct mi_visit_ctx_s {
  const mi_heap_t* heap;
  bool visit_blocks;
  mi_block_visit_fun* visitor;
  void* arg;
} mi_visit_ctx_t;

static void mi_page_area(const mi_page_t* page, mi_heap_area_t* area) {
  area->blocks = page->start;
  area->reserved = (size_t)page->reserved * page->block_size;
  area->committed = (size_t)page->capacity * page->block_size;
  area->used = page->used;
  area->block_size = page->block_size;
  area->full_block_size = page->block_size;
  area->heap_tag = 0;
}

/* Visit the blocks of a page that are in use: everything carved out that is
   on no free list. */
static bool mi_visit_page(mi_page_t* page, const mi_visit_ctx_t* ctx) {
  mi_heap_area_t area;
  _mi_page_collect(page);
  mi_page_area(page, &area);
  if (ctx->heap != NULL) area.heap_tag = ctx->heap->tag;
  if (!ctx->visitor(ctx->heap, &area, NULL, area.block_size, ctx->arg)) return false;
  if (!ctx->visit_blocks || page->used == 0) return true;
  /* secure builds: the page's bitmap knows which blocks are live */
  if (MI_SECURE) return _mi_secure_visit_page(ctx->heap, page, &area, ctx->visitor, ctx->arg);
  if (page->reserved == 1) return ctx->visitor(ctx->heap, &area, page->start, page->block_size, ctx->arg);
  uint64_t free_map[MI_SMALL_PAGE_SIZE / 16 / 64];
  memset(free_map, 0, sizeof(free_map));
  for (mi_block_t* b = page->free; b != NULL; b = mi_block_next(page, b)) {
    size_t idx = (size_t)((uint8_t*)b - page->start) / page->block_size;
    free_map[idx / 64] |= (uint64_t)1 << (idx % 64);
  }
  _mi_page_holes_mark_free(page, free_map); /* the blocks in its holes are free too */
  for (size_t i = 0; i < page->capacity; i++) {
    if (free_map[i / 64] & ((uint64_t)1 << (i % 64))) continue;
    if (!ctx->visitor(ctx->heap, &area, page->start + i * page->block_size, page->block_size, ctx->arg)) return false;
  }
  return true;
}

/* A free map of one of the calling thread's pages (1: free, a bit per block
   carved, LSB first): the blocks a visit does not see are free. */
typedef struct mi_free_map_ctx_s {
  const mi_page_t* page;
  uint8_t* map;
  size_t nbytes;
} mi_free_map_ctx_t;

static bool mi_free_map_live(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size,
                             void* arg) {
  (void)heap, (void)area, (void)block_size;
  if (block == NULL) return true;
  const mi_free_map_ctx_t* ctx = (const mi_free_map_ctx_t*)arg;
  size_t idx = (size_t)((uint8_t*)block - ctx->page->start) / ctx->page->block_size;
  if (idx / 8 < ctx->nbytes) ctx->map[idx / 8] &= (uint8_t) ~(1u << (idx % 8));
  return true;
}

bool _mi_page_free_map(mi_page_t* page, uint8_t* map, size_t nbytes) {
  if (nbytes < (page->capacity + 7) / 8) return false;
  memset(map, 0, nbytes);
  for (size_t i = 0; i < page->capacity; i++) map[i / 8] |= (uint8_t)(1u << (i % 8));
  mi_free_map_ctx_t fctx = {page, map, nbytes};
  mi_visit_ctx_t ctx = {page->heap, true, &mi_free_map_live, &fctx};
  return mi_visit_page(page, &ctx);
}

static bool mi_visit_single(mi_page_t* page, void* arg) {
  return mi_visit_page(page, (const mi_visit_ctx_t*)arg);
}

bool mi_heap_visit_blocks(const mi_heap_t* heap, bool visit_all_blocks, mi_block_visit_fun* visitor, void* arg) {
  if (heap == NULL) return false;
  mi_heap_handle_check(heap);
  if (!mi_heap_is_initialized(heap) || visitor == NULL) return false;
  mi_visit_ctx_t ctx = {heap, visit_all_blocks, visitor, arg};
  mi_heap_t* h = (mi_heap_t*)heap;
  for (size_t q = 1; q < MI_BIN_COUNT + MI_BIN_SMALL_MAX + 1; q++) { /* the sizes', then the sample pages' */
    mi_page_queue_t* pq = (q < MI_BIN_COUNT ? &h->pages[q] : &h->prof_pages[q - MI_BIN_COUNT]);
    for (mi_page_t* page = (pq->last != NULL ? pq->first : NULL); page != NULL; page = page->next) {
      if (!mi_visit_page(page, &ctx)) return false;
    }
  }
  if (!_mi_single_visit(heap, &mi_visit_single, &ctx)) return false;
  if (MI_SECURE && !_mi_zero_visit(heap, visit_all_blocks, visitor, arg)) return false;
  return true;
}

/* Segments of exited threads not yet claimed by another: there is one
   sub-process (the main one, NULL), and every area has heap tag 0. The
   parameters' types are mimalloc's signature (cppcheck would have them const). */
/* cppcheck-suppress constParameter */
bool mi_abandoned_visit_blocks(mi_subproc_id_t subproc_id, int heap_tag, bool visit_blocks, mi_block_visit_fun* visitor,
                               void* arg) {
  if (visitor == NULL || subproc_id != NULL) return false;
  if (heap_tag != 0) return true; /* nothing carries another tag */
  mi_visit_ctx_t ctx = {NULL, visit_blocks, visitor, arg};
  return _mi_segments_abandoned_visit(&mi_visit_single, &ctx);
}

/* As mimalloc decides it: not the page being allocated from (its queue's
   first), not a page still being carved out, and only the heap's own. */
/* cppcheck-suppress constParameter */
bool mi_unsafe_heap_page_is_under_utilized(mi_heap_t* heap, void* p, size_t perc_threshold) {
  if (heap != NULL) mi_heap_handle_check(heap);
  const mi_page_t* page = mi_checked_page_of(p);
  if (page == NULL || page->heap == NULL || (heap != NULL && page->heap != heap)) return false;
  if (page->capacity == 0 || page->capacity < page->reserved || page->used == page->capacity) return false;
  if (page->prev == NULL) return false;
  return ((size_t)page->used * 100) / page->capacity <= perc_threshold;
}

/* The allocation slow path: a thread's first allocation sets its heap up (its
   default heap was the empty one, whose queues hold only the empty page);
   then the page layer finds or makes a page. */
void* _mi_malloc_generic(mi_heap_t* heap, size_t size, bool zero) {
  if (mi_unlikely(!mi_heap_is_initialized(heap))) {
    heap = _mi_heap_init_thread();
    if (heap == NULL) {
      errno = ENOMEM; /* fault path */
      return NULL;
    }
  }
  return _mi_page_malloc_slow(heap, size, zero);
}
