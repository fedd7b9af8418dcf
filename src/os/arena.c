/* Arenas: large ranges reserved up front (mi_reserve_os_memory,
   mi_reserve_huge_os_pages_*, options reserve_os_memory and
   reserve_huge_os_pages) and handed out as segment-aligned chunks. Without
   arenas every segment comes from the OS directly, which is also the
   fallback whenever an arena cannot serve a request: none has room, its
   commit fails, or its reservation failed in the first place.

   Arena memory is counted as reserved once, when the arena is reserved. A
   chunk given back is decommitted (reserved-only arenas) so it reads as zero
   when next committed; pinned arenas (large or huge pages) cannot decommit,
   so a reused pinned chunk is cleared before it is handed out again. */
#include "os.h"
#include "../prim/fault.h"

#define MI_ARENA_MAX 16
#define MI_ARENA_MAX_CHUNKS 4096 /* 16 GiB per arena */
#define MI_ARENA_WORDS (MI_ARENA_MAX_CHUNKS / 64)

typedef struct mi_arena_s {
  uint8_t* start;
  size_t chunk_count;
  bool is_pinned;                     /* large or huge pages: always committed */
  bool is_committed;                  /* reserved committed: chunks never need a commit */
  uint64_t in_use[MI_ARENA_WORDS];    /* under mi_arena_lock */
  uint64_t committed[MI_ARENA_WORDS]; /* chunks committed (or all, if is_committed) */
  uint64_t dirty[MI_ARENA_WORDS];     /* pinned chunks handed out before: not zero */
} mi_arena_t;

static mi_arena_t mi_arenas[MI_ARENA_MAX];
static _Atomic(size_t) mi_arena_count;
static mi_lock_t mi_arena_lock;

