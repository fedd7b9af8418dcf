/* Internal types and cross-file prototypes of mimalloc-pprof. */
#ifndef MI_INTERNAL_H
#define MI_INTERNAL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../include/mimalloc.h"
#include "compiler.h"
#include "config.h"
#include "prim/prim.h"
#include "prim/fault.h" /* mi_sched_point: the teardown protocol's schedule points */
#include "base/track.h"

/* ---- Blocks, pages, segments ---------------------------------------------- */

typedef struct mi_block_s {
  struct mi_block_s* next;
} mi_block_t;

/* State of a page slot inside its segment. Changed by the owning thread
   (taking or freeing the page) and by the purge thread (FREE_DIRTY ->
   PURGING -> FREE_CLEAN) only through compare-and-swap, so the two never
   both act on one page. */
typedef enum mi_page_state_e {
  MI_PAGE_IN_USE = 0,
  MI_PAGE_FREE_DIRTY = 1, /* free, memory still committed */
  MI_PAGE_PURGING = 2,    /* the purge thread is returning its memory */
  MI_PAGE_FREE_CLEAN = 3, /* free, memory returned (or never touched) */
  MI_PAGE_HELD = 4        /* secure builds: a destroyed heap's page, not reused yet (page.c) */
} mi_page_state_t;

#define MI_PAGE_FLAG_IN_FULL 0x01     /* in the heap's full queue */
#define MI_PAGE_FLAG_HAS_ALIGNED 0x02 /* holds aligned blocks: pointers may be interior */
#define MI_PAGE_FLAG_KEPT 0x04        /* kept empty when its heap took it over (_mi_segments_take_over) */

typedef struct mi_heap_s mi_heap_t;
typedef struct mi_tld_s mi_tld_t;

typedef struct mi_page_s {
  /* fast-path fields first */
  mi_block_t* free;       /* blocks available to the owner */
  uint32_t used;          /* blocks handed out and not yet freed back to the owner */
  _Atomic(uint8_t) flags; /* MI_PAGE_FLAG_*: written by the owner, read by any thread (mi_page_flags) */
  uint8_t bin;
  uint8_t index;     /* slot in the segment */
  uint32_t capacity; /* blocks carved out so far */
  uint32_t reserved; /* blocks that fit the page */
  size_t block_size;
  uint8_t* start;                    /* first block */
  _Atomic(mi_block_t*) xthread_free; /* blocks freed by other threads */
  mi_heap_t* heap;                   /* owning heap; NULL while abandoned */
  struct mi_page_s* next;            /* in the heap's queue */
  struct mi_page_s* prev;
  _Atomic(uint32_t) state;   /* mi_page_state_t */
  _Atomic(int64_t) purge_at; /* FREE_DIRTY: when its memory may be returned; FREE_CLEAN: when it was */
  size_t committed;          /* bytes of this page's area counted as committed */
#if MI_SECURE
  uintptr_t keys[2];       /* free-list link encoding */
  uint64_t block_size_inv; /* ceil(2^40 / block_size): block index by multiplication */
  uint64_t geometry;       /* keyed check of what free trusts of the page and its segment (secure.c) */
  uintptr_t heap_check;    /* single-block pages: keyed copy of `heap`, checked when unlinked (segment.c) */
  size_t guard_offset;     /* single-block pages: offset of the guard page after the block (0: none) */
  bool needs_zero;         /* freed with live contents (heap destroy): zero before reuse */
  bool is_guarded;         /* a sampled guarded block: it ends at its guard page, no trailer */
  bool guarded_freed;      /* ... freed: its pages are inaccessible while it waits in quarantine */
  bool large_fenced;       /* a freed large block: its pages discarded and inaccessible (secure-large.c) */
  bool large_zeroed;       /* ... zeroed, not given back: counted in the resident bytes held */
  size_t guarded_size;     /* ... where its data ends, from the block's start */
  size_t user_start;       /* single-block pages: where the pointer handed out lies in the block */
  uint64_t handed_out;     /* pages of blocks above 8 KiB: bit per block handed out since set-up (secure.c) */
  _Atomic(uint64_t) used_map[MI_SMALL_PAGE_SIZE / 16 / 64]; /* bit per block: handed out and not freed by the owner */
#endif
} mi_page_t;

typedef enum mi_segment_kind_e {
  MI_SEGMENT_SMALL = 0,
  MI_SEGMENT_MEDIUM = 1,
  MI_SEGMENT_SINGLE = 2, /* one block: large or huge */
  MI_SEGMENT_ZERO = 3    /* secure builds: zero-size allocations' slots (secure-zero.c) */
} mi_segment_kind_t;
#define MI_SEGMENT_ANY_KIND (-1)

/* Owner of the segments of a thread a fork child does not have: no thread's
   id (ids are addresses of a thread-local, never odd). */
#define MI_THREAD_ID_ORPHAN ((uintptr_t)1)

/* The owner word of a small or medium segment (docs/teardown-protocol.md):
   the owner state in the low bits, and above it a generation that every
   transition replaces with a new value from one process-wide counter, so no
   (state, generation) value is ever written twice. Every owner transition is
   a CAS from the value its maker observed: a stale observation fails. */
typedef enum mi_owner_state_e {
  MI_OWNER_RELEASED = 0,  /* new, cached or unmapped; single-block segments always */
  MI_OWNER_OWNED = 1,     /* a live thread's (its id in thread_id) */
  MI_OWNER_ABANDONED = 2, /* on the abandoned list, no holder */
  MI_OWNER_CLAIMED = 3,   /* taken by one claimer, not yet its owner (or the cleanup holds it) */
  MI_OWNER_ORPHAN = 4     /* fork child: its thread is not in the child */
} mi_owner_state_t;
#define MI_OWNER_STATE_BITS 3
#define MI_OWNER_STATE_MASK ((uint64_t)((1 << MI_OWNER_STATE_BITS) - 1))

