/* Hole purge: the OS pages inside a used page whose blocks are all free are
   given back to the OS at an idle point (docs/memory-return.md). One long-
   lived block no longer pins its whole 64 KiB or 512 KiB page.

   A page is cut into units, the OS page doubled until the page has at most
   64 of them (the page's holes' `shift`), counted from the unit that holds the page's
   first block. A unit wholly inside the carved blocks whose every block is
   free becomes a hole: its memory is discarded (MADV_DONTNEED, or a
   decommit and recommit on Windows: holes never change commit state), and
   every block that overlaps it leaves the page's free list, since its link
   may lie in the discarded memory. The free list is walked before anything
   is discarded and rebuilt after, from the map of free blocks. The page's
   count of such blocks (`purged`, in mi_page_holes_t, kept beside the
   segment's pages) keeps used + |free| + purged == capacity.
   When the free list runs dry, the page takes back its first run of holes
   (_mi_page_holes_unpurge); when the page goes back to its segment, its
   holes go with it (mi_segment_page_holes_forget, segment.c). Only the
   page's owner sweeps it. */
#include "page.h"

#include <string.h>

/* The units a page has at most. */
#define MI_HOLES_UNITS ((size_t)MI_HOLES_MAP_WORDS * 64)

/* One bit per carved block: small pages hold at most 64 KiB / 16 B blocks. */
#define MI_HOLES_FREE_WORDS (MI_SMALL_PAGE_SIZE / 16 / 64)

typedef struct mi_holes_geo_s {
  uint8_t* base; /* the start of unit 0 */
  size_t unit;
  size_t first; /* the units wholly inside the carved blocks: [first, last) */
  size_t last;
} mi_holes_geo_t;

static size_t mi_holes_unit(const mi_page_t* page) {
  return _mi_os_page_size() << _mi_page_holes(page)->shift;
}

static void mi_holes_geometry(const mi_page_t* page, mi_holes_geo_t* g) {
  g->unit = mi_holes_unit(page);
  g->base = (uint8_t*)((uintptr_t)page->start & ~(uintptr_t)(g->unit - 1));
  size_t lo = (size_t)(page->start - g->base);
  size_t hi = lo + (size_t)page->capacity * page->block_size;
  g->first = (lo + g->unit - 1) / g->unit;
  g->last = hi / g->unit;
  if (g->last > MI_HOLES_UNITS) g->last = MI_HOLES_UNITS;
  if (g->last < g->first) g->last = g->first;
}

/* The unit size of a page of `area` bytes from `start`. */
uint8_t _mi_page_holes_shift(const uint8_t* start, size_t area) {
  size_t os = _mi_os_page_size();
  uint8_t shift = 0;
  while (((size_t)((uintptr_t)start & ((os << shift) - 1)) + area + (os << shift) - 1) / (os << shift) >
         MI_HOLES_UNITS) {
    shift++;
  }
  return shift;
}

static inline bool mi_bit(const uint64_t* map, size_t i) {
  return ((map[i / 64] >> (i % 64)) & 1) != 0;
}
static inline void mi_bit_on(uint64_t* map, size_t i) {
  map[i / 64] |= (uint64_t)1 << (i % 64);
}
static inline void mi_bit_off(uint64_t* map, size_t i) {
  map[i / 64] &= ~((uint64_t)1 << (i % 64));
}

/* The units block `idx` overlaps: [*u0, *u1]. */
static void mi_holes_block_units(const mi_page_t* page, const mi_holes_geo_t* g, size_t idx, size_t* u0, size_t* u1) {
  size_t off = (size_t)(page->start - g->base) + idx * page->block_size;
  *u0 = off / g->unit;
  *u1 = (off + page->block_size - 1) / g->unit;
}

static bool mi_holes_block_in_hole(const mi_page_t* page, const mi_holes_geo_t* g, size_t idx) {
  size_t u0, u1;
  mi_holes_block_units(page, g, idx, &u0, &u1);
  for (size_t u = u0; u <= u1 && u < MI_HOLES_UNITS; u++) {
    if (mi_bit(_mi_page_holes(page)->map, u)) return true;
  }
  return false;
}