void _mi_arenas_init(void) {
  _mi_lock_init(&mi_arena_lock, MI_LOCK_ARENA);
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

/* Register a reserved range as an arena; false if the table is full. */
static bool mi_arena_add(void* start, size_t size, bool is_committed, bool is_pinned) {
  size_t chunks = size / MI_ARENA_CHUNK;
  if (chunks > MI_ARENA_MAX_CHUNKS) chunks = MI_ARENA_MAX_CHUNKS;
  if (chunks == 0) return false;
  _mi_lock_acquire(&mi_arena_lock);
  size_t i = atomic_load_explicit(&mi_arena_count, memory_order_relaxed);
  if (i >= MI_ARENA_MAX) {
    _mi_lock_release(&mi_arena_lock);
    return false;
  }
  mi_arena_t* arena = &mi_arenas[i];
  memset(arena, 0, sizeof(*arena));
  arena->start = (uint8_t*)start;
  arena->chunk_count = chunks;
  arena->is_pinned = is_pinned;
  arena->is_committed = is_committed || is_pinned;
  if (arena->is_committed) mi_bits_set(arena->committed, 0, chunks, true);
  atomic_store_explicit(&mi_arena_count, i + 1, memory_order_release);
  _mi_lock_release(&mi_arena_lock);
  _mi_verbose_message("arena %zu: %zu MiB at %p (committed: %d, pinned: %d)\n", i, chunks * (MI_ARENA_CHUNK >> 20),
                      start, arena->is_committed, is_pinned);
  return true;
}

/* `size` (a multiple of the segment size) bytes of zeroed, committed,
   segment-aligned arena memory, or NULL (then the caller asks the OS). */
void* _mi_arena_alloc(size_t size, bool* is_pinned) {
  size_t count = atomic_load_explicit(&mi_arena_count, memory_order_acquire);
  if (count == 0) return NULL;
  size_t n = size / MI_ARENA_CHUNK;
  mi_arena_t* arena = NULL;
  size_t first = 0;
  _mi_lock_acquire(&mi_arena_lock);
  for (size_t a = 0; a < count && arena == NULL; a++) {
    mi_arena_t* candidate = &mi_arenas[a];
    if (MI_SECURE && candidate->is_pinned) continue; /* no guard pages in pinned memory */
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
  bool needs_clear = (arena != NULL && arena->is_pinned && mi_bits_any(arena->dirty, first, n, true));
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
  if (needs_clear) memset(p, 0, size);
  *is_pinned = arena->is_pinned;
  return p;
}

static mi_arena_t* mi_arena_of(const void* p, size_t* chunk) {
  size_t count = atomic_load_explicit(&mi_arena_count, memory_order_acquire);
  for (size_t a = 0; a < count; a++) {
    mi_arena_t* arena = &mi_arenas[a];
    if ((const uint8_t*)p >= arena->start && (const uint8_t*)p < arena->start + arena->chunk_count * MI_ARENA_CHUNK) {
      *chunk = (size_t)((const uint8_t*)p - arena->start) / MI_ARENA_CHUNK;
      return arena;
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
  size_t n = size / MI_ARENA_CHUNK;
  /* the chunk must read as zero, and be free of guard pages, next time: it
     is decommitted (committed again when taken). If the OS refuses, it is
     made accessible and purged (cleared if that is refused too); if it
     cannot even be made accessible it stays taken, lost to the arena but
     never handed out with guard pages in it. Pinned chunks are marked and
     cleared when handed out again. */
  bool decommitted = false;
  if (!arena->is_pinned) {
    decommitted = _mi_os_decommit(p, size);
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

int _mi_arena_reserve_os(size_t size, bool commit, bool allow_large) {
  size = _mi_align_up(size, MI_ARENA_CHUNK);
  if (size == 0) return EINVAL;
  bool is_pinned = false;
  void* p = _mi_os_alloc_aligned(size, MI_ARENA_CHUNK, commit, allow_large, &is_pinned);
  if (p == NULL) {
    _mi_warning_message("unable to reserve %zu MiB of OS memory for an arena\n", size >> 20); /* fault path */
    return ENOMEM;
  }
  if (!mi_arena_add(p, size, commit, is_pinned)) {
    _mi_os_free(p, size); /* fault path */
    return ENOMEM;
  }
  _mi_stat_increase(&_mi_stats.arenas, (int64_t)size);
  return 0;
}

/* Huge (1 GiB) pages, falling back to large (2 MiB) pages, then to normal
   committed pages: the caller asked for memory up front, and gets it in the
   best kind the system has (in secure builds: normal pages). */
int _mi_arena_reserve_huge(size_t pages) {
  if (pages == 0) return 0;
  if (pages > SIZE_MAX / MI_HUGE_OS_PAGE_SIZE) return EINVAL;
  size_t size = pages * MI_HUGE_OS_PAGE_SIZE;
  void* p = NULL;
  /* secure builds never pin: guard pages need 4 KiB protection */
  int err = (MI_SECURE ? ENOTSUP : mi_prim_alloc_huge_os_pages(size, &p));
  if (err == 0) {
    atomic_fetch_add_explicit(&_mi_stats.mmap_calls, 1, memory_order_relaxed);
    _mi_stat_increase(&_mi_stats.reserved, (int64_t)size);
    if (mi_arena_add(p, size, true, true)) {
      _mi_stat_increase(&_mi_stats.arenas, (int64_t)size);
      return 0;
    }
    _mi_os_free(p, size);
    return ENOMEM;
  }
  mi_fault_event(mi_fault_event_huge_fallback);
  _mi_verbose_message("huge OS pages unavailable (error %d); trying large, then normal pages\n", err);
  return _mi_arena_reserve_os(size, true, !MI_SECURE);
}

/* The reservations the options ask for, at process start. */
void _mi_arenas_reserve_from_options(void) {
  long huge = mi_option_get(mi_option_reserve_huge_os_pages);
  if (huge > 0) {
    long at = mi_option_get(mi_option_reserve_huge_os_pages_at);
    (void)at; /* one NUMA node here: no placement */
    _mi_arena_reserve_huge((size_t)huge);
  }
  size_t os_memory = mi_option_get_size(mi_option_reserve_os_memory);
  if (os_memory > 0) {
    _mi_arena_reserve_os(os_memory, mi_option_get(mi_option_arena_eager_commit) == 1,
                         mi_option_is_enabled(mi_option_allow_large_os_pages));
  }
}
