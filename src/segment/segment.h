/* Segments (layer above OS memory): their life, the abandonment protocol,
   single-block segments, the segment cache and the purge of free memory.
   Defined in segment/. */
#ifndef MI_SEGMENT_H
#define MI_SEGMENT_H

#include "../os/os.h"
#include "../base/listeners.h" /* the rare events, and who listens */
#include "../secure/hooks.h"   /* the secure policy at a page's set-up and release */

/* segment-cache.c */
void _mi_segment_cache_init(void) mi_decl_hidden;
/* `want`: about how many bytes the caller will touch (0: unknown) */
mi_segment_t* _mi_segment_cache_pop(mi_segment_kind_t kind, size_t size, size_t want,
                                    mi_arena_id_t arena) mi_decl_hidden;
bool _mi_segment_cache_push(mi_segment_t* segment) mi_decl_hidden;
size_t _mi_segment_cache_release(size_t* released) mi_decl_hidden; /* all unmapped: the bytes */
/* segment.c: of a page's never-carved tail, the bytes discarded and not carved since (page/holes.c) */
size_t _mi_page_tail_discarded(const mi_page_t* page) mi_decl_hidden;
size_t _mi_page_tail_units(const mi_page_t* page, size_t* first, size_t* last) mi_decl_hidden; /* the unit's size */

/* segment.c: the life of a segment */
void _mi_segments_init(void) mi_decl_hidden;
size_t _mi_segment_page_area(const mi_segment_t* segment, size_t idx, uint8_t** start) mi_decl_hidden;
/* a page's set-up, with the page layer's (page.c): claim a slot, then setup */
mi_page_t* _mi_segment_page_claim(mi_tld_t* tld, mi_segment_kind_t kind, mi_arena_id_t arena) mi_decl_hidden;
void _mi_segment_page_setup(mi_page_t* page, size_t area, uint8_t* start) mi_decl_hidden;
bool _mi_segment_new(mi_tld_t* tld, mi_segment_kind_t kind, mi_arena_id_t arena) mi_decl_hidden;
void _mi_segment_page_free(mi_page_t* page) mi_decl_hidden;
void _mi_segment_page_hold(mi_page_t* page) mi_decl_hidden;
int64_t _mi_segment_committed(const mi_segment_t* segment) mi_decl_hidden;

static inline mi_segment_kind_t _mi_segment_kind_of_bin(size_t bin) {
  return (bin <= MI_BIN_SMALL_MAX ? MI_SEGMENT_SMALL : MI_SEGMENT_MEDIUM);
}

/* single.c: segments of one large or huge block */
mi_page_t* _mi_segment_single_alloc(mi_heap_t* heap, size_t size, size_t alignment, bool zero) mi_decl_hidden;
mi_page_t* _mi_segment_single_alloc_aligned(mi_heap_t* heap, size_t size, size_t alignment,
                                            size_t offset) mi_decl_hidden;
void _mi_segment_single_free(mi_segment_t* segment) mi_decl_hidden;
void _mi_segment_thp_measure(mi_segment_t* segment) mi_decl_hidden; /* a large block freed (os-thp.c) */
void _mi_segment_single_unlink(mi_segment_t* segment) mi_decl_hidden;
void _mi_segment_single_discard(mi_segment_t* segment) mi_decl_hidden;
void _mi_segment_single_release(mi_segment_t* segment) mi_decl_hidden;
bool _mi_segment_single_resize(mi_segment_t* segment, size_t newsize) mi_decl_hidden;
/* a single block's size changed (guarded placement, a resize): its statistics follow */
void _mi_segment_single_set_block_size(mi_page_t* page, size_t block_size) mi_decl_hidden;
void _mi_single_heap_delete(mi_heap_t* from, mi_heap_t* to) mi_decl_hidden;
/* each of the heap's single blocks freed (`release`: NULL, or the secure
   build's, which fences and holds them as free does) */
void _mi_single_heap_destroy(mi_heap_t* heap, void (*release)(mi_page_t* page)) mi_decl_hidden;
bool _mi_single_visit(const mi_heap_t* heap, bool (*fn)(mi_page_t* page, void* arg), void* arg) mi_decl_hidden;

