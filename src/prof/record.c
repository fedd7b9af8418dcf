/* The pprof sampler's records: the hooks the allocator's entry points call,
   the table of sampled blocks (pointer -> stack, size), the stack table
   (each distinct stack once, with its counts), start, stop, reset and the
   statistics.

   Only a sampled allocation takes the lock (class MI_LOCK_PROF, a leaf):
   the decision is the thread's own (sampler.c), and the stack is captured
   before the lock. A free looks its block up in a table of counters indexed
   by a hash of the pointer (`_mi_prof_filter`, read without a lock): only a
   pointer whose slot counts a live sample takes the lock to find its record,
   so frees of blocks that were not sampled cost a hash and a load. All of it
   lives in OS memory: the profiler never samples itself, and a sample that
   finds no memory (or no budget) is dropped and counted, the program's
   allocation never fails for it. */
#include "prof.h"

#if MI_PPROF

_Atomic(bool) _mi_prof_on;

typedef struct mi_prof_stack_s {
  uint64_t hash;
  size_t frame_first; /* in the frame pool */
  uint32_t depth;
  uint32_t live_recs; /* records that point here */
  uint64_t live_objs, live_bytes;
  uint64_t accum_objs, accum_bytes;
} mi_prof_stack_t;

typedef struct mi_prof_rec_s {
  uintptr_t key; /* the pointer the program holds; 0: empty slot */
  uint32_t stack;
  uint64_t size; /* as counted (a request of 0 counts 1) */
} mi_prof_rec_t;

typedef struct mi_prof_state_s {
  mi_prof_stack_t* stacks;
  size_t stack_count, stack_cap;
  uint32_t* stack_index; /* open addressing: stack + 1 */
  size_t stack_index_cap;
  uint32_t stack_epoch; /* never 0; a new one each time the table is emptied (the capture's hints) */
  uintptr_t* frames;
  size_t frame_count, frame_cap;
  mi_prof_rec_t* recs; /* open addressing, linear probing, deletion by backward shift */
  size_t rec_count, rec_cap;
  size_t os_bytes; /* what the tables above hold */
  uint64_t live_samples, live_bytes, accum_samples, accum_bytes;
  uint64_t dropped, overflows;
  size_t period;
  bool accum;
  size_t max_depth;
  size_t max_bytes;
  uint64_t start_nanos;
  /* the in-use high-water watch (prof.h, mi_prof_settings_t): kept only
     while `inuse_watch` */
  bool inuse_watch;
  uint64_t inuse_step; /* 0: 1/16 of the level reached */
  uint64_t inuse;      /* the live samples' unsampled bytes: the profile's in-use estimate */
  uint64_t inuse_next; /* the level whose crossing takes the next snapshot */
} mi_prof_state_t;

static mi_lock_t mi_prof_lock;
static mi_prof_state_t mi_prof = {.stack_epoch = 1}; /* under mi_prof_lock */
static mi_decl_thread int mi_prof_busy;              /* the profiler's own calls, and visitors */
static mi_decl_thread bool mi_prof_visiting;         /* this thread holds the lock for a visitor */

/* Live samples per hash of their pointer: a free finds out without the lock
   whether its block may be sampled. 2^18 counters of OS memory, touched
   only where samples land. */
_Atomic(uint16_t)* _Atomic _mi_prof_filter;

/* ---- Memory ----------------------------------------------------------------------- */

/* Grow an array in OS memory within the budget (0: none). */
static bool mi_prof_grow(void** arr, size_t* cap, size_t elem, size_t want) {
  mi_lock_assert_held(&mi_prof_lock);
  if (*cap >= want) return true;
  size_t newcap = (*cap == 0 ? 1024 : *cap);
  while (newcap < want) newcap *= 2;
  size_t more = (newcap - *cap) * elem;
  if (mi_prof.max_bytes != 0 && mi_prof.os_bytes + more > mi_prof.max_bytes) return false;
  void* p = _mi_os_alloc_meta(newcap * elem);
  if (p == NULL) return false;
  if (*arr != NULL) {
    memcpy(p, *arr, *cap * elem);
    _mi_os_free_meta(*arr, *cap * elem);
  }
  *arr = p;
  *cap = newcap;
  mi_prof.os_bytes += more;
  return true;
}

static void mi_prof_release(void** arr, size_t* cap, size_t elem) {
  if (*arr != NULL) _mi_os_free_meta(*arr, *cap * elem);
  *arr = NULL;
  *cap = 0;
}

/* ---- Stacks ----------------------------------------------------------------------- */

static uint64_t mi_prof_stack_hash(const uintptr_t* frames, int n) {
  uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)n;
  for (int i = 0; i < n; i++) h = (h ^ frames[i]) * 0x100000001B3ULL + (h >> 29);
  return (h == 0 ? 1 : h);
}

static bool mi_prof_stack_index_grow(void) {
  size_t cap = (mi_prof.stack_index_cap == 0 ? 4096 : 2 * mi_prof.stack_index_cap);
  size_t bytes = cap * sizeof(uint32_t);
  if (mi_prof.max_bytes != 0 && mi_prof.os_bytes + bytes > mi_prof.max_bytes) return false;
  uint32_t* index = (uint32_t*)_mi_os_alloc_meta(bytes);
  if (index == NULL) return false;
  for (size_t i = 0; i < mi_prof.stack_count; i++) {
    size_t j = (size_t)mi_prof.stacks[i].hash & (cap - 1);
    while (index[j] != 0) j = (j + 1) & (cap - 1);
    index[j] = (uint32_t)(i + 1);
  }
  if (mi_prof.stack_index != NULL) {
    _mi_os_free_meta(mi_prof.stack_index, mi_prof.stack_index_cap * sizeof(uint32_t));
    mi_prof.os_bytes -= mi_prof.stack_index_cap * sizeof(uint32_t);
  }
  mi_prof.stack_index = index;
  mi_prof.stack_index_cap = cap;
  mi_prof.os_bytes += bytes;
  return true;
}

