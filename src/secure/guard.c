/* Guard pages at work: sampled guarded allocations (MI_GUARDED) in the
   manner of GWP-ASan and electric fence, and the report printed when a
   program faults on any guard page of the secure build (or on a zero-size
   allocation, secure-zero.c).

   A sampled allocation gets a single-block segment of its own, placed so the
   block ends exactly where the guard page after it begins (to 16 bytes, or to
   the byte with option guarded_precise): an overflow off its end faults at
   once. When it is freed its pages are made inaccessible and given back to
   the OS, and it waits in a bounded quarantine, so a use after free faults
   too (segment/secure-guard-quarantine.c). */
#include "../api/api.h"
#include "secure.h"

#include <limits.h>
#include <stdio.h>

/* ---- Fault reports -------------------------------------------------------- */

/* The first line, then (unless another report is under way) the block,
   the thread and the stack from the faulting instruction; the signal then
   takes its course. `requested`: the size asked for, where known. */
static void mi_guard_say(const char* what, const char* kind, const void* addr, const void* block, size_t size,
                         size_t requested, const mi_fault_where_t* where) {
  char buf[256];
  (void)snprintf(buf, sizeof(buf), "mimalloc: error: %s at 0x%zx in block 0x%zx (size %zu)\n", what,
                 (size_t)(uintptr_t)addr, (size_t)(uintptr_t)block, size);
  mi_prim_out_stderr(buf); /* in a signal handler: straight to stderr */
  if (!_mi_secure_report_claim(false)) return;
  const uint8_t* a = (const uint8_t*)addr;
  const uint8_t* b = (const uint8_t*)block;
  mi_secure_report_t report = {.kind = kind,
                               .what = what,
                               .address = addr,
                               .size = size,
                               .block = block,
                               .block_size = size,
                               .requested = requested,
                               .offset = (b != NULL && a >= b ? (size_t)(a - b) : MI_REPORT_UNKNOWN)};
  _mi_secure_report_lines(&report);
  _mi_secure_report_detail_at(&report, where);
  _mi_secure_report_release();
}