static size_t mi_holes_count(const mi_page_t* page) {
  size_t n = 0;
  for (size_t i = 0; i < MI_HOLES_MAP_WORDS; i++) n += (size_t)__builtin_popcountll(_mi_page_holes(page)->map[i]);
  return n;
}

/* The blocks in holes, marked free in a map of the page's blocks (a visit
   or a snapshot sees them as the free blocks they are). */
void _mi_page_holes_mark_free(const mi_page_t* page, uint64_t* map) {
  if (_mi_page_holes(page)->purged == 0) return;
  mi_holes_geo_t g;
  mi_holes_geometry(page, &g);
  for (size_t i = 0; i < page->capacity; i++) {
    if (mi_holes_block_in_hole(page, &g, i)) mi_bit_on(map, i);
  }
}

/* The free list rebuilt from `free_map`, in address order, without the
   blocks in holes; returns how many blocks are in holes. */
static uint32_t mi_holes_relist(mi_page_t* page, const mi_holes_geo_t* g, const uint64_t* free_map) {
  mi_block_t* head = NULL;
  mi_block_t* tail = NULL;
  uint32_t in_holes = 0;
  for (size_t i = 0; i < page->capacity; i++) {
    if (!mi_bit(free_map, i)) continue;
    if (mi_holes_block_in_hole(page, g, i)) {
#if MI_HOLES_PLANT_LISTED
      /* planted: a block in a hole left on the list as well */
      if (in_holes++ != 0) continue;
#else
      in_holes++;
      continue;
#endif
    }
    mi_block_t* b = (mi_block_t*)(page->start + i * page->block_size);
    if (tail == NULL) head = b;
    else mi_block_set_next(page, tail, b);
    tail = b;
  }
  if (tail != NULL) mi_block_set_next(page, tail, NULL);
  page->free = head;
  return in_holes;
}

/* Discard units [u, v) of the page: false if the OS refused. */
static bool mi_holes_discard(const mi_holes_geo_t* g, size_t u, size_t v, bool eager_zero) {
  uint8_t* p = g->base + u * g->unit;
  size_t size = (v - u) * g->unit;
#if MI_HOLES_PLANT_OVERREACH
  size += _mi_os_page_size(); /* planted: one OS page too far */
#endif
  if (eager_zero) {
    /* a discard one page too far then shows as a live block zeroed */
    mi_track_mem_undefined(p, size);
    memset(p, 0, size);
    mi_track_mem_noaccess(p, size);
  }
  return _mi_os_purge(p, size);
}

/* What a sweep of the calling thread's pages saw (mi_purge_holes_stats_get). */
static _Atomic(int64_t) mi_holes_ineligible_pages;
static _Atomic(int64_t) mi_holes_ineligible_bytes;
static _Atomic(int64_t) mi_holes_ineligible_free_bytes;
static _Atomic(int64_t) mi_holes_pages_skipped;
static _Atomic(int64_t) mi_holes_blocks_visited;
static _Atomic(int64_t) mi_holes_full_sweeps;
static _Atomic(int64_t) mi_holes_pages_freed;

/* What a sweep remembers of the page's free list: its first block. */
static uint16_t mi_holes_free_mark(const mi_page_t* page) {
  if (page->free == NULL) return 0;
  return (uint16_t)(1 + (size_t)((uint8_t*)page->free - page->start) / page->block_size);
}

/* The free blocks of a page, as a map; returns their count. */
static size_t mi_holes_free_map(const mi_page_t* page, uint64_t* map) {
  memset(map, 0, MI_HOLES_FREE_WORDS * sizeof(uint64_t));
  size_t n = 0;
  for (mi_block_t* b = page->free; b != NULL; b = mi_block_next(page, b)) {
    size_t idx = (size_t)((uint8_t*)b - page->start) / page->block_size;
    mi_bit_on(map, idx);
    n++;
  }
  return n;
}

