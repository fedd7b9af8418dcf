/* The allocator's data: blocks, pages, segments, heaps, thread data and the
   statistics counters, and the process-wide globals. Every layer reads these
   structures. */
#ifndef MI_BASE_TYPES_H
#define MI_BASE_TYPES_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../../include/mimalloc.h"
#include "../compiler.h"
#include "../config.h"
#include "../prim/prim.h"
#include "sched.h"
#include "track.h"

/* ---- Blocks, pages, segments ---------------------------------------------- */

typedef struct mi_block_s {
  struct mi_block_s* next;
} mi_block_t;

/* State of a page slot inside its segment. Changed by the owning thread
   (taking or freeing the page) and by the background thread (FREE_DIRTY ->
   PURGING -> FREE_CLEAN) only through compare-and-swap, so the two never
   both act on one page. */
typedef enum mi_page_state_e {
  MI_PAGE_IN_USE = 0,
  MI_PAGE_FREE_DIRTY = 1, /* free, memory still committed */
  MI_PAGE_PURGING = 2,    /* the background thread is returning its memory */
  MI_PAGE_FREE_CLEAN = 3, /* free, memory returned (or never touched) */
  MI_PAGE_HELD = 4        /* secure builds: a destroyed heap's page, not reused yet (heap/secure-held-pages.c) */
} mi_page_state_t;

#define MI_PAGE_FLAG_IN_FULL 0x01     /* in the heap's full queue */
#define MI_PAGE_FLAG_HAS_ALIGNED 0x02 /* holds aligned blocks: pointers may be interior */
#define MI_PAGE_FLAG_KEPT 0x04        /* kept empty when its heap took it over (_mi_segments_take_over) */
/* holds a block the pprof sampler took: its frees go the generic way, which tells the sampler */
#define MI_PAGE_FLAG_SAMPLED 0x08
/* a page of the pprof sampler's blocks only, in its heap's queue of them
   (mi_heap_t.prof_pages): what a free or a resize of its blocks must tell
   the sampler, its flag says without a guess */
#define MI_PAGE_FLAG_SAMPLE_PAGE 0x10

typedef struct mi_heap_s mi_heap_t;
typedef struct mi_tld_s mi_tld_t;

/* 64 hole units a page: the unit (the OS page) doubles until the page fits;
   a bigger map would make every page, and so every segment's first page
   (which the others' headers shorten), bigger */
#define MI_HOLES_MAP_WORDS 1

/* A page's holes (page/holes.c): the units of the page (the OS page <<
   shift, from the unit holding its first block) whose memory was
   discarded, all of their blocks free and off every list:
   used + |free| + purged == capacity. */
typedef struct mi_page_holes_s {
  uint64_t map[MI_HOLES_MAP_WORDS];
  uint16_t purged; /* blocks in discarded units (a page holds at most 4096) */
  /* at the last sweep, `used` and the free list's first block (its index +
     1; 0: none): a page unchanged since is skipped (UINT16_MAX: never swept) */
  uint16_t seen_used;
  uint16_t seen_free;
  uint8_t shift;
  /* the never-carved tail (holes.c): MI_HOLES_TAIL_DIRTY (on reused memory,
     not discarded yet), else the first unit of it discarded + 1 (0: none) */
  uint8_t tail;
} mi_page_holes_t;
#define MI_HOLES_TAIL_DIRTY 0x80