typedef struct mi_segment_s {
  _Atomic(uintptr_t) thread_id; /* owner; 0 when abandoned, cached or single-block; MI_THREAD_ID_ORPHAN */
  _Atomic(uint64_t) owner;      /* owner word: state | generation << MI_OWNER_STATE_BITS */
  uintptr_t cookie;             /* segment ^ process key: recognises our headers */
  size_t segment_size;          /* bytes mapped */
  uint8_t kind;
  uint8_t page_shift;    /* log2 of the page size; 63 for single-block segments */
  uint8_t in_purge_list; /* protected by the purge lock */
  uint8_t is_pinned;     /* large or huge OS pages: never purged, never cached */
  uint8_t thp_hinted;    /* asked for transparent huge pages (os-thp.c); 0 again once purged */
  uint8_t thp_probe;     /* its block measures how densely large blocks are used (os-thp.c) */
  uint32_t page_count;
  uint32_t used_pages;       /* pages in use (owner only) */
  size_t thp_resident;       /* a probe's pages resident when it was handed out */
  size_t info_size;          /* header bytes before page 0's blocks */
  mi_tld_t* tld;             /* owner thread data (owner only) */
  struct mi_segment_s* next; /* tld's segment list, abandoned list or cache */
  struct mi_segment_s* prev;
  struct mi_segment_s* free_next; /* tld's list of segments with a free page slot */
  struct mi_segment_s* free_prev;
  struct mi_segment_s* purge_next; /* global list of segments with dirty free pages */
  struct mi_segment_s* purge_prev;
  mi_page_t pages[MI_SMALL_PAGES_PER_SEGMENT];
} mi_segment_t;

typedef struct mi_page_queue_s {
  mi_page_t* first;
  mi_page_t* last;
} mi_page_queue_t;

typedef struct mi_single_list_s mi_single_list_t;

struct mi_heap_s {
  mi_tld_t* tld;
  uintptr_t thread_id;
  /* the first page of the queue of each size up to MI_BIN_WSIZE_MAX words,
     by the size in words: the fast path's one load where the bin's lookup
     and its queue were two (page.c keeps it in step with the queues) */
  mi_page_t* pages_direct[MI_BIN_WSIZE_MAX + 1];
  mi_page_queue_t pages[MI_BIN_COUNT];
  mi_heap_t* next;         /* in the tld's list of heaps */
  mi_page_t* single_first; /* this heap's large and huge blocks (under the single lock) */
  size_t page_count;
  uint64_t heartbeat;
  bool is_backing;
  bool has_kept;  /* holds pages flagged MI_PAGE_FLAG_KEPT */
  bool took_over; /* _mi_segments_take_over ran: once, at the heap's first page */
#if MI_SECURE
  struct mi_zero_segment_s* zero_segments; /* its zero-size allocations' segments (under the zero lock) */
#endif
#if MI_STAT
  uint64_t stat_malloc[MI_BIN_COUNT + 1];
#endif
};

typedef struct mi_stat_count_s {
  _Atomic(int64_t) current;
  _Atomic(int64_t) peak;
  _Atomic(int64_t) total;
} mi_stat_count_t;

typedef struct mi_stats_s {
  mi_stat_count_t reserved;
  mi_stat_count_t committed;
  mi_stat_count_t segments;
  mi_stat_count_t pages;
  mi_stat_count_t abandoned;
  mi_stat_count_t large; /* large and huge blocks in use */
  mi_stat_count_t threads;
  mi_stat_count_t purged; /* bytes returned to the OS (total) */
  mi_stat_count_t meta;   /* bytes reserved for the allocator's metadata (never returned) */
  mi_stat_count_t arenas; /* bytes reserved for arenas (never returned) */
  _Atomic(int64_t) mmap_calls;
  _Atomic(int64_t) purge_calls;
  _Atomic(int64_t) reclaimed;
  _Atomic(int64_t) malloc_bins[MI_BIN_COUNT + 1];
} mi_stats_t;

#if MI_SECURE
/* A block in the quarantine, with its page (looked up at free already) */
typedef struct mi_quarantined_s {
  mi_block_t* block;
  mi_page_t* page;
} mi_quarantined_t;
#endif

struct mi_tld_s {
  uintptr_t thread_id;
  mi_heap_t* heap_backing;
  mi_heap_t* heaps;               /* all heaps of this thread, backing one included */
  mi_segment_t* segments;         /* owned small and medium segments */
  mi_segment_t* free_segments[2]; /* owned segments with a free page slot, per kind */
  mi_tld_t* thread_next;          /* list of live threads (init.c, under the threads lock) */
  mi_tld_t* thread_prev;
  bool recurse;
  bool exiting; /* in its exit hook: claims no abandoned segment on free */
#if MI_SECURE
  uintptr_t rng;
  mi_quarantined_t quarantine[MI_SECURE_QUARANTINE]; /* freed small blocks not yet reusable */
  /* destroyed heaps' pages not reused yet, oldest first (page.c) */
  mi_page_t* held_first;
  mi_page_t* held_last;
  size_t held_count;
  size_t held_bytes;
#endif
#if MI_GUARDED
  uintptr_t guard_rng;
  long guard_countdown; /* allocations until the next sampled guarded one */
#endif
};

/* ---- Globals ------------------------------------------------------------- */
extern const mi_page_t _mi_page_empty mi_decl_hidden;
extern const mi_heap_t _mi_heap_empty mi_decl_hidden;
extern mi_decl_thread mi_heap_t* _mi_heap_default;
extern mi_stats_t _mi_stats mi_decl_hidden;
extern mi_prim_config_t _mi_os_config mi_decl_hidden;
extern bool _mi_process_is_initialized mi_decl_hidden;
extern uintptr_t _mi_process_key mi_decl_hidden;

/* ---- Locks ---------------------------------------------------------------- */
/* The allocator's one lock type. Every lock has a class; the classes and the
   order in which they may nest are the table in lockorder/classes.h. With
   MI_LOCKORDER the acquire/release calls pass their source location to the
   lock-order checker (src/lockorder); without it they are the plain
   primitives. */
