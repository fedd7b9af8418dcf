/* Memory back to the OS at idle points (docs/memory-return.md): a thread's
   own (mi_on_thread_idle: its pending frees collected, the holes of its
   pages discarded, page/holes.c, its free pages purged now), a parked
   thread's by the background thread (mi_on_thread_idle_start / _end), and
   everything reachable from any thread (mi_purge_all). */
#include "heap.h"

#include <stdio.h>
#include <string.h>

/* Whether a sweep of `tld`'s pages is due (paced start to start, unless
   forced), and whether it is a full one; it starts now. */
static bool mi_holes_due(mi_tld_t* tld, bool force, bool* full) {
  if (!mi_option_is_enabled(mi_option_purge_holes)) return false;
  int64_t now = mi_prim_clock_now();
  long interval = mi_option_get_clamp(mi_option_purge_holes_min_interval, 0, 3600000);
  if (!force && tld->holes_last != 0 && now - tld->holes_last < interval) return false;
  tld->holes_last = (now != 0 ? now : 1);
  long every = mi_option_get_clamp(mi_option_purge_holes_full_every, 1, 1L << 30);
  *full = (force || tld->holes_sweeps % (uint64_t)every == 0);
  tld->holes_sweeps++;
  _mi_holes_sweep_begin();
  _mi_holes_note_sweep(*full);
  return true;
}

/* The calling thread's own pass: pending frees, holes, empty pages. */
static void mi_thread_idle(mi_tld_t* tld, bool force) {
  for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) _mi_deferred_free(h, false);
  bool full = false;
  if (mi_holes_due(tld, force, &full)) {
    bool eager_zero = mi_option_is_enabled(mi_option_purge_holes_eager_zero);
    for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) (void)_mi_heap_holes_sweep(h, true, full, eager_zero);
  } else {
    for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) _mi_heap_collect_pages(h);
  }
}

/* A parked thread's pages, swept by another (init.c holds the threads lock
   and the thread's park state SWEEPING). True if a sweep ran. */
bool _mi_tld_holes_sweep(mi_tld_t* tld, bool force) {
  mi_assert_internal(atomic_load_explicit(&tld->park, memory_order_relaxed) == MI_PARK_SWEEPING);
  bool full = false;
  if (!mi_holes_due(tld, force, &full)) return false;
  bool eager_zero = mi_option_is_enabled(mi_option_purge_holes_eager_zero);
  for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) (void)_mi_heap_holes_sweep(h, false, full, eager_zero);
  return true;
}

void mi_on_thread_idle(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  if (mi_option_get(mi_option_purge_delay) < 0) return; /* every purge off, holes included */
  mi_thread_idle(heap->tld, false);
  _mi_purge_run(true); /* the free pages' memory now, not after the delay */
}

/* ---- Parked threads -------------------------------------------------------------- */

bool mi_on_thread_idle_start(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return false;
  if (mi_option_get(mi_option_purge_delay) < 0) return false;
  mi_tld_t* tld = heap->tld;
  for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) _mi_deferred_free(h, false);
  atomic_store_explicit(&tld->park, MI_PARK_PARKED, memory_order_release);
  _mi_background_due_in(0); /* the background thread sweeps it (paced as its own sweeps are) */
  return true;
}

void mi_on_thread_idle_end(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  _mi_tld_unpark(heap->tld);
}

/* The thread's heaps back to it, once a sweep of them by another ends. */
void _mi_tld_unpark(mi_tld_t* tld) {
  for (;;) {
    int expected = MI_PARK_PARKED;
    if (atomic_compare_exchange_weak_explicit(&tld->park, &expected, MI_PARK_RUNNING, memory_order_acquire,
                                              memory_order_relaxed)) {
      return;
    }
    if (expected == MI_PARK_RUNNING) return; /* (not parked: a call without _start) */
    mi_assert_internal(expected == MI_PARK_SWEEPING);
    mi_prim_yield(); /* a sweep of its pages is running: bounded */
  }
}

/* The background thread's work besides the purge pass: the abandoned
   segments' cleanup, then the parked threads' holes. */
void _mi_idle_background_work(void) {
  _mi_threads_finish_ended(); /* their segments abandoned first, for the cleanup below */
  _mi_segments_abandoned_cleanup();
  static _Atomic(uint64_t) gen = ((uint64_t)1 << 63); /* (apart from mi_purge_all's) */
  size_t swept = 0, running = 0;
  _mi_threads_sweep_parked(NULL, atomic_fetch_add_explicit(&gen, 1, memory_order_relaxed) + 1, false, &swept, &running);
}

/* ---- From any thread: mi_purge_all ----------------------------------------------- */

static _Atomic(bool) mi_purge_all_running;
static _Atomic(uint64_t) mi_purge_all_gen;
static mi_prim_event_t mi_purge_all_event; /* never signalled: a timed wait */
static bool mi_purge_all_event_ready;

typedef struct mi_reclaim_s {
  size_t bytes, arenas, kept, segments;
  bool refused;
} mi_reclaim_t;

/* The reservations that hold no live segment, given back: the cached
   segments first (arena memory among them goes back to its arena), then the
   arenas left empty. No thread need stop: the cache and the arena table are
   each changed under their lock, where every allocation looks. */
static void mi_reclaim(mi_reclaim_t* r) {
  r->bytes = _mi_segment_cache_release(&r->segments);
  r->bytes += _mi_arenas_reclaim(&r->arenas, &r->kept, &r->refused);
}

