/* The allocator's view of OS memory: aligned reservations, large pages with
   their circuit breaker, commit and decommit, OOM retry and the
   reserved/committed accounting, on top of the primitives in src/prim.
   Every way a primitive can fail ends here in one decision: retry, fall back
   to a plainer way, or give up with the memory and the accounting intact. */
#include "os.h"
#include "../prim/fault.h"

mi_prim_config_t _mi_os_config = {4096, 4096, 0, true, false, true};

size_t _mi_os_page_size(void) {
  return _mi_os_config.page_size;
}

size_t _mi_os_large_page_size(void) {
  return _mi_os_config.large_page_size;
}

/* ---- OOM retry ----------------------------------------------------------------
   Once a retry budget has been spent in vain, later OOM failures fail fast
   until some reserve or commit succeeds again: a persistent OOM must not
   make every caller wait. */
static _Atomic(bool) mi_oom_fail_fast;

static bool mi_is_oom_error(int err) {
  return (err == ENOMEM || err == EAGAIN);
}

static void mi_os_sleep_ms(long ms) {
  /* wait on an event nobody signals: a sleep that goes through the primitives */
  static mi_prim_event_t sleeper;
  static _Atomic(bool) sleeper_ready;
  if (!atomic_load_explicit(&sleeper_ready, memory_order_acquire)) {
    mi_prim_event_init(&sleeper);
    atomic_store_explicit(&sleeper_ready, true, memory_order_release);
  }
  mi_prim_event_wait(&sleeper, ms);
}

typedef int (*mi_os_attempt_fun)(void* arg);

/* Run `attempt` under the retry policy: on an out-of-memory error, retry
   with a doubling back-off (1, 2, 4, ... ms) until the budget (option
   retry_on_oom, in ms; 0 turns retrying off) is spent; other errors fail
   at once. */
static int mi_os_with_retry(mi_os_attempt_fun attempt, void* arg) {
  int saved_errno = errno; /* a failure that a retry hides leaves no trace */
  int err = attempt(arg);
  if (err == 0) {
    atomic_store_explicit(&mi_oom_fail_fast, false, memory_order_relaxed);
    return 0;
  }
  if (!mi_is_oom_error(err)) {
    return err; /* fault path */
  }
  if (atomic_load_explicit(&mi_oom_fail_fast, memory_order_relaxed)) {
    mi_fault_event(mi_fault_event_oom_fail_fast);
    return err;
  }
  long budget = _mi_option_get_fast(mi_option_retry_on_oom);
  long waited = 0;
  long wait = 1;
  while (waited < budget) {
    if (wait > budget - waited) wait = budget - waited;
    mi_os_sleep_ms(wait);
    waited += wait;
    wait *= 2;
    mi_fault_event(mi_fault_event_oom_retry);
    err = attempt(arg);
    if (err == 0) {
      atomic_store_explicit(&mi_oom_fail_fast, false, memory_order_relaxed);
      errno = saved_errno;
      return 0;
    }
    if (!mi_is_oom_error(err)) {
      return err; /* fault path */
    }
  }
  if (budget > 0) {
    atomic_store_explicit(&mi_oom_fail_fast, true, memory_order_relaxed); /* fault path */
  }
  return err;
}

typedef struct mi_os_alloc_args_s {
  size_t size;
  size_t alignment;
  bool commit;
  bool allow_large;
  void* addr;
} mi_os_alloc_args_t;

static int mi_os_alloc_attempt(void* arg) {
  mi_os_alloc_args_t* a = (mi_os_alloc_args_t*)arg;
  bool is_large = false;
  int err = mi_prim_alloc(a->size, a->alignment, a->commit, a->allow_large, &is_large, &a->addr);
  if (err == 0) atomic_fetch_add_explicit(&_mi_stats.mmap_calls, 1, memory_order_relaxed);
  return err;
}

static int mi_os_alloc_retry(size_t size, size_t alignment, bool commit, bool allow_large, void** addr) {
  mi_os_alloc_args_t args = {size, alignment, commit, allow_large, NULL};
  int err = mi_os_with_retry(&mi_os_alloc_attempt, &args);
  *addr = args.addr;
  return err;
}

/* ---- Release --------------------------------------------------------------------- */

/* A range the OS refused to take back stays mapped and stays counted: the
   accounting never claims memory was returned that was not. */
