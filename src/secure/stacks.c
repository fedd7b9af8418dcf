/* MIMALLOC_SECURE_STACKS=1: every block's allocation and free stacks, for
   the secure build's reports (report-detail.c), without a rebuild.

   Each stack is captured by the profilers' walk (dhat/stack.c): frame
   pointers bounded by the thread's stack and checked against the loaded
   code, and with MIMALLOC_SECURE_STACKS=2 the unwinder where the chain
   breaks (with its per-thread cache). It is kept once, for every thread
   that takes it, in a table of OS memory that only grows: a block's record
   is then two 32-bit numbers, the stack and thread of its allocation and
   of its free,
   in a side array beside its segment (os/side-map.h), so that nothing of
   the block changes and the checks that read it (the canary, the trailer,
   the freed block's zeros) stay as they are.

   The table takes no lock: an entry is filled in first and published by a
   compare-and-swap of its number into an open-addressed index; two
   threads that add the same stack at once may both fill an entry, and the
   loser's stays unused. Once the table is full (MI_STACKS_MAX stacks), new
   stacks are not kept and their blocks have none to show.

   The records are kept by the secure front's malloc (alloc.c) or, with
   another observer on, the observers' hooks (api/observe.c), and by the
   secure free once it has validated the block (a double free must find
   the first free's stack, not its own); both take the stack with the
   inline capture of stacks.h. The paths they cost are taken only
   while the option is on: the entry points test the observers' word
   already. */
#include "secure.h"
#include "../page/secure-block.h"
#include "../os/side-map.h"
#include "../base/listeners.h"
#include "../base/observers.h"
#include "stacks.h"

#if MI_SECURE_STACKS

/* ---- The stacks ------------------------------------------------------------------ */

typedef struct mi_stack_entry_s {
  uint64_t hash;
  uint32_t count;
  uintptr_t frames[MI_SECURE_STACK_FRAMES];
} mi_stack_entry_t;

/* (a record: stacks.h) */
#define MI_STACKS_INDEX_SIZE ((size_t)1 << 19) /* 2 MiB of address space; the pages probed become memory */
#define MI_STACKS_MAX MI_STACKS_NUMBER_MASK    /* at most half the index: short probes (22 MiB at most) */
#define MI_STACKS_PROBES 256

static _Atomic(uint32_t)* mi_stacks_index;  /* entry number + 1; 0: empty */
static mi_stack_entry_t* mi_stacks_entries; /* MI_STACKS_MAX entries; filled as taken */
static _Atomic(uint32_t) mi_stacks_taken;   /* entries handed out */
/* the threads' numbers by slot (a thread past the last slot: its stacks
   are kept, its number is not); a slot is never given again, as records
   of the thread's may outlive it */
static _Atomic(long)* mi_stacks_threads;
static _Atomic(size_t) mi_stacks_threads_taken;

/* MIMALLOC_SECURE_STACKS=2: where the frame-pointer chain breaks, the
   unwinder goes on (the profilers' capture, dhat/stack.c; microseconds a
   stack its cache misses); 1: the chain alone, as far as the program keeps
   frame pointers (AddressSanitizer's fast unwinder does the same) */
static bool mi_stacks_unwind;

mi_decl_thread mi_stacks_tls_t _mi_stacks_tls;

static uint64_t mi_stacks_hash(const uintptr_t* frames, uint32_t n) {
  uint64_t h = MI_WALK_HASH_SEED;
  for (uint32_t i = 0; i < n; i++) h = mi_walk_hash_step(h, frames[i]);
  return mi_walk_hash_end(h, n);
}

static bool mi_stacks_same(const mi_stack_entry_t* e, uint64_t h, const uintptr_t* frames, uint32_t n) {
  if (e->hash != h || e->count != n) return false;
  for (uint32_t i = 0; i < n; i++) {
    if (e->frames[i] != frames[i]) return false;
  }
  return true;
}