int mi_purge_all_ex(mi_purge_flags_t flags, size_t wait_ms, mi_purge_all_report_t* report) {
  bool idle = false;
  if (!atomic_compare_exchange_strong_explicit(&mi_purge_all_running, &idle, true, memory_order_acquire,
                                               memory_order_relaxed)) {
    return MI_PURGE_BUSY;
  }
  if (!mi_purge_all_event_ready) {
    mi_prim_event_init(&mi_purge_all_event);
    mi_purge_all_event_ready = true;
  }
  const bool force = ((flags & MI_PURGE_FORCE) != 0);
  const int64_t purged0 = atomic_load_explicit(&_mi_stats.purged.total, memory_order_relaxed);
  const int64_t holes0 = atomic_load_explicit(&_mi_stats.holes.total, memory_order_relaxed);
  const int64_t unformed0 = atomic_load_explicit(&_mi_stats.unformed.total, memory_order_relaxed);
  const bool purging = (mi_option_get(mi_option_purge_delay) >= 0);
  size_t swept = 0, running = 0;
  if (purging) {
    _mi_purge_run(force);
    _mi_segments_abandoned_sweep(force); /* the exited threads' pages: empty ones freed, holes swept */
    mi_heap_t* heap = mi_get_default_heap();
    const mi_tld_t* self = NULL;
    if (mi_heap_is_initialized(heap)) {
      self = heap->tld;
      mi_thread_idle(heap->tld, force);
      swept++;
    }
    /* the parked threads, until every one is reached or wait_ms runs out */
    const uint64_t gen = atomic_fetch_add_explicit(&mi_purge_all_gen, 1, memory_order_relaxed) + 1;
    const int64_t deadline = mi_prim_clock_now() + (int64_t)(wait_ms > 3600000 ? 3600000 : wait_ms);
    for (;;) {
      running = 0;
      _mi_threads_sweep_parked(self, gen, force, &swept, &running);
      if (running == 0 || mi_prim_clock_now() >= deadline) break;
      mi_prim_event_wait(&mi_purge_all_event, 1);
    }
    _mi_purge_run(force); /* what the sweeps freed */
  }
  mi_reclaim_t reclaim;
  memset(&reclaim, 0, sizeof(reclaim));
  if ((flags & MI_PURGE_RECLAIM) != 0) mi_reclaim(&reclaim);
  if (report != NULL && report->size >= sizeof(size_t)) {
    mi_purge_all_report_t r;
    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    int64_t holes = atomic_load_explicit(&_mi_stats.holes.total, memory_order_relaxed) - holes0;
    int64_t purged = atomic_load_explicit(&_mi_stats.purged.total, memory_order_relaxed) - purged0;
    int64_t unformed = atomic_load_explicit(&_mi_stats.unformed.total, memory_order_relaxed) - unformed0;
    r.hole_bytes = (size_t)(holes > 0 ? holes : 0);
    r.unformed_bytes = (size_t)(unformed > 0 ? unformed : 0);
    /* (a hole's or a tail's discard is counted as purged too) */
    r.arena_bytes = (size_t)(purged > holes + unformed ? purged - holes - unformed : 0);
    r.theaps_swept = swept;
    r.theaps_pending = running;
    r.theaps_orphaned = 0;
    r.gated = false;
    r.complete = (running == 0);
    r.reclaimed = ((flags & MI_PURGE_RECLAIM) != 0);
    r.arena_reclaim_bytes = reclaim.bytes;
    r.arenas_reclaimed = reclaim.arenas;
    r.arenas_kept = reclaim.kept;
    r.segments_reclaimed = reclaim.segments;
    size_t n = (report->size < sizeof(r) ? report->size : sizeof(r));
    size_t given = report->size;
    memcpy(report, &r, n);
    report->size = (given < sizeof(r) ? given : sizeof(r));
  }
  atomic_store_explicit(&mi_purge_all_running, false, memory_order_release);
  return (running == 0 && !reclaim.refused ? MI_PURGE_OK : MI_PURGE_PARTIAL);
}

void mi_purge_all(bool force) {
  (void)mi_purge_all_ex(force ? MI_PURGE_FORCE : (mi_purge_flags_t)0, 100, NULL);
}

/* Per size class of the calling thread's pages: the free bytes, those in
   holes, and those a live block pins (it shares their unit). */
void mi_purge_holes_report(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  char line[160];
  _mi_message("hole purge: the calling thread's pages, per block size\n");
  _mi_message("%10s %8s %14s %14s %14s\n", "block", "pages", "free", "in holes", "pinned");
  size_t total_free = 0, total_holes = 0, total_pinned = 0;
  for (size_t bin = 1; bin <= MI_BIN_MEDIUM_MAX; bin++) {
    size_t pages = 0, free_bytes = 0, hole_bytes = 0, pinned = 0;
    for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) {
      for (size_t q = 0; q < 2; q++) {
        const mi_page_queue_t* pq = &h->pages[q == 0 ? bin : MI_BIN_FULL];
        for (const mi_page_t* page = (pq->last != NULL ? pq->first : NULL); page != NULL; page = page->next) {
          if (page->bin != bin) continue;
          pages++;
          _mi_page_holes_census(page, &free_bytes, &hole_bytes, &pinned);
        }
      }
    }
    if (pages == 0) continue;
    (void)snprintf(line, sizeof(line), "%10zu %8zu %14zu %14zu %14zu\n", _mi_bin_size(bin), pages, free_bytes,
                   hole_bytes, pinned);
    _mi_message("%s", line);
    total_free += free_bytes;
    total_holes += hole_bytes;
    total_pinned += pinned;
  }
  _mi_message("%10s %8s %14zu %14zu %14zu\n", "total", "", total_free, total_holes, total_pinned);
}