static bool mi_os_release(void* p, size_t size) {
  int err = mi_prim_free(p, size);
  if (err != 0) {
    mi_fault_event(mi_fault_event_release_failed);
    _mi_warning_message("unable to release OS memory (error %d, address %p, size %zu)\n", err, p, size);
    return false;
  }
  return true;
}

/* False: the OS refused (the range stays mapped and counted). */
bool _mi_os_free(void* p, size_t size) {
  if (p == NULL || size == 0) return true;
  mi_assert_internal(((uintptr_t)p % _mi_os_page_size()) == 0); /* a range the OS gave */
  if (!mi_os_release(p, size)) return false;
  _mi_stat_decrease(&_mi_stats.reserved, (int64_t)size);
  return true;
}

/* ---- Large OS pages -------------------------------------------------------------
   Explicit 2 MiB pages are pinned and fast, but a failing request is slow
   and tends to keep failing (the administrator set none aside, or they are
   used up). After a failure the breaker skips them for the next
   MI_LARGE_BREAKER_SKIPS requests, then tries once more. */
#define MI_LARGE_BREAKER_SKIPS 8
static _Atomic(long) mi_large_skips_left;

void _mi_os_reset_breaker(void) {
  atomic_store_explicit(&mi_large_skips_left, 0, memory_order_relaxed);
}

static void* mi_os_try_large(size_t size, size_t alignment) {
  size_t lsize = _mi_os_config.large_page_size;
  if (lsize == 0 || (size % lsize) != 0 || (alignment % lsize) != 0) return NULL;
  long left = atomic_load_explicit(&mi_large_skips_left, memory_order_relaxed);
  while (left > 0) {
    if (atomic_compare_exchange_weak_explicit(&mi_large_skips_left, &left, left - 1, memory_order_relaxed,
                                              memory_order_relaxed)) {
      mi_fault_event(mi_fault_event_large_skipped);
      return NULL;
    }
  }
  mi_assert_internal(_mi_is_power_of_two(alignment));
  void* p = NULL;
  int err = mi_prim_alloc_large_os_pages(size, alignment, &p);
  if (err == 0 && ((uintptr_t)p & (alignment - 1)) != 0) {
    /* large pages that landed unaligned: not worth trimming pinned memory */
    mi_os_release(p, size);
    err = EINVAL;
  }
  if (err != 0) {
    mi_fault_event(mi_fault_event_large_fallback);
    atomic_store_explicit(&mi_large_skips_left, MI_LARGE_BREAKER_SKIPS, memory_order_relaxed);
    _mi_verbose_message("large OS pages unavailable (error %d); using normal pages\n", err);
    return NULL;
  }
  atomic_fetch_add_explicit(&_mi_stats.mmap_calls, 1, memory_order_relaxed);
  return p;
}

/* ---- Aligned reservations -------------------------------------------------------- */

/* Where a part of a reservation cannot be given back (Windows), trimming is
   impossible: over-reserve to find an aligned hole, give all of it back and
   reserve exactly the aligned part. Another thread may take the hole in
   between, hence a few tries. */
#define MI_OS_PLACE_TRIES 4

static void* mi_os_alloc_aligned_placed(size_t size, size_t alignment, size_t offset, bool commit) {
  size_t over = size + alignment;
  for (int i = 0; i < MI_OS_PLACE_TRIES; i++) {
    void* p = NULL;
    int err = mi_os_alloc_retry(over, 0, false, false, &p);
    if (err != 0) {
      _mi_verbose_message("unable to reserve aligned OS memory (error %d)\n", err); /* fault path: Windows */
      return NULL;
    }
    void* aligned = (void*)(_mi_align_up((uintptr_t)p + offset, alignment) - offset);
    mi_assert_internal((uint8_t*)aligned >= (uint8_t*)p && (uint8_t*)aligned + size <= (uint8_t*)p + over);
    if (!mi_os_release(p, over)) {
      /* the OS kept it: it stays ours, unused */
      _mi_stat_increase(&_mi_stats.reserved, (int64_t)over); /* fault path: Windows */
      continue;
    }
    if (mi_prim_alloc_at(aligned, size, commit) == 0) {
      atomic_fetch_add_explicit(&_mi_stats.mmap_calls, 1, memory_order_relaxed);
      _mi_stat_increase(&_mi_stats.reserved, (int64_t)size);
      return aligned;
    }
  }
  _mi_verbose_message("unable to place aligned OS memory (size %zu)\n", size); /* fault path: Windows */
  return NULL;
}