/* The number of a stack (1 and up), added on first sight; 0 if it cannot be kept. */
static mi_noinline uint32_t mi_stacks_number_shared(uint64_t h, const uintptr_t* frames, uint32_t n) {
  uint32_t mine = 0; /* an entry this thread filled and has not published */
  size_t i = (size_t)(h >> 20) & (MI_STACKS_INDEX_SIZE - 1);
  for (size_t probe = 0; probe < MI_STACKS_PROBES; probe++, i = (i + 1) & (MI_STACKS_INDEX_SIZE - 1)) {
    uint32_t id = atomic_load_explicit(&mi_stacks_index[i], memory_order_acquire);
    if (id == 0) {
      if (mine == 0) {
        /* full: no more taken (the count must not wrap round to entries in use) */
        if (atomic_load_explicit(&mi_stacks_taken, memory_order_relaxed) >= MI_STACKS_MAX) break;
        uint32_t e = atomic_fetch_add_explicit(&mi_stacks_taken, 1, memory_order_relaxed);
        if (e >= MI_STACKS_MAX) break;
        mi_stack_entry_t* entry = &mi_stacks_entries[e];
        entry->hash = h;
        entry->count = n;
        memcpy(entry->frames, frames, n * sizeof(uintptr_t));
        mine = e + 1;
      }
      if (atomic_compare_exchange_strong_explicit(&mi_stacks_index[i], &id, mine, memory_order_release,
                                                  memory_order_acquire)) {
        return mine;
      }
      /* another thread published an entry here first: `id` is it */
    }
    if (mi_stacks_same(&mi_stacks_entries[id - 1], h, frames, n)) return id;
  }
  return 0;
}

/* A thread's first capture (and every one in the unwinder's mode, or where
   its stack is not known): what the captures need found, then the stack
   taken by the profilers' capture. */
uint32_t _mi_stacks_capture_slow(const void* frame) {
  mi_stacks_tls_t* tls = &_mi_stacks_tls;
  if (tls->busy) return MI_STACKS_NONE; /* an allocation of the capture itself */
  tls->busy = true;
  if (tls->thread == 0) {
    tls->thread = mi_prim_thread_os_id();
    size_t slot = atomic_fetch_add_explicit(&mi_stacks_threads_taken, 1, memory_order_relaxed) + 1;
    if (slot < MI_STACKS_THREADS - 1) { /* (the last: MI_STACKS_NONE's) */
      atomic_store_explicit(&mi_stacks_threads[slot], tls->thread, memory_order_release);
      tls->thread_bits = (uint32_t)slot << MI_STACKS_NUMBER_BITS;
    } else {
      atomic_store_explicit(&mi_stacks_threads_taken, MI_STACKS_THREADS, memory_order_relaxed); /* (no wrap) */
      tls->thread_bits = 0;
    }
  }
  /* (none made again once the thread's data went: a destructor that
     allocates after it would leave it behind) */
  if (tls->cache == NULL && !tls->gone) tls->cache = (mi_stacks_cached_t*)_mi_os_alloc_meta(MI_STACKS_CACHE_SIZE);
  uintptr_t frames[MI_SECURE_STACK_FRAMES];
  int n;
  if (mi_stacks_unwind) {
    mi_dhat_site_hint_t* hint;
    n = _mi_dhat_stack_capture(frames, MI_SECURE_STACK_FRAMES, &hint);
  } else {
#if defined(_WIN32)
    n = _mi_stack_capture_fp(frames, MI_SECURE_STACK_FRAMES, frame);
#else
    uintptr_t slot0;
    bool complete;
    n = mi_walk_fp(frames, MI_SECURE_STACK_FRAMES, (uintptr_t)frame, &slot0, &complete);
    if (_mi_walk_stack_state == 1 && tls->cache != NULL) {
      tls->lo = _mi_walk_stack_lo;
      tls->hi = _mi_walk_stack_hi - 2 * sizeof(uintptr_t);
      tls->ready = true;
    }
#endif
  }
  uint32_t id = 0;
  if (n > 0) {
    uint64_t h = mi_stacks_hash(frames, (uint32_t)n);
    mi_stacks_cached_t* c = (tls->cache != NULL ? &tls->cache[(h >> 11) & (MI_STACKS_CACHE - 1)] : NULL);
    if (c != NULL && c->hash == h && c->number != 0) {
      id = c->number;
    } else {
      id = mi_stacks_number_shared(h, frames, (uint32_t)n);
      if (c != NULL) *c = (mi_stacks_cached_t){h, id};
    }
  }
  tls->busy = false;
  return (id != 0 ? id | tls->thread_bits : MI_STACKS_NONE);
}