#include "lockorder/classes.h"

typedef struct mi_lock_s {
  mi_prim_lock_t lock;
  mi_lock_class_t lock_class;
  /* A spin lock instead (`spin_word`, not `lock`): for a lock held a few
     dozen instructions at a time and taken on every allocation (the
     profiler's), where the mutex's two calls and two atomic operations are
     most of the cost. Its release is a plain store. */
  bool spin;
  _Atomic(int) spin_word;
} mi_lock_t;

void _mi_lock_init(mi_lock_t* lock, mi_lock_class_t lock_class) mi_decl_hidden;
void _mi_lock_init_spin(mi_lock_t* lock, mi_lock_class_t lock_class) mi_decl_hidden;
void _mi_lock_spin_wait(mi_lock_t* lock) mi_decl_hidden;
static inline void _mi_lock_prim_acquire(mi_lock_t* lock) {
  if (lock->spin) {
    if (mi_likely(atomic_exchange_explicit(&lock->spin_word, 1, memory_order_acquire) == 0)) return;
    _mi_lock_spin_wait(lock);
  } else {
    mi_prim_lock_acquire(&lock->lock);
  }
}
static inline bool _mi_lock_prim_try_acquire(mi_lock_t* lock) {
  if (lock->spin) return (atomic_exchange_explicit(&lock->spin_word, 1, memory_order_acquire) == 0);
  return mi_prim_lock_try_acquire(&lock->lock);
}
static inline void _mi_lock_prim_release(mi_lock_t* lock) {
  if (lock->spin) atomic_store_explicit(&lock->spin_word, 0, memory_order_release);
  else mi_prim_lock_release(&lock->lock);
}
const char* _mi_lock_class_name(mi_lock_class_t lock_class) mi_decl_hidden;
int _mi_lock_class_rank(mi_lock_class_t lock_class) mi_decl_hidden;
#if MI_LOCKORDER
void _mi_lock_acquire_at(mi_lock_t* lock, const char* file, int line) mi_decl_hidden;
bool _mi_lock_try_acquire_at(mi_lock_t* lock, const char* file, int line) mi_decl_hidden;
void _mi_lock_release_at(mi_lock_t* lock, const char* file, int line) mi_decl_hidden;
#define _mi_lock_acquire(lock) _mi_lock_acquire_at((lock), __FILE__, __LINE__)
#define _mi_lock_try_acquire(lock) _mi_lock_try_acquire_at((lock), __FILE__, __LINE__)
#define _mi_lock_release(lock) _mi_lock_release_at((lock), __FILE__, __LINE__)
#else
static inline void _mi_lock_acquire(mi_lock_t* lock) {
  _mi_lock_prim_acquire(lock);
}
static inline bool _mi_lock_try_acquire(mi_lock_t* lock) {
  return _mi_lock_prim_try_acquire(lock);
}
static inline void _mi_lock_release(mi_lock_t* lock) {
  _mi_lock_prim_release(lock);
}
#endif
/* all global locks, in order; for the fork handlers */
void _mi_locks_acquire_all(void) mi_decl_hidden;
void _mi_locks_release_all(void) mi_decl_hidden;
/* fork child: every global lock released (the forking thread, which the
   child's one thread replicates, took them all in prepare), and the
   checker's record of this thread's locks cleared */
void _mi_locks_release_in_fork_child(void) mi_decl_hidden;

/* ---- Cross-file prototypes, grouped by defining file ----------------------- */
/* meta.c */
void _mi_meta_init(void) mi_decl_hidden;
void* _mi_meta_alloc(void) mi_decl_hidden;
void _mi_meta_free(void* p) mi_decl_hidden;

/* segment-cache.c */
void _mi_segment_cache_init(void) mi_decl_hidden;
/* `want`: about how many bytes the caller will touch (0: unknown) */
mi_segment_t* _mi_segment_cache_pop(mi_segment_kind_t kind, size_t size, size_t want) mi_decl_hidden;
bool _mi_segment_cache_push(mi_segment_t* segment) mi_decl_hidden;

/* init.c */
mi_heap_t* _mi_heap_init_thread(void) mi_decl_hidden;
void _mi_process_init_once(void) mi_decl_hidden;
/* xorshift64*: not for secrets, only for spreading (inline: the secure
   build draws one per block it carves and per free) */
static inline uintptr_t _mi_random_next(uintptr_t* state) {
  uint64_t x = *state;
  if (x == 0) x = 0x9E3779B97F4A7C15ULL;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return (uintptr_t)(x * 0x2545F4914F6CDD1DULL);
}
void _mi_deferred_free(mi_heap_t* heap, bool force) mi_decl_hidden;

/* options.c */
void _mi_options_init(void) mi_decl_hidden;
typedef enum mi_option_init_e { MI_OPTION_UNINIT, MI_OPTION_DEFAULTED, MI_OPTION_INITIALIZED } mi_option_init_t;
typedef struct mi_option_desc_s {
  long value;
  const char* name;
  mi_option_init_t init;
  bool is_size; /* value in KiB; accepts KiB/MiB/GiB suffixes */
} mi_option_desc_t;
extern mi_option_desc_t _mi_options[_mi_option_last] mi_decl_hidden;
long _mi_option_get_slow(mi_option_t option) mi_decl_hidden;

/* An option's value, read on hot paths: a table load once it is initialised. */
static inline long _mi_option_get_fast(mi_option_t option) {
  const mi_option_desc_t* desc = &_mi_options[option];
  if (mi_unlikely(desc->init == MI_OPTION_UNINIT)) return _mi_option_get_slow(option);
  return desc->value;
}
/* Where the process set-up has run (it reads every option before the first
   heap exists): on the paths of a block that was handed out. No test, and
   no call that would make the caller keep a stack frame. */
