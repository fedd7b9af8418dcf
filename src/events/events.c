/* Memory events (MI_MEMORY_EVENTS, include/mimalloc/memory-events.h,
   docs/memory-events.md): the live and accumulated usable bytes and blocks
   of the program's heap, and the program's handler called once per
   allocation, free and resize.

   The entry points tell the observers' dispatch (api/observe.h); this file is the
   observer of bit MI_OBSERVER_EVENTS, which is set while counting is on or
   an ETW session listens (etw-windows.c), so that switched off it costs the
   entry points nothing but the load of the observers' word they make
   anyway. Each operation is told once, at the entry point the program
   called: the allocator's inner allocations and frees (a reallocation's
   new block and its old one's free, an over-allocation for an alignment)
   go through unobserved functions.

   What is counted is decided by the records (records.c): an allocation
   writes its block's record, a free or a reallocation takes it out before
   the block may be handed to another thread, and only a block whose
   record is of the current switch-on is subtracted. A handler's own
   operations, and the allocator's calls into the C library
   (_mi_observers_muted), are neither counted nor told. */
#include "events.h"

#if MI_MEMORY_EVENTS

mi_lock_t _mi_events_lock;          /* `memevt`: the switch, the records' map */
static mi_lock_t mi_events_cb_lock; /* `memevt-cb`: the handlers' table */

static _Atomic(bool) mi_ev_on;       /* counting is on */
static _Atomic(uint8_t) mi_ev_mark;  /* the current switch-on's mark, 1..255 (records.c) */
static _Atomic(bool) mi_ev_explicit; /* mi_memory_tracking_set_enabled was called: the environment is ignored */
static _Atomic(uint64_t) mi_ev_live_bytes;
static _Atomic(uint64_t) mi_ev_live_count;
static _Atomic(uint64_t) mi_ev_accum_bytes;
static _Atomic(uint64_t) mi_ev_accum_count;
static _Atomic(bool) mi_ev_has_handlers;      /* a handler is installed: the table is worth a look */
static mi_memory_callbacks_t mi_ev_callbacks; /* under mi_events_cb_lock */
static mi_decl_thread int mi_ev_depth;        /* the thread runs a handler: its operations are not told */
#if MI_MEMORY_EVENTS_PLANT == 1
static _Atomic(bool) mi_ev_plant_dropped; /* the first FREE of each switch-on was dropped */
#endif

/* ---- The block of a pointer ------------------------------------------------------ */

typedef struct mi_ev_block_s {
  uintptr_t key; /* where its record is */
  size_t usable;
} mi_ev_block_t;

/* `p` as handed out: just allocated, or validated. Usable bytes are the
   block's size class (a single block's whole size), an aligned pointer's
   slack included; the secure build keeps its 8-byte trailer out, a guarded
   block has none, and a zero-size slot holds nothing the program may use. */
static mi_ev_block_t mi_ev_block_of(const void* p) {
  mi_ev_block_t b;
  mi_segment_t* segment = _mi_block_segment(p);
  if (MI_SECURE && segment->kind == MI_SEGMENT_ZERO) {
    b.key = (uintptr_t)p;
    b.usable = 0;
    return b;
  }
  mi_page_t* page = _mi_segment_page_of(segment, p);
  if (segment->kind == MI_SEGMENT_SINGLE) b.key = (uintptr_t)segment;
  else if (mi_page_flags(page) & MI_PAGE_FLAG_HAS_ALIGNED) b.key = (uintptr_t)_mi_page_block_start(page, p);
  else b.key = (uintptr_t)p; /* (no division: the block starts at p) */
  b.usable = page->block_size;
#if MI_SECURE
  if (!page->is_guarded) b.usable -= MI_SECURE_TRAILER;
#endif
  return b;
}

static inline bool mi_ev_suppressed(void) {
#if MI_MEMORY_EVENTS_PLANT == 4
  return (_mi_observers_muted != 0); /* planted: a handler's operations counted (mi_ev_tell stops their calls) */
#else
  return (_mi_observers_muted != 0 || mi_ev_depth != 0);
#endif
}