/* Called from the fault handler: say what a fault on one of our pages hit. */
void _mi_guard_fault_report(void* addr, const mi_fault_where_t* where) {
  /* the guard page after a block longer than a chunk (huge, or aligned
     past half a segment) lies in a continuation chunk: the map walks down */
  mi_segment_t* segment = _mi_segment_containing(addr);
  if (segment == NULL) return;
  if (segment->cookie != ((uintptr_t)segment ^ _mi_process_key)) return;
  if ((size_t)((uint8_t*)addr - (uint8_t*)segment) >= segment->segment_size) return;
  if (segment->kind == MI_SEGMENT_ZERO) {
    /* nothing of it but its header is ever accessible: the address is a
       zero-size allocation's slot, or next to one (secure-zero.c) */
    char buf[128];
    (void)snprintf(buf, sizeof(buf), "mimalloc: error: access to a zero-size allocation detected at 0x%zx (size 0)\n",
                   (size_t)(uintptr_t)addr);
    mi_prim_out_stderr(buf);
    if (!_mi_secure_report_claim(false)) return;
    mi_secure_report_t report = {.kind = "zero-size-block-use",
                                 .what = "access to a zero-size allocation detected at",
                                 .address = addr,
                                 .requested = 0,
                                 .offset = MI_REPORT_UNKNOWN};
    _mi_secure_report_lines(&report);
    _mi_secure_report_detail_at(&report, where);
    _mi_secure_report_release();
    return;
  }
  size_t psize = _mi_os_page_size();
  uint8_t* a = (uint8_t*)addr;
  uint8_t* s = (uint8_t*)segment;
  if (a >= s + segment->info_size - psize && a < s + segment->info_size) {
    mi_guard_say("heap buffer underflow into the metadata guard page detected", "heap-buffer-underflow", addr, s, 0,
                 MI_REPORT_UNKNOWN, where);
    return;
  }
  if (segment->kind == MI_SEGMENT_SINGLE) {
    const mi_page_t* page = &segment->pages[0];
    if (page->guard_offset != 0 && a >= s + page->guard_offset && a < s + page->guard_offset + psize) {
      mi_guard_say(page->is_guarded ? "guarded heap buffer overflow detected"
                                    : "heap buffer overflow into a guard page detected",
                   "heap-buffer-overflow", addr, page->start, page->block_size,
                   page->is_guarded ? page->guarded_size : MI_REPORT_UNKNOWN, where);
    } else if (page->is_guarded && page->guarded_freed && a >= page->start - psize && a < s + page->guard_offset) {
      mi_guard_say("use-after-free detected in guarded block", "use-after-free", addr, page->start, page->block_size,
                   MI_REPORT_UNKNOWN, where);
    } else if (page->large_fenced && a >= page->start - psize && a < s + page->guard_offset) {
      mi_guard_say("use-after-free detected in freed large block", "use-after-free", addr, page->start,
                   page->block_size, MI_REPORT_UNKNOWN, where);
    }
    return;
  }
  mi_page_t* page = _mi_segment_page_of(segment, addr);
  uint8_t* start;
  size_t area = _mi_segment_page_area(segment, page->index, &start);
  if (a >= start + area && a < start + area + psize) {
    mi_guard_say("heap buffer overflow into a guard page detected", "heap-buffer-overflow", addr,
                 start + area - page->block_size, page->block_size, MI_REPORT_UNKNOWN, where);
  } else if (a >= start && a < start + area && page->held_fenced &&
             atomic_load_explicit(&page->state, memory_order_relaxed) == MI_PAGE_HELD) {
    /* a destroyed heap's page, fenced while it is held (held-pages.c): the block the access hit */
    uint8_t* block = start;
    size_t size = 0;
    if (page->block_size != 0 && a >= page->start) {
      block = page->start + (size_t)(a - page->start) / page->block_size * page->block_size;
      size = page->block_size;
    }
    mi_guard_say("use-after-free detected in destroyed heap's block", "destroyed-heap-block-use", addr, block, size,
                 MI_REPORT_UNKNOWN, where);
  }
}

#if MI_GUARDED

/* ---- Sampling -------------------------------------------------------------- */

/* Each guarded block costs a segment and a few memory mappings: past this
   many live ones, sampling pauses (the process's mapping limit is shared with
   everything else). */
#define MI_GUARD_MAX_LIVE 2048
/* with sampling off, allocations between two looks at the rate option */
#define MI_GUARD_RECHECK (1L << 20)

static long mi_guard_next_countdown(mi_heap_t* heap, long rate) {
  if (heap->guard_rng == 0) {
    uintptr_t seed =
        (heap->guard_own_rate ? heap->guard_seed : (uintptr_t)mi_option_get(mi_option_guarded_sample_seed));
    /* the heap's address: two heaps of a thread draw different sequences */
    heap->guard_rng = (seed != 0 ? seed : (_mi_process_key ^ heap->thread_id ^ (uintptr_t)heap)) | 1;
  }
  /* uniform in [1, 2*rate-1]: one in `rate` on average, not predictable */
  return 1 + (long)(_mi_random_next(&heap->guard_rng) % (uintptr_t)(2 * rate - 1));
}

/* Called when the thread's countdown has run out (the allocation fast path
   only decrements it). Decides whether this allocation is the sampled one
   and sets the countdown to the next decision. */