/* The stack's number, interned; UINT32_MAX when the table is full or has no memory. */
static uint32_t mi_prof_stack_of(const uintptr_t* frames, int n) {
  mi_lock_assert_held(&mi_prof_lock);
  uint64_t h = mi_prof_stack_hash(frames, n);
  if (mi_prof.stack_index_cap != 0) {
    size_t mask = mi_prof.stack_index_cap - 1;
    for (size_t j = (size_t)h & mask; mi_prof.stack_index[j] != 0; j = (j + 1) & mask) {
      const mi_prof_stack_t* s = &mi_prof.stacks[mi_prof.stack_index[j] - 1];
      if (s->hash == h && s->depth == (uint32_t)n &&
          memcmp(&mi_prof.frames[s->frame_first], frames, (size_t)n * sizeof(uintptr_t)) == 0) {
        return mi_prof.stack_index[j] - 1;
      }
    }
  }
  if (mi_prof.stack_count >= MI_PROF_MAX_STACKS) {
    mi_prof.overflows++;
    return UINT32_MAX;
  }
  if ((mi_prof.stack_count + 1) * 2 > mi_prof.stack_index_cap && !mi_prof_stack_index_grow()) return UINT32_MAX;
  if (!mi_prof_grow((void**)&mi_prof.stacks, &mi_prof.stack_cap, sizeof(mi_prof_stack_t), mi_prof.stack_count + 1) ||
      !mi_prof_grow((void**)&mi_prof.frames, &mi_prof.frame_cap, sizeof(uintptr_t), mi_prof.frame_count + (size_t)n)) {
    return UINT32_MAX;
  }
  uint32_t id = (uint32_t)mi_prof.stack_count++;
  mi_prof_stack_t* s = &mi_prof.stacks[id];
  memset(s, 0, sizeof(*s));
  s->hash = h;
  s->depth = (uint32_t)n;
  s->frame_first = mi_prof.frame_count;
  memcpy(&mi_prof.frames[mi_prof.frame_count], frames, (size_t)n * sizeof(uintptr_t));
  mi_prof.frame_count += (size_t)n;
  size_t mask = mi_prof.stack_index_cap - 1;
  size_t j = (size_t)h & mask;
  while (mi_prof.stack_index[j] != 0) j = (j + 1) & mask;
  mi_prof.stack_index[j] = id + 1;
  return id;
}

/* The stack of a capture: from the thread's hint (the capture's cache
   entry, whose frames are these) while the table is the one it was
   filled from, else looked up and the hint filled in. The lookup, its
   hash and comparison of every frame, was a tenth of a sample's cost. */
static uint32_t mi_prof_stack_of_hinted(const uintptr_t* frames, int n, mi_dhat_site_hint_t* hint) {
  if (hint != NULL && hint->prof_epoch == mi_prof.stack_epoch) return hint->prof_stack;
  uint32_t stack = mi_prof_stack_of(frames, n);
  if (hint != NULL && stack != UINT32_MAX) {
    hint->prof_stack = stack;
    hint->prof_epoch = mi_prof.stack_epoch;
  }
  return stack;
}

/* ---- The in-use estimate ------------------------------------------------------------ */

/* The bytes a live sample of `size` stands for: size / (1 - e^(-size/R)),
   the unsampling pprof applies to the profile (per stack, by its average
   size), so the estimate is the in-use total the dumps show; at interval 1
   the exact size. The same size always gives the same weight, so a sample's
   free takes out exactly what its allocation put in. */
static uint64_t mi_prof_inuse_weight(uint64_t size) {
  size_t period = mi_prof.period;
  if (period <= 1) return size;
  double x = (double)size / (double)period;
  double p = (x < 1.0e-4 ? x * (1.0 - 0.5 * x) : 1.0 - _mi_prof_exp(-x)); /* (no cancellation for small x) */
  double w = (double)size / p;
  return (w >= 4.0e18 ? (uint64_t)4e18 : (uint64_t)w);
}

/* A live sample's size changes from `before` to `after` (0: none). */
static void mi_prof_inuse_change(uint64_t before, uint64_t after) {
  mi_lock_assert_held(&mi_prof_lock);
  if (!mi_prof.inuse_watch) return;
  uint64_t out = (before == 0 ? 0 : mi_prof_inuse_weight(before));
  uint64_t in = (after == 0 ? 0 : mi_prof_inuse_weight(after));
  mi_prof.inuse = (mi_prof.inuse >= out ? mi_prof.inuse - out : 0) + in;
}

/* The level past `level` whose crossing takes the next snapshot. */
static uint64_t mi_prof_inuse_next_after(uint64_t level) {
  uint64_t step = mi_prof.inuse_step;
  if (step == 0) step = (level / 16 > MI_PROF_INUSE_MIN_STEP ? level / 16 : MI_PROF_INUSE_MIN_STEP);
  return (level > UINT64_MAX - step ? UINT64_MAX : level + step);
}

/* ---- Records ---------------------------------------------------------------------- */

/* A key's home slot in a table of `cap` (a power of two) slots: the top
   bits of the product, which every bit of the address moves. (Its low
   bits, taken before, depend only on the address's low bits: blocks of a
   page's size and alignment homed on one slot in 128, and each lookup
   walked the cluster.) */
static inline size_t mi_prof_rec_home(uintptr_t key, size_t cap) {
  return mi_prof_key_hash(key, (unsigned)mi_bsf64(cap));
}