/* The never-carved tail of a page on reused memory (what the page before
   left there may be resident): its units wholly past the carved blocks and
   within the page's blocks, discarded once. The blocks carved into it later
   find it committed and zero. A discard the OS refuses is tried again at
   the next sweep that looks at the page. */
static size_t mi_holes_tail_sweep(mi_page_t* page, const mi_holes_geo_t* g, bool eager_zero) {
  size_t first, last;
  (void)_mi_page_tail_units(page, &first, &last); /* (the unit is g's) */
  if (last <= first) {
    _mi_page_holes(page)->tail = 0; /* nothing whole left to discard */
    return 0;
  }
  atomic_fetch_add_explicit(&_mi_stats.unformed_discard_calls, 1, memory_order_relaxed);
  if (!mi_holes_discard(g, first, last, eager_zero)) return 0; /* fault path */
  _mi_page_holes(page)->tail = (uint8_t)(first + 1);
  size_t bytes = (last - first) * g->unit;
  _mi_stat_increase(&_mi_stats.unformed, (int64_t)bytes);
  return bytes;
}

/* Sweep one page of the caller's (its other threads' frees collected
   first): its all-free units not yet holes are discarded. `full`: even if
   unchanged since the last sweep. Returns the bytes discarded. */
size_t _mi_page_holes_sweep(mi_page_t* page, bool full, bool eager_zero) {
  if (page->capacity == 0 || page->used == 0) return 0;
  if (!full && page->used == _mi_page_holes(page)->seen_used &&
      mi_holes_free_mark(page) == _mi_page_holes(page)->seen_free) {
    atomic_fetch_add_explicit(&mi_holes_pages_skipped, 1, memory_order_relaxed);
    return 0;
  }
  mi_holes_geo_t g;
  mi_holes_geometry(page, &g);
  size_t discarded = 0;
  if (g.last > g.first) {
    uint64_t free_map[MI_HOLES_FREE_WORDS];
    size_t nfree = mi_holes_free_map(page, free_map);
    atomic_fetch_add_explicit(&mi_holes_blocks_visited, (int64_t)nfree, memory_order_relaxed);
    _mi_page_holes_mark_free(page, free_map);
    /* the all-free units, and how many free bytes live blocks pin */
    uint64_t candidates[MI_HOLES_MAP_WORDS] = {0};
    size_t pinned = 0;
    for (size_t u = g.first; u < g.last; u++) {
      if (mi_bit(_mi_page_holes(page)->map, u)) continue;
      size_t lo = u * g.unit - (size_t)(page->start - g.base);
      size_t hi = lo + g.unit;
      size_t b0 = lo / page->block_size, b1 = (hi - 1) / page->block_size;
      bool all_free = true;
      size_t free_bytes = 0;
      for (size_t b = b0; b <= b1; b++) {
        if (mi_bit(free_map, b)) free_bytes += page->block_size;
        else all_free = false;
      }
      if (all_free) mi_bit_on(candidates, u);
      else pinned += free_bytes;
    }
    if (pinned > 0) {
      atomic_fetch_add_explicit(&mi_holes_ineligible_pages, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&mi_holes_ineligible_bytes, (int64_t)(page->capacity * page->block_size),
                                memory_order_relaxed);
      atomic_fetch_add_explicit(&mi_holes_ineligible_free_bytes, (int64_t)pinned, memory_order_relaxed);
    }
    /* discard each run of candidates; a run the OS refuses stays as it was
       (but for the eager-zero knob, which zeroed its blocks' links: the
       list is rebuilt then too) */
    bool relist = false;
    for (size_t u = g.first; u < g.last;) {
      if (!mi_bit(candidates, u)) {
        u++;
        continue;
      }
      size_t v = u;
      while (v < g.last && mi_bit(candidates, v)) v++;
      atomic_fetch_add_explicit(&_mi_stats.holes_discard_calls, 1, memory_order_relaxed);
      relist = relist || eager_zero;
      if (mi_holes_discard(&g, u, v, eager_zero)) {
        for (size_t w = u; w < v; w++) mi_bit_on(_mi_page_holes(page)->map, w);
        discarded += (v - u) * g.unit;
      }
      u = v;
    }
    if (discarded > 0 || relist) {
      uint32_t before = _mi_page_holes(page)->purged;
      _mi_page_holes(page)->purged = (uint16_t)mi_holes_relist(page, &g, free_map);
      _mi_stat_increase(&_mi_stats.holes, (int64_t)discarded);
      atomic_fetch_add_explicit(&_mi_stats.holes_blocks, (int64_t)_mi_page_holes(page)->purged - (int64_t)before,
                                memory_order_relaxed);
    }
  }
  if ((_mi_page_holes(page)->tail & MI_HOLES_TAIL_DIRTY) != 0) discarded += mi_holes_tail_sweep(page, &g, eager_zero);
  _mi_page_holes(page)->seen_used = (uint16_t)page->used;
  _mi_page_holes(page)->seen_free = mi_holes_free_mark(page);
  return discarded;
}