/* ---- The segment's life for single.c and for the abandonment protocol (page/abandon.c) ---- */
void _mi_segments_single_init(void) mi_decl_hidden;
size_t _mi_segment_info_size(void) mi_decl_hidden;
/* the page count, for a walk of the page table (secure builds: checked) */
size_t _mi_segment_pages(const mi_segment_t* segment) mi_decl_hidden;
mi_segment_t* _mi_segment_alloc(mi_segment_kind_t kind, size_t segment_size, size_t want) mi_decl_hidden;
/* for a heap of arena `arena` (0: none): from that arena only */
mi_segment_t* _mi_segment_alloc_in(mi_segment_kind_t kind, size_t segment_size, size_t want,
                                   mi_arena_id_t arena) mi_decl_hidden;
mi_segment_t* _mi_segment_alloc_sparse(size_t segment_size, size_t aligned_at, size_t alignment,
                                       size_t commit_at) mi_decl_hidden;
void _mi_segment_release(mi_segment_t* segment) mi_decl_hidden;
size_t _mi_segment_unmap(mi_segment_t* segment) mi_decl_hidden; /* the bytes the OS took back */
/* Whether a segment, once free, goes back to the OS or its arena at once
   rather than to the cache (_mi_segment_release): a huge or sparse one, or
   one in pinned memory. */
static inline bool _mi_segment_skips_cache(const mi_segment_t* segment) {
  return segment->is_pinned || segment->is_sparse || segment->segment_size > MI_LARGE_SEGMENT_MAX;
}
size_t _mi_segment_unmap_clean(mi_segment_t* segment, size_t size) mi_decl_hidden;
void _mi_tld_segment_add(mi_tld_t* tld, mi_segment_t* segment) mi_decl_hidden;
void _mi_tld_segment_remove(mi_tld_t* tld, mi_segment_t* segment) mi_decl_hidden;
bool _mi_page_claim_slot(mi_page_t* page, bool* was_clean) mi_decl_hidden;
/* The owner word (docs/teardown-protocol.md): every transition is a CAS from
   the word as observed to a new state with a new generation. */
uint64_t _mi_owner_word(mi_owner_state_t state) mi_decl_hidden;
bool _mi_owner_cas(mi_segment_t* segment, uint64_t observed, mi_owner_state_t state) mi_decl_hidden;
void _mi_owner_move(mi_segment_t* segment, mi_owner_state_t from, mi_owner_state_t from_too,
                    mi_owner_state_t to) mi_decl_hidden;
static inline mi_owner_state_t _mi_owner_state_of(uint64_t word) {
  return (mi_owner_state_t)(word & MI_OWNER_STATE_MASK);
}

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

/* purge.c: the purge pass */
void _mi_purge_init(void) mi_decl_hidden;
void _mi_purge_schedule_page(mi_segment_t* segment, mi_page_t* page) mi_decl_hidden;
void _mi_purge_unlink_segment(mi_segment_t* segment) mi_decl_hidden;
void _mi_purge_track_segment(mi_segment_t* segment) mi_decl_hidden;
void _mi_purge_run(bool force) mi_decl_hidden;

/* background.c: the thread that runs the purge passes and the abandoned
   segments' cleanup when they are due */
typedef void mi_background_cleanup_fun(void);
void _mi_background_init(mi_background_cleanup_fun* cleanup) mi_decl_hidden; /* page/abandon.c's cleanup */
bool _mi_background_due_at(int64_t at) mi_decl_hidden;
void _mi_background_due_reset(void) mi_decl_hidden;
void _mi_background_due_in(long ms) mi_decl_hidden;
void _mi_background_due_after_delay(void) mi_decl_hidden;
void _mi_background_wake(void) mi_decl_hidden;
void _mi_background_maybe(void) mi_decl_hidden;
void _mi_background_stop(void) mi_decl_hidden;
void _mi_background_fork_child_begin(void) mi_decl_hidden;
void _mi_background_fork_child_end(void) mi_decl_hidden;
/* purge lock, taken by segment code when it must not race a purge pass */
extern mi_lock_t _mi_purge_lock mi_decl_hidden;

#endif