/* Over-reserve by the alignment and give back both ends, so that p + offset
   is aligned; where the OS cannot give back a part, place it instead. */
static void* mi_os_alloc_trimmed(size_t size, size_t alignment, size_t offset, bool commit, bool allow_large) {
  if (size > SIZE_MAX - alignment) return NULL;
  if (!_mi_os_config.has_partial_free) return mi_os_alloc_aligned_placed(size, alignment, offset, commit);
  size_t over = size + alignment;
  void* p = NULL;
  int err = mi_os_alloc_retry(over, alignment, commit, allow_large, &p);
  if (err != 0) {
    _mi_verbose_message("unable to allocate aligned OS memory (error %d, size %zu)\n", err, over); /* fault path */
    return NULL;
  }
  uintptr_t start = (uintptr_t)p;
  uintptr_t aligned = _mi_align_up(start + offset, alignment) - offset;
  size_t pre = aligned - start;
  mi_assert_internal(pre < alignment && pre + size <= over);
  mi_assert_internal(((aligned + offset) & (alignment - 1)) == 0);
  size_t post = over - pre - size;
  size_t kept = size;
  /* an end the OS will not take back stays mapped and counted */
  if (pre > 0 && !mi_os_release(p, pre)) {
    kept += pre; /* fault path */
  }
  if (post > 0 && !mi_os_release((void*)(aligned + size), post)) {
    kept += post; /* fault path */
  }
  _mi_stat_increase(&_mi_stats.reserved, (int64_t)kept);
  return (void*)aligned;
}

/* `size` bytes of zeroed memory aligned to `alignment`, read/write if
   `commit` (else reserved only): explicit large pages if allowed, else
   normal pages placed at an aligned hint (most land aligned), else
   over-reserve by the alignment and trim the ends. */
static void* mi_os_alloc_aligned(size_t size, size_t alignment, bool commit, bool allow_large, bool* is_pinned) {
  size_t psize = _mi_os_page_size();
  size = _mi_align_up(size, psize);
  if (alignment < psize) alignment = psize;
  mi_assert_internal(_mi_is_power_of_two(alignment));
  *is_pinned = false;
  /* pinned pages cannot hold guard pages or be purged in parts: secure builds use them only as a hint */
  if (allow_large && commit && !MI_SECURE) {
    void* p = mi_os_try_large(size, alignment);
    if (p != NULL) {
      *is_pinned = true;
      _mi_stat_increase(&_mi_stats.reserved, (int64_t)size);
      return p;
    }
  }
  int err;
  /* the aligned attempt: one call, no retry; whatever goes wrong with it,
     the over-reserve below is the robust way (and retries) */
  mi_os_alloc_args_t first = {size, alignment, commit, allow_large, NULL};
  err = mi_os_alloc_attempt(&first);
  if (err == 0 && ((uintptr_t)first.addr & (alignment - 1)) == 0) {
    atomic_store_explicit(&mi_oom_fail_fast, false, memory_order_relaxed);
    _mi_stat_increase(&_mi_stats.reserved, (int64_t)size);
    return first.addr;
  }
  mi_fault_event(mi_fault_event_aligned_trim);
  if (err == 0 && !mi_os_release(first.addr, size)) {
    /* the OS kept it: it stays ours, unused */
    _mi_stat_increase(&_mi_stats.reserved, (int64_t)size); /* fault path */
  }
  return mi_os_alloc_trimmed(size, alignment, 0, commit, allow_large);
}

void* _mi_os_alloc_aligned(size_t size, size_t alignment, bool commit, bool allow_large, bool* is_pinned) {
  int saved_errno = errno; /* failures on the way to a success leave no trace */
  void* p = mi_os_alloc_aligned(size, alignment, commit, allow_large, is_pinned);
  if (p != NULL) errno = saved_errno;
  mi_assert_internal(p == NULL || alignment <= 1 || ((uintptr_t)p & (alignment - 1)) == 0);
  return p;
}

/* Address space only, placed so that p + offset is aligned: a block
   aligned to more than a segment, `offset` bytes past its segment's start
   (segment/single.c). Nothing in it is committed: the caller commits the
   header and the block, never the hole between them. */
void* _mi_os_reserve_aligned_at(size_t size, size_t alignment, size_t offset) {
  int saved_errno = errno;
  size = _mi_align_up(size, _mi_os_page_size());
  void* p = mi_os_alloc_trimmed(size, alignment, offset, false, false);
  if (p != NULL) errno = saved_errno;
  mi_assert_internal(p == NULL || (((uintptr_t)p + offset) & (alignment - 1)) == 0);
  return p;
}