typedef struct mi_page_s {
  /* fast-path fields first */
  mi_block_t* free;       /* blocks available to the owner */
  uint32_t used;          /* blocks handed out and not yet freed back to the owner */
  _Atomic(uint8_t) flags; /* MI_PAGE_FLAG_*: written by the owner, read by any thread (mi_page_flags) */
  uint8_t bin;
  uint8_t index; /* slot in the segment */
  /* pprof-sampled blocks live in it (255: that many or more, and stays), under the profiler's lock */
  _Atomic(uint8_t) prof_samples;
  /* with MI_PAGE_FLAG_SAMPLED: a bit per hash of each sampled block's address
     (src/prof/hooks.h, mi_prof_page_bit), so that a free or resize of another
     block of the page is told apart without the profiler's filter; beside
     the flags, which are read just before it */
  _Atomic(uint32_t) prof_bits;
  uint32_t reserved; /* blocks that fit the page */
  size_t block_size;
  uint8_t* start;                    /* first block */
  _Atomic(mi_block_t*) xthread_free; /* blocks freed by other threads */
  mi_heap_t* heap;                   /* owning heap; NULL while abandoned */
  uint32_t capacity;                 /* blocks carved out so far */
  _Atomic(uint32_t) state;           /* mi_page_state_t */
  struct mi_page_s* next;            /* in the heap's queue */
  struct mi_page_s* prev;
  _Atomic(int64_t) purge_at; /* FREE_DIRTY: when its memory may be returned; FREE_CLEAN: when it was */
  size_t committed;          /* bytes of this page's area counted as committed */
#if MI_STAT >= 2
  size_t stat_requested; /* single-block pages: the block's requested size (stats/requested.c) */
#endif
#if MI_SECURE
  uintptr_t keys[2];       /* free-list link encoding */
  uint64_t block_size_inv; /* ceil(2^40 / block_size): block index by multiplication */
  /* keyed check of what free trusts of the page and its segment (page/secure-validate.h); a small or
     medium page flagged MI_PAGE_FLAG_SAMPLED carries it marked (base.h: mi_page_sampled_set), which
     free's check tells apart; atomic: its owner marks it while other threads' frees read it */
  _Atomic(uint64_t) geometry;
  uintptr_t heap_check; /* single-block pages: keyed copy of `heap`, checked when unlinked (segment.c) */
  size_t guard_offset;  /* single-block pages: offset of the guard page after the block (0: none) */
  bool needs_zero;      /* freed with live contents (heap destroy): zero before reuse */
  bool is_guarded;      /* a sampled guarded block: it ends at its guard page, no trailer */
  bool guarded_freed;   /* ... freed: its pages are inaccessible while it waits in quarantine */
  bool large_fenced;    /* a freed large block: its pages discarded and inaccessible (secure-large.c) */
  bool large_zeroed;    /* ... zeroed, not given back: counted in the resident bytes held */
  uint8_t guarded_kind; /* a guarded block: what allocated it (mi_alloc_kind_t; others keep it in the trailer) */
  bool held_fenced;     /* a destroyed heap's page, held: its area inaccessible (heap/secure-held-pages.c) */
  size_t guarded_size;  /* ... where its data ends, from the block's start */
  size_t user_start;    /* single-block pages: where the pointer handed out lies in the block */
  uint64_t handed_out;  /* pages of blocks above 8 KiB: bit per block handed out since set-up (secure/memory.c) */
  _Atomic(uint64_t) used_map[MI_SMALL_PAGE_SIZE / 16 / 64]; /* bit per block: handed out and not freed by the owner */
#endif
#if MI_SECURE_STACKS
  /* MIMALLOC_SECURE_STACKS: its blocks' records, one a block (secure/stacks.c; NULL: none made for it yet) */
  _Atomic(struct mi_stacks_slot_s*) stacks;
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
  uint8_t is_sparse;     /* only the header and the block committed, the hole between them reserved: never cached */
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
  /* each page's holes (page/holes.c), apart from the pages: a bigger
     mi_page_t would cost free's fast path its page lookup (96 bytes a page
     is an index times 3 shifted, 112 one more instruction) */
  mi_page_holes_t holes[MI_SMALL_PAGES_PER_SEGMENT];
} mi_segment_t;

typedef struct mi_page_queue_s {
  mi_page_t* first;
  mi_page_t* last;
} mi_page_queue_t;

typedef struct mi_single_list_s mi_single_list_t;