static inline bool mi_ev_counting(void) {
  return atomic_load_explicit(&mi_ev_on, memory_order_acquire);
}

#if MI_TRACK_ETW
static inline bool mi_ev_etw(void) {
  return atomic_load_explicit(&_mi_etw_listening, memory_order_relaxed);
}
#endif

/* ---- Counting and telling ---------------------------------------------------------- */

/* The handler of `kind`, if any: its pointer copied under the leaf lock,
   called after it is released. */
static void mi_ev_tell(mi_memory_change_kind_t kind, uint64_t total, int64_t delta, uint64_t request) {
  if (!atomic_load_explicit(&mi_ev_has_handlers, memory_order_acquire)) return;
#if MI_MEMORY_EVENTS_PLANT == 4
  if (mi_ev_depth != 0) return;
#endif
  _mi_lock_acquire(&mi_events_cb_lock);
  mi_memory_change_fun* fn = mi_ev_callbacks.handlers[kind];
  void* arg = mi_ev_callbacks.args[kind];
  _mi_lock_release(&mi_events_cb_lock);
  if (fn == NULL) return;
  mi_memory_change_t change = {kind, total, delta, request};
  mi_ev_depth++;
  fn(&change, arg);
  mi_ev_depth--;
}

static void mi_ev_count_alloc(size_t usable, size_t request) {
  atomic_fetch_add_explicit(&mi_ev_live_count, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&mi_ev_accum_count, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&mi_ev_accum_bytes, usable, memory_order_relaxed);
  uint64_t total = atomic_fetch_add_explicit(&mi_ev_live_bytes, usable, memory_order_relaxed);
#if MI_MEMORY_EVENTS_PLANT != 3
  total += usable;
#endif
  mi_ev_tell(MI_MEMORY_ALLOCATE, total, (int64_t)usable, request);
}

static void mi_ev_count_free(size_t usable) {
  atomic_fetch_sub_explicit(&mi_ev_live_count, 1, memory_order_relaxed);
  uint64_t total = atomic_fetch_sub_explicit(&mi_ev_live_bytes, usable, memory_order_relaxed) - usable;
  mi_ev_tell(MI_MEMORY_FREE, total, -(int64_t)usable, 0);
}

static void mi_ev_count_resize(size_t old_usable, size_t new_usable, size_t request) {
  int64_t delta = (int64_t)new_usable - (int64_t)old_usable;
  if (delta > 0) atomic_fetch_add_explicit(&mi_ev_accum_bytes, (uint64_t)delta, memory_order_relaxed);
  uint64_t total =
      atomic_fetch_add_explicit(&mi_ev_live_bytes, (uint64_t)delta, memory_order_relaxed) + (uint64_t)delta;
  mi_ev_tell(MI_MEMORY_RESIZE, total, delta, request);
}

/* The block `b` is counted now: its record written, then ALLOCATE. Nothing
   when its record cannot be had (no OS memory for the side array): a block
   counted without one could never be subtracted. */
static void mi_ev_alloc_counted(const mi_ev_block_t* b, size_t request) {
  _Atomic(uint8_t)* rec = _mi_events_record(b->key, true);
  if (rec == NULL) return;
  atomic_store_explicit(rec, atomic_load_explicit(&mi_ev_mark, memory_order_relaxed), memory_order_relaxed);
  mi_ev_count_alloc(b->usable, request);
}

/* ---- The observer ------------------------------------------------------------------ */

void _mi_events_alloc(void* p, size_t size) {
  if (mi_ev_suppressed()) return;
  mi_ev_block_t b = mi_ev_block_of(p);
  if (mi_ev_counting()) mi_ev_alloc_counted(&b, size);
#if MI_TRACK_ETW
  if (mi_ev_etw()) _mi_etw_write(true, p, b.usable);
#endif
}