/* ---- Commit, decommit, purge ------------------------------------------------------ */

typedef struct mi_os_commit_args_s {
  void* addr;
  size_t size;
} mi_os_commit_args_t;

static int mi_os_commit_attempt(void* arg) {
  mi_os_commit_args_t* a = (mi_os_commit_args_t*)arg;
  bool is_zero;
  return mi_prim_commit(a->addr, a->size, &is_zero);
}

/* Make a decommitted range usable again; false (errno ENOMEM) if the OS
   will not, after the retry policy. */
bool _mi_os_commit(void* p, size_t size) {
  mi_assert_internal(p != NULL && ((uintptr_t)p % _mi_os_page_size()) == 0);
  mi_os_commit_args_t args = {p, size};
  int err = mi_os_with_retry(&mi_os_commit_attempt, &args);
  if (err == 0) atomic_fetch_add_explicit(&_mi_stats.commit_calls, 1, memory_order_relaxed);
  if (err != 0) {
    mi_fault_event(mi_fault_event_commit_failed);
    _mi_verbose_message("unable to commit OS memory (error %d, address %p, size %zu)\n", err, p, size);
    errno = ENOMEM;
    return false;
  }
  return true;
}

/* Return a range's memory to the OS, keeping it usable. Always the eager
   kind (MADV_DONTNEED, not MADV_FREE): the segment code counts on purged
   memory reading as zero. On failure the memory stays committed and
   nothing changes. */
bool _mi_os_purge(void* p, size_t size) {
  mi_assert_internal(p != NULL && ((uintptr_t)p % _mi_os_page_size()) == 0);
  atomic_fetch_add_explicit(&_mi_stats.purge_calls, 1, memory_order_relaxed);
  bool is_zero = false;
  int err = mi_prim_purge(p, size, false, &is_zero);
  if (err != 0) {
    mi_fault_event(mi_fault_event_purge_failed);
    _mi_warning_message("unable to purge OS memory (error %d, address %p, size %zu)\n", err, p, size);
    return false;
  }
  _mi_stat_increase(&_mi_stats.purged, (int64_t)size);
  return true;
}

/* Give a committed range's memory and commit charge back; it must be
   committed again before use. On failure it stays committed and usable. */
bool _mi_os_decommit(void* p, size_t size) {
  mi_assert_internal(p != NULL && ((uintptr_t)p % _mi_os_page_size()) == 0);
  int err = mi_prim_decommit(p, size);
  if (err != 0) {
    mi_fault_event(mi_fault_event_decommit_failed);
    _mi_warning_message("unable to decommit OS memory (error %d, address %p, size %zu)\n", err, p, size);
    return false;
  }
  return true;
}

/* Memory for the allocator's own metadata (thread data, heaps, the segment map). */
void* _mi_os_alloc_meta(size_t size) {
  size = _mi_align_up(size, _mi_os_page_size());
  void* p = NULL;
  if (mi_os_alloc_retry(size, 0, true, false, &p) != 0) {
    return NULL; /* fault path */
  }
  mi_assert_internal(((uintptr_t)p % _mi_os_page_size()) == 0);
  _mi_stat_increase(&_mi_stats.reserved, (int64_t)size);
  _mi_stat_increase(&_mi_stats.meta, (int64_t)size);
  return p;
}

void _mi_os_free_meta(void* p, size_t size) {
  size = _mi_align_up(size, _mi_os_page_size());
  if (mi_os_release(p, size)) {
    _mi_stat_decrease(&_mi_stats.reserved, (int64_t)size);
    _mi_stat_decrease(&_mi_stats.meta, (int64_t)size);
  }
}

/* Guard pages on (`protect`) or off. A failure is counted here; the caller
   reports it and keeps the memory out of use. */
int _mi_os_protect(void* p, size_t size, bool protect) {
  mi_assert_internal(((uintptr_t)p % _mi_os_page_size()) == 0 && (size % _mi_os_page_size()) == 0);
  int err = mi_prim_protect(p, size, protect);
  if (err == 0 && protect) atomic_fetch_add_explicit(&_mi_stats.protect_calls, 1, memory_order_relaxed);
  if (err != 0) {
    mi_fault_event(mi_fault_event_protect_failed);
  }
  return err;
}