#if !defined(_WIN32)
/* A stack the thread's cache does not know (stacks.h): walked
   again for its frames (the frames below `frame` are as they were), then
   found in the table. */
uint32_t _mi_stacks_capture_miss(const void* frame, mi_stacks_cached_t* c) {
  mi_stacks_tls_t* tls = &_mi_stacks_tls;
  uintptr_t frames[MI_SECURE_STACK_FRAMES];
  uint64_t h;
  bool main;
  int n = mi_walk_frames((uintptr_t)frame, tls->lo, tls->hi, MI_SECURE_STACK_FRAMES, frames, NULL, &h, &main);
  if (n <= 0) return MI_STACKS_NONE;
  uint32_t id = mi_stacks_number_shared(h, frames, (uint32_t)n);
  *c = (mi_stacks_cached_t){h, id};
  return (id != 0 ? id | tls->thread_bits : MI_STACKS_NONE);
}
#endif

/* ---- The blocks' records ------------------------------------------------------------ */

/* One slot per block (mi_stacks_slot_t, secure.h). A small or medium
   block's slot is found by its page's place in the segment and its index
   in the page, so the slots a page uses lie together (its blocks' count of
   them, not one per 16 bytes), and a page set up while the option is on
   keeps where they start (page->stacks): the secure front writes a record
   with one store. A single block's is the segment's first. */
static mi_side_map_t mi_stacks_side;
#define MI_STACKS_SLOT sizeof(mi_stacks_slot_t)
#define MI_STACKS_PAGE_SLOTS (MI_SMALL_PAGE_SIZE / MI_MAX_ALIGN_SIZE)
_Static_assert(MI_SMALL_PAGES_PER_SEGMENT* MI_STACKS_PAGE_SLOTS == MI_SIDE_SLOTS,
               "a slot for each block of each page of a segment");
_Static_assert(MI_MEDIUM_PAGE_SIZE / MI_SMALL_BLOCK_MAX <= MI_STACKS_PAGE_SLOTS, "a medium page's blocks fit too");

static uintptr_t mi_stacks_key(const mi_segment_t* segment, const mi_page_t* page, size_t idx) {
  return (uintptr_t)segment + ((size_t)page->index * MI_STACKS_PAGE_SLOTS + idx) * MI_MAX_ALIGN_SIZE;
}

static mi_stacks_slot_t* mi_stacks_slot(uintptr_t key, bool make) {
  uint8_t* slot = mi_side_at(&mi_stacks_side, key, MI_STACKS_SLOT);
  if (slot == NULL && make) slot = _mi_side_make(&mi_stacks_side, key, MI_STACKS_SLOT);
  return (mi_stacks_slot_t*)(void*)slot;
}

/* The slot of block `idx` of `page`; NULL for a guarded sample (its
   segment keeps its stacks), or without a side array and not `make`. */
static mi_stacks_slot_t* mi_stacks_page_slot(mi_page_t* page, size_t idx, bool make) {
  mi_segment_t* segment = _mi_page_segment(page);
  if (segment->kind == MI_SEGMENT_ZERO) return NULL;
  if (segment->kind == MI_SEGMENT_SINGLE) {
#if MI_GUARDED
    if (page->is_guarded) return NULL;
#endif
    return mi_stacks_slot((uintptr_t)segment, make);
  }
  mi_stacks_slot_t* slots = atomic_load_explicit(&page->stacks, memory_order_relaxed);
  if (slots != NULL) return &slots[idx];
  return mi_stacks_slot(mi_stacks_key(segment, page, idx), make);
}

/* The slot of the block that holds `p` (ours, validated or just handed
   out); NULL for a guarded sample or a zero-size slot. Made with `make`. */