void _mi_events_take(void* p, bool realloc, mi_events_held_t* held) {
  held->armed = false;
  held->counted = false;
  held->p = p;
  held->key = 0;
  held->usable = 0;
  if (mi_ev_suppressed()) return;
  held->armed = true;
  if (p == NULL) return; /* free(NULL) tells nothing; realloc(NULL, n) is an allocation */
#if MI_SECURE
  /* reported here if it is no live block of ours, as the call would */
  (void)_mi_secure_validate(p, realloc ? MI_OP_REALLOC : MI_OP_FREE, NULL, NULL);
#else
  (void)realloc;
  if ((intptr_t)_mi_block_segment(p) <= 0) { /* (as mi_free ignores it) */
    held->armed = false;
    return;
  }
#endif
  mi_ev_block_t b = mi_ev_block_of(p);
  held->key = b.key;
  held->usable = b.usable;
  if (!mi_ev_counting()) return;
  _Atomic(uint8_t)* rec = _mi_events_record(b.key, false);
  if (rec == NULL) return;
  uint8_t mark = atomic_load_explicit(rec, memory_order_relaxed);
  if (mark == 0 || mark != atomic_load_explicit(&mi_ev_mark, memory_order_relaxed)) return; /* not counted */
  held->counted = true;
  held->mark = mark;
  atomic_store_explicit(rec, 0, memory_order_relaxed); /* before the block may be another thread's */
}

void _mi_events_free_done(mi_events_held_t* held) {
  if (held->p == NULL) return;
  if (held->counted) {
#if MI_MEMORY_EVENTS_PLANT == 1
    if (!atomic_exchange_explicit(&mi_ev_plant_dropped, true, memory_order_relaxed)) goto etw;
#endif
    mi_ev_count_free(held->usable);
  }
#if MI_MEMORY_EVENTS_PLANT == 1
etw:
#endif
#if MI_TRACK_ETW
  if (mi_ev_etw()) _mi_etw_write(false, held->p, held->usable);
#endif
  return;
}

void _mi_events_realloc_done(mi_events_held_t* held, void* newp, size_t newsize) {
  if (newp == NULL) {
    /* failed: the block stays as it was, counted as it was */
    if (held->counted) {
      _Atomic(uint8_t)* rec = _mi_events_record(held->key, false);
      if (rec != NULL) atomic_store_explicit(rec, held->mark, memory_order_relaxed);
#if MI_MEMORY_EVENTS_PLANT == 5
      mi_ev_count_resize(held->usable, held->usable, newsize); /* planted: the failure told */
#endif
    }
    return;
  }
  mi_ev_block_t b = mi_ev_block_of(newp);
  if (held->counted) {
    _Atomic(uint8_t)* rec = _mi_events_record(b.key, true);
    if (rec == NULL) {
      mi_ev_count_free(held->usable); /* the new block cannot be recorded: it leaves the counts */
    } else {
      atomic_store_explicit(rec, held->mark, memory_order_relaxed);
#if MI_MEMORY_EVENTS_PLANT == 2
      if (newp != held->p) {
        mi_ev_count_alloc(b.usable, newsize);
        mi_ev_count_free(held->usable);
      } else
#endif
        mi_ev_count_resize(held->usable, b.usable, newsize);
    }
  } else if (mi_ev_counting()) {
    /* realloc(NULL, n), or a block allocated while counting was off: the
       new block is an allocation (the old one was never counted) */
    mi_ev_alloc_counted(&b, newsize);
  }
#if MI_TRACK_ETW
  if (mi_ev_etw()) {
    /* as a free and an allocation: what a trace pairs by address */
    if (held->p != NULL) _mi_etw_write(false, held->p, held->usable);
    _mi_etw_write(true, newp, b.usable);
  }
#endif
}

/* A destroyed heap's counted blocks, freed without a call each. */
void _mi_events_page_gone(const mi_page_t* page) {
  if (!mi_ev_counting() || mi_ev_suppressed()) return;
  mi_segment_t* segment = _mi_page_segment(page);
  size_t n = (segment->kind == MI_SEGMENT_SINGLE ? 1 : page->capacity);
  uint8_t mark = atomic_load_explicit(&mi_ev_mark, memory_order_relaxed);
  for (size_t i = 0; i < n; i++) {
    uint8_t* block = page->start + i * page->block_size;
    mi_ev_block_t b = mi_ev_block_of(block);
    _Atomic(uint8_t)* rec = _mi_events_record(b.key, false);
    if (rec == NULL) return; /* the segment has no records: none of its blocks was counted */
    if (atomic_load_explicit(rec, memory_order_relaxed) != mark) continue;
    atomic_store_explicit(rec, 0, memory_order_relaxed);
    mi_ev_count_free(b.usable);
#if MI_TRACK_ETW
    if (mi_ev_etw()) _mi_etw_write(false, block, b.usable);
#endif
  }
}

