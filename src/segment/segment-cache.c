/* Free standard segments kept for reuse, so a program that frees and
   allocates in waves does not map and unmap 4 MiB at a time. A cached segment
   is "dirty" (its memory still committed; reusable as is by the same kind)
   until its purge delay has passed; then its memory goes back to the OS and
   it is "clean" (reads as zero; reusable by any kind). */
#include "segment.h"

/* The cache is an array of slots kept outside the segments: purging a
   segment zeroes its header, so nothing about a clean segment may live in it.
   Slots hold standard segments and large single-block segments up to
   MI_LARGE_SEGMENT_MAX; a slot being purged is out of reach of pop. */
typedef struct mi_cache_slot_s {
  mi_segment_t* segment; /* NULL: slot unused */
  size_t size;
  int64_t cached_at;
  int64_t purged_at; /* clean: when its memory went back (0: never committed by us) */
  int64_t committed; /* dirty: bytes of it still committed */
  uint8_t kind;      /* secure builds: guard pages sit where this kind wants them */
  bool in_arena;     /* arena memory: it waits arena_purge_mult times the delay */
  bool dirty;
  bool purging;
} mi_cache_slot_t;

#define MI_CACHE_SLOTS 64

static mi_lock_t mi_cache_lock;
static mi_cache_slot_t mi_cache[MI_CACHE_SLOTS]; /* under mi_cache_lock */
static _Atomic(size_t) mi_cache_count;
static _Atomic(size_t) mi_cache_dirty_count;
static _Atomic(int64_t) mi_cache_dirty_bytes;

/* What the grown delay keeps is bounded: dirty cached memory past a quarter
   of the memory in use (and past MI_CACHE_DIRTY_MIN) is purged, oldest
   first, as soon as it has waited the plain delay. (With the delay grown
   while a program frees and takes back large blocks, `malloc-large` held
   every size it ever freed: 440 MiB resident became 610. With 64 MiB
   allowed at any age, `mstress` at 2 threads took 102 MiB against 69; with
   32 MiB past the plain delay, 92 MiB, and 3.0 s against 3.9 s with 8.) */
#define MI_CACHE_DIRTY_MIN ((int64_t)32 << 20)
static bool mi_cache_over_budget(void) {
  int64_t dirty = atomic_load_explicit(&mi_cache_dirty_bytes, memory_order_relaxed);
  int64_t in_use = atomic_load_explicit(&_mi_stats.committed.current, memory_order_relaxed) - dirty;
  return (dirty > _mi_purge_dirty_allowed(in_use, MI_CACHE_DIRTY_MIN));
}

int64_t _mi_segment_cache_dirty(void) {
  return atomic_load_explicit(&mi_cache_dirty_bytes, memory_order_relaxed);
}

void _mi_segment_cache_init(void) {
  _mi_lock_init(&mi_cache_lock, MI_LOCK_SEGMENT_CACHE);
}

static void mi_cache_undirty(mi_cache_slot_t* slot) {
  mi_lock_assert_held(&mi_cache_lock);
  mi_assert_internal(slot->dirty && atomic_load_explicit(&mi_cache_dirty_count, memory_order_relaxed) > 0);
  atomic_fetch_sub_explicit(&mi_cache_dirty_count, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&mi_cache_dirty_bytes, slot->committed, memory_order_relaxed);
  slot->dirty = false;
}

static mi_segment_t* mi_cache_take(mi_cache_slot_t* slot) {
  mi_lock_assert_held(&mi_cache_lock);
  mi_assert_internal(slot->segment != NULL && !slot->purging); /* a slot being purged is skipped */
  mi_assert_internal(atomic_load_explicit(&mi_cache_count, memory_order_relaxed) > 0);
  mi_segment_t* segment = slot->segment;
  if (slot->dirty) mi_cache_undirty(slot);
  slot->segment = NULL;
  slot->dirty = false;
  atomic_fetch_sub_explicit(&mi_cache_count, 1, memory_order_relaxed);
  return segment;
}

/* Single-block segments whose memory is still committed serve blocks up to
   half their size smaller: a program that frees and allocates large blocks
   of varying sizes then keeps reusing committed memory, instead of mapping
   (and faulting in) a new segment while cached ones of the next sizes wait
   for their purge. The unused end stays committed until the segment is
   freed and purged. Secure builds lay the block out as in a segment of the
   size asked for, its guard page moved up to follow it (two mprotect calls,
   against a page fault a page: `malloc-large` at the light level took 355,000
   faults with the exact size alone, 150,000 so, as the default build). */
static bool mi_cache_fits_larger(mi_segment_kind_t kind, size_t want, size_t have) {
  return (kind == MI_SEGMENT_SINGLE && have > want && have - want <= want / 2);
}

/* How far a dirty slot's committed bytes are from what its next user will
   touch (0: any will do): too many stay resident unused (or cost a purge),
   too few cost a page fault a page. */
static size_t mi_cache_misfit(const mi_cache_slot_t* slot, size_t want) {
  if (want == 0) return 0;
  size_t committed = (size_t)slot->committed;
  return (committed > want ? committed - want : want - committed);
}

