/* For the crate's layout test (tests/stats_layout.rs): where the C compiler
   puts each field of mi_stats_t, in the struct's order, then its size. */
#include <mimalloc-stats.h>
#include <stddef.h>

size_t mi_rust_stats_layout(size_t* out, size_t n);

size_t mi_rust_stats_layout(size_t* out, size_t n) {
  size_t i = 0;
#define MI_PUT(x) \
  do { \
    if (i < n) out[i] = (x); \
    i++; \
  } while (0)
  MI_PUT(offsetof(mi_stats_t, size));
  MI_PUT(offsetof(mi_stats_t, version));
#define MI_STAT_COUNT(name) MI_PUT(offsetof(mi_stats_t, name));
#define MI_STAT_COUNTER(name) MI_PUT(offsetof(mi_stats_t, name));
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  MI_PUT(offsetof(mi_stats_t, _stat_reserved));
  MI_PUT(offsetof(mi_stats_t, _stat_counter_reserved));
  MI_PUT(offsetof(mi_stats_t, malloc_bins));
  MI_PUT(offsetof(mi_stats_t, page_bins));
  MI_PUT(offsetof(mi_stats_t, chunk_bins));
  MI_PUT(sizeof(mi_stats_t));
#undef MI_PUT
  return i;
}
