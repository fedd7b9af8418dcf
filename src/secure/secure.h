/* The secure wing (MI_SECURE): detection of heap misuse on every entry point.

   - Every block carries, in its last 8 bytes, an encoded trailer with the
     offset where the caller's data ends and a check tied to the block's
     address; canary bytes fill the slack after the data. A write past the
     requested size breaks one or the other and is caught at free/realloc.
   - A bitmap per page marks the blocks handed out. Free validates the pointer
     through the segment map (it is never dereferenced before that), the
     segment cookie, the page state, the block boundary (or, for aligned
     blocks, a keyed tag just before the pointer) and the bit: a double free,
     an interior, foreign, stack or global pointer is caught exactly.
     Only the owning thread writes the bits (plain load and store, no atomic
     read-modify-write); a free from another thread only reads its bit, and
     the owner checks and clears it when it collects the block, so even two
     racing frees of one block from two threads are caught (at collection).
   - Freed blocks are zeroed (option zero_on_free) and checked whole to
     still be zero when handed out again, so a write through a stale pointer
     is caught at that allocation (blocks above MI_SECURE_UAF_CHECK_MAX but
     at their first hand-out from a page set up on memory they never used);
     large blocks are fenced instead.
   - Small blocks freed by their owner wait in a per-thread quarantine and
     leave it in random order. Fresh free lists are carved in random order.
   Every violation prints one line and aborts.

   This header declares what the core calls (only base types in it: any
   layer may include it). The rooms: block.h (the block format), alloc.c,
   free.c, validate.h and validate.c, memory.h and memory.c (zeroing and the
   check at reuse), report.c, keys.c; guard.c (sampled guard pages),
   secure-large.c (freed large blocks fenced off), secure-zero.c and zero-heaps.c
   (zero-size allocations), secure-sized.c (sized and aligned deallocation), carve.c (the
   shuffled carve of a page), held-pages.c (destroyed heaps' pages),
   segment-checks.c (a segment's guard pages and header checks),
   heap-handles.c (the heap handles the program passes). */
#ifndef MI_SECURE_H
#define MI_SECURE_H

#include "../base/base.h"

/* The secure wing's rooms (MI_SECURE). Declared in every build, so the
   core's `if (MI_SECURE)` choices compile both ways; defined only in the
   secure library. */
void _mi_secure_keys_init(void) mi_decl_hidden;
/* The secure build's own figures, for the statistics' JSON (secure-stats.c) */
typedef struct mi_secure_stats_s {
  int64_t reports;                   /* misuse reports printed */
  int64_t quarantine_blocks;         /* small blocks in the calling thread's quarantine */
  int64_t quarantine_capacity;       /* ... of how many slots */
  int64_t large_quarantine_blocks;   /* freed large blocks held inaccessible */
  int64_t guarded_quarantine_blocks; /* freed guarded samples held inaccessible */
  int64_t guarded_live;              /* sampled guarded blocks in use (and held) */
  int64_t guarded_total;             /* ... handed out since the start */
  int64_t guard_pages_set;           /* guard pages made inaccessible (protect calls) */
  int64_t held_pages;                /* destroyed heaps' pages held by the calling thread */
} mi_secure_stats_t;
void _mi_secure_stats_get(mi_secure_stats_t* stats) mi_decl_hidden;
size_t _mi_secure_quarantine_count(const mi_tld_t* tld) mi_decl_hidden;
void _mi_guard_stats_get(int64_t* live, int64_t* total, int64_t* quarantined) mi_decl_hidden;
int64_t _mi_secure_large_quarantined(void) mi_decl_hidden;
/* carve.c: the blocks of a page's extension, linked in random order */
mi_block_t* _mi_secure_carve(mi_page_t* page, uint8_t* start, size_t want, mi_block_t** last_out) mi_decl_hidden;
/* held-pages.c: destroyed heaps' pages, held by their thread before reuse */
void _mi_secure_page_hold(mi_tld_t* tld, mi_page_t* page) mi_decl_hidden;
void _mi_secure_pages_held_release(mi_tld_t* tld, size_t max_pages, size_t max_bytes) mi_decl_hidden;
void _mi_secure_page_init(mi_heap_t* heap, mi_page_t* page, bool was_dirty, size_t block_size,
                          size_t blocks) mi_decl_hidden;
