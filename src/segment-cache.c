/* Free standard segments kept for reuse, so a program that frees and
   allocates in waves does not map and unmap 4 MiB at a time. A cached segment
   is "dirty" (its memory still committed; reusable as is by the same kind)
   until its purge delay has passed; then its memory goes back to the OS and
   it is "clean" (reads as zero; reusable by any kind). */
#include "internal.h"

static mi_lock_t mi_cache_lock;
static mi_segment_t* mi_cache_dirty;   /* newest first */
static mi_segment_t* mi_cache_clean;
static size_t mi_cache_count;
static _Atomic(size_t) mi_cache_dirty_count;

void _mi_segment_cache_init(void) mi_decl_hidden;
mi_segment_t* _mi_segment_cache_pop(mi_segment_kind_t kind) mi_decl_hidden;
bool _mi_segment_cache_push(mi_segment_t* segment) mi_decl_hidden;
void _mi_segment_cache_lock_acquire(void) mi_decl_hidden;
void _mi_segment_cache_lock_release(void) mi_decl_hidden;
void _mi_segment_cache_reinit(void) mi_decl_hidden;

void _mi_segment_cache_init(void) {
  _mi_lock_init(&mi_cache_lock, MI_LOCK_SEGMENT_CACHE);
}
void _mi_segment_cache_reinit(void) {
  _mi_lock_init(&mi_cache_lock, MI_LOCK_SEGMENT_CACHE);
}
void _mi_segment_cache_lock_acquire(void) {
  _mi_lock_acquire(&mi_cache_lock);
}
void _mi_segment_cache_lock_release(void) {
  _mi_lock_release(&mi_cache_lock);
}

static void mi_list_remove(mi_segment_t** head, mi_segment_t* segment) {
  if (segment->prev != NULL) segment->prev->next = segment->next;
  else *head = segment->next;
  if (segment->next != NULL) segment->next->prev = segment->prev;
  segment->next = segment->prev = NULL;
}

static void mi_list_push(mi_segment_t** head, mi_segment_t* segment) {
  segment->prev = NULL;
  segment->next = *head;
  if (*head != NULL) (*head)->prev = segment;
  *head = segment;
}

static int64_t mi_segment_committed(const mi_segment_t* segment) {
  int64_t committed = (int64_t)segment->info_size;
  for (size_t i = 0; i < segment->page_count; i++) committed += (int64_t)segment->pages[i].committed;
  return committed;
}

/* Return all memory of a dirty segment (under the cache lock). On failure the
   memory stays committed and the segment stays dirty. */
static bool mi_cache_purge_segment(mi_segment_t* segment) {
  int64_t committed = mi_segment_committed(segment);
  if (!_mi_os_purge(segment, MI_SEGMENT_SIZE)) return false;
  _mi_stat_decrease(&_mi_stats.committed, committed);
  mi_list_remove(&mi_cache_dirty, segment);
  atomic_fetch_sub_explicit(&mi_cache_dirty_count, 1, memory_order_relaxed);
  mi_list_push(&mi_cache_clean, segment);
  return true;
}

mi_segment_t* _mi_segment_cache_pop(mi_segment_kind_t kind) {
  if (mi_cache_count == 0) return NULL; /* racy peek; the lock decides */
  _mi_lock_acquire(&mi_cache_lock);
  mi_segment_t* found = NULL;
  for (mi_segment_t* s = mi_cache_dirty; s != NULL; s = s->next) {
    if (s->kind == (uint8_t)kind) {
      found = s;
      mi_list_remove(&mi_cache_dirty, s);
      atomic_fetch_sub_explicit(&mi_cache_dirty_count, 1, memory_order_relaxed);
      break;
    }
  }
  if (found == NULL && mi_cache_clean == NULL && mi_cache_dirty != NULL) {
    /* only dirty segments of another kind: return the oldest one's memory and reuse it */
    mi_segment_t* oldest = mi_cache_dirty;
    while (oldest->next != NULL) oldest = oldest->next;
    mi_cache_purge_segment(oldest);
  }
  if (found == NULL && mi_cache_clean != NULL) {
    found = mi_cache_clean;
    mi_list_remove(&mi_cache_clean, found);
  }
  if (found != NULL) mi_cache_count--;
  _mi_lock_release(&mi_cache_lock);
  return found;
}

/* Keep an empty standard segment; false if the cache is full (the caller
   unmaps it). */
bool _mi_segment_cache_push(mi_segment_t* segment) {
  long max = _mi_option_get_fast(mi_option_segment_cache);
  if (max <= 0) return false;
  _mi_lock_acquire(&mi_cache_lock);
  bool ok = (mi_cache_count < (size_t)max);
  if (ok) {
    segment->cached_at = mi_prim_clock_now();
    mi_list_push(&mi_cache_dirty, segment);
    atomic_fetch_add_explicit(&mi_cache_dirty_count, 1, memory_order_relaxed);
    mi_cache_count++;
  }
  _mi_lock_release(&mi_cache_lock);
  if (ok) _mi_purge_due_after_delay();
  return ok;
}

/* Return the memory of cached segments whose delay has passed (all with `force`). */
void _mi_segment_cache_purge(bool force) {
  if (atomic_load_explicit(&mi_cache_dirty_count, memory_order_relaxed) == 0) return;
  long delay = _mi_option_get_fast(mi_option_purge_delay);
  if (delay < 0 && !force) return;
  int64_t now = mi_prim_clock_now();
  _mi_lock_acquire(&mi_cache_lock);
  mi_segment_t* s = mi_cache_dirty;
  while (s != NULL) {
    mi_segment_t* next = s->next;
    if (force || s->cached_at + delay <= now) mi_cache_purge_segment(s);
    s = next;
  }
  _mi_lock_release(&mi_cache_lock);
}

bool _mi_segment_cache_has_dirty(void) mi_decl_hidden;
bool _mi_segment_cache_has_dirty(void) {
  return atomic_load_explicit(&mi_cache_dirty_count, memory_order_relaxed) > 0;
}
