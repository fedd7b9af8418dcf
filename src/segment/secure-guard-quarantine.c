/* Freed sampled guarded blocks (secure builds, MI_GUARDED; secure/guard.c
   hands them out): fenced off and held. When one is freed its pages are given
   back to the OS and made inaccessible, and its segment waits in a bounded
   FIFO quarantine, so a use after free faults (and the fault handler names
   the block) until it is evicted and its segment goes back to the cache.
   On the segment floor, with the large blocks' quarantine (secure-large.c):
   a destroyed heap's guarded blocks go here too, from the heap floor. */
#include "segment.h"
#include "../os/os.h"
#include "../secure/secure.h"

#if MI_SECURE
#if MI_GUARDED
/* sampled guarded blocks in use and held: their sampler pauses past a
   bound (secure/guard.c) */
_Atomic(long) _mi_guard_live;

#define MI_GUARD_QUARANTINE 64
#define MI_GUARD_ZERO_MAX ((size_t)16 * 1024) /* held zeroed: at most 1 MiB resident */
static _Atomic(mi_segment_t*) mi_guard_quarantine[MI_GUARD_QUARANTINE];
static _Atomic(size_t) mi_guard_quarantine_next;

static uint8_t* mi_guard_block_pages(const mi_page_t* page, size_t* len) {
  size_t psize = _mi_os_page_size();
  uint8_t* first = (uint8_t*)((uintptr_t)page->start & ~(uintptr_t)(psize - 1));
  *len = (size_t)((uint8_t*)_mi_page_segment(page) + page->guard_offset - first);
  return first;
}

/* A block leaves the quarantine: its pages open again and its segment goes
   back (to the segment cache, or to the OS if it cannot be opened). */
static void mi_guard_release(mi_segment_t* evicted) {
  mi_page_t* old = &evicted->pages[0];
  size_t len;
  uint8_t* first = mi_guard_block_pages(old, &len);
  bool accessible = (_mi_os_protect(first, len, false) == 0);
  old->is_guarded = false;
  old->guarded_freed = false;
  if (accessible) {
    _mi_segment_single_release(evicted);
  } else {
    /* still fenced off: reusing it would fault, so it goes back to the OS */
    _mi_error_message(ENOMEM, "unable to lift the guard of freed block %p; returning it to the OS\n",
                      (void*)old->start);
    _mi_segment_single_discard(evicted); /* fault path */
  }
  atomic_fetch_sub_explicit(&_mi_guard_live, 1, memory_order_relaxed);
}

void _mi_guard_free(mi_segment_t* segment, mi_page_t* page) {
  _mi_segment_single_unlink(segment);
  size_t len;
  uint8_t* first = mi_guard_block_pages(page, &len);
  /* its contents gone while it waits, as a freed large block's are
     (secure-large.c, which also says why before the fence): a block of a
     few pages zeroed, larger ones' memory given back with them (the 64 held
     blocks of up to guarded_max, 1 MiB, kept up to 64 MiB resident). The
     purge of a small one cost a call and, when the segment served the next
     sample, a page fault a page: most samples are of a page, and at one
     allocation in 4,000 the full level's samples took a fifth of `larson`'s
     throughput. On failure (reported) the contents stay, fenced off. */
  if (len <= MI_GUARD_ZERO_MAX) _mi_secure_block_zero(first, len);
  else (void)_mi_os_purge(first, len);
  if (_mi_os_protect(first, len, true) != 0) {
    /* cannot fence it off: give it back at once */
    page->is_guarded = false; /* fault path */
    _mi_segment_single_release(segment);
    atomic_fetch_sub_explicit(&_mi_guard_live, 1, memory_order_relaxed);
    return;
  }
  page->guarded_freed = true;
  size_t slot = atomic_fetch_add_explicit(&mi_guard_quarantine_next, 1, memory_order_relaxed) % MI_GUARD_QUARANTINE;
  mi_segment_t* evicted = atomic_exchange_explicit(&mi_guard_quarantine[slot], segment, memory_order_acq_rel);
  if (evicted != NULL) mi_guard_release(evicted);
}

/* A forced collection (mi_collect(true)) empties the quarantine as it
   empties the per-thread one of small blocks: the program asked for its
   memory back, and each guarded block held here is a segment. Every slot is
   taken by exchange, so a free racing with the flush either lands before
   (its block is released here) or after (it waits in the emptied slot). */
void _mi_guard_quarantine_flush(void) {
  for (size_t i = 0; i < MI_GUARD_QUARANTINE; i++) {
    if (atomic_load_explicit(&mi_guard_quarantine[i], memory_order_relaxed) == NULL) continue;
    mi_segment_t* evicted = atomic_exchange_explicit(&mi_guard_quarantine[i], NULL, memory_order_acq_rel);
    if (evicted != NULL) mi_guard_release(evicted);
  }
}

void _mi_guard_stats_get(int64_t* live, int64_t* total, int64_t* quarantined) {
  *live = atomic_load_explicit(&_mi_guard_live, memory_order_relaxed);
  *total = atomic_load_explicit(&_mi_stats.guarded_total, memory_order_relaxed);
  int64_t n = 0;
  for (size_t i = 0; i < MI_GUARD_QUARANTINE; i++) {
    n += (atomic_load_explicit(&mi_guard_quarantine[i], memory_order_relaxed) != NULL);
  }
  *quarantined = n;
}
#else
void _mi_guard_stats_get(int64_t* live, int64_t* total, int64_t* quarantined) {
  *live = *total = *quarantined = 0;
}
#endif
#endif