void _mi_secure_page_freed(mi_page_t* page) mi_decl_hidden;
/* the page's geometry is set (and again when it changes): free checks it against its check word */
void _mi_secure_page_seal(mi_page_t* page) mi_decl_hidden;
mi_decl_noreturn void _mi_secure_corrupted_header(const mi_segment_t* segment) mi_decl_hidden;
void _mi_secure_page_check(const mi_page_t* page) mi_decl_hidden;
void* _mi_secure_malloc(mi_heap_t* heap, size_t size, bool zero) mi_decl_hidden;
void* _mi_secure_block_prepare(mi_page_t* page, mi_block_t* block, size_t size) mi_decl_hidden;
void _mi_secure_set_user(mi_page_t* page, void* p, size_t size) mi_decl_hidden;
typedef enum mi_secure_op_e { MI_OP_FREE, MI_OP_REALLOC, MI_OP_USABLE_SIZE, MI_OP_VISIT } mi_secure_op_t;
/* What allocated a block, kept with it (block.h: the trailer; a guarded
   block's page), and what a deallocation expects: free and realloc the
   malloc family, delete new, delete[] new[], the aligned deletes the aligned
   news. mimalloc's mi_new family is "like malloc but throws": its blocks
   are neutral, accepted by free and by every delete. Zero-size allocations'
   slots keep no kind. */
typedef enum mi_alloc_kind_e {
  MI_KIND_MALLOC = 0,
  MI_KIND_NEW = 1,
  MI_KIND_NEW_ARRAY = 2,
  MI_KIND_NEW_ALIGNED = 3,
  MI_KIND_NEW_ARRAY_ALIGNED = 4,
  MI_KIND_NEUTRAL = 5, /* mi_new and family */
  MI_KIND_ANY = 7      /* expected only: mi_usable_size, a visit, an observer's look */
} mi_alloc_kind_t;
/* The size a visit's validation gives a block another thread is freeing. */
#define MI_SECURE_VISIT_SKIP SIZE_MAX
/* any kind accepted */
mi_block_t* _mi_secure_validate(const void* p, mi_secure_op_t op, mi_page_t** page_out,
                                size_t* size_out) mi_decl_hidden;
mi_block_t* _mi_secure_validate_kind(const void* p, mi_secure_op_t op, mi_alloc_kind_t kind, mi_page_t** page_out,
                                     size_t* size_out) mi_decl_hidden;
void _mi_secure_free(void* p) mi_decl_hidden;
/* operator delete's: the same, the block's kind expected to be `kind` */
void _mi_secure_delete(void* p, mi_alloc_kind_t kind) mi_decl_hidden;
/* operator new's and mi_new's allocation (no observers): a block of that kind */
void* _mi_secure_new(mi_heap_t* heap, size_t size, mi_alloc_kind_t kind) mi_decl_hidden;
/* p, just allocated (as malloc's kind), becomes of that kind */
void _mi_secure_kind_set(void* p, mi_alloc_kind_t kind) mi_decl_hidden;
/* cxx-operators.c: whether the process's operator new and delete are the
   library's (a program that replaces some of them pairs its own with ours,
   or with malloc and free: kinds are then not told apart) */
bool _mi_cxx_operators_ours(void) mi_decl_hidden;
#if MI_STAT >= 2
size_t _mi_secure_page_requested(const mi_page_t* page) mi_decl_hidden; /* stats/requested.c */
#endif
/* A reallocation's old block, just copied from (zeroed in the cache). (The
   free serves while the pprof sampler runs too: a sampled block's free is
   told, secure/free.c.) */