static mi_prof_rec_t* mi_prof_rec_find(uintptr_t key) {
  if (mi_prof.rec_cap == 0) return NULL;
  size_t mask = mi_prof.rec_cap - 1;
  for (size_t j = mi_prof_rec_home(key, mi_prof.rec_cap); mi_prof.recs[j].key != 0; j = (j + 1) & mask) {
    if (mi_prof.recs[j].key == key) return &mi_prof.recs[j];
  }
  return NULL;
}

static void mi_prof_filter_add(uintptr_t key, int delta) {
  _Atomic(uint16_t)* filter = atomic_load_explicit(&_mi_prof_filter, memory_order_acquire);
  if (filter == NULL) return;
  _Atomic(uint16_t)* slot = &filter[mi_prof_key_hash(key, MI_PROF_FILTER_BITS)];
  uint16_t v = atomic_load_explicit(slot, memory_order_relaxed);
  if (v == UINT16_MAX) return; /* saturated: stays (frees of its keys always look) */
  atomic_store_explicit(slot, (uint16_t)(v + delta), memory_order_release); /* writers hold the lock */
}

/* The count of sampled blocks in the block's page, so that its owner can
   take the page's flag off when none is left (a count that reached 255
   stays: the flag then stays until the page is set up anew). */
static void mi_prof_page_count(uintptr_t key, int delta) {
  mi_segment_t* segment = _mi_block_segment((const void*)key);
  if (MI_SECURE && segment->kind == MI_SEGMENT_ZERO) return; /* no page to flag */
  mi_page_t* page = _mi_segment_page_of(segment, (const void*)key);
  uint8_t n = atomic_load_explicit(&page->prof_samples, memory_order_relaxed);
  if (n == UINT8_MAX || (delta < 0 && n == 0)) return;
  atomic_store_explicit(&page->prof_samples, (uint8_t)(n + delta), memory_order_release);
}

static bool mi_prof_rec_insert(uintptr_t key, uint32_t stack, uint64_t size) {
  if ((mi_prof.rec_count + 1) * 2 > mi_prof.rec_cap) {
    mi_prof_rec_t* old = mi_prof.recs;
    size_t oldcap = mi_prof.rec_cap;
    size_t cap = (oldcap == 0 ? 1024 : 2 * oldcap);
    size_t bytes = cap * sizeof(mi_prof_rec_t);
    if (mi_prof.max_bytes != 0 && mi_prof.os_bytes + bytes > mi_prof.max_bytes) return false;
    mi_prof_rec_t* recs = (mi_prof_rec_t*)_mi_os_alloc_meta(bytes);
    if (recs == NULL) return false;
    for (size_t i = 0; i < oldcap; i++) {
      if (old[i].key == 0) continue;
      size_t j = mi_prof_rec_home(old[i].key, cap);
      while (recs[j].key != 0) j = (j + 1) & (cap - 1);
      recs[j] = old[i];
    }
    if (old != NULL) {
      _mi_os_free_meta(old, oldcap * sizeof(mi_prof_rec_t));
      mi_prof.os_bytes -= oldcap * sizeof(mi_prof_rec_t);
    }
    mi_prof.recs = recs;
    mi_prof.rec_cap = cap;
    mi_prof.os_bytes += bytes;
  }
  size_t mask = mi_prof.rec_cap - 1;
  size_t j = mi_prof_rec_home(key, mi_prof.rec_cap);
  while (mi_prof.recs[j].key != 0) j = (j + 1) & mask;
  mi_prof.recs[j].key = key;
  mi_prof.recs[j].stack = stack;
  mi_prof.recs[j].size = size;
  mi_prof.rec_count++;
  _mi_prof_resize_forget_locked(key); /* an entry of the address as not sampled */
  mi_prof_filter_add(key, 1);
  mi_prof_page_count(key, 1);
  return true;
}

/* Remove a record (its slot refilled by the entries after it that hash before it). */
static void mi_prof_rec_remove(mi_prof_rec_t* r) {
  _mi_prof_resize_forget_locked(r->key);
  mi_prof_filter_add(r->key, -1);
  mi_prof_page_count(r->key, -1);
  size_t mask = mi_prof.rec_cap - 1;
  size_t i = (size_t)(r - mi_prof.recs);
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (mi_prof.recs[j].key == 0) break;
    size_t home = mi_prof_rec_home(mi_prof.recs[j].key, mi_prof.rec_cap);
    /* can the entry at j move to the hole at i? only if its home is not in (i, j] */
    bool stays = (i <= j ? (home > i && home <= j) : (home > i || home <= j));
    if (stays) continue;
    mi_prof.recs[i] = mi_prof.recs[j];
    i = j;
  }
  mi_prof.recs[i].key = 0;
  mi_prof.rec_count--;
}

/* A sampled block is gone (freed, reallocated away, its heap destroyed). */
static void mi_prof_rec_free(mi_prof_rec_t* r) {
  mi_prof_stack_t* s = &mi_prof.stacks[r->stack];
  s->live_objs--;
  s->live_bytes -= r->size;
  s->live_recs--;
  mi_prof.live_samples--;
  mi_prof.live_bytes -= r->size;
  mi_prof_inuse_change(r->size, 0);
  mi_prof_rec_remove(r);
}

static void mi_prof_sample_locked(uintptr_t key, uint64_t size, const uintptr_t* frames, int n,
                                  mi_dhat_site_hint_t* hint) {
  mi_lock_assert_held(&mi_prof_lock);
  /* a record left at this address: its block was freed without our seeing it */
  mi_prof_rec_t* stale = mi_prof_rec_find(key);
  if (stale != NULL) mi_prof_rec_free(stale);
  uint32_t stack = mi_prof_stack_of_hinted(frames, n, hint);
  if (stack == UINT32_MAX || !mi_prof_rec_insert(key, stack, size)) {
    mi_prof.dropped++;
    return;
  }
  mi_prof_stack_t* s = &mi_prof.stacks[stack];
  s->live_objs++;
  s->live_bytes += size;
  s->live_recs++;
  mi_prof.live_samples++;
  mi_prof.live_bytes += size;
  mi_prof_inuse_change(0, size);
  if (mi_prof.accum) {
    s->accum_objs++;
    s->accum_bytes += size;
    mi_prof.accum_samples++;
    mi_prof.accum_bytes += size;
  }
}