static bool mi_guard_sample(mi_heap_t* heap, size_t size) {
  long rate = (heap->guard_own_rate ? heap->guard_rate : _mi_option_get_fast(mi_option_guarded_sample_rate));
  if (rate <= 0) {
    heap->guard_countdown = MI_GUARD_RECHECK; /* look at the option again now and then */
    return false;
  }
  if (heap->guard_rng == 0) {
    /* a new heap, or its settings just changed: start a fresh sequence */
    heap->guard_countdown = (rate == 1 ? 0 : mi_guard_next_countdown(heap, rate));
    if (heap->guard_countdown > 0) return false;
  }
  size_t min = (heap->guard_own_bound ? heap->guard_min : (size_t)_mi_option_get_fast(mi_option_guarded_min));
  size_t max = (heap->guard_own_bound ? heap->guard_max : (size_t)_mi_option_get_fast(mi_option_guarded_max));
  if (size < min || size > max) {
    heap->guard_countdown = 1; /* the next allocation in range is the sampled one */
    return false;
  }
  heap->guard_countdown = (rate == 1 ? 1 : mi_guard_next_countdown(heap, rate));
  return true;
}

static void mi_guard_restart(mi_heap_t* heap) {
  heap->guard_countdown = 0;
  heap->guard_rng = 0;
}

/* An option of the sampling changed: the calling thread's heaps decide
   afresh at their next allocation; other threads' when their countdown
   runs out. */
void _mi_guard_options_changed(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) mi_guard_restart(h);
}

/* The heap's own sampling: from its next allocation, whatever the options
   say (upstream's per-heap settings). A rate above LONG_MAX samples as
   rarely as can be counted. Only the heap's thread calls these (a heap is
   its thread's), so plain stores do. */
void mi_heap_guarded_set_sample_rate(mi_heap_t* heap, size_t sample_rate, size_t seed) {
  if (heap == NULL) return;
  mi_heap_handle_check(heap);
  if (!mi_heap_is_initialized(heap)) return;
  heap->guard_rate = (sample_rate > (size_t)LONG_MAX ? LONG_MAX : (long)sample_rate);
  heap->guard_seed = (uintptr_t)seed;
  heap->guard_own_rate = true;
  mi_guard_restart(heap);
}

void mi_heap_guarded_set_size_bound(mi_heap_t* heap, size_t min, size_t max) {
  if (heap == NULL) return;
  mi_heap_handle_check(heap);
  if (!mi_heap_is_initialized(heap)) return;
  heap->guard_min = min;
  heap->guard_max = (max < min ? min : max);
  heap->guard_own_bound = true;
  mi_guard_restart(heap);
}

void* _mi_guard_malloc_sampled(mi_heap_t* heap, size_t size, bool zero) {
  if (!mi_guard_sample(heap, size)) return NULL;
  if (atomic_fetch_add_explicit(&_mi_guard_live, 1, memory_order_relaxed) >= MI_GUARD_MAX_LIVE) {
    atomic_fetch_sub_explicit(&_mi_guard_live, 1, memory_order_relaxed);
    return NULL;
  }
  size_t bsize = (size == 0 ? 1 : size);
  if (!mi_option_is_enabled(mi_option_guarded_precise)) bsize = _mi_align_up(bsize, MI_MAX_ALIGN_SIZE);
  /* a single block of that size: its guard page sits right after its area */
  mi_page_t* page = _mi_segment_single_alloc(heap, bsize, 0, false);
  if (page == NULL) {
    atomic_fetch_sub_explicit(&_mi_guard_live, 1, memory_order_relaxed);
    return NULL; /* the caller falls back to an ordinary block */
  }
  mi_segment_t* segment = _mi_page_segment(page);
  page->start = (uint8_t*)segment + page->guard_offset - bsize;
  _mi_segment_single_set_block_size(page, bsize);
  atomic_fetch_add_explicit(&_mi_stats.guarded_total, 1, memory_order_relaxed);
  page->is_guarded = true;
  mi_guard_stacks_record(segment, false); /* for a report's "allocated by" */
  page->guarded_freed = false;
  _mi_secure_block_prepare(page, (mi_block_t*)page->start, size);
  if (zero) memset(page->start, 0, size); /* past it: canary bytes */
  return page->start;
}

#endif
