/* Aligned allocation. Blocks are 16-byte aligned by construction; larger
   alignments come from a size class whose blocks happen to be aligned, or
   from over-allocating and handing out an aligned pointer inside the block
   (the page is then marked so that free finds the block's start). Past
   half a segment, over-allocating inside a segment's first chunk no longer
   fits: the block gets a sparse segment of its own, placed by the OS layer
   at the alignment (segment/single.c). */
#include "api.h"

static void* mi_heap_malloc_aligned_at_generic(mi_heap_t* heap, size_t size, size_t alignment, size_t offset,
                                               bool zero) {
  /* secure builds keep a 16-byte tag before an interior pointer */
  size_t n = size + alignment - 1 + (MI_SECURE ? 16 + alignment : 0);
  bool sparse = (alignment > MI_ALIGNMENT_IN_SEGMENT_MAX);
  void* p;
  if (sparse || n > MI_MEDIUM_BLOCK_MAX) {
    if (!mi_heap_is_initialized(heap)) {
      heap = _mi_heap_init_thread();
      if (heap == NULL) return NULL;
    }
    /* secure builds: tell how far inside the block the pointer will lie;
       a sparse segment places it itself, and hands out memory that is zero */
    mi_page_t* page = (sparse ? _mi_segment_single_alloc_aligned(heap, size, alignment, offset)
                              : _mi_segment_single_alloc(heap, n + (MI_SECURE ? MI_SECURE_TRAILER : 0),
                                                         MI_SECURE ? alignment : 0, zero));
    p = (page != NULL ? page->start : NULL);
    if (p != NULL) {
      /* handed out as every block is, so mi_track_aligned finds it
         registered (a sparse segment's block is placed, not asked for:
         all of it but the trailer) */
      mi_track_malloc(p, sparse ? page->block_size : n, page->block_size, zero);
      if (MI_SECURE) _mi_secure_block_prepare(page, (mi_block_t*)p, sparse ? page->block_size - MI_SECURE_TRAILER : n);
    }
  } else {
    p = _mi_heap_malloc_zero(heap, n, zero);
  }
  if (p == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  uintptr_t adjust = (alignment - (((uintptr_t)p + offset) & (alignment - 1))) & (alignment - 1);
  mi_segment_t* segment = _mi_block_segment(p);
  mi_page_t* page = _mi_segment_page_of(segment, p);
  if (MI_SECURE) {
    /* room for the tag, in a block over-allocated for it (a sparse
       segment's block is placed: the pointer may lie under 16 bytes in) */
    while (!sparse && adjust != 0 && adjust < 16) adjust += alignment;
    _mi_secure_set_user(page, (uint8_t*)p + adjust, size);
  }
  if (adjust == 0) return p;
  mi_page_flags_add(page, MI_PAGE_FLAG_HAS_ALIGNED);
  return (uint8_t*)p + adjust;
}

static void* mi_heap_malloc_aligned_at_zero_core(mi_heap_t* heap, size_t size, size_t alignment, size_t offset,
                                                 bool zero) {
  if (alignment == 0 || !_mi_is_power_of_two(alignment)) {
    errno = EINVAL;
    return NULL;
  }
  if (size > MI_MAX_ALLOC_SIZE - MI_ALIGNMENT_IN_SEGMENT_MAX || alignment > MI_MAX_ALLOC_SIZE) {
    errno = ENOMEM;
    return NULL;
  }
  /* secure builds: a slot no access reaches, at the alignment; with an
     offset no 16-byte slot can meet, an ordinary block with nothing in it
     (docs/secure-mode.md) */
  if (MI_SECURE && size == 0 && _mi_zero_can_align(alignment, offset)) return _mi_zero_malloc(heap, alignment, offset);
  if (alignment <= MI_MAX_ALIGN_SIZE && (offset & (alignment - 1)) == 0) {
    void* p = _mi_heap_malloc_zero(heap, size, zero);
    /* every block is 16-byte aligned but a sampled guarded one with
       MIMALLOC_GUARDED_PRECISE, which ends at its guard page to the byte: a
       size that is a multiple of the alignment, below, places it right */
    if (p == NULL || ((uintptr_t)p & (alignment - 1)) == 0) return p;
    _mi_free_unobserved(p);
  }
  /* a size class that is a multiple of the alignment gives aligned blocks
     when pages start aligned (pages start on OS page boundaries) */
  if (offset == 0 && alignment <= _mi_os_page_size() && size <= MI_MEDIUM_BLOCK_MAX) {
    size_t asize = _mi_align_up(size == 0 ? 1 : size, alignment);
    if (asize <= MI_MEDIUM_BLOCK_MAX && (_mi_bin_size(_mi_bin(asize)) & (alignment - 1)) == 0) {
      void* p = _mi_heap_malloc_zero(heap, asize, zero);
      /* secure builds: the canary starts right after what the caller asked for */
      if (MI_SECURE && p != NULL && ((uintptr_t)p & (alignment - 1)) == 0) {
        _mi_secure_set_user(_mi_segment_page_of(_mi_ptr_segment(p), p), p, size);
      }
      if (p == NULL || ((uintptr_t)p & (alignment - 1)) == 0) return p;
      _mi_free_unobserved(p); /* never handed out */
    }
  }
  return mi_heap_malloc_aligned_at_generic(heap, size, alignment, offset, zero);
}

#if MI_TRACK_ENABLED
/* An aligned pointer may sit inside a larger block: only p .. p+size is the
   program's, the block before and after it stays inaccessible. */
static void mi_track_aligned(void* p, size_t size, bool zero) {
  if (p == NULL) return;
  mi_segment_t* segment = _mi_block_segment(p);
  mi_page_t* page = _mi_segment_page_of(segment, p);
  mi_block_t* block = _mi_page_block_start(page, p);
  mi_track_unregister(block); /* the core registered the whole block at its start */
  mi_track_free(block, page->block_size);
  mi_track_malloc(p, size, size, zero);
}
#else
#define mi_track_aligned(p, size, zero) ((void)0)
#endif

/* The entry the public calls share: the allocation, then the observers' hook. */
static void* mi_heap_malloc_aligned_at_zero(mi_heap_t* heap, size_t size, size_t alignment, size_t offset, bool zero) {
  mi_heap_handle_check(heap); /* (the default heap's calls come here too: the check lets it through) */
  void* p = mi_heap_malloc_aligned_at_zero_core(heap, size, alignment, offset, zero);
  mi_track_aligned(p, size, zero);
  uint8_t armed = mi_observers_armed();
  if (mi_unlikely(armed != 0)) return mi_observe_alloc(armed, p, size);
  return p;
}

void* mi_heap_malloc_aligned_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset) {
  return mi_heap_malloc_aligned_at_zero(heap, size, alignment, offset, false);
}