void _mi_secure_free_copied(void* p) mi_decl_hidden;
mi_decl_noreturn void _mi_secure_report_collected(const mi_page_t* page, const mi_block_t* block) mi_decl_hidden;
bool _mi_secure_resize_in_place(mi_page_t* page, mi_block_t* block, void* p, size_t newsize) mi_decl_hidden;
void* _mi_secure_realloc_block(mi_heap_t* heap, size_t oldsize, size_t newsize) mi_decl_hidden;
void* _mi_secure_realloc(mi_heap_t* heap, void* p, size_t newsize, bool zero) mi_decl_hidden;
/* The same while the pprof sampler alone runs (src/api/alloc.c). */
void* _mi_secure_realloc_sampling(mi_heap_t* heap, void* p, size_t newsize, bool zero) mi_decl_hidden;
void _mi_secure_quarantine_flush(mi_tld_t* tld, const mi_heap_t* only) mi_decl_hidden;
void _mi_secure_thread_collect(mi_tld_t* tld, bool everything) mi_decl_hidden;
void _mi_secure_zero_on_free_enabled(void) mi_decl_hidden;
/* mi_heap_visit_blocks: the live blocks of a page, by its bitmap */
bool _mi_secure_visit_page(const mi_heap_t* heap, mi_page_t* page, const mi_heap_area_t* area,
                           mi_block_visit_fun* visitor, void* arg) mi_decl_hidden;
void _mi_secure_segment_unmapped(const void* start, size_t size) mi_decl_hidden;
/* A misuse the secure build reports (base/secure-report.c): the first line
   (what, which address, which size) and what else the detecting code
   knows of the block. */
#define MI_REPORT_UNKNOWN SIZE_MAX
typedef struct mi_secure_report_s {
  const char* kind;    /* the JSON's `kind` ("double-free", ...); NULL: told by `what` */
  const char* what;    /* the first line's text */
  const void* address; /* the first line's address */
  size_t size;         /* the first line's size */
  const void* block;   /* the block's start; NULL if not known */
  size_t block_size;   /* its size in its page (its size class); 0 if not known */
  size_t requested;    /* the size the program asked for; MI_REPORT_UNKNOWN if not known */
  size_t offset;       /* of the bad byte from the block's start; MI_REPORT_UNKNOWN if not known */
  const char* late;    /* found after the fact: when ("at the block's free"); NULL if at the misuse */
} mi_secure_report_t;
mi_decl_noreturn void _mi_secure_fatal_report(mi_secure_report_t* report) mi_decl_hidden;
/* a block's misuse: the block, its size (0: not known), the size asked for
   and the bad byte's offset (MI_REPORT_UNKNOWN: not known), and when it was
   found if after the fact (NULL: at the misuse) */
mi_decl_noreturn void _mi_secure_report_block(const char* what, const void* p, const void* block, size_t block_size,
                                              size_t requested, size_t offset, const char* late) mi_decl_hidden;
/* a freed block (zeroed) written to: the first byte not zero from `from` */
mi_decl_noreturn void _mi_secure_report_stale_write(const void* block, size_t block_size, size_t from,
                                                    const char* late) mi_decl_hidden;
/* the first line alone known */
mi_decl_noreturn void _mi_secure_fatal(const char* what, const void* p, size_t size) mi_decl_hidden;
/* a block about to be handed out whose free-list link does not decode to
   a block of its page: written after its free (offset 0, caught late) */
mi_decl_noreturn void _mi_secure_report_free_list(const void* block, size_t block_size) mi_decl_hidden;
/* one report at a time: false if this thread is reporting already, or
   (without `wait`) another is; with `wait`, waits for the other to end the
   process */