static mi_stacks_slot_t* mi_stacks_slot_of(const void* p, bool make) {
  mi_segment_t* segment = (_mi_segment_map_contains(p) ? _mi_ptr_segment(p) : _mi_segment_containing(p));
  if (segment == NULL || segment->kind == MI_SEGMENT_ZERO) return NULL;
  mi_page_t* page = (segment->kind == MI_SEGMENT_SINGLE ? &segment->pages[0] : _mi_segment_page_of(segment, p));
  return mi_stacks_page_slot(page, (segment->kind == MI_SEGMENT_SINGLE ? 0 : mi_block_index(page, p)), make);
}

uint32_t _mi_secure_stack_here(const void* frame) {
  return mi_stacks_capture(frame);
}

void _mi_secure_stacks_allocated(void* p, const void* frame) {
  if (p == NULL) return;
  mi_stacks_slot_t* slot = mi_stacks_slot_of(p, true);
  if (slot != NULL) *slot = (mi_stacks_slot_t){mi_stacks_capture(frame), 0};
}

/* (secure.h's mi_secure_stacks_put, the page's records not at hand) */
void _mi_secure_stacks_put(mi_page_t* page, size_t idx, uint32_t stack) {
  mi_stacks_slot_t* slot = mi_stacks_page_slot(page, idx, true);
  if (slot == NULL) return;
  *slot = (mi_stacks_slot_t){stack, 0};
  /* a page set up before the option was on: its owner (here) keeps where
     its records are from now on */
  if (_mi_page_segment(page)->kind <= MI_SEGMENT_MEDIUM) {
    atomic_store_explicit(&page->stacks, slot - idx, memory_order_relaxed);
  }
}

void _mi_secure_stacks_freed(mi_page_t* page, size_t idx, uint32_t stack) {
  mi_stacks_slot_t* slot = mi_stacks_page_slot(page, idx, false);
  if (slot != NULL) slot->freed = stack; /* (none: allocated before the option was on) */
}

/* a record's stack (its number and thread slot, `record`) as a report shows it */
static bool mi_stacks_entry(uint32_t record, mi_secure_stack_t* stack) {
  uint32_t id = record & MI_STACKS_NUMBER_MASK;
  size_t slot = record >> MI_STACKS_NUMBER_BITS;
  if (id == 0 || id > atomic_load_explicit(&mi_stacks_taken, memory_order_acquire) || id > MI_STACKS_MAX) {
    return false;
  }
  const mi_stack_entry_t* e = &mi_stacks_entries[id - 1];
  if (e->count == 0 || e->count > MI_SECURE_STACK_FRAMES) return false;
  stack->thread = (slot != 0 ? atomic_load_explicit(&mi_stacks_threads[slot], memory_order_acquire) : 0);
  stack->count = e->count;
  stack->frames = e->frames;
  return true;
}

bool _mi_secure_stacks_of(const void* block, mi_secure_stack_t* allocated, mi_secure_stack_t* freed) {
  if (block == NULL || mi_stacks_entries == NULL) return false;
  if (_mi_segment_containing(block) == NULL) return false; /* its segment (and its records) gone */
  mi_stacks_slot_t* slot = mi_stacks_slot_of(block, false);
  if (slot == NULL) return false;
  mi_stacks_slot_t record = *slot;
  bool has_alloc = mi_stacks_entry(record.allocated, allocated);
  bool has_free = mi_stacks_entry(record.freed, freed);
  if (!has_alloc) allocated->count = 0;
  if (!has_free) freed->count = 0;
  return (has_alloc || has_free);
}

/* ---- Start and the rare events -------------------------------------------------------- */