struct mi_heap_s {
  mi_tld_t* tld;
  uintptr_t thread_id;
#if MI_SECURE
  /* the heap's address xor a process key while it lives, 0 once it is gone:
     a handle the program passes is checked against it (secure.h,
     mi_heap_handle_check) before anything else of it is read */
  uintptr_t handle_check;
#endif
#if MI_OBSERVERS
  /* The observers' countdown (api/observe.h, mi_observe_fast): the bytes the
     fast path hands out before it tells the observers; idle, more than a
     process allocates, so idle and sampling cost the fast path the same
     subtraction and branch. Set for the observers' epoch below. */
  int64_t observe_until;
  uint64_t observe_epoch;
  uint64_t observe_gap; /* the sampler's gap `observe_until` started from */
#endif
  /* the first page of the queue of each size up to MI_BIN_WSIZE_MAX words,
     by the size in words: the fast path's one load where the bin's lookup
     and its queue were two (page.c keeps it in step with the queues) */
  mi_page_t* pages_direct[MI_BIN_WSIZE_MAX + 1];
  mi_page_queue_t pages[MI_BIN_COUNT];
  /* pages of sampled blocks (MI_PAGE_FLAG_SAMPLE_PAGE) by size: the pprof
     sampler places its samples of small blocks there (page.c:
     _mi_page_malloc_sample) */
  mi_page_queue_t prof_pages[MI_BIN_SMALL_MAX + 1];
  mi_heap_t* next;         /* in the tld's list of heaps */
  mi_page_t* single_first; /* this heap's large and huge blocks (under the single lock) */
  size_t page_count;
  uint64_t heartbeat;
  bool is_backing;
  bool has_kept;  /* holds pages flagged MI_PAGE_FLAG_KEPT */
  bool took_over; /* _mi_segments_take_over ran: once, at the heap's first page */
  int arena_id;   /* the one arena it takes memory from (mi_heap_new_in_arena); 0: any shared one, or the OS */
  int tag;        /* mi_heap_new_ex's heap_tag, reported in its areas */
#if MI_SECURE
  struct mi_zero_segment_s* zero_segments; /* its zero-size allocations' segments (under the zero lock) */
#endif
#if MI_STAT
  uint64_t stat_malloc[MI_BIN_COUNT + 1];
#endif
#if MI_GUARDED
  /* sampled guard pages (secure/guard.c), per heap as mi_heap_guarded_set_*
     set them: until they are called, the options decide */
  uintptr_t guard_rng;
  long guard_countdown; /* allocations until the next sampling decision */
  bool guard_own_rate;  /* guard_rate and guard_seed, not the options */
  bool guard_own_bound; /* guard_min and guard_max, not the options */
  long guard_rate;
  uintptr_t guard_seed;
  size_t guard_min;
  size_t guard_max;
#endif
};

typedef struct mi_stat_atomic_s {
  _Atomic(int64_t) current;
  _Atomic(int64_t) peak;
  _Atomic(int64_t) total;
} mi_stat_atomic_t;

typedef struct mi_process_stats_s {
  mi_stat_atomic_t reserved;
  mi_stat_atomic_t committed;
  mi_stat_atomic_t segments;
  mi_stat_atomic_t pages;
  mi_stat_atomic_t abandoned;
  mi_stat_atomic_t large; /* large and huge blocks in use */
  mi_stat_atomic_t threads;
  mi_stat_atomic_t purged;           /* bytes returned to the OS (total) */
  mi_stat_atomic_t meta;             /* bytes reserved for the allocator's metadata (never returned) */
  mi_stat_atomic_t arenas;           /* bytes reserved for arenas (never returned) */
  mi_stat_atomic_t single_bytes;     /* usable bytes of large and huge blocks in use */
  mi_stat_atomic_t malloc_requested; /* bytes the program asked for (MI_STAT >= 2: stats/requested.c) */
  mi_stat_atomic_t holes;            /* bytes discarded in holes of used pages now (page/holes.c) */
  _Atomic(int64_t) holes_blocks;     /* blocks in those holes now */
  _Atomic(int64_t) holes_discard_calls;
  _Atomic(int64_t) holes_reuse_calls;
  mi_stat_atomic_t unformed; /* bytes of never-carved page tails discarded, not carved since (page/holes.c) */
  _Atomic(int64_t) unformed_discard_calls;
  _Atomic(int64_t) unformed_reuse_calls;
  _Atomic(int64_t) mmap_calls;
  _Atomic(int64_t) commit_calls;
  _Atomic(int64_t) purge_calls;
  _Atomic(int64_t) protect_calls; /* guard pages set (mprotect to no access) */
  _Atomic(int64_t) reclaimed;
  _Atomic(int64_t) secure_reports; /* misuse reports (secure builds): counted before the error callback, then abort */
  _Atomic(int64_t) guarded_total;  /* guarded blocks handed out (MI_GUARDED), ever */
  _Atomic(int64_t) malloc_bins[MI_BIN_COUNT + 1];
  /* pages in use by their blocks' bin in upstream's numbering (MI_STAT_BIN_HUGE + 1 bins) */
  mi_stat_atomic_t page_bins[MI_STAT_BIN_COUNT];
} mi_process_stats_t;

