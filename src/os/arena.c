/* Arenas: large ranges reserved up front (mi_reserve_os_memory,
   mi_reserve_huge_os_pages_*, options reserve_os_memory and
   reserve_huge_os_pages) and handed out as segment-aligned chunks. Without
   arenas every segment comes from the OS directly, which is also the
   fallback whenever an arena cannot serve a request: none has room, its
   commit fails, or its reservation failed in the first place.

   Arena memory is counted as reserved once, when the arena is reserved. A
   chunk given back is decommitted (reserved-only arenas) so it reads as zero
   when next committed; pinned arenas (large or huge pages) cannot decommit,
   so a reused pinned chunk is cleared before it is handed out again.

   An arena's id is its index + 1 (0: none), as mimalloc numbers them. The
   memory of mi_manage_os_memory is the caller's: its chunks are purged, not
   remapped, when given back, and it is never unmapped here. An exclusive
   arena serves only the heaps created in it (mi_heap_new_in_arena); a heap in
   an arena takes no memory from anywhere else.

   mi_purge_all_ex(MI_PURGE_RECLAIM) gives back the arenas of ours that hold
   no segment and whose id no caller holds (_mi_arenas_reclaim); the slot is
   then vacant and a later arena takes it. Readers that do not take the lock
   (a segment freed, a cached segment matched to a heap) find an arena by its
   span, one word, so a slot given back and taken again is never seen half
   written. */
#include "os.h"
#include "../prim/fault.h"

#define MI_ARENA_MAX 16
#define MI_ARENA_MAX_CHUNKS 4096 /* 16 GiB per arena */
#define MI_ARENA_WORDS (MI_ARENA_MAX_CHUNKS / 64)

typedef struct mi_arena_s {
  uint8_t* start;
  size_t chunk_count;                 /* 0: a vacant slot (given back) */
  size_t reserved_size;               /* what was reserved (is_owned): given back whole */
  bool is_pinned;                     /* large or huge pages: always committed */
  bool is_committed;                  /* reserved committed: chunks never need a commit */
  bool is_exclusive;                  /* only for heaps created in it */
  bool is_owned;                      /* mapped by us (not mi_manage_os_memory's) */
  bool is_held;                       /* its id went to the caller: never given back */
  uint64_t in_use[MI_ARENA_WORDS];    /* under mi_arena_lock */
  uint64_t committed[MI_ARENA_WORDS]; /* chunks committed (or all, if is_committed) */
  uint64_t dirty[MI_ARENA_WORDS];     /* chunks not known to be zero: cleared when handed out */
} mi_arena_t;

static mi_arena_t mi_arenas[MI_ARENA_MAX];
/* start | (chunk_count - 1) << 2 | is_exclusive << 1 | 1 (live); 0: vacant.
   Written under mi_arena_lock, after (or before, when vacated) the slot. */
static _Atomic(uintptr_t) mi_arena_spans[MI_ARENA_MAX];
static _Atomic(size_t) mi_arena_count; /* slots used so far (vacant ones included) */
static _Atomic(size_t) mi_arenas_made;
static _Atomic(bool) mi_arena_any_exclusive; /* else every segment suits a heap of no arena */
static mi_lock_t mi_arena_lock;

void _mi_arenas_init(void) {
  _mi_lock_init(&mi_arena_lock, MI_LOCK_ARENA);
}

_Static_assert(MI_ARENA_CHUNK >= ((size_t)MI_ARENA_MAX_CHUNKS << 2), "an arena's span needs its low bits");

typedef struct mi_arena_range_s {
  uint8_t* start;
  size_t chunks;
  bool exclusive;
} mi_arena_range_t;

static uintptr_t mi_arena_span_of(const mi_arena_t* arena) {
  return ((uintptr_t)arena->start | ((uintptr_t)(arena->chunk_count - 1) << 2) | ((uintptr_t)arena->is_exclusive << 1) |
          1);
}

/* Slot `a` as a reader without the lock sees it; false: vacant. */
static bool mi_arena_range(size_t a, mi_arena_range_t* range) {
  uintptr_t span = atomic_load_explicit(&mi_arena_spans[a], memory_order_acquire);
  if ((span & 1) == 0) return false;
  range->start = (uint8_t*)(span & ~(uintptr_t)(MI_ARENA_CHUNK - 1));
  range->chunks = (size_t)((span >> 2) & (MI_ARENA_MAX_CHUNKS - 1)) + 1;
  range->exclusive = ((span >> 1) & 1) != 0;
  return true;
}