static inline long _mi_option_get_after_init(mi_option_t option) {
  return _mi_options[option].value;
}

/* output.c */
void _mi_message(const char* fmt, ...) mi_decl_hidden mi_attr_printf(1, 2);
void _mi_verbose_message(const char* fmt, ...) mi_decl_hidden mi_attr_printf(1, 2);
void _mi_warning_message(const char* fmt, ...) mi_decl_hidden mi_attr_printf(1, 2);
void _mi_error_callback(int err) mi_decl_hidden;
void _mi_error_message(int err, const char* fmt, ...) mi_decl_hidden mi_attr_printf(2, 3);
void _mi_fputs(mi_output_fun* out, void* arg, const char* prefix, const char* msg) mi_decl_hidden;

/* os.c */
void* _mi_os_alloc_aligned(size_t size, size_t alignment, bool commit, bool allow_large,
                           bool* is_pinned) mi_decl_hidden;
void _mi_os_free(void* p, size_t size) mi_decl_hidden;
bool _mi_os_purge(void* p, size_t size) mi_decl_hidden;

/* os-thp.c: huge pages for large blocks the program uses in whole */
typedef enum mi_thp_use_e { MI_THP_NONE, MI_THP_ASK, MI_THP_PROBE } mi_thp_use_t;
mi_thp_use_t _mi_os_thp_decide(bool clean) mi_decl_hidden; /* for a large block handed out */
size_t _mi_os_thp_resident(const void* start, size_t size, size_t* measured) mi_decl_hidden; /* SIZE_MAX: unknown */
void _mi_os_thp_note(size_t before, size_t after, size_t measured) mi_decl_hidden;           /* a probe freed */
int _mi_os_thp_density(void) mi_decl_hidden; /* the running mean, in 256ths; -1: none yet */
void _mi_os_hint_huge_pages(void* p, size_t size, bool on) mi_decl_hidden;
bool _mi_os_commit(void* p, size_t size) mi_decl_hidden;
bool _mi_os_decommit(void* p, size_t size) mi_decl_hidden;
int _mi_os_protect(void* p, size_t size, bool protect) mi_decl_hidden;
void _mi_os_reset_breaker(void) mi_decl_hidden;

/* arena.c */
void _mi_arenas_init(void) mi_decl_hidden;
void _mi_arenas_reserve_from_options(void) mi_decl_hidden;
void* _mi_arena_alloc(size_t size, bool* is_pinned) mi_decl_hidden;
bool _mi_arena_free(void* p, size_t size) mi_decl_hidden;
bool _mi_arena_contains(const void* p) mi_decl_hidden;
void* _mi_os_alloc_meta(size_t size) mi_decl_hidden;
void _mi_os_free_meta(void* p, size_t size) mi_decl_hidden;
size_t _mi_os_page_size(void) mi_decl_hidden;
size_t _mi_os_large_page_size(void) mi_decl_hidden; /* 0: none */

/* segment-map.c */
bool _mi_segment_map_set(const mi_segment_t* segment, size_t size, bool present) mi_decl_hidden;
mi_segment_t* _mi_segment_containing(const void* p) mi_decl_hidden;
/* Is p inside a chunk that starts one of our segments? It never touches p:
   free validates a pointer with it before reading anything near it. */
#define MI_ADDRESS_BITS 48
#define MI_SEGMENT_MAP_BITS ((size_t)1 << (MI_ADDRESS_BITS - MI_SEGMENT_SHIFT))
extern _Atomic(uint64_t)* _Atomic _mi_segment_map mi_decl_hidden;
static inline bool _mi_segment_map_contains(const void* p) {
  uintptr_t chunk = (uintptr_t)p >> MI_SEGMENT_SHIFT;
  if (chunk >= MI_SEGMENT_MAP_BITS) return false;
  _Atomic(uint64_t)* map = atomic_load_explicit(&_mi_segment_map, memory_order_acquire);
  if (map == NULL) return false;
  uint64_t bit = (uint64_t)1 << (chunk % 64);
  return (atomic_load_explicit(&map[chunk / 64], memory_order_acquire) & bit) != 0;
}

/* segment.c */
void _mi_segments_init(void) mi_decl_hidden;
size_t _mi_segment_page_area(const mi_segment_t* segment, size_t idx, uint8_t** start) mi_decl_hidden;
void _mi_segments_abandoned_cleanup(void) mi_decl_hidden;
mi_page_t* _mi_segment_page_alloc(mi_heap_t* heap, size_t bin) mi_decl_hidden;
void _mi_segment_page_free(mi_page_t* page) mi_decl_hidden;
void _mi_segment_page_hold(mi_page_t* page) mi_decl_hidden;
mi_page_t* _mi_segment_single_alloc(mi_heap_t* heap, size_t size, size_t alignment, bool zero) mi_decl_hidden;
void _mi_segment_single_free(mi_segment_t* segment) mi_decl_hidden;
void _mi_segment_thp_measure(mi_segment_t* segment) mi_decl_hidden; /* a large block freed (os-thp.c) */
void _mi_segment_single_unlink(mi_segment_t* segment) mi_decl_hidden;
void _mi_segment_single_discard(mi_segment_t* segment) mi_decl_hidden;
void _mi_segment_single_release(mi_segment_t* segment) mi_decl_hidden;
bool _mi_segment_single_resize(mi_segment_t* segment, size_t newsize) mi_decl_hidden;
void _mi_segments_abandon(mi_tld_t* tld) mi_decl_hidden;
void _mi_segments_orphan_in_fork_child(mi_tld_t* tld) mi_decl_hidden;
bool _mi_segments_reclaim(mi_heap_t* heap, size_t max, bool force) mi_decl_hidden;
void _mi_segments_take_over(mi_heap_t* heap, size_t bin) mi_decl_hidden;
bool _mi_segment_has_live_blocks(const mi_segment_t* segment) mi_decl_hidden;
bool _mi_segment_claim_on_free(mi_segment_t* segment) mi_decl_hidden;
void _mi_segments_abandoned_fork_child(void) mi_decl_hidden;