#if MI_SECURE
/* A block in the quarantine, with its page (looked up at free already) */
typedef struct mi_quarantined_s {
  mi_block_t* block;
  mi_page_t* page;
} mi_quarantined_t;
#endif

#define MI_PARK_RUNNING 0  /* the thread may use its heaps */
#define MI_PARK_PARKED 1   /* it promised not to until mi_on_thread_idle_end */
#define MI_PARK_SWEEPING 2 /* another thread sweeps its pages; _end waits for it */

struct mi_tld_s {
  uintptr_t thread_id;
  mi_heap_t* heap_backing;
  mi_heap_t* heaps;               /* all heaps of this thread, backing one included */
  mi_segment_t* segments;         /* owned small and medium segments */
  mi_segment_t* free_segments[2]; /* owned segments with a free page slot, per kind */
  mi_tld_t* thread_next;          /* list of live threads (init.c, under the threads lock) */
  mi_tld_t* thread_prev;
  mi_tld_t* same_id_next; /* next in its thread id's bucket (init.c, under the threads lock) */
  bool recurse;
  bool exiting; /* in its exit hook: claims no abandoned segment on free */
  /* set up after its thread's exit hook ran (init.c): `thread_id` is no
     thread's, and `late_mark` (when `late_marked`) tells when the thread has
     ended, if no exit hook comes again */
  bool late;
  bool late_marked;
  mi_prim_thread_mark_t late_mark;
  int64_t holes_last;    /* hole purge: when this thread's last sweep started (ms; 0: never) */
  uint64_t holes_sweeps; /* sweeps so far (every purge_holes_full_every-th skips nothing) */
  /* MI_PARK_*: parked between mi_on_thread_idle_start and _end, when another
     thread may sweep its pages (heap/idle.c) */
  _Atomic(int) park;
  uint64_t purge_gen; /* the last mi_purge_all that swept it */
#if MI_SECURE
  uintptr_t rng;
  mi_quarantined_t quarantine[MI_SECURE_QUARANTINE]; /* freed small blocks not yet reusable */
  /* destroyed heaps' pages not reused yet, oldest first (heap/secure-held-pages.c) */
  mi_page_t* held_first;
  mi_page_t* held_last;
  size_t held_count;
  size_t held_bytes;
#endif
};

/* ---- Globals ------------------------------------------------------------- */
/* Read by every layer, each written by one: the empty page and heap, the
   thread's default heap and the process key (defined in base/globals.c; the
   default heap set by heap/, the key by heap/init.c), the counters
   (base/stat-count.c), the OS's page sizes (os/os.c), the process's set-up
   (heap/init.c). */
extern const mi_page_t _mi_page_empty mi_decl_hidden;
extern const mi_heap_t _mi_heap_empty mi_decl_hidden;
extern mi_decl_thread mi_heap_t* _mi_heap_default;
extern mi_process_stats_t _mi_stats mi_decl_hidden;
extern mi_prim_config_t _mi_os_config mi_decl_hidden;
extern bool _mi_process_is_initialized mi_decl_hidden;
extern uintptr_t _mi_process_key mi_decl_hidden;

#endif