/* ---- Hooks ------------------------------------------------------------------------- */

/* The page of a sampled block is flagged, so that the block's free goes the
   generic way and tells us (prof/hooks.h: mi_hook_sampled_page_free). The
   allocating thread owns the page (or, for a block of its own segment, has
   not handed the pointer out yet): the flag is its to set. (The secure
   build sees every free, and reads the flag there; its zero-size slots have
   no page to flag.) */
static void mi_prof_flag_page(void* p) {
  mi_segment_t* segment = _mi_block_segment(p);
  if (MI_SECURE && segment->kind == MI_SEGMENT_ZERO) return;
  mi_page_t* page = _mi_segment_page_of(segment, p);
  /* the bits of an earlier flagging are stale: a new flag starts them anew */
  uint32_t bits = mi_prof_page_bit(p);
  if ((mi_page_flags(page) & MI_PAGE_FLAG_SAMPLED) != 0)
    bits |= atomic_load_explicit(&page->prof_bits, memory_order_relaxed);
  atomic_store_explicit(&page->prof_bits, bits, memory_order_relaxed);
  mi_page_sampled_set(page, true);
}

static mi_prof_snapshot_t* mi_prof_snapshot_take_locked(void);

/* The in-use estimate crossed the next level (the watch on, the lock held):
   the profile as it is now, for dump.c to write after the lock is
   released, and the next level above the one reached (the pending resizes
   the snapshot takes in count). NULL without memory: the level still
   moves on, and the next crossing tries again. */
static mi_prof_snapshot_t* mi_prof_inuse_high_locked(void) {
  mi_prof_snapshot_t* snap = mi_prof_snapshot_take_locked();
  mi_prof.inuse_next = mi_prof_inuse_next_after(mi_prof.inuse);
  return snap;
}

static void mi_prof_sample(void* p, size_t size) {
  mi_prof_busy++;
  uintptr_t frames[MI_PROF_MAX_DEPTH];
  mi_dhat_site_hint_t* hint;
  int depth = (int)mi_prof.max_depth;
  int n =
      _mi_dhat_stack_capture(frames, (depth > 0 && depth <= MI_PROF_MAX_DEPTH ? depth : MI_PROF_DEFAULT_DEPTH), &hint);
  mi_prof_flag_page(p); /* before the record: a free from now on looks */
  mi_prof_snapshot_t* high = NULL;
  _mi_lock_acquire(&mi_prof_lock);
  if (mi_prof_is_on()) {
    mi_prof_sample_locked((uintptr_t)p, (size == 0 ? 1 : (uint64_t)size), frames, n, hint);
    /* a rise of the estimate is a sample's (or a pending resize's, taken in
       by the next snapshot): compared here only */
    if (mi_prof.inuse_watch && mi_prof.inuse >= mi_prof.inuse_next) high = mi_prof_inuse_high_locked();
  }
  _mi_lock_release(&mi_prof_lock);
  if (high != NULL) _mi_prof_inuse_high(high);
  mi_prof_busy--;
}

/* mi_prof_countdown said "maybe": a sample, or a thread to reseed. */
void _mi_prof_record_alloc(void* p, size_t size) {
  if (!_mi_prof_sample_decide(size)) return;
  /* the profiler's own allocations (the unwinder's first use), and the allocator's */
  if (mi_prof_busy != 0 || _mi_observers_muted != 0) return;
  mi_prof_sample(p, size);
}

/* A free of a block that may be sampled: its record, if any, out. */
static void mi_prof_free_record_unfiltered(void* p) {
  _mi_lock_acquire(&mi_prof_lock);
  mi_prof_rec_t* r = mi_prof_rec_find((uintptr_t)p);
  if (r != NULL) mi_prof_rec_free(r);
  _mi_lock_release(&mi_prof_lock);
}

/* ... the filter first */
static void mi_prof_free_record(void* p) {
  if (!mi_prof_maybe_sampled(p) || mi_prof_visiting) return;
  mi_prof_free_record_unfiltered(p);
}

/* No sampled block left in the page: its owner takes the flag off, and the
   page's frees are the plain ones again (only the owner samples into it, so
   the count cannot grow meanwhile). */
static void mi_prof_page_unflag(mi_segment_t* segment, mi_page_t* page) {
  if (atomic_load_explicit(&segment->thread_id, memory_order_relaxed) == _mi_thread_id())
    mi_prof_page_unflag_if_none(page);
}

/* The secure build sees every free, its pointer not validated yet: where
   the segment map says the segment is ours to read (the reads its free
   makes next), the page's flag tells whether the block may be a sample, so
   that a free costs no filter's cache miss. False: not known so (a
   zero-size slot has no page to flag). */
static bool mi_prof_secure_free(void* p) {
  mi_segment_t* segment = _mi_block_segment(p);
  if ((intptr_t)segment <= 0 || !_mi_segment_map_contains(segment)) return false;
  if (segment->kind == MI_SEGMENT_ZERO) return false;
  mi_page_t* page = _mi_segment_page_of(segment, p);
  if ((mi_page_flags(page) & MI_PAGE_FLAG_SAMPLED) == 0) return true;
  if (mi_prof_page_may_hold(page, p)) mi_prof_free_record(p);
  mi_prof_page_unflag(segment, page);
  return true;
}