static bool mi_arena_range_has(const mi_arena_range_t* range, const void* p) {
  return ((const uint8_t*)p >= range->start && (const uint8_t*)p < range->start + range->chunks * MI_ARENA_CHUNK);
}

static bool mi_bit(const uint64_t* map, size_t i) {
  return ((map[i / 64] >> (i % 64)) & 1) != 0;
}

static void mi_bits_set(uint64_t* map, size_t first, size_t n, bool value) {
  for (size_t i = first; i < first + n; i++) {
    if (value) map[i / 64] |= ((uint64_t)1 << (i % 64));
    else map[i / 64] &= ~((uint64_t)1 << (i % 64));
  }
}

static bool mi_bits_any(const uint64_t* map, size_t first, size_t n, bool value) {
  for (size_t i = first; i < first + n; i++) {
    if (mi_bit(map, i) == value) return true;
  }
  return false;
}

typedef struct mi_arena_kind_s {
  bool is_committed;
  bool is_pinned;
  bool is_zero;
  bool is_exclusive;
  bool is_owned;
  bool is_held;
} mi_arena_kind_t;

/* Register a reserved range (chunk aligned) as an arena, in the first
   vacant slot; its id, or 0 if the table is full. */
static mi_arena_id_t mi_arena_add(void* start, size_t size, mi_arena_kind_t kind) {
  bool is_committed = kind.is_committed, is_pinned = kind.is_pinned;
  size_t chunks = size / MI_ARENA_CHUNK;
  if (chunks > MI_ARENA_MAX_CHUNKS) chunks = MI_ARENA_MAX_CHUNKS;
  if (chunks == 0) return 0;
  _mi_lock_acquire(&mi_arena_lock);
  size_t count = atomic_load_explicit(&mi_arena_count, memory_order_relaxed);
  size_t i = 0;
  while (i < count && mi_arenas[i].chunk_count != 0) i++;
  if (i >= MI_ARENA_MAX) {
    _mi_lock_release(&mi_arena_lock);
    return 0;
  }
  mi_arena_t* arena = &mi_arenas[i];
  memset(arena, 0, sizeof(*arena));
  arena->start = (uint8_t*)start;
  arena->chunk_count = chunks;
  arena->reserved_size = size;
  arena->is_held = kind.is_held;
  arena->is_pinned = is_pinned;
  arena->is_committed = is_committed || is_pinned;
  arena->is_exclusive = kind.is_exclusive;
  arena->is_owned = kind.is_owned;
  if (arena->is_committed) mi_bits_set(arena->committed, 0, chunks, true);
  if (!kind.is_zero) mi_bits_set(arena->dirty, 0, chunks, true);
  if (kind.is_exclusive) atomic_store_explicit(&mi_arena_any_exclusive, true, memory_order_release);
  atomic_store_explicit(&mi_arena_spans[i], mi_arena_span_of(arena), memory_order_release);
  if (i == count) atomic_store_explicit(&mi_arena_count, i + 1, memory_order_release);
  atomic_fetch_add_explicit(&mi_arenas_made, 1, memory_order_relaxed);
  _mi_lock_release(&mi_arena_lock);
  _mi_verbose_message("arena %zu: %zu MiB at %p (committed: %d, pinned: %d, exclusive: %d)\n", i + 1,
                      chunks * (MI_ARENA_CHUNK >> 20), start, arena->is_committed, is_pinned, kind.is_exclusive);
  return (mi_arena_id_t)(i + 1);
}

/* Whether arena `a` (an index) may serve a request for arena `req`;
   `shared`: the shared arenas may serve one for none (disallow_arena_alloc). */
static bool mi_arena_serves(const mi_arena_t* arena, size_t a, mi_arena_id_t req, bool shared) {
  if (req != 0) return ((size_t)req == a + 1);
  return (shared && !arena->is_exclusive);
}

static bool mi_arena_reserve_more(size_t size);

/* `size` bytes of zeroed, committed, segment-aligned arena memory, whole
   chunks of it, or NULL. */