/* A free into a small or medium segment of no thread (`owner` 0): with
   mi_option_abandoned_reclaim_on_free, try to claim it if it is abandoned;
   true if this thread owns it now and frees locally. */
static inline bool _mi_free_claims(mi_segment_t* segment, uintptr_t owner) {
  return (owner == 0 && _mi_option_get_fast(mi_option_abandoned_reclaim_on_free) != 0 &&
          _mi_segment_claim_on_free(segment));
}

int64_t _mi_segment_committed(const mi_segment_t* segment) mi_decl_hidden;
void _mi_single_heap_delete(mi_heap_t* from, mi_heap_t* to) mi_decl_hidden;
void _mi_single_heap_destroy(mi_heap_t* heap) mi_decl_hidden;
bool _mi_single_visit(const mi_heap_t* heap, bool (*fn)(mi_page_t* page, void* arg), void* arg) mi_decl_hidden;

/* purge-delay.c: how long freed memory waits, per purge pass */
typedef struct mi_purge_pass_s {
  int64_t now;
  int64_t base;  /* the purge delay option (ms, at least 0) */
  int64_t extra; /* added to it while purged memory keeps coming back */
  bool idle;     /* nothing took memory for one plain delay: it is enough */
} mi_purge_pass_t;
void _mi_purge_pass_begin(mi_purge_pass_t* pass, int64_t now, long delay) mi_decl_hidden;
/* `due` is when the memory was freed plus the plain delay: true if it goes
   now, else *next_due is lowered to when to look at it again */
bool _mi_purge_pass_due(const mi_purge_pass_t* pass, int64_t due, int64_t* next_due) mi_decl_hidden;
void _mi_purge_note_taken(void) mi_decl_hidden; /* a page or segment set up */
void _mi_purge_note_reused(int64_t purged_at, int64_t now, long base) mi_decl_hidden;
/* purged memory taken back (purged_at 0: it never was) */
static inline void _mi_purge_reused(int64_t purged_at) {
  if (purged_at > 0) _mi_purge_note_reused(purged_at, mi_prim_clock_now(), _mi_option_get_fast(mi_option_purge_delay));
}
long _mi_purge_delay_shift(void) mi_decl_hidden;
/* The budget of dirty free pages inside segments: what a pass found of them,
   the bytes of each by how long past its plain delay it has waited */
#define MI_PURGE_AGE_STEPS 64 /* of one plain delay each: the grown delay's reach */
typedef struct mi_purge_budget_s {
  int64_t dirty;                      /* all dirty free pages */
  int64_t waited[MI_PURGE_AGE_STEPS]; /* past the plain delay, not the grown one */
} mi_purge_budget_t;
void _mi_purge_budget_add(mi_purge_budget_t* budget, const mi_purge_pass_t* pass, int64_t due,
                          int64_t bytes) mi_decl_hidden;
/* how many dirty bytes a budget allows beside `in_use` (both budgets' rule) */
int64_t _mi_purge_dirty_allowed(int64_t in_use, int64_t min) mi_decl_hidden;
/* the due time at and before which pages go for the budget (INT64_MIN: none) */
int64_t _mi_purge_budget_cutoff(const mi_purge_budget_t* budget, const mi_purge_pass_t* pass,
                                int64_t in_use) mi_decl_hidden;
int64_t _mi_segment_cache_dirty(void) mi_decl_hidden;                                    /* segment-cache.c */
int64_t _mi_segment_cache_purge(bool force, const mi_purge_pass_t* pass) mi_decl_hidden; /* segment-cache.c */

/* purge.c */
void _mi_purge_init(void) mi_decl_hidden;
void _mi_purge_schedule_page(mi_segment_t* segment, mi_page_t* page) mi_decl_hidden;
void _mi_purge_unlink_segment(mi_segment_t* segment) mi_decl_hidden;
void _mi_purge_track_segment(mi_segment_t* segment) mi_decl_hidden;
void _mi_purge_wake(void) mi_decl_hidden;
void _mi_purge_due_after_delay(void) mi_decl_hidden;
void _mi_purge_due_in(long ms) mi_decl_hidden;
void _mi_purge_run(bool force) mi_decl_hidden;
void _mi_purge_maybe(void) mi_decl_hidden;
void _mi_purge_thread_stop(void) mi_decl_hidden;
void _mi_purge_fork_child_begin(void) mi_decl_hidden;
void _mi_purge_fork_child_end(void) mi_decl_hidden;
/* purge lock, taken by segment code when it must not race the purge thread */
extern mi_lock_t _mi_purge_lock mi_decl_hidden;

/* page.c */
void* _mi_malloc_generic(mi_heap_t* heap, size_t size, bool zero) mi_decl_hidden;
void _mi_page_retire(mi_page_t* page) mi_decl_hidden;
void _mi_page_collect(mi_page_t* page) mi_decl_hidden;
void _mi_page_init(mi_heap_t* heap, mi_page_t* page, size_t bin, size_t area) mi_decl_hidden;
void _mi_page_queue_push(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) mi_decl_hidden;
void _mi_page_queue_remove(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) mi_decl_hidden;
bool _mi_heap_direct_consistent(const mi_heap_t* heap) mi_decl_hidden;
mi_page_queue_t* _mi_page_queue_of(mi_heap_t* heap, const mi_page_t* page) mi_decl_hidden;
void _mi_page_unfull(mi_page_t* page) mi_decl_hidden;
size_t _mi_bin_size(size_t bin) mi_decl_hidden;
void _mi_heap_collect_pages(mi_heap_t* heap) mi_decl_hidden;
bool _mi_heap_collect_pages_at_exit(mi_heap_t* heap) mi_decl_hidden;
#if MI_SECURE
void _mi_page_hold(mi_tld_t* tld, mi_page_t* page) mi_decl_hidden;
void _mi_pages_held_release(mi_tld_t* tld, size_t max_pages, size_t max_bytes) mi_decl_hidden;
#endif