bool _mi_prof_records_here(void) {
  return (mi_prof_is_on() && mi_prof_busy == 0 && _mi_observers_muted == 0);
}

/* A heap's countdown reached its sample point (src/base/observers.c). */
void _mi_prof_record_heap_sample(void* p, size_t size, uint64_t gap) {
  _mi_prof_heap_sample_point(size, gap);
  if (mi_prof_busy != 0 || _mi_observers_muted != 0) return;
  mi_prof_sample(p, size);
}

/* Not skipped while the thread is busy: a block the program allocated may
   be freed inside a call the profiler makes. */
void _mi_prof_record_free(void* p) {
  if (MI_SECURE && mi_prof_secure_free(p)) return;
  mi_prof_free_record(p);
}

void _mi_prof_sampled_page_free(mi_segment_t* segment, mi_page_t* page, void* p) {
  /* no sampled block left in the page (the flag stays until its owner takes
     it off): the filter's cache miss spared */
  if (atomic_load_explicit(&page->prof_samples, memory_order_acquire) != 0 && mi_prof_page_may_hold(page, p) &&
      mi_prof_is_on()) {
    /* a sample page holds samples only: its block's record is looked up
       without the filter's read (a cache miss a sample) */
    if ((mi_page_flags(page) & MI_PAGE_FLAG_SAMPLE_PAGE) == 0) mi_prof_free_record(p);
    else if (!mi_prof_visiting) mi_prof_free_record_unfiltered(p);
  }
  mi_prof_page_unflag(segment, page);
}

void _mi_prof_rec_resize_locked(uintptr_t key, uint64_t size) {
  mi_lock_assert_held(&mi_prof_lock);
  mi_prof_rec_t* r = mi_prof_rec_find(key);
  if (r == NULL || r->size == size) return;
  mi_prof_stack_t* st = &mi_prof.stacks[r->stack];
  st->live_bytes = st->live_bytes - r->size + size;
  mi_prof.live_bytes = mi_prof.live_bytes - r->size + size;
  mi_prof_inuse_change(r->size, size);
  r->size = size;
}

/* An in-place resize of a block that its thread's table does not hold
   (resize.c): under the lock, the record (if the block is a sample) takes
   the size, and the table takes the block, sampled or not. */
void _mi_prof_resize_slow(void* p, uint64_t size) {
  if (mi_prof_visiting) return;
  const bool sampled = mi_prof_maybe_sampled(p);
  if (!sampled && !_mi_prof_resize_may_track()) return; /* nothing to do without a table */
  _mi_lock_acquire(&mi_prof_lock);
  if (sampled) _mi_prof_rec_resize_locked((uintptr_t)p, size);
  _mi_prof_resize_track_locked((uintptr_t)p, size);
  _mi_lock_release(&mi_prof_lock);
}

/* A reallocation: a sampled block's record is taken out (realloc may free
   the block, and another thread get its address), kept as it was meanwhile. */
void _mi_prof_realloc_take(void* p, mi_prof_held_t* held) {
  held->found = false;
  if (p == NULL || !mi_prof_is_on() || !mi_prof_maybe_sampled(p) || mi_prof_visiting) return;
  _mi_lock_acquire(&mi_prof_lock);
  mi_prof_rec_t* r = mi_prof_rec_find((uintptr_t)p);
  if (r != NULL) {
    held->found = true;
    held->stack = r->stack;
    held->size = r->size;
    held->generation = atomic_load_explicit(&_mi_prof_generation, memory_order_relaxed);
    mi_prof_rec_remove(r); /* still counted live at its stack */
  }
  _mi_lock_release(&mi_prof_lock);
}

/* In place: the record keeps its stack and takes the new size. Moved: the
   old block is freed, and the new one gets a sampling decision of its own.
   Failed: the record is put back. */
void _mi_prof_realloc_done(mi_prof_held_t* held, void* p, void* newp, size_t newsize) {
  /* (a block not held: api/observe.h, mi_observe_realloc_done) */
  if (!held->found) return;
  bool moved = (newp != NULL && newp != p);
  _mi_lock_acquire(&mi_prof_lock);
  if (held->generation == atomic_load_explicit(&_mi_prof_generation, memory_order_relaxed) && mi_prof_is_on()) {
    mi_prof_stack_t* s = &mi_prof.stacks[held->stack];
    uint64_t size = (newp == NULL ? held->size : (newsize == 0 ? 1 : (uint64_t)newsize));
    if (moved || !mi_prof_rec_insert((uintptr_t)p, held->stack, size)) {
      s->live_objs--;
      s->live_bytes -= held->size;
      s->live_recs--;
      mi_prof.live_samples--;
      mi_prof.live_bytes -= held->size;
      mi_prof_inuse_change(held->size, 0);
      if (!moved) mi_prof.dropped++;
    } else {
      s->live_bytes = s->live_bytes - held->size + size;
      mi_prof.live_bytes = mi_prof.live_bytes - held->size + size;
      mi_prof_inuse_change(held->size, size);
    }
  }
  _mi_lock_release(&mi_prof_lock);
  if (moved && mi_prof_is_on() && mi_prof_countdown(newsize)) _mi_prof_record_alloc(newp, newsize);
}

/* A destroyed heap's page: its sampled blocks go without a free. */
void _mi_prof_record_page_gone(const mi_page_t* page) {
  uintptr_t lo = (uintptr_t)page->start;
  uintptr_t hi = lo + (uintptr_t)page->reserved * page->block_size;
  _mi_lock_acquire(&mi_prof_lock);
  for (size_t i = 0; mi_prof.live_samples > 0 && i < mi_prof.rec_cap;) {
    mi_prof_rec_t* r = &mi_prof.recs[i];
    if (r->key >= lo && r->key < hi) mi_prof_rec_free(r); /* an entry after it may have moved here */
    else i++;
  }
  _mi_lock_release(&mi_prof_lock);
}