void* mi_heap_malloc_aligned(mi_heap_t* heap, size_t size, size_t alignment) {
  return mi_heap_malloc_aligned_at_zero(heap, size, alignment, 0, false);
}

void* mi_heap_zalloc_aligned_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset) {
  return mi_heap_malloc_aligned_at_zero(heap, size, alignment, offset, true);
}

void* mi_heap_zalloc_aligned(mi_heap_t* heap, size_t size, size_t alignment) {
  return mi_heap_malloc_aligned_at_zero(heap, size, alignment, 0, true);
}

void* mi_heap_calloc_aligned_at(mi_heap_t* heap, size_t count, size_t size, size_t alignment, size_t offset) {
  size_t total;
  if (_mi_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return mi_heap_malloc_aligned_at_zero(heap, total, alignment, offset, true);
}

void* mi_heap_calloc_aligned(mi_heap_t* heap, size_t count, size_t size, size_t alignment) {
  return mi_heap_calloc_aligned_at(heap, count, size, alignment, 0);
}

void* mi_malloc_aligned_at(size_t size, size_t alignment, size_t offset) {
  return mi_heap_malloc_aligned_at(mi_get_default_heap(), size, alignment, offset);
}

void* mi_malloc_aligned(size_t size, size_t alignment) {
  return mi_heap_malloc_aligned(mi_get_default_heap(), size, alignment);
}

void* mi_zalloc_aligned_at(size_t size, size_t alignment, size_t offset) {
  return mi_heap_zalloc_aligned_at(mi_get_default_heap(), size, alignment, offset);
}

void* mi_zalloc_aligned(size_t size, size_t alignment) {
  return mi_heap_zalloc_aligned(mi_get_default_heap(), size, alignment);
}

void* mi_calloc_aligned_at(size_t count, size_t size, size_t alignment, size_t offset) {
  return mi_heap_calloc_aligned_at(mi_get_default_heap(), count, size, alignment, offset);
}

void* mi_calloc_aligned(size_t count, size_t size, size_t alignment) {
  return mi_heap_calloc_aligned(mi_get_default_heap(), count, size, alignment);
}

static void* mi_heap_realloc_aligned_at_zero_core(mi_heap_t* heap, void* p, size_t newsize, size_t alignment,
                                                  size_t offset, bool zero) {
  /* every block the plain calls hand out is 16-byte aligned; a block from
     mi_malloc_aligned_at with an offset may not be, and then must move */
  if (alignment <= MI_MAX_ALIGN_SIZE && (offset & (alignment - 1)) == 0 && ((uintptr_t)p & (alignment - 1)) == 0) {
    return _mi_heap_realloc_zero(heap, p, newsize, zero);
  }
  if (p == NULL) {
    void* newp = mi_heap_malloc_aligned_at_zero_core(heap, newsize, alignment, offset, zero);
    mi_track_aligned(newp, newsize, zero); /* as any aligned allocation: only p .. p+newsize is the program's */
    return newp;
  }
  size_t size;
  mi_page_t* page = NULL;
  mi_block_t* block = NULL;
  if (MI_SECURE) block = _mi_secure_validate_kind(p, MI_OP_REALLOC, MI_KIND_MALLOC, &page, &size);
  else size = _mi_usable_size(p);
  if (newsize <= size && newsize >= size / 2 && (((uintptr_t)p + offset) & (alignment - 1)) == 0) {
    /* secure builds: the canary moves to the new end */
    if (MI_SECURE) (void)_mi_secure_resize_in_place(page, block, p, newsize);
    mi_track_resize(p, size, newsize);
    return p;
  }
  void* newp = mi_heap_malloc_aligned_at_zero_core(heap, newsize, alignment, offset, false);
  mi_track_aligned(newp, newsize, false);
  return _mi_realloc_move(p, size, newp, newsize, zero);
}

/* As mi_heap_realloc_observing in alloc.c: the observers' record is held
   while the block may be freed, and follows it to its new place. */
static void* mi_heap_realloc_aligned_at_zero(mi_heap_t* heap, void* p, size_t newsize, size_t alignment, size_t offset,
                                             bool zero) {
  mi_heap_handle_check(heap);
  uint8_t armed = mi_observers_armed();
  if (mi_unlikely(armed != 0)) {
    mi_observe_held_t held;
    mi_observe_realloc_take(armed, p, &held);
    void* newp = mi_heap_realloc_aligned_at_zero_core(heap, p, newsize, alignment, offset, zero);
    mi_observe_realloc_done(&held, newp, newsize);
    return newp;
  }
  return mi_heap_realloc_aligned_at_zero_core(heap, p, newsize, alignment, offset, zero);
}

void* mi_heap_realloc_aligned_at(mi_heap_t* heap, void* p, size_t newsize, size_t alignment, size_t offset) {
  return mi_heap_realloc_aligned_at_zero(heap, p, newsize, alignment, offset, false);
}

void* mi_heap_realloc_aligned(mi_heap_t* heap, void* p, size_t newsize, size_t alignment) {
  return mi_heap_realloc_aligned_at_zero(heap, p, newsize, alignment, 0, false);
}

void* mi_realloc_aligned_at(void* p, size_t newsize, size_t alignment, size_t offset) {
  return mi_heap_realloc_aligned_at(mi_get_default_heap(), p, newsize, alignment, offset);
}

void* mi_realloc_aligned(void* p, size_t newsize, size_t alignment) {
  return mi_heap_realloc_aligned(mi_get_default_heap(), p, newsize, alignment);
}

void* _mi_heap_recalloc_aligned_at(mi_heap_t* heap, void* p, size_t newcount, size_t size, size_t alignment,
                                   size_t offset) {
  size_t total;
  if (!_mi_realloc_total(p, newcount, size, &total)) return NULL;
  return mi_heap_realloc_aligned_at_zero(heap, p, total, alignment, offset, true);
}

void* mi_aligned_recalloc(void* p, size_t newcount, size_t size, size_t alignment) {
  return _mi_heap_recalloc_aligned_at(mi_get_default_heap(), p, newcount, size, alignment, 0);
}

void* mi_aligned_offset_recalloc(void* p, size_t newcount, size_t size, size_t alignment, size_t offset) {
  return _mi_heap_recalloc_aligned_at(mi_get_default_heap(), p, newcount, size, alignment, offset);
}
