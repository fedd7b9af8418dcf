/* Memory reserved up front (mi_reserve_*) and memory the caller hands over
   (mi_manage_os_memory): the process is set up first, then the OS layer's
   arenas take it (os/arena.c). */
#include "api.h"

/* The arguments are checked before the process is set up, as they always
   were; the arena layer checks them again for its own callers. */
int mi_reserve_os_memory_ex(size_t size, bool commit, bool allow_large, bool exclusive, mi_arena_id_t* arena_id) {
  if (arena_id != NULL) *arena_id = 0;
  if (_mi_align_up(size, MI_ARENA_CHUNK) == 0) return EINVAL;
  _mi_process_init_once();
  return _mi_arena_reserve_os(size, commit, allow_large, exclusive, arena_id);
}

int mi_reserve_os_memory(size_t size, bool commit, bool allow_large) {
  return mi_reserve_os_memory_ex(size, commit, allow_large, false, NULL);
}

bool mi_manage_os_memory_ex(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node,
                            bool exclusive, mi_arena_id_t* arena_id) {
  (void)numa_node; /* one node here: no NUMA placement */
  _mi_process_init_once();
  int err = _mi_arena_manage(start, size, is_committed, is_large, is_zero, exclusive, arena_id);
  if (err != 0) errno = err;
  return (err == 0);
}

bool mi_manage_os_memory(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node) {
  return mi_manage_os_memory_ex(start, size, is_committed, is_large, is_zero, numa_node, false, NULL);
}

void* mi_arena_area(mi_arena_id_t arena_id, size_t* size) {
  return _mi_arena_area(arena_id, size);
}

void mi_arenas_print(void) {
  _mi_arenas_print();
}

void mi_debug_show_arenas(void) {
  _mi_arenas_print();
}

/* Only huge (1 GiB) pages: ENOMEM, with nothing reserved, where the system
   has none (/proc/meminfo HugePages_Total), as mimalloc does. */
int mi_reserve_huge_os_pages_at_ex(size_t pages, int numa_node, size_t timeout_msecs, bool exclusive,
                                   mi_arena_id_t* arena_id) {
  (void)numa_node;     /* one node here: no NUMA placement */
  (void)timeout_msecs; /* the reservation is one call, not a search */
  if (arena_id != NULL) *arena_id = 0;
  if (pages == 0) return 0;
  if (pages > SIZE_MAX / MI_HUGE_OS_PAGE_SIZE) return EINVAL;
  _mi_process_init_once();
  return _mi_arena_reserve_huge(pages, exclusive, arena_id);
}

int mi_reserve_huge_os_pages_at(size_t pages, int numa_node, size_t timeout_msecs) {
  return mi_reserve_huge_os_pages_at_ex(pages, numa_node, timeout_msecs, false, NULL);
}

int mi_reserve_huge_os_pages_interleave(size_t pages, size_t numa_nodes, size_t timeout_msecs) {
  (void)numa_nodes;
  return mi_reserve_huge_os_pages_at(pages, 0, timeout_msecs);
}

int mi_reserve_huge_os_pages(size_t pages, double max_secs, size_t* pages_reserved) {
  if (pages_reserved != NULL) *pages_reserved = 0;
  size_t msecs = (max_secs > 0 && max_secs < 1e9 ? (size_t)(max_secs * 1000.0) : 0);
  int err = mi_reserve_huge_os_pages_at(pages, 0, msecs);
  if (pages_reserved != NULL && err == 0) *pages_reserved = pages;
  return err;
}