bool _mi_secure_report_claim(bool wait) mi_decl_hidden;
void _mi_secure_report_release(void) mi_decl_hidden;
/* the lines after the first: the block, the thread, caught late */
void _mi_secure_report_lines(mi_secure_report_t* report) mi_decl_hidden;
/* the report's kind, thread and the lines after the first (secure/report-detail.c
   adds the stacks and the JSON copy, through the listeners' secure_report) */
const char* _mi_secure_report_kind(const mi_secure_report_t* report) mi_decl_hidden;
/* secure/report-detail.c: the stack where it was seen, the JSON copy; a
   fault's, from the faulting instruction and its frame */
void _mi_secure_report_detail(const mi_secure_report_t* report) mi_decl_hidden;
void _mi_secure_report_detail_at(const mi_secure_report_t* report, const mi_fault_where_t* where) mi_decl_hidden;
/* heap-handles.c: a heap handle the program passes, checked before any of
   it is read but its check word (the allocation entry points that take a
   heap pay a load, an xor and a compare); a heap that goes clears it */
mi_decl_noreturn void _mi_secure_heap_invalid(const mi_heap_t* heap) mi_decl_hidden;
/* the heap has gone (its slot starts at it): its word cleared, its slot
   kept from the next heaps for a while */
void _mi_secure_heap_retire(mi_heap_t* heap) mi_decl_hidden;
void _mi_secure_heap_slots_release(void) mi_decl_hidden; /* white-box tests: every retired slot reusable */
#if MI_SECURE
extern uintptr_t _mi_secure_heap_key mi_decl_hidden;
static inline uintptr_t _mi_heap_handle_word(const mi_heap_t* heap) {
  return (uintptr_t)heap ^ _mi_secure_heap_key;
}
#endif
/* The empty heap (an uninitialised thread's default, which the calls on
   the default heap pass on) has no check word and is let through: it holds
   no page, and the slow path sets the thread up. */
static inline void mi_heap_handle_check(const mi_heap_t* heap) {
#if MI_SECURE
  if (mi_unlikely(heap->handle_check != _mi_heap_handle_word(heap)) && heap != &_mi_heap_empty) {
    _mi_secure_heap_invalid(heap);
  }
#else
  (void)heap;
#endif
}
/* secure-sized.c (MI_SECURE): sized and aligned deallocation */
void _mi_secure_check_sized(void* p, size_t size, mi_alloc_kind_t kind) mi_decl_hidden;
void _mi_secure_check_aligned(void* p, size_t size, size_t alignment, bool sized, mi_alloc_kind_t kind) mi_decl_hidden;
/* secure/guard.c (MI_SECURE) */
void _mi_guard_fault_report(void* addr, const mi_fault_where_t* where) mi_decl_hidden;
void* _mi_guard_malloc_sampled(mi_heap_t* heap, size_t size, bool zero) mi_decl_hidden;
void _mi_guard_options_changed(void) mi_decl_hidden;
/* base/stack-walk.c: the return addresses from frame `fp` (0: the caller's)
   outwards, at most `max` */
size_t _mi_stack_walk(uintptr_t* pcs, size_t max, uintptr_t fp) mi_decl_hidden;
/* A guarded sample's allocation and free stacks (raw return addresses,
   named when a report needs them), kept in its single-block segment's
   header where the page table's unused entries are (a single-block segment
   uses pages[0] alone). Written by the sample's allocation and free. */
#define MI_GUARD_STACK_FRAMES 16
typedef struct mi_guard_stacks_s {
  long alloc_thread;
  long free_thread; /* 0: not freed */
  uint32_t alloc_count;
  uint32_t free_count;
  uintptr_t alloc[MI_GUARD_STACK_FRAMES];
  uintptr_t free[MI_GUARD_STACK_FRAMES];
} mi_guard_stacks_t;
_Static_assert(sizeof(mi_guard_stacks_t) <= sizeof(mi_page_t) * (MI_SMALL_PAGES_PER_SEGMENT - 1),
               "a guarded sample's stacks fit where its segment's unused page entries are");