static void mi_stacks_start(void) {
  static _Atomic(int) started; /* 0: not, 1: being set up, 2: running, 3: failed */
  int expected = 0;
  if (!atomic_compare_exchange_strong(&started, &expected, 1)) return;
  _mi_stacks_tls.busy = true;
  mi_stacks_unwind = (mi_option_get(mi_option_secure_stacks) >= 2);
  _mi_dhat_stack_init(); /* may allocate: not recorded */
  mi_stacks_index = (_Atomic(uint32_t)*)_mi_os_alloc_meta(MI_STACKS_INDEX_SIZE * sizeof(uint32_t));
  mi_stacks_entries = (mi_stack_entry_t*)_mi_os_alloc_meta(MI_STACKS_MAX * sizeof(mi_stack_entry_t));
  mi_stacks_threads = (_Atomic(long)*)_mi_os_alloc_meta(MI_STACKS_THREADS * sizeof(long));
  _mi_stacks_tls.busy = false;
  if (mi_stacks_index == NULL || mi_stacks_entries == NULL || mi_stacks_threads == NULL) {
    _mi_warning_message("the blocks' stacks cannot be kept: no memory for their table (MIMALLOC_SECURE_STACKS)\n");
    if (mi_stacks_index != NULL) _mi_os_free_meta((void*)mi_stacks_index, MI_STACKS_INDEX_SIZE * sizeof(uint32_t));
    if (mi_stacks_entries != NULL) _mi_os_free_meta(mi_stacks_entries, MI_STACKS_MAX * sizeof(mi_stack_entry_t));
    if (mi_stacks_threads != NULL) _mi_os_free_meta((void*)mi_stacks_threads, MI_STACKS_THREADS * sizeof(long));
    mi_stacks_index = NULL;
    mi_stacks_entries = NULL;
    mi_stacks_threads = NULL;
    atomic_store(&started, 3);
    return;
  }
  atomic_store(&started, 2);
  atomic_fetch_or_explicit(&_mi_observers, MI_OBSERVER_STACKS, memory_order_release);
  _mi_observers_changed();
}

static void mi_stacks_process_ready(void) {
  if (mi_option_is_enabled(mi_option_secure_stacks)) mi_stacks_start();
}

/* Turned on at run time: the blocks allocated from then on have stacks.
   (Turned off: they keep being kept; the table is not given back.) */
static void mi_stacks_option_changed(mi_option_t option, long value) {
  if (option == mi_option_secure_stacks && value != 0) mi_stacks_start();
}

static void mi_stacks_segment_unmapped(const void* segment, size_t size) {
  (void)size;
  uint8_t* side = _mi_side_detach(&mi_stacks_side, segment);
  if (side != NULL) _mi_side_free(side, MI_STACKS_SLOT); /* (its pages, which kept where it was, gone with it) */
}

/* A page set up anew in a slot whose records may be an earlier page's:
   cleared, so that a report on a block never handed out since shows none;
   while the option is on, the page keeps where they are (its owner's
   allocations and any thread's frees write them with one store). */
static void mi_stacks_page_init(mi_page_t* page) {
  bool on = (atomic_load_explicit(&_mi_observers, memory_order_relaxed) & MI_OBSERVER_STACKS) != 0;
  mi_stacks_slot_t* slots = NULL;
  mi_segment_t* segment = _mi_page_segment(page);
  if ((on || mi_side_used(&mi_stacks_side)) && segment->kind <= MI_SEGMENT_MEDIUM) {
    slots = mi_stacks_slot(mi_stacks_key(segment, page, 0), on);
    if (slots != NULL) memset(slots, 0, (size_t)page->reserved * MI_STACKS_SLOT);
  }
  atomic_store_explicit(&page->stacks, (on ? slots : NULL), memory_order_relaxed);
}

static void mi_stacks_thread_done(void) {
  mi_stacks_cached_t* cache = _mi_stacks_tls.cache;
  _mi_stacks_tls.ready = false;
  _mi_stacks_tls.cache = NULL;
  _mi_stacks_tls.gone = true;
  if (cache != NULL) _mi_os_free_meta(cache, MI_STACKS_CACHE_SIZE);
}

/* the child's one thread has a number of its own */
static void mi_stacks_fork_child(void) {
  _mi_stacks_tls.ready = false;
  _mi_stacks_tls.thread = 0;
  _mi_stacks_tls.busy = false;
}

mi_listener_define(mi_secure_stacks_listener) = {
    .name = "secure stacks",
    .order = MI_LISTEN_SECURE_STACKS,
    .process_ready = &mi_stacks_process_ready,
    .thread_done = &mi_stacks_thread_done,
    .fork_child = &mi_stacks_fork_child,
    .option_changed = &mi_stacks_option_changed,
    .segment_unmapped = &mi_stacks_segment_unmapped,
    .page_init = &mi_stacks_page_init,
};

#endif