/* free.c */
void _mi_free_generic(mi_segment_t* segment, mi_page_t* page, void* p) mi_decl_hidden;
void _mi_free_remote(mi_page_t* page, mi_block_t* block) mi_decl_hidden;
mi_block_t* _mi_page_block_start(const mi_page_t* page, const void* p) mi_decl_hidden;
void _mi_free_unrecorded(void* p) mi_decl_hidden;

/* alloc.c */
void* _mi_heap_malloc_zero(mi_heap_t* heap, size_t size, bool zero) mi_decl_hidden;
void* _mi_heap_realloc_zero(mi_heap_t* heap, void* p, size_t newsize, bool zero) mi_decl_hidden;
size_t _mi_usable_size(const void* p) mi_decl_hidden;
void* _mi_realloc_move(void* p, size_t size, void* newp, size_t newsize, bool zero) mi_decl_hidden;

/* heap.c */
void _mi_heap_init(mi_heap_t* heap, mi_tld_t* tld, bool is_backing) mi_decl_hidden;
void _mi_heap_free_all_of_thread(mi_tld_t* tld) mi_decl_hidden;
void _mi_heap_orphan_in_fork_child(mi_tld_t* tld) mi_decl_hidden;

/* heap-check.c */
void _mi_heap_check(const mi_heap_t* heap) mi_decl_hidden;

/* stats.c */
void _mi_stats_print_at_exit(void) mi_decl_hidden;
void _mi_stat_increase(mi_stat_count_t* stat, int64_t amount) mi_decl_hidden;
void _mi_stat_decrease(mi_stat_count_t* stat, int64_t amount) mi_decl_hidden;
void _mi_stats_merge_heap(mi_heap_t* heap) mi_decl_hidden;

/* secure.c (MI_SECURE) */
#if MI_SECURE
void _mi_secure_keys_init(void) mi_decl_hidden;
void _mi_secure_page_init(mi_heap_t* heap, mi_page_t* page, bool was_dirty, size_t blocks) mi_decl_hidden;
void _mi_secure_page_freed(mi_page_t* page) mi_decl_hidden;
/* the page's geometry is set (and again when it changes): free checks it against its check word */
void _mi_secure_page_seal(mi_page_t* page) mi_decl_hidden;
mi_decl_noreturn void _mi_secure_corrupted_header(const mi_segment_t* segment) mi_decl_hidden;
/* NULL, or a segment of ours: in the segment map and with our cookie (segment.c) */
bool _mi_segment_ours_or_null(const mi_segment_t* segment) mi_decl_hidden;
void _mi_secure_page_check(const mi_page_t* page) mi_decl_hidden;
void* _mi_secure_malloc(mi_heap_t* heap, size_t size, bool zero) mi_decl_hidden;
void* _mi_secure_block_prepare(mi_page_t* page, mi_block_t* block, size_t size) mi_decl_hidden;
void _mi_secure_set_user(mi_page_t* page, void* p, size_t size) mi_decl_hidden;
typedef enum mi_secure_op_e { MI_OP_FREE, MI_OP_REALLOC, MI_OP_USABLE_SIZE, MI_OP_VISIT } mi_secure_op_t;
/* The size a visit's validation gives a block another thread is freeing. */
#define MI_SECURE_VISIT_SKIP SIZE_MAX
mi_block_t* _mi_secure_validate(const void* p, mi_secure_op_t op, mi_page_t** page_out,
                                size_t* size_out) mi_decl_hidden;
void _mi_secure_free(void* p) mi_decl_hidden;
void _mi_secure_free_copied(void* p) mi_decl_hidden;
void _mi_secure_collected(mi_page_t* page, mi_block_t* block) mi_decl_hidden;
bool _mi_secure_resize_in_place(mi_page_t* page, mi_block_t* block, void* p, size_t newsize) mi_decl_hidden;
void* _mi_secure_realloc_block(mi_heap_t* heap, size_t oldsize, size_t newsize) mi_decl_hidden;
void _mi_secure_quarantine_flush(mi_tld_t* tld, const mi_heap_t* only) mi_decl_hidden;
void _mi_secure_zero_on_free_enabled(void) mi_decl_hidden;
void _mi_secure_guarded_destroyed(mi_segment_t* segment, mi_page_t* page) mi_decl_hidden;
bool _mi_secure_block_is_live(const mi_page_t* page, size_t idx) mi_decl_hidden;
void _mi_secure_segment_unmapped(const void* start, size_t size) mi_decl_hidden;
mi_decl_noreturn void _mi_secure_fatal(const char* what, const void* p, size_t size) mi_decl_hidden;
/* secure-sized.c (MI_SECURE): sized and aligned deallocation */
void _mi_secure_free_sized(void* p, size_t size) mi_decl_hidden;
void _mi_secure_free_aligned(void* p, size_t size, size_t alignment, bool sized) mi_decl_hidden;
/* guard/guard.c (MI_SECURE) */
void _mi_guard_fault_report(void* addr) mi_decl_hidden;
void* _mi_guard_malloc_sampled(mi_heap_t* heap, size_t size, bool zero) mi_decl_hidden;
void _mi_guard_options_changed(void) mi_decl_hidden;
void _mi_guard_free(mi_segment_t* segment, mi_page_t* page) mi_decl_hidden;
void _mi_guard_quarantine_flush(void) mi_decl_hidden;
/* secure-large.c (MI_SECURE): freed large blocks fenced off and held */
void _mi_secure_large_free(mi_segment_t* segment) mi_decl_hidden;
void _mi_secure_block_zero(void* p, size_t size) mi_decl_hidden;
void _mi_secure_large_quarantine_flush(void) mi_decl_hidden;
/* secure-zero.c (MI_SECURE): zero-size allocations, in slots no access reaches */
typedef enum mi_zero_state_e { MI_ZERO_LIVE, MI_ZERO_FREED, MI_ZERO_INVALID } mi_zero_state_t;
/* a slot's address is a multiple of 16 in a segment aligned to more than
   any alignment the API allows */