/* `slot` serves `want` better than `best`: closer, or as close and newer */
static bool mi_cache_fits_better(const mi_cache_slot_t* slot, const mi_cache_slot_t* best, size_t want) {
  size_t misfit = mi_cache_misfit(slot, want);
  size_t best_misfit = mi_cache_misfit(best, want);
  return (misfit < best_misfit || (misfit == best_misfit && slot->cached_at > best->cached_at));
}

/* A cached segment of `size` bytes for `kind`, whose user will touch about
   `want` bytes of it (0: unknown): of the dirty ones of the same kind and
   size (header and page states valid), the one whose committed bytes come
   closest to `want`, the newest among equals (a single-block segment is
   reused for blocks of any size up to it: one that held a 1 MiB block would
   otherwise serve a guarded sample of 16 bytes while a 1 MiB block faults in
   another); else the smallest dirty larger one that fits, else a clean one
   of that size. The caller lays out a clean one anew. */
mi_segment_t* _mi_segment_cache_pop(mi_segment_kind_t kind, size_t size, size_t want, mi_arena_id_t arena) {
  if (atomic_load_explicit(&mi_cache_count, memory_order_relaxed) == 0) return NULL;
  _mi_lock_acquire(&mi_cache_lock);
  mi_cache_slot_t* same = NULL;
  mi_cache_slot_t* larger = NULL;
  mi_cache_slot_t* clean = NULL;
  for (size_t i = 0; i < MI_CACHE_SLOTS; i++) {
    mi_cache_slot_t* slot = &mi_cache[i];
    if (slot->segment == NULL || slot->purging || !_mi_arena_suits(slot->segment, arena)) continue;
    if (slot->size != size) {
      if (slot->dirty && slot->segment->kind == (uint8_t)kind && mi_cache_fits_larger(kind, size, slot->size) &&
          (larger == NULL || slot->size < larger->size)) {
        larger = slot;
      }
      continue;
    }
    if (!slot->dirty) {
      if (clean == NULL && (!MI_SECURE || slot->kind == (uint8_t)kind)) clean = slot;
    } else if (slot->segment->kind == (uint8_t)kind && (same == NULL || mi_cache_fits_better(slot, same, want))) {
      same = slot;
    }
  }
  if (same == NULL) same = larger;
  /* the same size, or larger and dirty (a purged one's header reads zero: its slot keeps the size) */
  mi_assert_internal(same == NULL || (same->size >= size && same->dirty));
  mi_assert_internal(clean == NULL || clean->size == size);
  mi_segment_t* found = NULL;
  int64_t purged_at = 0;
  if (same != NULL) {
    found = mi_cache_take(same);
  } else if (clean != NULL) {
    purged_at = clean->purged_at;
    found = mi_cache_take(clean);
  }
  _mi_lock_release(&mi_cache_lock);
  if (found != NULL) _mi_purge_note_taken();
  _mi_purge_reused(purged_at);
  return found;
}

/* Keep an empty segment; false if the cache is full (the caller unmaps it). */
bool _mi_segment_cache_push(mi_segment_t* segment) {
  long max = _mi_option_get_fast(mi_option_segment_cache);
  if (max > MI_CACHE_SLOTS) max = MI_CACHE_SLOTS;
  if (max <= 0) return false;
  bool ok = false;
  int64_t committed = _mi_segment_committed(segment);
  bool in_arena = _mi_arena_contains(segment);
  _mi_lock_acquire(&mi_cache_lock);
  if (atomic_load_explicit(&mi_cache_count, memory_order_relaxed) < (size_t)max) {
    for (size_t i = 0; i < MI_CACHE_SLOTS; i++) {
      mi_cache_slot_t* slot = &mi_cache[i];
      if (slot->segment != NULL) continue;
      mi_assert_internal(!slot->dirty && !slot->purging);
      slot->segment = segment;
      slot->size = segment->segment_size;
      slot->kind = segment->kind;
      slot->cached_at = mi_prim_clock_now();
      slot->purged_at = 0;
      slot->committed = committed;
      slot->in_arena = in_arena;
      slot->dirty = true;
      slot->purging = false;
      atomic_fetch_add_explicit(&mi_cache_dirty_count, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&mi_cache_dirty_bytes, committed, memory_order_relaxed);
      atomic_fetch_add_explicit(&mi_cache_count, 1, memory_order_relaxed);
      ok = true;
      break;
    }
  }
  _mi_lock_release(&mi_cache_lock);
  if (ok) _mi_background_due_after_delay();
  return ok;
}