/* ---- Start, stop, reset -------------------------------------------------------------- */

static void mi_prof_clear_locked(void) {
  mi_lock_assert_held(&mi_prof_lock);
  _mi_prof_resize_clear_locked();
  /* the pages' counts and the filter's go with the records (their blocks
     are live: the pages are there); the filter slot by slot while that
     touches less of it than zeroing its 512 KiB would */
  _Atomic(uint16_t)* filter = atomic_load_explicit(&_mi_prof_filter, memory_order_relaxed);
  bool by_slot = (mi_prof.rec_count < ((size_t)1 << (MI_PROF_FILTER_BITS - 6)));
  for (size_t i = 0; i < mi_prof.rec_cap; i++) {
    if (mi_prof.recs[i].key == 0) continue;
    mi_prof_page_count(mi_prof.recs[i].key, -1);
    if (by_slot && filter != NULL)
      atomic_store_explicit(&filter[mi_prof_key_hash(mi_prof.recs[i].key, MI_PROF_FILTER_BITS)], 0,
                            memory_order_relaxed);
  }
  mi_prof_release((void**)&mi_prof.stacks, &mi_prof.stack_cap, sizeof(mi_prof_stack_t));
  mi_prof_release((void**)&mi_prof.stack_index, &mi_prof.stack_index_cap, sizeof(uint32_t));
  mi_prof_release((void**)&mi_prof.frames, &mi_prof.frame_cap, sizeof(uintptr_t));
  mi_prof_release((void**)&mi_prof.recs, &mi_prof.rec_cap, sizeof(mi_prof_rec_t));
  mi_prof.stack_count = mi_prof.frame_count = mi_prof.rec_count = 0;
  if (++mi_prof.stack_epoch == 0) mi_prof.stack_epoch = 1; /* every thread's hints stale */
  mi_prof.os_bytes = 0;
  mi_prof.live_samples = mi_prof.live_bytes = mi_prof.accum_samples = mi_prof.accum_bytes = 0;
  mi_prof.dropped = mi_prof.overflows = 0;
  mi_prof.inuse_watch = false;
  mi_prof.inuse = 0;
  if (!by_slot && filter != NULL) memset((void*)filter, 0, sizeof(uint16_t) << MI_PROF_FILTER_BITS);
}

bool _mi_prof_start_with(const mi_prof_settings_t* settings) {
  _mi_process_init_once();
  if (mi_prof_busy != 0) return false; /* from a visitor */
  if (mi_prof_is_on()) return false;
  mi_prof_busy++;
  _mi_dhat_stack_init(); /* may allocate: not sampled */
  if (atomic_load_explicit(&_mi_prof_filter, memory_order_acquire) == NULL) {
    _Atomic(uint16_t)* filter = (_Atomic(uint16_t)*)_mi_os_alloc_meta(sizeof(uint16_t) << MI_PROF_FILTER_BITS);
    _Atomic(uint16_t)* expected = NULL;
    if (filter != NULL && !atomic_compare_exchange_strong_explicit(&_mi_prof_filter, &expected, filter,
                                                                   memory_order_acq_rel, memory_order_acquire)) {
      _mi_os_free_meta((void*)filter, sizeof(uint16_t) << MI_PROF_FILTER_BITS);
    }
  }
  bool ok = false;
  _mi_lock_acquire(&mi_prof_lock);
  if (!mi_prof_is_on() && atomic_load_explicit(&_mi_prof_filter, memory_order_acquire) != NULL) {
    mi_prof_clear_locked();
    uint64_t seed = settings->seed;
    if (seed == 0) {
      if (!mi_prim_random_buf(&seed, sizeof(seed)) || seed == 0) seed = (uint64_t)mi_prim_clock_realtime_ns() | 1;
    }
    size_t period = settings->period, depth = settings->depth;
    mi_prof.period = (period == 0 ? MI_PROF_DEFAULT_INTERVAL : period);
    mi_prof.accum = settings->accum;
    mi_prof.max_depth = (depth == 0 ? MI_PROF_DEFAULT_DEPTH : (depth > MI_PROF_MAX_DEPTH ? MI_PROF_MAX_DEPTH : depth));
    mi_prof.max_bytes = settings->max_bytes;
    mi_prof.start_nanos = (uint64_t)mi_prim_clock_realtime_ns();
    mi_prof.inuse_watch = settings->inuse_watch;
    mi_prof.inuse_step = settings->inuse_step;
    mi_prof.inuse_next = mi_prof_inuse_next_after(0);
    _mi_prof_sampler_restart(mi_prof.period, seed);
    atomic_store_explicit(&_mi_prof_on, true, memory_order_release);
    atomic_fetch_or_explicit(&_mi_observers, MI_OBSERVER_PROF, memory_order_release);
    _mi_observers_changed();
    ok = true;
  }
  _mi_lock_release(&mi_prof_lock);
  mi_prof_busy--;
  return ok;
}

void mi_prof_stop(void) {
  if (mi_prof_busy != 0) return;
  _mi_process_init_once();
  _mi_lock_acquire(&mi_prof_lock);
  atomic_fetch_and_explicit(&_mi_observers, (uint8_t)~MI_OBSERVER_PROF, memory_order_release);
  atomic_store_explicit(&_mi_prof_on, false, memory_order_release);
  _mi_observers_changed();
  mi_prof_clear_locked();
  _mi_lock_release(&mi_prof_lock);
}

bool mi_prof_is_enabled(void) {
  return mi_prof_is_on();
}