static inline mi_guard_stacks_t* mi_guard_stacks_of(mi_segment_t* segment) {
  return (mi_guard_stacks_t*)(void*)&segment->pages[1];
}
/* the caller's stack as the guarded sample's free (or allocation) stack */
static inline void mi_guard_stacks_record(mi_segment_t* segment, bool freed) {
  mi_guard_stacks_t* s = mi_guard_stacks_of(segment);
  if (freed) {
    s->free_thread = mi_prim_thread_os_id();
    s->free_count = (uint32_t)_mi_stack_walk(s->free, MI_GUARD_STACK_FRAMES, 0);
  } else {
    s->alloc_thread = mi_prim_thread_os_id();
    s->alloc_count = (uint32_t)_mi_stack_walk(s->alloc, MI_GUARD_STACK_FRAMES, 0);
    s->free_thread = 0;
    s->free_count = 0;
  }
}
/* segment/secure-guard-quarantine.c (MI_SECURE, MI_GUARDED): freed guarded blocks fenced off and held */
extern _Atomic(long) _mi_guard_live mi_decl_hidden;
void _mi_guard_free(mi_segment_t* segment, mi_page_t* page) mi_decl_hidden;
void _mi_guard_quarantine_flush(void) mi_decl_hidden;
/* segment/secure-large.c (MI_SECURE): freed large blocks fenced off and held */
void _mi_secure_large_free(mi_segment_t* segment) mi_decl_hidden;
void _mi_secure_large_quarantine_flush(void) mi_decl_hidden;
/* base/secure-zeroing.c (MI_SECURE): freed blocks zeroed out of line */
void _mi_secure_block_zero(void* p, size_t size) mi_decl_hidden; /* a large block's */
#if defined(__SSE2__)
void _mi_secure_block_zero_streaming(mi_block_t* block, size_t block_size) mi_decl_hidden;
#endif
/* Set while this thread frees a block it has just read whole (the old block
   of a reallocation that moved, copied from): its lines are in the cache,
   where stores that bypass it would first have to evict them (on an Intel
   Xeon, `realloc` of bench/ took 0.30 s with them, 0.13 s with memset).
   Blocks the program frees may be cold: for them the streaming stores. */
extern mi_decl_thread bool _mi_secure_zero_in_cache;
/* secure-zero.c, zero-heaps.c (MI_SECURE): zero-size allocations, in slots no access reaches */
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
/* segment-checks.c: the segment's guard pages, and its header checked where a page slot is freed */
bool _mi_secure_segment_guards_protect(mi_segment_t* segment) mi_decl_hidden;
/* NULL, or a segment of ours: in the segment map and with our cookie */
bool _mi_secure_segment_ours_or_null(const mi_segment_t* segment) mi_decl_hidden;
void _mi_secure_page_free_check(mi_segment_t* segment, mi_page_t* page) mi_decl_hidden;
void _mi_secure_segment_empty_check(const mi_segment_t* segment) mi_decl_hidden;
void _mi_secure_single_linked(mi_page_t* page, const mi_heap_t* heap) mi_decl_hidden;
void _mi_secure_single_heap_check(const mi_page_t* page) mi_decl_hidden;
void _mi_secure_single_links_check(const mi_page_t* page, mi_page_t* const* head) mi_decl_hidden;
size_t _mi_secure_single_place(size_t segment_size, size_t size, size_t alignment, size_t offset, size_t* area,
                               size_t* block_end) mi_decl_hidden;
bool _mi_secure_single_guard(mi_segment_t* segment, size_t segment_size, mi_page_t* page,
                             size_t block_at) mi_decl_hidden;
/* heap/secure-single-destroyed.c: a destroyed heap's large and guarded blocks */
void _mi_secure_single_destroyed(mi_page_t* page) mi_decl_hidden;
bool _mi_secure_single_guard_lift(mi_segment_t* segment) mi_decl_hidden;

#endif