/* Return the memory of a claimed slot (`purging` set); true if it went. */
static bool mi_cache_purge_slot(mi_cache_slot_t* slot, int64_t now) {
  mi_assert_internal(slot->purging && slot->dirty && slot->segment != NULL); /* claimed: nobody else takes it */
  bool purged = true;
  /* secure builds: purging zeroes the header, and with it where a large
     block's guard page is: that guard is lifted first */
  if (MI_SECURE) purged = _mi_secure_single_guard_lift(slot->segment);
  /* purging zeroes the header, and with it whether the segment asked for
     huge pages (os-thp.c): take that back first, so that reused clean it
     asks anew, or not at all */
  if (slot->segment->thp_hinted) {
    _mi_os_hint_huge_pages(slot->segment, slot->size, false);
    slot->segment->thp_hinted = 0;
  }
  purged = purged && _mi_os_purge(slot->segment, slot->size);
  _mi_lock_acquire(&mi_cache_lock);
  slot->purging = false;
  if (purged) {
    _mi_stat_decrease(&_mi_stats.committed, slot->committed);
    mi_cache_undirty(slot);
    slot->purged_at = now;
  }
  _mi_lock_release(&mi_cache_lock);
  if (!purged) {
    return false; /* fault path: the slot stays dirty */
  }
  return true;
}

/* Under the cache lock: the oldest dirty slot not being purged that has
   waited the plain delay (cached before `before`), claimed. */
static mi_cache_slot_t* mi_cache_claim_oldest(int64_t before) {
  mi_cache_slot_t* oldest = NULL;
  for (size_t i = 0; i < MI_CACHE_SLOTS; i++) {
    mi_cache_slot_t* slot = &mi_cache[i];
    if (slot->segment == NULL || !slot->dirty || slot->purging || slot->cached_at > before) continue;
    if (oldest == NULL || slot->cached_at < oldest->cached_at) oldest = slot;
  }
  if (oldest != NULL) oldest->purging = true;
  mi_assert_internal(oldest == NULL || oldest->dirty);
  return oldest;
}

/* Return the memory of cached segments whose delay has passed (all with
   `force`), then of the oldest past the plain delay while dirty memory is
   over its budget; the
   time the next one is due (INT64_MAX: none). Called under the purge-run
   lock. The system calls run outside the cache lock: a slot being purged is
   skipped by pop and push. On failure the memory stays committed and the
   slot stays dirty, and is tried again one delay later. */
int64_t _mi_segment_cache_purge(bool force, const mi_purge_pass_t* pass) {
  int64_t next_due = INT64_MAX;
  if (atomic_load_explicit(&mi_cache_dirty_count, memory_order_relaxed) == 0) return next_due;
  long delay = _mi_option_get_fast(mi_option_purge_delay);
  if (delay < 0 && !force) return next_due;
  int64_t again = pass->now + (delay > 0 ? delay : 1);
  /* arena memory waits longer, as mimalloc's arenas purge later (arena_purge_mult) */
  long mult = _mi_option_get_fast(mi_option_arena_purge_mult);
  int64_t arena_delay = delay;
  if (delay > 0 && mult > 1)
    arena_delay = ((int64_t)delay > INT64_MAX / 4 / mult ? INT64_MAX / 4 : (int64_t)delay * mult);
  bool refused = false;
  for (size_t i = 0; i < MI_CACHE_SLOTS; i++) {
    mi_cache_slot_t* slot = &mi_cache[i];
    _mi_lock_acquire(&mi_cache_lock);
    bool due =
        (slot->segment != NULL && slot->dirty && !slot->purging &&
         (force || _mi_purge_pass_due(pass, slot->cached_at + (slot->in_arena ? arena_delay : delay), &next_due)));
    if (due) slot->purging = true;
    _mi_lock_release(&mi_cache_lock);
    if (due && !mi_cache_purge_slot(slot, pass->now)) refused = true;
  }
  while (!refused && mi_cache_over_budget()) {
    _mi_lock_acquire(&mi_cache_lock);
    mi_cache_slot_t* slot = mi_cache_claim_oldest(pass->now - delay);
    _mi_lock_release(&mi_cache_lock);
    if (slot == NULL) break;
    if (!mi_cache_purge_slot(slot, pass->now)) refused = true;
  }
  if (refused && again < next_due) next_due = again;
  return next_due;
}

/* Every cached segment not being purged right now, unmapped: the cache's
   reservations given back (mi_purge_all_ex with MI_PURGE_RECLAIM). The bytes
   the OS took back; arena memory goes back to its arena, to be given back
   with it. One slot at a time, the system call outside the lock. */
size_t _mi_segment_cache_release(size_t* released) {
  size_t bytes = 0;
  for (size_t i = 0; i < MI_CACHE_SLOTS; i++) {
    _mi_lock_acquire(&mi_cache_lock);
    mi_cache_slot_t* slot = &mi_cache[i];
    bool take = (slot->segment != NULL && !slot->purging);
    bool dirty = take && slot->dirty;
    size_t size = slot->size;
    mi_segment_t* segment = (take ? mi_cache_take(slot) : NULL);
    _mi_lock_release(&mi_cache_lock);
    if (segment == NULL) continue;
    if (dirty) {
      bytes += _mi_segment_unmap(segment);
    } else {
      bytes += _mi_segment_unmap_clean(segment, size);
    }
    (*released)++;
  }
  return bytes;
}
