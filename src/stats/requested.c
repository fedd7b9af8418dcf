/* Detailed statistics (MI_STAT >= 2): `malloc_requested`, the bytes the
   program asked for, exact. The requests are seen where the observers see
   the program's allocations (base/observers.h: MI_OBSERVER_STATS, armed for the
   whole run in such builds), and each block's request is kept until its
   free:
   - in a small or medium page, in an array of 32-bit sizes after the
     page's blocks (such a page holds fewer blocks for it: reserved =
     area / (block size + 4); its blocks are at most 128 KiB);
   - in a large or huge block's page (`stat_requested`);
   - in the secure build, nowhere more: its usable size is the request (the
     block's trailer holds it), read once the pointer is validated.
   A block's slot goes back to 0 at its free, so a page's slots sum to its
   live requests, which a destroyed heap's page gives back at once. */
#include "hooks.h"
#include "../page/page.h"
#include "../secure/secure.h"
#include "../base/listeners.h"

#if MI_STAT >= 2

static bool mi_requested_single(const mi_page_t* page) {
  return (_mi_page_segment(page)->kind >= MI_SEGMENT_SINGLE);
}

static uint32_t* mi_requested_slots(const mi_page_t* page) {
  return (uint32_t*)(void*)(page->start + (size_t)page->reserved * page->block_size);
}

/* (an aligned block's pointer lies inside its block: the same index) */
static uint32_t* mi_requested_slot(const mi_page_t* page, const void* p) {
  size_t idx = (size_t)((const uint8_t*)p - page->start) / page->block_size;
  return mi_requested_slots(page) + idx;
}

static mi_page_t* mi_requested_page(const void* p) {
  return _mi_segment_page_of(_mi_block_segment(p), p);
}

/* A fresh page's slots: all 0 (its memory may hold anything). */
void _mi_stat_requested_page_init(mi_page_t* page) {
  if (MI_SECURE) return;
  if (mi_requested_single(page)) {
    page->stat_requested = 0;
    return;
  }
  uint32_t* slots = mi_requested_slots(page);
  mi_track_mem_undefined(slots, (size_t)page->reserved * sizeof(uint32_t));
  memset(slots, 0, (size_t)page->reserved * sizeof(uint32_t));
}

void _mi_stat_requested_alloc(void* p, size_t size) {
  if (p == NULL) return;
  if (!MI_SECURE) {
    mi_page_t* page = mi_requested_page(p);
    if (mi_requested_single(page)) page->stat_requested = size;
    else *mi_requested_slot(page, p) = (uint32_t)size;
  }
  _mi_stat_increase(&_mi_stats.malloc_requested, (int64_t)size + MI_STAT_PLANT_REQUESTED_OFF_BY_ONE);
}

/* Before a free or a reallocation of p: its request, its slot cleared (the
   block is still the caller's: once freed, another thread may take it and
   set its slot). The secure build validates p first (a double or invalid
   free is reported before anything is counted). */
size_t _mi_stat_requested_take(void* p, bool realloc) {
  if (p == NULL) return 0;
  if (MI_SECURE) {
    size_t size = 0;
    (void)_mi_secure_validate(p, realloc ? MI_OP_REALLOC : MI_OP_FREE, NULL, &size);
    return size;
  }
  (void)realloc;
  if ((intptr_t)_mi_block_segment(p) <= 0) return 0; /* (as mi_free ignores it) */
  mi_page_t* page = mi_requested_page(p);
  size_t size;
  if (mi_requested_single(page)) {
    size = page->stat_requested;
    page->stat_requested = 0;
  } else {
    uint32_t* slot = mi_requested_slot(page, p);
    size = *slot;
    *slot = 0;
  }
  return size;
}

/* After a free: the request it took goes. */
void _mi_stat_requested_free_done(size_t size) {
  _mi_stat_decrease(&_mi_stats.malloc_requested, (int64_t)size);
}

/* After a reallocation of a block whose request was `size` (newp NULL: it
   failed and the block stays as it was). A block kept in place takes its
   new request: out with the old, in with the new (so `total` counts every
   request, as upstream's). */
void _mi_stat_requested_realloc_done(void* p, size_t size, void* newp, size_t newsize) {
  if (newp == NULL) {
    if (p != NULL && !MI_SECURE) {
      /* the slot back as it was */
      mi_page_t* page = mi_requested_page(p);
      if (mi_requested_single(page)) page->stat_requested = size;
      else *mi_requested_slot(page, p) = (uint32_t)size;
    }
    return;
  }
  if (p != NULL) _mi_stat_decrease(&_mi_stats.malloc_requested, (int64_t)size);
  if (MI_SECURE) {
    /* the request the block's canary says: mi_expand, which keeps the
       canary where it was, keeps the request too */
    (void)_mi_secure_validate(newp, MI_OP_USABLE_SIZE, NULL, &newsize);
  }
  _mi_stat_requested_alloc(newp, newsize);
}

/* A destroyed heap's page goes with the blocks it still holds. */
void _mi_stat_requested_page_gone(const mi_page_t* page) {
  size_t total = 0;
  if (MI_SECURE) {
    total = _mi_secure_page_requested(page);
  } else if (mi_requested_single(page)) {
    total = page->stat_requested;
  } else {
    const uint32_t* slots = mi_requested_slots(page);
    for (size_t i = 0; i < page->capacity; i++) total += slots[i];
  }
  _mi_stat_decrease(&_mi_stats.malloc_requested, (int64_t)total);
}

/* detailed statistics: a fresh page's request slots after its blocks, a
   gone page's live requests */
mi_listener_define(mi_stat_requested_listener) = {
    .name = "requested bytes",
    .order = MI_LISTEN_REQUESTED,
    .page_gone = &_mi_stat_requested_page_gone,
    .page_init = &_mi_stat_requested_page_init,
};

#endif
