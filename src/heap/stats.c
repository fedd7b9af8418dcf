/* Statistics: OS-level figures kept with atomics on the slow paths, and
   (with MI_STAT) per-size-class allocation counts kept per heap and merged
   into the global figures when a heap goes away or stats are printed. */
#include "heap.h"

#include <stdarg.h>
#include <stdio.h>

void _mi_stats_merge_heap(mi_heap_t* heap) {
#if MI_STAT
  for (size_t i = 0; i <= MI_BIN_COUNT; i++) {
    if (heap->stat_malloc[i] == 0) continue;
    atomic_fetch_add_explicit(&_mi_stats.malloc_bins[i], (int64_t)heap->stat_malloc[i], memory_order_relaxed);
    heap->stat_malloc[i] = 0;
  }
#else
  (void)heap;
#endif
}

void mi_stats_merge(void) {
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) _mi_stats_merge_heap(h);
}

static void mi_stat_reset(mi_stat_atomic_t* stat) {
  int64_t cur = atomic_load_explicit(&stat->current, memory_order_relaxed);
  atomic_store_explicit(&stat->peak, cur, memory_order_relaxed);
  atomic_store_explicit(&stat->total, cur > 0 ? cur : 0, memory_order_relaxed);
}

void mi_stats_reset(void) {
  mi_stat_reset(&_mi_stats.reserved);
  mi_stat_reset(&_mi_stats.committed);
  mi_stat_reset(&_mi_stats.segments);
  mi_stat_reset(&_mi_stats.pages);
  mi_stat_reset(&_mi_stats.abandoned);
  mi_stat_reset(&_mi_stats.large);
  mi_stat_reset(&_mi_stats.threads);
  atomic_store(&_mi_stats.purged.total, 0);
  atomic_store(&_mi_stats.mmap_calls, 0);
  atomic_store(&_mi_stats.purge_calls, 0);
  atomic_store(&_mi_stats.reclaimed, 0);
  for (size_t i = 0; i <= MI_BIN_COUNT; i++) atomic_store(&_mi_stats.malloc_bins[i], 0);
  mi_heap_t* heap = mi_get_default_heap();
#if MI_STAT
  if (mi_heap_is_initialized(heap)) {
    for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) memset(h->stat_malloc, 0, sizeof(h->stat_malloc));
  }
#else
  (void)heap;
#endif
}

/* ---- Printing ---------------------------------------------------------------- */

static void mi_format_size(int64_t n, char* buf, size_t size) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int64_t abs = (n < 0 ? -n : n);
  int u = 0;
  int64_t div = 1;
  while (abs >= div * 1024 && u < 4) {
    div *= 1024;
    u++;
  }
  if (u == 0) (void)snprintf(buf, size, "%lld %s", (long long)n, units[0]);
  else (void)snprintf(buf, size, "%.1f %s", (double)n / (double)div, units[u]);
}

typedef struct mi_printer_s {
  mi_output_fun* out;
  void* arg;
} mi_printer_t;

static void mi_print_line(const mi_printer_t* pr, const char* fmt, ...) mi_attr_printf(2, 3);
static void mi_print_line(const mi_printer_t* pr, const char* fmt, ...) {
  char buf[256];
  va_list args;
  va_start(args, fmt);
  /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above; clang 14 misreads it */
  (void)vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  _mi_fputs(pr->out, pr->arg, NULL, buf);
}

/* The calling thread's own figures: what its heaps hold now, walked (only
   the owner may walk them), and its per-size-class counts not yet merged. */
void mi_thread_stats_print_out(mi_output_fun* out, void* arg) {
  mi_printer_t pr = {out, arg};
  mi_heap_t* heap = mi_get_default_heap();
  mi_print_line(&pr, "mimalloc-pprof thread statistics (pid %ld, thread %zx)\n", (long)mi_prim_getpid(),
                (size_t)_mi_thread_id());
  if (!mi_heap_is_initialized(heap)) {
    mi_print_line(&pr, "  the thread has not allocated\n");
    return;
  }
  mi_tld_t* tld = heap->tld;
  size_t heaps = 0, pages = 0, blocks = 0, bytes = 0, segments = 0;
  for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) {
    heaps++;
    for (size_t bin = 0; bin < MI_BIN_COUNT; bin++) {
      for (const mi_page_t* page = h->pages[bin].first; page != NULL; page = page->next) {
        pages++;
        blocks += page->used;
        bytes += (size_t)page->used * page->block_size;
      }
    }
  }
  for (const mi_segment_t* segment = tld->segments; segment != NULL; segment = segment->next) segments++;
  char size[32];
  mi_format_size((int64_t)bytes, size, sizeof(size));
  mi_print_line(&pr, "  heaps %zu, segments %zu, pages %zu\n", heaps, segments, pages);
  mi_print_line(&pr, "  blocks in use %zu (%s; small and medium, freed by other threads counted until collected)\n",
                blocks, size);
#if MI_STAT
  mi_print_line(&pr, "  allocations per size class since the last merge (block size: count)\n");
  for (size_t bin = 1; bin <= MI_BIN_MEDIUM_MAX; bin++) {
    int64_t n = 0;
    for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) n += (int64_t)h->stat_malloc[bin];
    if (n != 0) mi_print_line(&pr, "  %8zu: %lld\n", _mi_bin_size(bin), (long long)n);
  }
#endif
}

void mi_process_info(size_t* elapsed_msecs, size_t* user_msecs, size_t* system_msecs, size_t* current_rss,
                     size_t* peak_rss, size_t* current_commit, size_t* peak_commit, size_t* page_faults) {
  mi_prim_process_info_t info;
  mi_prim_process_info(&info);
  if (elapsed_msecs != NULL) *elapsed_msecs = (size_t)info.elapsed_ms;
  if (user_msecs != NULL) *user_msecs = (size_t)info.utime_ms;
  if (system_msecs != NULL) *system_msecs = (size_t)info.stime_ms;
  if (current_rss != NULL) *current_rss = info.current_rss;
  if (peak_rss != NULL) *peak_rss = info.peak_rss;
  int64_t commit = atomic_load(&_mi_stats.committed.current);
  if (current_commit != NULL) *current_commit = (size_t)(commit > 0 ? commit : 0);
  if (peak_commit != NULL) *peak_commit = (size_t)atomic_load(&_mi_stats.committed.peak);
  if (page_faults != NULL) *page_faults = info.page_faults;
}