void _mi_events_segment_unmapped(const void* segment) {
  _mi_events_records_unmapped(segment);
}

/* ---- Switching ------------------------------------------------------------------- */

static void mi_ev_rearm_locked(void) {
  mi_lock_assert_held(&_mi_events_lock);
  bool want = atomic_load_explicit(&mi_ev_on, memory_order_relaxed);
#if MI_TRACK_ETW
  want = want || mi_ev_etw();
#endif
  bool armed = (atomic_load_explicit(&_mi_observers, memory_order_relaxed) & MI_OBSERVER_EVENTS) != 0;
  if (want == armed) return;
  if (want) atomic_fetch_or_explicit(&_mi_observers, MI_OBSERVER_EVENTS, memory_order_release);
  else atomic_fetch_and_explicit(&_mi_observers, (uint8_t)~MI_OBSERVER_EVENTS, memory_order_release);
  _mi_observers_changed();
}

void _mi_events_rearm(void) {
  _mi_lock_acquire(&_mi_events_lock);
  mi_ev_rearm_locked();
  _mi_lock_release(&_mi_events_lock);
}

/* Switched on, counting starts afresh: a new mark, so that the records of
   before read as not counted (their frees may have gone unseen while it was
   off), and live counts from zero; the accumulated ones go on. */
static void mi_ev_switch_locked(bool on) {
  mi_lock_assert_held(&_mi_events_lock);
  bool was = atomic_load_explicit(&mi_ev_on, memory_order_relaxed);
  if (on && !was) {
    uint8_t mark = (uint8_t)(atomic_load_explicit(&mi_ev_mark, memory_order_relaxed) + 1);
    if (mark == 0) {
      mark = 1;
      _mi_events_records_clear(); /* the marks wrapped: a record of mark 1 would look current */
    }
    atomic_store_explicit(&mi_ev_mark, mark, memory_order_relaxed);
    atomic_store_explicit(&mi_ev_live_bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&mi_ev_live_count, 0, memory_order_relaxed);
#if MI_MEMORY_EVENTS_PLANT == 1
    atomic_store_explicit(&mi_ev_plant_dropped, false, memory_order_relaxed);
#endif
    atomic_store_explicit(&mi_ev_on, true, memory_order_release);
  } else if (!on && was) {
    atomic_store_explicit(&mi_ev_on, false, memory_order_release);
  }
  mi_ev_rearm_locked();
}

void _mi_events_process_init(void) {
  _mi_lock_init(&_mi_events_lock, MI_LOCK_MEMEVT);
  _mi_lock_init_spin(&mi_events_cb_lock, MI_LOCK_MEMEVT_CB); /* held for two loads, at every event */
}

/* MIMALLOC_MEMORY_EVENTS: read once, when the allocator is first set up
   (at its first allocation, or at its constructor if that comes first);
   a call of mi_memory_tracking_set_enabled, before or after, wins. */
void _mi_events_process_ready(void) {
  bool env = mi_option_is_enabled(mi_option_memory_events);
  _mi_lock_acquire(&_mi_events_lock);
  if (env && !atomic_load_explicit(&mi_ev_explicit, memory_order_relaxed)) mi_ev_switch_locked(true);
  _mi_lock_release(&_mi_events_lock);
#if MI_TRACK_ETW
  _mi_etw_register();
#endif
}

void _mi_events_process_done(void) {
#if MI_TRACK_ETW
  _mi_etw_unregister();
#endif
}

/* ---- The API ------------------------------------------------------------------------ */