void mi_prof_reset(void) {
  if (mi_prof_busy != 0) return;
  _mi_process_init_once();
  _mi_lock_acquire(&mi_prof_lock);
  for (size_t i = 0; i < mi_prof.stack_count; i++) {
    mi_prof.stacks[i].accum_objs = 0;
    mi_prof.stacks[i].accum_bytes = 0;
  }
  mi_prof.accum_samples = mi_prof.accum_bytes = 0;
  _mi_lock_release(&mi_prof_lock);
}

/* ---- Statistics and visiting --------------------------------------------------------------- */

bool mi_prof_stats_get(mi_prof_stats_t* stats) {
  if (stats == NULL) return false;
  size_t v1 = offsetof(mi_prof_stats_t, dropped_samples);
  size_t v2 = offsetof(mi_prof_stats_t, heap_committed);
  int version = stats->version;
  size_t size = stats->size;
  if (!((version == 1 && size == v1) || (version == 2 && size == v2) ||
        (version == 3 && size == sizeof(mi_prof_stats_t)))) {
    return false;
  }
  mi_prof_stats_t s;
  memset(&s, 0, sizeof(s));
  _mi_process_init_once();
  _mi_lock_acquire(&mi_prof_lock);
  _mi_prof_resize_flush_locked();
  s.enabled = mi_prof_is_on();
  s.accum = mi_prof.accum;
  s.sample_rate = mi_prof.period;
  s.live_samples = (size_t)mi_prof.live_samples;
  s.live_bytes = (size_t)mi_prof.live_bytes;
  s.accum_samples = (size_t)mi_prof.accum_samples;
  s.accum_bytes = (size_t)mi_prof.accum_bytes;
  for (size_t i = 0; i < mi_prof.stack_count; i++) {
    if (mi_prof.stacks[i].live_recs > 0 || mi_prof.stacks[i].accum_objs > 0) s.unique_stacks++;
  }
  s.arena_committed = mi_prof.os_bytes + (sizeof(uint16_t) << MI_PROF_FILTER_BITS);
  s.stack_table_overflows = (size_t)mi_prof.overflows;
  s.dropped_samples = (size_t)mi_prof.dropped;
  _mi_lock_release(&mi_prof_lock);
  s.heap_committed = (size_t)atomic_load_explicit(&_mi_stats.committed.current, memory_order_relaxed);
  s.heap_reserved = (size_t)atomic_load_explicit(&_mi_stats.reserved.current, memory_order_relaxed);
  s.heap_pages = (size_t)atomic_load_explicit(&_mi_stats.pages.current, memory_order_relaxed);
  s.heap_pages_abandoned = (size_t)atomic_load_explicit(&_mi_stats.abandoned.current, memory_order_relaxed);
  s.heap_count = (size_t)atomic_load_explicit(&_mi_stats.threads.current, memory_order_relaxed);
  s.heap_purged = (size_t)atomic_load_explicit(&_mi_stats.purged.total, memory_order_relaxed);
#if MI_STAT >= 2
  s.heap_malloc_requested = (size_t)atomic_load_explicit(&_mi_stats.malloc_requested.current, memory_order_relaxed);
  s.heap_stats_detailed = true;
#endif
  s.size = size;
  s.version = version;
  memcpy(stats, &s, size);
  return true;
}

void mi_prof_debug_stats(size_t* records, size_t* bytes, size_t* unique_stacks) {
  mi_prof_stats_t s;
  memset(&s, 0, sizeof(s));
  s.size = sizeof(s);
  s.version = MI_PROF_STAT_VERSION;
  if (!mi_prof_stats_get(&s)) memset(&s, 0, sizeof(s));
  if (records != NULL) *records = s.live_samples;
  if (bytes != NULL) *bytes = s.live_bytes;
  if (unique_stacks != NULL) *unique_stacks = s.unique_stacks;
}

bool mi_prof_visit(mi_prof_visit_fun* visitor, void* arg) {
  if (visitor == NULL || mi_prof_busy != 0) return false;
  _mi_process_init_once();
  mi_prof_busy++;
  _mi_lock_acquire(&mi_prof_lock);
  _mi_prof_resize_flush_locked();
  mi_prof_visiting = true;
  bool ok = true;
  for (size_t i = 0; i < mi_prof.stack_count && ok; i++) {
    const mi_prof_stack_t* s = &mi_prof.stacks[i];
    if (s->live_objs == 0 && s->accum_objs == 0) continue;
    mi_prof_sample_info_t info = {(const void* const*)&mi_prof.frames[s->frame_first],
                                  s->depth,
                                  (size_t)s->live_objs,
                                  (size_t)s->live_bytes,
                                  (size_t)s->accum_objs,
                                  (size_t)s->accum_bytes};
    ok = visitor(&info, arg);
  }
  mi_prof_visiting = false;
  _mi_lock_release(&mi_prof_lock);
  mi_prof_busy--;
  return true;
}

/* The snapshot the writers and mi_prof_snapshot_new read: the stacks with
   samples, copied under the lock into one OS mapping. */
