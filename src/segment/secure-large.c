/* Freed large blocks (secure builds): gone and fenced off until reused.

   A large block (above the medium sizes, in a single-block segment that the
   segment cache can keep) is emptied on free: up to MI_LARGE_ZERO_MAX it is
   zeroed as medium blocks are (with zero on free), past it, when fewer
   than half of its pages are resident, or when the zeroed blocks held would
   pass MI_LARGE_ZEROED_HELD, its pages are given back to the OS (they read
   as zero when next touched). Zeroing is the cheaper where the memory is
   used again: giving back a 1 MiB block's pages cost its next user a page
   fault a page, 256 of them (randsizes, which frees many 1 MiB blocks:
   2.9 s against 0.8 s with them zeroed). Then its pages are made
   inaccessible, and the segment waits in
   a FIFO quarantine of the last `large_quarantine` (64) freed large blocks
   before it goes to the segment cache for reuse. While it waits:
   - a read or write through a stale pointer faults, and the fault handler
     names the freed block (secure/guard.c);
   - a free, realloc or usable_size of it finds its page not in use and
     reports a freed block;
   - the next large allocation of that size gets another segment, so a stale
     write never lands in a new block (as hardened_malloc's large quarantine).
   Held segments cost address space, and the zeroed blocks their memory: at
   most MI_LARGE_ZEROED_HELD. Huge blocks (segments past the cache's sizes) are unmapped at
   once, which fences them too. */
#include "segment.h"
#include "../os/os.h"
#include "../secure/secure.h"

#if MI_SECURE

#define MI_LARGE_QUARANTINE 64
#define MI_LARGE_ZERO_MAX ((size_t)4 << 20)
#define MI_LARGE_ZEROED_HELD ((size_t)64 << 20)
static _Atomic(size_t) mi_large_zeroed_held; /* bytes of the held blocks that were zeroed, not given back */
static _Atomic(mi_segment_t*) mi_large_quarantine[MI_LARGE_QUARANTINE];
static _Atomic(size_t) mi_large_quarantine_next;

/* The pages the block may have touched: from its first page to its guard. */
static uint8_t* mi_large_block_pages(const mi_segment_t* segment, const mi_page_t* page, size_t* len) {
  size_t psize = _mi_os_page_size();
  uint8_t* first = (uint8_t*)((uintptr_t)page->start & ~(uintptr_t)(psize - 1));
  *len = (size_t)((const uint8_t*)segment + page->guard_offset - first);
  return first;
}

/* Whether at least half of the block's pages are resident: else zeroing it
   would fault in the pages it never touched (a 4 MiB buffer used in part:
   the secure fuzz harness's blocks, patterned every 64 KiB, spent a fifth
   of its time there), and giving its pages back is the cheaper. Unknown
   (the query failed): as if resident. */
static bool mi_large_mostly_resident(const uint8_t* first, size_t len) {
  size_t resident = 0;
  if (mi_prim_resident(first, len, &resident) != 0) return true; /* fault path: zeroed as before */
  return resident * 2 >= len / _mi_os_page_size();
}

/* Leaving the quarantine: accessible again (its memory still reads as zero)
   and back to the cache; if it cannot be opened, to the OS. */
static void mi_large_release(mi_segment_t* segment) {
  mi_page_t* page = &segment->pages[0];
  size_t len;
  uint8_t* first = mi_large_block_pages(segment, page, &len);
  page->large_fenced = false;
  if (page->large_zeroed) atomic_fetch_sub_explicit(&mi_large_zeroed_held, page->block_size, memory_order_relaxed);
  page->large_zeroed = false;
  if (_mi_os_protect(first, len, false) == 0) {
    _mi_segment_single_release(segment);
  } else {
    _mi_segment_single_discard(segment); /* fault path: reusing it would fault */
  }
}

/* A large block freed (validated, its bit cleared), by any thread. */
void _mi_secure_large_free(mi_segment_t* segment) {
  _mi_segment_thp_measure(segment); /* before its memory is zeroed or given back (os-thp.c) */
  mi_page_t* page = &segment->pages[0];
  long held = _mi_option_get_fast(mi_option_large_quarantine);
  if (held > MI_LARGE_QUARANTINE) held = MI_LARGE_QUARANTINE;
  if (held <= 0 || segment->segment_size > MI_LARGE_SEGMENT_MAX || page->guard_offset == 0 || segment->is_pinned) {
    /* cached as it is (the option off), unmapped at once (huge), or memory
       the OS may not take back */
    _mi_segment_single_free(segment);
    return;
  }
  _mi_segment_single_unlink(segment); /* out of reach of heap visits before its pages go */
  size_t len;
  uint8_t* first = mi_large_block_pages(segment, page, &len);
  /* zeroed while the zeroed blocks held stay within their budget (counted
     before the zeroing: another thread may be counting too) */
  size_t size = page->block_size;
  bool zeroed = false;
  if (size <= MI_LARGE_ZERO_MAX && mi_large_mostly_resident(first, len)) {
    size_t before = atomic_fetch_add_explicit(&mi_large_zeroed_held, size, memory_order_relaxed);
    zeroed = (before + size <= MI_LARGE_ZEROED_HELD);
    if (!zeroed) atomic_fetch_sub_explicit(&mi_large_zeroed_held, size, memory_order_relaxed);
  }
  if (zeroed && _mi_option_get_fast(mi_option_zero_on_free) != 0) _mi_secure_block_zero(page->start, size);
  /* given back before the fence, not after: on Windows a purge decommits and
     commits the range again read-write, which would lift the fence, and on
     Linux mprotect is cheaper on pages no longer mapped. On failure
     (reported) the old contents stay, fenced off. */
  if (!zeroed) (void)_mi_os_purge(first, len);
  if (_mi_os_protect(first, len, true) != 0) {
    if (zeroed) atomic_fetch_sub_explicit(&mi_large_zeroed_held, size, memory_order_relaxed);
    _mi_segment_single_release(segment); /* fault path: given back as before */
    return;
  }
  page->large_zeroed = zeroed;
  page->large_fenced = true;
  atomic_store_explicit(&page->state, MI_PAGE_FREE_DIRTY, memory_order_release);
  size_t slot = atomic_fetch_add_explicit(&mi_large_quarantine_next, 1, memory_order_relaxed) % (size_t)held;
  mi_segment_t* evicted = atomic_exchange_explicit(&mi_large_quarantine[slot], segment, memory_order_acq_rel);
  if (evicted != NULL) mi_large_release(evicted);
}

/* A forced collection gives the held segments back (each keeps at least a
   segment of address space). Slots are taken by exchange: a free racing with
   the flush lands before (released here) or after (held). */
void _mi_secure_large_quarantine_flush(void) {
  for (size_t i = 0; i < MI_LARGE_QUARANTINE; i++) {
    if (atomic_load_explicit(&mi_large_quarantine[i], memory_order_relaxed) == NULL) continue;
    mi_segment_t* evicted = atomic_exchange_explicit(&mi_large_quarantine[i], NULL, memory_order_acq_rel);
    if (evicted != NULL) mi_large_release(evicted);
  }
}

int64_t _mi_secure_large_quarantined(void) {
  int64_t n = 0;
  for (size_t i = 0; i < MI_LARGE_QUARANTINE; i++) {
    n += (atomic_load_explicit(&mi_large_quarantine[i], memory_order_relaxed) != NULL);
  }
  return n;
}

#endif
