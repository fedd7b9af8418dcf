/* Free standard segments kept for reuse, so a program that frees and
   allocates in waves does not map and unmap 4 MiB at a time. A cached segment
   is "dirty" (its memory still committed; reusable as is by the same kind)
   until its purge delay has passed; then its memory goes back to the OS and
   it is "clean" (reads as zero; reusable by any kind). */
#include "internal.h"

/* The cache is an array of slots kept outside the segments: purging a
   segment zeroes its header, so nothing about a clean segment may live in it.
   Slots hold standard segments and large single-block segments up to
   MI_LARGE_SEGMENT_MAX; a slot being purged is out of reach of pop. */
typedef struct mi_cache_slot_s {
  mi_segment_t* segment; /* NULL: slot unused */
  size_t size;
  int64_t cached_at;
  uint8_t kind; /* secure builds: guard pages sit where this kind wants them */
  bool dirty;
  bool purging;
} mi_cache_slot_t;

#define MI_CACHE_SLOTS 64

static mi_lock_t mi_cache_lock;
static mi_cache_slot_t mi_cache[MI_CACHE_SLOTS]; /* under mi_cache_lock */
static _Atomic(size_t) mi_cache_count;
static _Atomic(size_t) mi_cache_dirty_count;

void _mi_segment_cache_init(void) {
  _mi_lock_init(&mi_cache_lock, MI_LOCK_SEGMENT_CACHE);
}

static mi_segment_t* mi_cache_take(mi_cache_slot_t* slot) {
  mi_segment_t* segment = slot->segment;
  if (slot->dirty) atomic_fetch_sub_explicit(&mi_cache_dirty_count, 1, memory_order_relaxed);
  slot->segment = NULL;
  slot->dirty = false;
  atomic_fetch_sub_explicit(&mi_cache_count, 1, memory_order_relaxed);
  return segment;
}

/* A cached segment of `size` bytes for `kind`: the newest dirty one of the
   same kind and size (its header and page states are valid), else a clean
   one of that size. The caller lays out a clean one anew. */
mi_segment_t* _mi_segment_cache_pop(mi_segment_kind_t kind, size_t size) {
  if (atomic_load_explicit(&mi_cache_count, memory_order_relaxed) == 0) return NULL;
  _mi_lock_acquire(&mi_cache_lock);
  mi_cache_slot_t* same = NULL;
  mi_cache_slot_t* clean = NULL;
  for (size_t i = 0; i < MI_CACHE_SLOTS; i++) {
    mi_cache_slot_t* slot = &mi_cache[i];
    if (slot->segment == NULL || slot->purging || slot->size != size) continue;
    if (!slot->dirty) {
      if (clean == NULL && (!MI_SECURE || slot->kind == (uint8_t)kind)) clean = slot;
    } else if (slot->segment->kind == (uint8_t)kind) {
      if (same == NULL || slot->cached_at > same->cached_at) same = slot;
    }
  }
  mi_segment_t* found = NULL;
  if (same != NULL) found = mi_cache_take(same);
  else if (clean != NULL) found = mi_cache_take(clean);
  _mi_lock_release(&mi_cache_lock);
  return found;
}

/* Keep an empty segment; false if the cache is full (the caller unmaps it). */
bool _mi_segment_cache_push(mi_segment_t* segment) {
  long max = _mi_option_get_fast(mi_option_segment_cache);
  if (max > MI_CACHE_SLOTS) max = MI_CACHE_SLOTS;
  if (max <= 0) return false;
  bool ok = false;
  _mi_lock_acquire(&mi_cache_lock);
  if (atomic_load_explicit(&mi_cache_count, memory_order_relaxed) < (size_t)max) {
    for (size_t i = 0; i < MI_CACHE_SLOTS; i++) {
      mi_cache_slot_t* slot = &mi_cache[i];
      if (slot->segment != NULL) continue;
      slot->segment = segment;
      slot->size = segment->segment_size;
      slot->kind = segment->kind;
      slot->cached_at = mi_prim_clock_now();
      slot->dirty = true;
      slot->purging = false;
      atomic_fetch_add_explicit(&mi_cache_dirty_count, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&mi_cache_count, 1, memory_order_relaxed);
      ok = true;
      break;
    }
  }
  _mi_lock_release(&mi_cache_lock);
  if (ok) _mi_purge_due_after_delay();
  return ok;
}

/* Return the memory of cached segments whose delay has passed (all with
   `force`). Called under the purge-run lock. The system calls run outside
   the cache lock: a slot being purged is
   skipped by pop and push. On failure the memory stays committed and the
   slot stays dirty. */
void _mi_segment_cache_purge(bool force) {
  if (atomic_load_explicit(&mi_cache_dirty_count, memory_order_relaxed) == 0) return;
  long delay = _mi_option_get_fast(mi_option_purge_delay);
  if (delay < 0 && !force) return;
  int64_t now = mi_prim_clock_now();
  for (size_t i = 0; i < MI_CACHE_SLOTS; i++) {
    mi_cache_slot_t* slot = &mi_cache[i];
    _mi_lock_acquire(&mi_cache_lock);
    bool due = (slot->segment != NULL && slot->dirty && !slot->purging && (force || slot->cached_at + delay <= now));
    if (due) slot->purging = true;
    _mi_lock_release(&mi_cache_lock);
    if (!due) continue;
    int64_t committed = _mi_segment_committed(slot->segment);
    bool purged = true;
#if MI_SECURE
    /* purging zeroes the header, and with it where a large block's guard page
       is: lift that guard first (the other guard pages sit where every
       segment of the kind has them) */
    mi_page_t* single = &slot->segment->pages[0];
    if (slot->segment->kind == MI_SEGMENT_SINGLE && single->guard_offset != 0) {
      purged = (_mi_os_protect((uint8_t*)slot->segment + single->guard_offset, _mi_os_page_size(), false) == 0);
      if (purged) {
        single->guard_offset = 0;
      } else {
        _mi_warning_message("unable to lift the guard of cached segment %p\n", (void*)slot->segment); /* fault path */
      }
    }
#endif
    purged = purged && _mi_os_purge(slot->segment, slot->size);
    _mi_lock_acquire(&mi_cache_lock);
    slot->purging = false;
    if (purged) {
      _mi_stat_decrease(&_mi_stats.committed, committed);
      slot->dirty = false;
      atomic_fetch_sub_explicit(&mi_cache_dirty_count, 1, memory_order_relaxed);
    }
    _mi_lock_release(&mi_cache_lock);
  }
}

bool _mi_segment_cache_has_dirty(void) {
  return atomic_load_explicit(&mi_cache_dirty_count, memory_order_relaxed) > 0;
}