bool mi_memory_tracking_set_enabled(bool enabled) {
  _mi_process_init_once(); /* the environment read first: this call wins */
  _mi_lock_acquire(&_mi_events_lock);
  atomic_store_explicit(&mi_ev_explicit, true, memory_order_relaxed);
  mi_ev_switch_locked(enabled);
  _mi_lock_release(&_mi_events_lock);
  return true;
}

bool mi_memory_tracking_is_enabled(void) {
  _mi_process_init_once();
  return mi_ev_counting();
}

bool mi_memory_set_callbacks(const mi_memory_callbacks_t* callbacks) {
  _mi_process_init_once();
  bool any = false;
  _mi_lock_acquire(&mi_events_cb_lock);
  if (callbacks == NULL) {
    memset(&mi_ev_callbacks, 0, sizeof(mi_ev_callbacks));
  } else {
    mi_ev_callbacks = *callbacks;
    for (int k = 0; k < MI_MEMORY_CHANGE_COUNT; k++) any = any || (callbacks->handlers[k] != NULL);
  }
  atomic_store_explicit(&mi_ev_has_handlers, any, memory_order_release);
  _mi_lock_release(&mi_events_cb_lock);
  return true;
}

bool mi_memory_snapshot(mi_memory_snapshot_t* out) {
  if (out == NULL || out->size != sizeof(mi_memory_snapshot_t) || out->version != MI_MEMORY_SNAPSHOT_VERSION) {
    return false;
  }
  out->live_bytes = atomic_load_explicit(&mi_ev_live_bytes, memory_order_relaxed);
  out->accum_bytes = atomic_load_explicit(&mi_ev_accum_bytes, memory_order_relaxed);
  out->live_count = atomic_load_explicit(&mi_ev_live_count, memory_order_relaxed);
  out->accum_count = atomic_load_explicit(&mi_ev_accum_count, memory_order_relaxed);
  return true;
}

typedef struct mi_ev_visit_s {
  mi_memory_allocation_visit_fun* visitor;
  void* arg;
} mi_ev_visit_t;

static bool mi_ev_visit_block(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size,
                              void* arg) {
  (void)heap, (void)area, (void)block_size;
  if (block == NULL) return true; /* the area itself */
  const mi_ev_visit_t* v = (const mi_ev_visit_t*)arg;
  return v->visitor(block, mi_ev_block_of(block).usable, v->arg);
}

bool mi_memory_visit_live_allocations(mi_memory_allocation_visit_fun* visitor, void* arg) {
  if (visitor == NULL || mi_ev_depth != 0) return false;
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return true; /* the thread has allocated nothing */
  mi_ev_visit_t v = {visitor, arg};
  for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) {
    if (!mi_heap_visit_blocks(h, true, &mi_ev_visit_block, &v)) return false;
  }
  return true;
}

/* ---- Listening to the rare events (base/listeners.h) ---------------------------------- */

static void mi_events_segment_unmapped(const void* segment, size_t size) {
  (void)size;
  _mi_events_segment_unmapped(segment); /* the records beside it */
}
mi_listener_define(mi_events_listener) = {
    .name = "memory events",
    .order = MI_LISTEN_EVENTS,
    .process_init = &_mi_events_process_init,   /* their locks */
    .process_ready = &_mi_events_process_ready, /* MIMALLOC_MEMORY_EVENTS=1; the ETW provider */
    .process_done = &_mi_events_process_done,
    .segment_unmapped = &mi_events_segment_unmapped,
    .page_gone = &_mi_events_page_gone, /* each counted block freed (a heap destroy: no test first) */
};

#else /* built without memory events: the calls exist and fail */

bool mi_memory_tracking_set_enabled(bool enabled) {
  (void)enabled;
  return false;
}
bool mi_memory_tracking_is_enabled(void) {
  return false;
}
bool mi_memory_set_callbacks(const mi_memory_callbacks_t* callbacks) {
  (void)callbacks;
  return false;
}
bool mi_memory_snapshot(mi_memory_snapshot_t* out) {
  (void)out;
  return false;
}
bool mi_memory_visit_live_allocations(mi_memory_allocation_visit_fun* visitor, void* arg) {
  (void)visitor, (void)arg;
  return false;
}

#endif