static inline bool _mi_zero_can_align(size_t alignment, size_t offset) {
  return (offset & ((alignment < MI_MAX_ALIGN_SIZE ? alignment : MI_MAX_ALIGN_SIZE) - 1)) == 0 &&
         alignment <= MI_SEGMENT_SIZE / 2;
}
void _mi_zero_init(void) mi_decl_hidden;
void* _mi_zero_malloc(mi_heap_t* heap, size_t alignment, size_t offset) mi_decl_hidden;
/* p, in a zero segment: a slot handed out (freed now with `release`), or not */
mi_zero_state_t _mi_zero_check(mi_segment_t* segment, const void* p, bool release) mi_decl_hidden;
void _mi_zero_heap_delete(mi_heap_t* from, mi_heap_t* to) mi_decl_hidden;
void _mi_zero_heap_destroy(mi_heap_t* heap) mi_decl_hidden;
/* mi_heap_visit_blocks: an area per zero segment of the heap, its slots
   handed out as blocks of size 0 */
bool _mi_zero_visit(const mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) mi_decl_hidden;
#endif
void _mi_free_local_release(mi_page_t* page, mi_block_t* block) mi_decl_hidden;

/* dhat/ (MI_DHAT): the heap profiler's hooks. The allocator's entry points
   call them after the flag test below, so a build with the profiler in but
   not started pays one relaxed load and a predictable branch. */
#if MI_DHAT
extern _Atomic(bool) _mi_dhat_on mi_decl_hidden;
static inline bool mi_dhat_is_on(void) {
  return atomic_load_explicit(&_mi_dhat_on, memory_order_relaxed);
}
typedef struct mi_dhat_held_s {
  void* p;    /* the block being reallocated (NULL: none) */
  bool found; /* its record was taken out while realloc runs */
  uint32_t site;
  uint64_t size;
  uint64_t time; /* the record's (1 + allocation time): tells its profile */
} mi_dhat_held_t;
void _mi_dhat_process_init(void) mi_decl_hidden;
void _mi_dhat_process_done(void) mi_decl_hidden;
void _mi_dhat_thread_done(void) mi_decl_hidden;
void _mi_dhat_after_fork_child(void) mi_decl_hidden;
void* _mi_dhat_record_alloc(void* p, size_t size) mi_decl_hidden; /* returns p */
void _mi_dhat_record_free(void* p) mi_decl_hidden;
void _mi_dhat_realloc_take(void* p, mi_dhat_held_t* held) mi_decl_hidden;
void _mi_dhat_realloc_done(mi_dhat_held_t* held, void* newp, size_t newsize) mi_decl_hidden;
/* mi_expand: a reallocation that stays in place */
void _mi_dhat_record_resize(void* p, size_t newsize) mi_decl_hidden;
/* a page (or a large block's segment) of a destroyed heap: its live blocks are freed */
void _mi_dhat_record_page_gone(const mi_page_t* page) mi_decl_hidden;
/* a segment's memory goes back to the OS: the records kept beside it go too */
void _mi_dhat_segment_unmapped(const void* segment) mi_decl_hidden;
#define mi_dhat_alloc(p, size) \
  do { \
    if (mi_unlikely(mi_dhat_is_on()) && (p) != NULL) (void)_mi_dhat_record_alloc((p), (size)); \
  } while (0)
#define mi_dhat_free(p) \
  do { \
    if (mi_unlikely(mi_dhat_is_on()) && (p) != NULL) _mi_dhat_record_free(p); \
  } while (0)
#else
#define mi_dhat_alloc(p, size) ((void)0)
#define mi_dhat_free(p) ((void)0)
#endif

/* ---- Inline helpers ---------------------------------------------------------- */

/* Free-list links. Secure builds store them encoded with per-page keys, so an
   overwritten link or a leaked pointer cannot steer allocation. */
#if MI_SECURE
static inline uintptr_t mi_rotl(uintptr_t x, uintptr_t s) {
  s &= 63;
  return (s == 0 ? x : (x << s) | (x >> (64 - s)));
}
static inline uintptr_t mi_rotr(uintptr_t x, uintptr_t s) {
  s &= 63;
  return (s == 0 ? x : (x >> s) | (x << (64 - s)));
}
static inline mi_block_t* mi_block_next(const mi_page_t* page, const mi_block_t* block) {
  return (mi_block_t*)(mi_rotr((uintptr_t)block->next - page->keys[1], page->keys[0]) ^ page->keys[0]);
}
static inline void mi_block_set_next(const mi_page_t* page, mi_block_t* block, const mi_block_t* next) {
  block->next = (mi_block_t*)(mi_rotl((uintptr_t)next ^ page->keys[0], page->keys[0]) + page->keys[1]);
}
/* The next link of a block about to be handed out: a decoded link that does
   not point into the page's carved blocks means the list was corrupted; it is
   never followed. */
static inline mi_block_t* mi_block_next_checked(const mi_page_t* page, const mi_block_t* block) {
  mi_block_t* next = mi_block_next(page, block);
  if (mi_unlikely(next != NULL && ((uint8_t*)next < page->start ||
                                   (uint8_t*)next >= page->start + (size_t)page->capacity * page->block_size))) {
    _mi_secure_fatal("corrupted free list detected at", block, page->block_size);
  }
  return next;
}
#else
/* the link lives inside a free block, which a memory checker sees as
   inaccessible: opened for the access (track.h; nothing without one) */