static void* mi_arena_alloc_from(size_t size, mi_arena_id_t req, bool* is_pinned) {
  size_t count = atomic_load_explicit(&mi_arena_count, memory_order_acquire);
  if (count == 0) return NULL;
  size = _mi_align_up(size, MI_ARENA_CHUNK); /* a huge segment ends inside its last chunk: it takes it whole */
  size_t n = size / MI_ARENA_CHUNK;
  mi_arena_t* arena = NULL;
  size_t first = 0;
  bool shared = !mi_option_is_enabled(mi_option_disallow_arena_alloc); /* read before the lock is taken */
  _mi_lock_acquire(&mi_arena_lock);
  for (size_t a = 0; a < count && arena == NULL; a++) {
    mi_arena_t* candidate = &mi_arenas[a];
    if (candidate->chunk_count == 0) continue;       /* vacant */
    if (MI_SECURE && candidate->is_pinned) continue; /* no guard pages in pinned memory */
    if (!mi_arena_serves(candidate, a, req, shared)) continue;
    size_t run = 0;
    for (size_t i = 0; i < candidate->chunk_count; i++) {
      run = (mi_bit(candidate->in_use, i) ? 0 : run + 1);
      if (run == n) {
        arena = candidate;
        first = i + 1 - n;
        break;
      }
    }
  }
  if (arena != NULL) mi_bits_set(arena->in_use, first, n, true);
  bool needs_commit = (arena != NULL && mi_bits_any(arena->committed, first, n, false));
  bool needs_clear = (arena != NULL && mi_bits_any(arena->dirty, first, n, true));
  _mi_lock_release(&mi_arena_lock);
  if (arena == NULL) {
    mi_fault_event(mi_fault_event_arena_fallback);
    return NULL;
  }
  uint8_t* p = arena->start + first * MI_ARENA_CHUNK;
  if (needs_commit) {
    /* commit the whole run: committing what already is costs nothing */
#if MI_FAULT_PLANT_UNCHECKED
    /* the planted bug of the fault sweep's positive control: the commit's
       result ignored, so a failed commit hands out inaccessible memory */
    (void)_mi_os_commit(p, size);
    if (false) {
#else
    if (!_mi_os_commit(p, size)) {
#endif
      _mi_lock_acquire(&mi_arena_lock);
      mi_bits_set(arena->in_use, first, n, false);
      _mi_lock_release(&mi_arena_lock);
      mi_fault_event(mi_fault_event_arena_fallback);
      return NULL;
    }
    _mi_lock_acquire(&mi_arena_lock);
    mi_bits_set(arena->committed, first, n, true);
    _mi_lock_release(&mi_arena_lock);
  }
  if (needs_clear) {
    memset(p, 0, size);
    _mi_lock_acquire(&mi_arena_lock);
    mi_bits_set(arena->dirty, first, n, false);
    _mi_lock_release(&mi_arena_lock);
  }
  *is_pinned = arena->is_pinned;
  return p;
}

/* `req`: the arena of the heap asking (0: none). A heap of no arena is
   served by the shared arenas, reserving one more in steps of
   arena_reserve when it is set; NULL then means: ask the OS. */
void* _mi_arena_alloc(size_t size, mi_arena_id_t req, bool* is_pinned) {
  void* p = mi_arena_alloc_from(size, req, is_pinned);
  if (p == NULL && req == 0 && !mi_option_is_enabled(mi_option_disallow_arena_alloc) && mi_arena_reserve_more(size)) {
    p = mi_arena_alloc_from(size, req, is_pinned);
  }
  return p;
}

/* Whether memory at `p` (a segment) may serve a heap of arena `req`: an
   exclusive arena's only its own heaps, a heap of an arena only its arena's. */
bool _mi_arena_suits(const void* p, mi_arena_id_t req) {
  if (req == 0 && !atomic_load_explicit(&mi_arena_any_exclusive, memory_order_acquire)) return true;
  size_t count = atomic_load_explicit(&mi_arena_count, memory_order_acquire);
  mi_arena_range_t range;
  for (size_t a = 0; a < count; a++) {
    if (mi_arena_range(a, &range) && mi_arena_range_has(&range, p)) {
      return (range.exclusive || req != 0 ? (size_t)req == a + 1 : true);
    }
  }
  return (req == 0);
}

/* The arena `p` lies in: a slot holding memory in use (p's) is never
   vacated, so its fields stay as the span published them. */
static mi_arena_t* mi_arena_of(const void* p, size_t* chunk) {
  size_t count = atomic_load_explicit(&mi_arena_count, memory_order_acquire);
  mi_arena_range_t range;
  for (size_t a = 0; a < count; a++) {
    if (mi_arena_range(a, &range) && mi_arena_range_has(&range, p)) {
      *chunk = (size_t)((const uint8_t*)p - range.start) / MI_ARENA_CHUNK;
      return &mi_arenas[a];
    }
  }
  return NULL;
}

bool _mi_arena_contains(const void* p) {
  size_t chunk;
  return (mi_arena_of(p, &chunk) != NULL);
}

/* Give a range from _mi_arena_alloc back; false if it is not arena memory. */
bool _mi_arena_free(void* p, size_t size) {
  size_t first;
  mi_arena_t* arena = mi_arena_of(p, &first);
  if (arena == NULL) return false;
  size = _mi_align_up(size, MI_ARENA_CHUNK);
  size_t n = size / MI_ARENA_CHUNK;
  /* the chunk must read as zero, and be free of guard pages, next time: it
     is decommitted (committed again when taken). If the OS refuses, it is
     made accessible and purged (cleared if that is refused too); if it
     cannot even be made accessible it stays taken, lost to the arena but
     never handed out with guard pages in it. Pinned chunks are marked and
     cleared when handed out again. */
  bool decommitted = false;
  if (!arena->is_pinned) {
    /* the caller's memory keeps its mapping: purged in place; so is ours
       with purge_decommits=0 (mimalloc's reset instead of decommit) */
    decommitted = (arena->is_owned && mi_option_is_enabled(mi_option_purge_decommits) && _mi_os_decommit(p, size));
    if (!decommitted) {
      if (MI_SECURE && _mi_os_protect(p, size, false) != 0) {
        _mi_warning_message("arena memory at %p cannot be made accessible: out of use\n", p); /* fault path */
        return true;
      }
      if (!_mi_os_purge(p, size)) {
        memset(p, 0, size); /* fault path */
      }
    }
  }
  _mi_lock_acquire(&mi_arena_lock);
  if (decommitted) mi_bits_set(arena->committed, first, n, false);
  if (arena->is_pinned) mi_bits_set(arena->dirty, first, n, true);
  mi_bits_set(arena->in_use, first, n, false);
  _mi_lock_release(&mi_arena_lock);
  return true;
}

/* ---- Reservations ------------------------------------------------------------------- */
/* The public entries (api/reserve.c) set the process up first; these do not,
   so process set-up itself can call them (_mi_arenas_reserve_from_options). */

int _mi_arena_reserve_os(size_t size, bool commit, bool allow_large, bool exclusive, mi_arena_id_t* id) {
  if (id != NULL) *id = 0;
  size = _mi_align_up(size, MI_ARENA_CHUNK);
  if (size == 0) return EINVAL;
  bool is_pinned = false;
  void* p = _mi_os_alloc_aligned(size, MI_ARENA_CHUNK, commit, allow_large, &is_pinned);
  if (p == NULL) {
    _mi_warning_message("unable to reserve %zu MiB of OS memory for an arena\n", size >> 20); /* fault path */
    return ENOMEM;
  }
  mi_arena_kind_t kind = {.is_committed = commit,
                          .is_pinned = is_pinned,
                          .is_zero = true,
                          .is_exclusive = exclusive,
                          .is_owned = true,
                          .is_held = (id != NULL)};
  mi_arena_id_t added = mi_arena_add(p, size, kind);
  if (added == 0) {
    _mi_os_free(p, size); /* fault path */
    return ENOMEM;
  }
  _mi_stat_increase(&_mi_stats.arenas, (int64_t)size);
  if (id != NULL) *id = added;
  return 0;
}

/* Whether an arena is committed when reserved: arena_eager_commit 2 means
   where the OS commits on touch anyway (overcommit), as in mimalloc. */
bool _mi_arena_eager_commit(void) {
  long v = mi_option_get(mi_option_arena_eager_commit);
  return (v == 1 || (v == 2 && _mi_os_config.has_overcommit));
}

/* Shared arenas reserved on demand, each arena_reserve bytes (0: never, as
   by default here: segments are then mapped one by one), or the request's
   size if that is larger. False once the arena table is full. */
static bool mi_arena_reserve_more(size_t size) {
  size_t step = mi_option_get_size(mi_option_arena_reserve);
  if (step == 0) return false;
  if (atomic_load_explicit(&mi_arena_count, memory_order_acquire) >= MI_ARENA_MAX) return false;
  if (step < size) step = size;
  if (step > MI_ARENA_MAX_CHUNKS * MI_ARENA_CHUNK) return false;
  return (_mi_arena_reserve_os(step, _mi_arena_eager_commit(), mi_option_is_enabled(mi_option_allow_large_os_pages),
                               false, NULL) == 0);
}

/* Memory the caller owns (mi_manage_os_memory): the chunks that lie whole in
   [start, start + size). Not counted as reserved by us, and never unmapped. */
int _mi_arena_manage(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, bool exclusive,
                     mi_arena_id_t* id) {
  if (id != NULL) *id = 0;
  uintptr_t begin = (uintptr_t)start;
  if (start == NULL || size == 0 || begin + size < begin) return EINVAL;
  uintptr_t first = _mi_align_up(begin, MI_ARENA_CHUNK);
  uintptr_t end = (begin + size) & ~(uintptr_t)(MI_ARENA_CHUNK - 1);
  if (first == 0 || end <= first) return EINVAL; /* not one whole chunk in it */
  mi_arena_kind_t kind = {.is_committed = is_committed || is_large,
                          .is_pinned = is_large,
                          .is_zero = is_zero,
                          .is_exclusive = exclusive,
                          .is_owned = false,
                          .is_held = (id != NULL)};
  mi_arena_id_t added = mi_arena_add((void*)first, (size_t)(end - first), kind);
  if (added == 0) return ENOMEM;
  if (id != NULL) *id = added;
  return 0;
}

void* _mi_arena_area(mi_arena_id_t id, size_t* size) {
  if (size != NULL) *size = 0;
  size_t count = atomic_load_explicit(&mi_arena_count, memory_order_acquire);
  mi_arena_range_t range;
  if (id <= 0 || (size_t)id > count || !mi_arena_range((size_t)id - 1, &range)) return NULL;
  if (size != NULL) *size = range.chunks * MI_ARENA_CHUNK;
  return range.start;
}

bool _mi_arena_id_valid(mi_arena_id_t id) {
  mi_arena_range_t range;
  return (id > 0 && (size_t)id <= atomic_load_explicit(&mi_arena_count, memory_order_acquire) &&
          mi_arena_range((size_t)id - 1, &range));
}

void _mi_arenas_print(void) {
  size_t count = atomic_load_explicit(&mi_arena_count, memory_order_acquire);
  _mi_message("arenas: %zu (chunks of %zu MiB)\n", count, (size_t)(MI_ARENA_CHUNK >> 20));
  for (size_t a = 0; a < count; a++) {
    const mi_arena_t* arena = &mi_arenas[a];
    _mi_lock_acquire(&mi_arena_lock);
    if (arena->chunk_count == 0) {
      _mi_lock_release(&mi_arena_lock);
      _mi_message("arena %zu: given back\n", a + 1);
      continue;
    }
    size_t in_use = 0;
    for (size_t i = 0; i < arena->chunk_count; i++) in_use += mi_bit(arena->in_use, i);
    _mi_lock_release(&mi_arena_lock);
    _mi_message("arena %zu: %p, %zu of %zu chunks in use%s%s%s%s\n", a + 1, (void*)arena->start, in_use,
                arena->chunk_count, (arena->is_exclusive ? ", exclusive" : ""), (arena->is_pinned ? ", pinned" : ""),
                (arena->is_committed ? ", committed" : ""), (arena->is_owned ? "" : ", the caller's memory"));
  }
}

/* Huge (1 GiB) pages only: ENOMEM where there are none, with nothing
   reserved, as mimalloc does (the reserve_huge_os_pages option falls back,
   _mi_arenas_reserve_from_options). In secure builds never: guard pages need
   4 KiB protection. */
int _mi_arena_reserve_huge(size_t pages, bool exclusive, mi_arena_id_t* id) {
  if (id != NULL) *id = 0;
  if (pages == 0) return 0;
  if (pages > SIZE_MAX / MI_HUGE_OS_PAGE_SIZE) return EINVAL;
  size_t size = pages * MI_HUGE_OS_PAGE_SIZE;
  void* p = NULL;
  int err = (MI_SECURE ? ENOTSUP : mi_prim_alloc_huge_os_pages(size, &p));
  if (err != 0) {
    mi_fault_event(mi_fault_event_huge_fallback);
    _mi_warning_message("unable to reserve %zu GiB of huge OS pages (error %d)\n", pages, err);
    return ENOMEM;
  }
  atomic_fetch_add_explicit(&_mi_stats.mmap_calls, 1, memory_order_relaxed);
  _mi_stat_increase(&_mi_stats.reserved, (int64_t)size);
  mi_arena_kind_t kind = {.is_committed = true,
                          .is_pinned = true,
                          .is_zero = true,
                          .is_exclusive = exclusive,
                          .is_owned = true,
                          .is_held = (id != NULL)};
  mi_arena_id_t added = mi_arena_add(p, size, kind);
  if (added == 0) {
    _mi_os_free(p, size);
    return ENOMEM;
  }
  _mi_stat_increase(&_mi_stats.arenas, (int64_t)size);
  if (id != NULL) *id = added;
  return 0;
}

/* The reservations the options ask for, at process start. Huge pages that
   cannot be had are reserved as large, then normal pages: the program asked
   for memory up front; the shortfall is a warning. */
void _mi_arenas_reserve_from_options(void) {
  long huge = mi_option_get(mi_option_reserve_huge_os_pages);
  if (huge > 0 && _mi_arena_reserve_huge((size_t)huge, false, NULL) == ENOMEM) {
    /* one NUMA node here: reserve_huge_os_pages_at has no placement to make */
    _mi_warning_message("reserving %ld GiB of large or normal pages instead of huge ones\n", huge);
    _mi_arena_reserve_os((size_t)huge * MI_HUGE_OS_PAGE_SIZE, true, !MI_SECURE, false, NULL);
  }
  size_t os_memory = mi_option_get_size(mi_option_reserve_os_memory);
  if (os_memory > 0) {
    _mi_arena_reserve_os(os_memory, _mi_arena_eager_commit(), mi_option_is_enabled(mi_option_allow_large_os_pages),
                         false, NULL);
  }
}

/* ---- Given back (mi_purge_all_ex with MI_PURGE_RECLAIM) ------------------------- */

/* Every arena of ours that holds no segment, unmapped whole; the bytes given
   back (what `reserved` falls by). Kept, and counted in `kept`: an empty
   arena whose id a caller holds (it must stay valid), an exclusive one, the
   caller's memory, pinned (huge page) memory. Done under the lock: an
   allocation waits, then finds the slot vacant; a release the OS refuses
   leaves the arena as it was (`refused`). */
size_t _mi_arenas_reclaim(size_t* reclaimed, size_t* kept, bool* refused) {
  size_t bytes = 0;
  size_t count = atomic_load_explicit(&mi_arena_count, memory_order_acquire);
  _mi_lock_acquire(&mi_arena_lock);
  for (size_t a = 0; a < count; a++) {
    mi_arena_t* arena = &mi_arenas[a];
    bool empty = (arena->chunk_count != 0 && !mi_bits_any(arena->in_use, 0, arena->chunk_count, true));
#if MI_RECLAIM_PLANT_LIVE_ARENA
    empty = (arena->chunk_count != 0); /* the planted bug: an arena holding a live segment given back */
#endif
    if (!empty) continue;
    if (!arena->is_owned || arena->is_pinned || arena->is_exclusive || arena->is_held) {
      (*kept)++;
      continue;
    }
    atomic_store_explicit(&mi_arena_spans[a], 0, memory_order_release);
    if (!_mi_os_free(arena->start, arena->reserved_size)) {
      atomic_store_explicit(&mi_arena_spans[a], mi_arena_span_of(arena), memory_order_release); /* fault path */
      *refused = true;
      continue;
    }
    _mi_stat_decrease(&_mi_stats.arenas, (int64_t)arena->reserved_size);
    bytes += arena->reserved_size;
    arena->chunk_count = 0;
    (*reclaimed)++;
  }
  _mi_lock_release(&mi_arena_lock);
  return bytes;
}

size_t _mi_arenas_count(void) {
  return atomic_load_explicit(&mi_arenas_made, memory_order_relaxed);
}