static mi_prof_snapshot_t* mi_prof_snapshot_take_locked(void) {
  mi_lock_assert_held(&mi_prof_lock);
  mi_prof_snapshot_t* snap = NULL;
  _mi_prof_resize_flush_locked();
  size_t count = 0, frames = 0;
  for (size_t i = 0; i < mi_prof.stack_count; i++) {
    const mi_prof_stack_t* s = &mi_prof.stacks[i];
    if (s->live_objs == 0 && s->accum_objs == 0) continue;
    count++;
    frames += s->depth;
  }
  size_t bytes = sizeof(mi_prof_snapshot_t) + count * sizeof(mi_prof_entry_t) + frames * sizeof(uintptr_t);
  snap = (mi_prof_snapshot_t*)_mi_os_alloc_meta(bytes);
  if (snap != NULL) {
    snap->mapped = bytes;
    snap->count = count;
    snap->entries = (mi_prof_entry_t*)(snap + 1);
    uintptr_t* pool = (uintptr_t*)(snap->entries + count);
    size_t k = 0;
    for (size_t i = 0; i < mi_prof.stack_count; i++) {
      const mi_prof_stack_t* s = &mi_prof.stacks[i];
      if (s->live_objs == 0 && s->accum_objs == 0) continue;
      mi_prof_entry_t* e = &snap->entries[k++];
      memcpy(pool, &mi_prof.frames[s->frame_first], s->depth * sizeof(uintptr_t));
      e->frames = pool;
      e->depth = s->depth;
      pool += s->depth;
      e->live_objs = s->live_objs;
      e->live_bytes = s->live_bytes;
      e->accum_objs = s->accum_objs;
      e->accum_bytes = s->accum_bytes;
    }
    snap->period = (mi_prof.period == 0 ? _mi_prof_configured_period() : mi_prof.period);
    snap->accum = mi_prof.accum;
    snap->dropped_samples = mi_prof.dropped;
    snap->stack_table_overflows = mi_prof.overflows;
    snap->start_nanos = mi_prof.start_nanos;
    snap->taken_nanos = (uint64_t)mi_prim_clock_realtime_ns();
  }
  return snap;
}

mi_prof_snapshot_t* _mi_prof_snapshot_take(void) {
  _mi_process_init_once();
  mi_prof_busy++;
  _mi_lock_acquire(&mi_prof_lock);
  mi_prof_snapshot_t* snap = mi_prof_snapshot_take_locked();
  _mi_lock_release(&mi_prof_lock);
  mi_prof_busy--;
  return snap;
}

void _mi_prof_snapshot_release(mi_prof_snapshot_t* snap) {
  if (snap != NULL) _mi_os_free_meta(snap, snap->mapped);
}

/* ---- Process ------------------------------------------------------------------------------ */

/* A spin lock (base/lock.h): a sample and its free each take it once, for a
   few dozen instructions, and the mutex's calls were a tenth of a sample's
   cost (randsizes: 116 of 1,160 instructions a sample with its free). Held
   longer only by a snapshot's copy and a table's growth, rare, during which
   a waiter gives its processor up after a few spins. */
void _mi_prof_lock_init(void) {
  _mi_lock_init_spin(&mi_prof_lock, MI_LOCK_PROF);
}

#if MI_LOCKORDER
void _mi_prof_lock_assert_held(const char* file, int line) {
  _mi_lockorder_assert_held(&mi_prof_lock, file, line);
}
#endif

/* fork(): the child keeps sampling (the records of the blocks it inherits
   are right for it); its lock was released by the fork handlers. */
void _mi_prof_after_fork_child(void) {
  mi_prof_busy = 0;
  mi_prof_visiting = false;
  _mi_lock_acquire(&mi_prof_lock);
  _mi_prof_resize_after_fork_child_locked(); /* the other threads' pending resizes */
  _mi_lock_release(&mi_prof_lock);
  _mi_dhat_symbolizer_after_fork_child(); /* (DHAT's handler does it too when it is built in) */
}

/* A thread ends: its pending resizes into the records. */
void _mi_prof_thread_done(void) {
  if (!_mi_prof_resize_thread_has_table()) return;
  _mi_lock_acquire(&mi_prof_lock);
  _mi_prof_resize_thread_done_locked();
  _mi_lock_release(&mi_prof_lock);
}

bool _mi_prof_thread_busy(void) {
  return (mi_prof_busy != 0);
}

void _mi_prof_thread_enter(void) {
  mi_prof_busy++;
}

void _mi_prof_thread_leave(void) {
  mi_prof_busy--;
}

#else /* !MI_PPROF: the calls exist and fail */

bool mi_prof_start(size_t sample_rate) {
  (void)sample_rate;
  return false;
}
bool mi_prof_start_seeded(size_t sample_rate, uint64_t seed) {
  (void)sample_rate, (void)seed;
  return false;
}
bool mi_prof_start_ex(const mi_prof_config_t* config) {
  (void)config;
  return false;
}
void mi_prof_stop(void) {}
bool mi_prof_is_enabled(void) {
  return false;
}
void mi_prof_reset(void) {}
bool mi_prof_dump(const char* path) {
  (void)path;
  return false;
}
bool mi_prof_dump_writer(mi_prof_write_fun* write, void* arg) {
  (void)write, (void)arg;
  return false;
}
bool mi_prof_dump_proto(const char* path) {
  (void)path;
  return false;
}
bool mi_prof_dump_proto_writer(mi_prof_write_fun* write, void* arg) {
  (void)write, (void)arg;
  return false;
}
bool mi_prof_stats_get(mi_prof_stats_t* stats) {
  (void)stats;
  return false;
}
void mi_prof_debug_stats(size_t* records, size_t* bytes, size_t* unique_stacks) {
  if (records != NULL) *records = 0;
  if (bytes != NULL) *bytes = 0;
  if (unique_stacks != NULL) *unique_stacks = 0;
}
bool mi_prof_visit(mi_prof_visit_fun* visitor, void* arg) {
  (void)visitor, (void)arg;
  return false;
}
mi_prof_snapshot_t* mi_prof_snapshot_new(void) {
  return NULL;
}
bool mi_prof_snapshot_visit(const mi_prof_snapshot_t* snapshot, mi_prof_visit_fun* visitor, void* arg) {
  (void)snapshot, (void)visitor, (void)arg;
  return false;
}
void mi_prof_snapshot_free(mi_prof_snapshot_t* snapshot) {
  (void)snapshot;
}
bool mi_prof_modules_visit(mi_prof_module_visit_fun* visitor, void* arg) {
  (void)visitor, (void)arg;
  return false;
}

#endif
