/* Memory reserved up front (mi_reserve_*): the process is set up first, then
   the OS layer's arenas take the reservation (os/arena.c). */
#include "api.h"

/* The arguments are checked before the process is set up, as they always
   were; the arena layer checks them again for its own callers. */
int mi_reserve_os_memory(size_t size, bool commit, bool allow_large) {
  if (_mi_align_up(size, MI_ARENA_CHUNK) == 0) return EINVAL;
  _mi_process_init_once();
  return _mi_arena_reserve_os(size, commit, allow_large);
}

int mi_reserve_huge_os_pages_at(size_t pages, int numa_node, size_t timeout_msecs) {
  (void)numa_node;     /* one node here: no NUMA placement */
  (void)timeout_msecs; /* the reservation is one call, not a search */
  if (pages == 0) return 0;
  if (pages > SIZE_MAX / MI_HUGE_OS_PAGE_SIZE) return EINVAL;
  _mi_process_init_once();
  return _mi_arena_reserve_huge(pages);
}

int mi_reserve_huge_os_pages_interleave(size_t pages, size_t numa_nodes, size_t timeout_msecs) {
  (void)numa_nodes;
  return mi_reserve_huge_os_pages_at(pages, 0, timeout_msecs);
}

int mi_reserve_huge_os_pages(size_t pages, double max_secs, size_t* pages_reserved) {
  int err = mi_reserve_huge_os_pages_at(pages, 0, (size_t)(max_secs * 1000.0));
  if (pages_reserved != NULL) *pages_reserved = (err == 0 ? pages : 0);
  return err;
}