/* Blocks were carved into the page's discarded tail: those bytes are the
   page's again (committed, reading zero: no OS call). */
void _mi_page_holes_tail_carved(mi_page_t* page, size_t before) {
  size_t after = _mi_page_tail_discarded(page);
  if (after < before) {
    _mi_stat_decrease(&_mi_stats.unformed, (int64_t)(before - after));
    atomic_fetch_add_explicit(&_mi_stats.unformed_reuse_calls, 1, memory_order_relaxed);
  }
  if (after == 0) _mi_page_holes(page)->tail = 0;
}

/* The page's free list ran dry and it has holes: its first run of holes
   goes back (its memory is committed and reads zero: no OS call is
   needed), and the blocks that overlap no other hole are listed again. A
   run whose blocks all touch another hole is followed by the next. */
void _mi_page_holes_unpurge(mi_page_t* page) {
  mi_holes_geo_t g;
  mi_holes_geometry(page, &g);
  while (page->free == NULL && _mi_page_holes(page)->purged > 0) {
    size_t u = 0;
    while (u < MI_HOLES_UNITS && !mi_bit(_mi_page_holes(page)->map, u)) u++;
    if (u == MI_HOLES_UNITS) break;
    size_t v = u;
    while (v < MI_HOLES_UNITS && mi_bit(_mi_page_holes(page)->map, v)) v++;
    for (size_t w = u; w < v; w++) mi_bit_off(_mi_page_holes(page)->map, w);
    _mi_stat_decrease(&_mi_stats.holes, (int64_t)((v - u) * g.unit));
    atomic_fetch_add_explicit(&_mi_stats.holes_reuse_calls, 1, memory_order_relaxed);
    /* the blocks of [u, v) that touch no hole left, listed in address order */
    size_t lo = u * g.unit - (size_t)(page->start - g.base);
    size_t hi = v * g.unit - (size_t)(page->start - g.base);
    size_t b0 = lo / page->block_size;
    size_t b1 = (hi - 1) / page->block_size;
    if (b1 >= page->capacity) b1 = page->capacity - 1;
    mi_block_t* head = NULL;
    mi_block_t* tail = NULL;
    uint32_t back = 0;
    for (size_t b = b0; b <= b1; b++) {
      if (mi_holes_block_in_hole(page, &g, b)) continue;
      mi_block_t* block = (mi_block_t*)(page->start + b * page->block_size);
      if (tail == NULL) head = block;
      else mi_block_set_next(page, tail, block);
      tail = block;
      back++;
    }
    if (tail != NULL) {
      mi_block_set_next(page, tail, page->free);
      page->free = head;
    }
    mi_assert_internal(back <= _mi_page_holes(page)->purged);
    _mi_page_holes(page)->purged = (uint16_t)(_mi_page_holes(page)->purged - back);
    atomic_fetch_sub_explicit(&_mi_stats.holes_blocks, (int64_t)back, memory_order_relaxed);
  }
  _mi_page_holes(page)->seen_used = UINT16_MAX;
}