static inline mi_block_t* mi_block_next(const mi_page_t* page, const mi_block_t* block) {
  (void)page;
  mi_track_link_open(block);
  mi_block_t* next = block->next;
  mi_track_link_close(block);
  return next;
}
#define mi_block_next_checked mi_block_next
static inline void mi_block_set_next(const mi_page_t* page, mi_block_t* block, const mi_block_t* next) {
  (void)page;
  mi_track_link_open(block);
  block->next = (mi_block_t*)next;
  mi_track_link_close(block);
}
#endif

/* Page flags. Only the page's owner (or the thread abandoning or reclaiming
   it) writes them, but any thread holding a block of the page reads them
   (mi_usable_size, a free from another thread): relaxed atomics, plain
   loads and stores on the machine, and no data race in the C11 sense
   (ThreadSanitizer found the race when the field was a plain byte). */
static inline uint8_t mi_page_flags(const mi_page_t* page) {
  return atomic_load_explicit(&page->flags, memory_order_relaxed);
}
static inline void mi_page_flags_store(mi_page_t* page, uint8_t flags) {
  atomic_store_explicit(&page->flags, flags, memory_order_relaxed);
}
static inline void mi_page_flags_add(mi_page_t* page, uint8_t flag) {
  mi_page_flags_store(page, (uint8_t)(mi_page_flags(page) | flag));
}
static inline void mi_page_flags_clear(mi_page_t* page, uint8_t flag) {
  mi_page_flags_store(page, (uint8_t)(mi_page_flags(page) & ~flag));
}

static inline uintptr_t _mi_thread_id(void) {
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
  /* the thread control block's pointer to itself (glibc and musl both keep
     it at %fs:0): unique among live threads, and free's compare of the
     owner reads it in the compare itself */
#if defined(__has_builtin) && __has_builtin(__builtin_thread_pointer)
  return (uintptr_t)__builtin_thread_pointer(); /* the compiler folds it into the compare */
#else
  uintptr_t tcb;
  __asm__("movq %%fs:0, %0" : "=r"(tcb));
  return tcb;
#endif
#else
  /* the address of a thread-local is unique among live threads and costs one
     instruction with the initial-exec TLS model */
  return (uintptr_t)&_mi_heap_default;
#endif
}

static inline mi_segment_t* _mi_ptr_segment(const void* p) {
  return (mi_segment_t*)((uintptr_t)p & ~(uintptr_t)MI_SEGMENT_MASK);
}

static inline mi_page_t* _mi_segment_page_of(mi_segment_t* segment, const void* p) {
  size_t idx = ((uintptr_t)p - (uintptr_t)segment) >> segment->page_shift;
  return &segment->pages[idx];
}

static inline mi_segment_t* _mi_page_segment(const mi_page_t* page) {
  return _mi_ptr_segment(page);
}

static inline size_t _mi_align_up(size_t n, size_t align) {
  return (n + align - 1) & ~(align - 1);
}

static inline bool _mi_is_power_of_two(size_t x) {
  return (x != 0 && (x & (x - 1)) == 0);
}

static inline bool _mi_mul_overflow(size_t count, size_t size, size_t* total) {
  return mi_mul_overflow(count, size, total);
}

/* count * size for the calls that reallocate an array. On overflow, without
   a block: false, errno ENOMEM. With one: a size no allocation can have, so
   that the call fails with ENOMEM only after it has validated the pointer
   (secure builds report a bad one whatever the size). */
static inline bool _mi_realloc_total(const void* p, size_t count, size_t size, size_t* total) {
  if (!mi_mul_overflow(count, size, total)) return true;
  if (p == NULL) {
    errno = ENOMEM;
    return false;
  }
  *total = SIZE_MAX;
  return true;
}

/* Size class of a request; requests above MI_MEDIUM_BLOCK_MAX have no bin. */
/* page.c: the bins of sizes up to MI_BIN_WSIZE_MAX words, by word count */
extern const uint8_t _mi_bin_of_wsize[MI_BIN_WSIZE_MAX + 1] mi_decl_hidden;

static inline size_t _mi_bin(size_t size) {
  if (mi_likely(size <= MI_BIN_WSIZE_BYTES_MAX)) return _mi_bin_of_wsize[(size + 7) >> 3];
  size_t s = size - 1;
  size_t b = mi_bsr64((unsigned long long)s);
  return 9 + (b - 7) * 8 + ((s >> (b - 3)) & 7);
}

/* The page a request of `size` takes its block from: up to
   MI_BIN_WSIZE_BYTES_MAX one load from the heap's direct table; past it
   (and up to MI_MEDIUM_BLOCK_MAX, which the caller checks) its bin's queue. */
static inline mi_page_t* _mi_heap_page_for(mi_heap_t* heap, size_t size) {
  if (mi_likely(size <= MI_BIN_WSIZE_BYTES_MAX)) return heap->pages_direct[(size + 7) >> 3];
  return heap->pages[_mi_bin(size)].first;
}

/* The thread's generator (secure builds: page keys, the quarantine slot, the
   carving shuffle), seeded on first use from the process key and the thread. */
#if MI_SECURE
static inline uintptr_t _mi_tld_random(mi_tld_t* tld) {
  if (mi_unlikely(tld->rng == 0)) tld->rng = (_mi_process_key ^ (tld->thread_id * 0x9E3779B97F4A7C15ULL)) | 1;
  return _mi_random_next(&tld->rng);
}
#endif

static inline mi_heap_t* mi_get_default_heap(void) {
  return _mi_heap_default;
}

static inline bool mi_heap_is_initialized(const mi_heap_t* heap) {
  return (heap != &_mi_heap_empty);
}

#if MI_DEBUG > 0
void _mi_assert_fail(const char* assertion, const char* fname, unsigned line, const char* func) mi_decl_hidden;
#define mi_assert(x) ((x) ? (void)0 : _mi_assert_fail(#x, __FILE__, __LINE__, __func__))
#else
#define mi_assert(x) ((void)0)
#endif
#if MI_DEBUG > 1
#define mi_assert_internal mi_assert
#else
#define mi_assert_internal(x) ((void)0)
#endif

#endif
