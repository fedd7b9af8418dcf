/* The allocator's view of OS memory: aligned reservations, OOM retry and the
   reserved/committed accounting, on top of the primitives in src/prim. */
#include "internal.h"

mi_prim_config_t _mi_os_config = {4096, 4096, 0, true, false};

size_t _mi_os_page_size(void) {
  return _mi_os_config.page_size;
}

/* Once a retry budget has been spent in vain, later OOM failures fail fast
   until some allocation succeeds again: a persistent OOM must not make every
   caller wait. */
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

/* mi_prim_alloc with the OOM retry policy: on an out-of-memory error, retry
   with a growing back-off until the budget (option retry_on_oom, in ms) is
   spent; other errors fail at once. */
static int mi_os_prim_alloc_retry(size_t size, size_t align, bool commit, bool allow_large, bool* is_large,
                                  void** addr) {
  int err = mi_prim_alloc(size, align, commit, allow_large, is_large, addr);
  if (err == 0) {
    atomic_store_explicit(&mi_oom_fail_fast, false, memory_order_relaxed);
    atomic_fetch_add_explicit(&_mi_stats.mmap_calls, 1, memory_order_relaxed);
    return 0;
  }
  if (!mi_is_oom_error(err) || atomic_load_explicit(&mi_oom_fail_fast, memory_order_relaxed)) return err;
  long budget = _mi_option_get_fast(mi_option_retry_on_oom);
  long waited = 0;
  long wait = 1;
  while (waited < budget) {
    if (wait > budget - waited) wait = budget - waited;
    mi_os_sleep_ms(wait);
    waited += wait;
    wait *= 2;
    err = mi_prim_alloc(size, align, commit, allow_large, is_large, addr);
    if (err == 0) {
      atomic_fetch_add_explicit(&_mi_stats.mmap_calls, 1, memory_order_relaxed);
      return 0;
    }
    if (!mi_is_oom_error(err)) return err;
  }
  if (budget > 0) atomic_store_explicit(&mi_oom_fail_fast, true, memory_order_relaxed);
  return err;
}

void _mi_os_free(void* p, size_t size) {
  if (p == NULL || size == 0) return;
  int err = mi_prim_free(p, size);
  if (err != 0) {
    _mi_warning_message("unable to release OS memory (error %d, address %p, size %zu)\n", err, p, size);
    return;
  }
  _mi_stat_decrease(&_mi_stats.reserved, (int64_t)size);
}

/* `size` bytes of zeroed read/write memory aligned to `alignment`: ask for
   the size plus the alignment and give the ends back. */
void* _mi_os_alloc_aligned(size_t size, size_t alignment, bool* is_zero) {
  size_t psize = _mi_os_page_size();
  size = _mi_align_up(size, psize);
  if (alignment < psize) alignment = psize;
  *is_zero = true;
  bool allow_large = mi_option_is_enabled(mi_option_allow_large_os_pages);
  bool is_large = false;
  void* p = NULL;
  /* most mappings land aligned by chance when the size is a multiple of the alignment */
  int err = mi_os_prim_alloc_retry(size, alignment, true, allow_large, &is_large, &p);
  if (err != 0) {
    _mi_verbose_message("unable to allocate OS memory (error %d, size %zu)\n", err, size);
    return NULL;
  }
  if (((uintptr_t)p & (alignment - 1)) == 0) {
    _mi_stat_increase(&_mi_stats.reserved, (int64_t)size);
    return p;
  }
  mi_prim_free(p, size);
  if (size > SIZE_MAX - alignment) return NULL;
  size_t over = size + alignment;
  err = mi_os_prim_alloc_retry(over, alignment, true, allow_large, &is_large, &p);
  if (err != 0) {
    _mi_verbose_message("unable to allocate aligned OS memory (error %d, size %zu)\n", err, over);
    return NULL;
  }
  uintptr_t start = (uintptr_t)p;
  uintptr_t aligned = _mi_align_up(start, alignment);
  size_t pre = aligned - start;
  size_t post = over - pre - size;
  if (pre > 0) mi_prim_free(p, pre);
  if (post > 0) mi_prim_free((void*)(aligned + size), post);
  _mi_stat_increase(&_mi_stats.reserved, (int64_t)size);
  return (void*)aligned;
}

/* Return a range's memory to the OS, keeping the range usable; true on success. */
bool _mi_os_purge(void* p, size_t size) {
  bool is_zero = false;
  bool allow_lazy = !mi_option_is_enabled(mi_option_purge_decommits);
  int err = mi_prim_purge(p, size, allow_lazy, &is_zero);
  atomic_fetch_add_explicit(&_mi_stats.purge_calls, 1, memory_order_relaxed);
  if (err != 0) {
    _mi_warning_message("unable to purge OS memory (error %d, address %p, size %zu)\n", err, p, size);
    return false;
  }
  _mi_stat_increase(&_mi_stats.purged, (int64_t)size);
  return true;
}

/* Memory for the allocator's own metadata (thread data, heaps, the segment map). */
void* _mi_os_alloc_meta(size_t size) {
  size = _mi_align_up(size, _mi_os_page_size());
  bool is_large = false;
  void* p = NULL;
  if (mi_os_prim_alloc_retry(size, 0, true, false, &is_large, &p) != 0) return NULL;
  _mi_stat_increase(&_mi_stats.reserved, (int64_t)size);
  return p;
}