void _mi_holes_note_sweep(bool full) {
  if (full) atomic_fetch_add_explicit(&mi_holes_full_sweeps, 1, memory_order_relaxed);
}

void _mi_holes_note_pages_freed(size_t n) {
  atomic_fetch_add_explicit(&mi_holes_pages_freed, (int64_t)n, memory_order_relaxed);
}

/* A new sweep: its gauges start over. */
void _mi_holes_sweep_begin(void) {
  atomic_store_explicit(&mi_holes_ineligible_pages, 0, memory_order_relaxed);
  atomic_store_explicit(&mi_holes_ineligible_bytes, 0, memory_order_relaxed);
  atomic_store_explicit(&mi_holes_ineligible_free_bytes, 0, memory_order_relaxed);
}

static size_t mi_holes_read(_Atomic(int64_t)* x) {
  int64_t v = atomic_load_explicit(x, memory_order_relaxed);
  return (v > 0 ? (size_t)v : 0);
}

void mi_purge_holes_stats_get(mi_purge_holes_stats_t* stats) {
  if (stats == NULL) return;
  memset(stats, 0, sizeof(*stats));
  stats->purged_bytes = mi_holes_read(&_mi_stats.holes.current);
  stats->purged_blocks = mi_holes_read(&_mi_stats.holes_blocks);
  stats->purged_bytes_total = mi_holes_read(&_mi_stats.holes.total);
  stats->discard_calls = mi_holes_read(&_mi_stats.holes_discard_calls);
  stats->reuse_calls = mi_holes_read(&_mi_stats.holes_reuse_calls);
  stats->pages_freed = mi_holes_read(&mi_holes_pages_freed);
  stats->ineligible_pages = mi_holes_read(&mi_holes_ineligible_pages);
  stats->ineligible_bytes = mi_holes_read(&mi_holes_ineligible_bytes);
  stats->ineligible_free_bytes = mi_holes_read(&mi_holes_ineligible_free_bytes);
  stats->pages_skipped = mi_holes_read(&mi_holes_pages_skipped);
  stats->blocks_visited = mi_holes_read(&mi_holes_blocks_visited);
  stats->full_sweeps = mi_holes_read(&mi_holes_full_sweeps);
  stats->unformed_bytes = mi_holes_read(&_mi_stats.unformed.current);
  stats->unformed_bytes_total = mi_holes_read(&_mi_stats.unformed.total);
  stats->unformed_discard_calls = mi_holes_read(&_mi_stats.unformed_discard_calls);
  stats->unformed_reuse_calls = mi_holes_read(&_mi_stats.unformed_reuse_calls);
}

/* Per size class of one page: free bytes, those in holes, those that live
   blocks pin (their unit holds a live block). Read-only. */
void _mi_page_holes_census(const mi_page_t* page, size_t* free_bytes, size_t* hole_bytes, size_t* pinned_bytes) {
  uint64_t free_map[MI_HOLES_FREE_WORDS];
  size_t nfree = mi_holes_free_map(page, free_map);
  *free_bytes += nfree * page->block_size + (size_t)_mi_page_holes(page)->purged * page->block_size;
  mi_holes_geo_t g;
  mi_holes_geometry(page, &g);
  *hole_bytes += mi_holes_count(page) * g.unit;
  _mi_page_holes_mark_free(page, free_map);
  for (size_t u = g.first; u < g.last; u++) {
    if (mi_bit(_mi_page_holes(page)->map, u)) continue;
    size_t lo = u * g.unit - (size_t)(page->start - g.base);
    size_t b0 = lo / page->block_size, b1 = (lo + g.unit - 1) / page->block_size;
    bool any_live = false;
    size_t bytes = 0;
    for (size_t b = b0; b <= b1; b++) {
      if (mi_bit(free_map, b)) bytes += page->block_size;
      else any_live = true;
    }
    if (any_live) *pinned_bytes += bytes;
  }
}
