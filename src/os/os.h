/* OS memory (layer above base): reservations, commit and purge, huge pages,
   arenas, the metadata allocator and the segment map. Defined in os/. */
#ifndef MI_OS_H
#define MI_OS_H

#include "../base/base.h"

/* meta.c */
void _mi_meta_init(void) mi_decl_hidden;
void* _mi_meta_alloc(void) mi_decl_hidden;
void _mi_meta_free(void* p) mi_decl_hidden;

/* os.c */
void* _mi_os_alloc_aligned(size_t size, size_t alignment, bool commit, bool allow_large,
                           bool* is_pinned) mi_decl_hidden;
void* _mi_os_reserve_aligned_at(size_t size, size_t alignment, size_t offset) mi_decl_hidden;
bool _mi_os_free(void* p, size_t size) mi_decl_hidden; /* false: refused, still mapped */
bool _mi_os_purge(void* p, size_t size) mi_decl_hidden;

/* os-thp.c: huge pages for large blocks the program uses in whole */
typedef enum mi_thp_use_e { MI_THP_NONE, MI_THP_ASK, MI_THP_PROBE } mi_thp_use_t;
mi_thp_use_t _mi_os_thp_decide(bool clean) mi_decl_hidden; /* for a large block handed out */
size_t _mi_os_thp_resident(const void* start, size_t size, size_t* measured) mi_decl_hidden; /* SIZE_MAX: unknown */
void _mi_os_thp_note(size_t before, size_t after, size_t measured) mi_decl_hidden;           /* a probe freed */
int _mi_os_thp_density(void) mi_decl_hidden; /* the running mean, in 256ths; -1: none yet */
void _mi_os_hint_huge_pages(void* p, size_t size, bool on) mi_decl_hidden;
void _mi_os_thp_init(void) mi_decl_hidden; /* process start: allow_thp */
bool _mi_os_commit(void* p, size_t size) mi_decl_hidden;
bool _mi_os_decommit(void* p, size_t size) mi_decl_hidden;
int _mi_os_protect(void* p, size_t size, bool protect) mi_decl_hidden;
void _mi_os_reset_breaker(void) mi_decl_hidden;

/* arena.c */
void _mi_arenas_init(void) mi_decl_hidden;
void _mi_arenas_reserve_from_options(void) mi_decl_hidden;
size_t _mi_arenas_count(void) mi_decl_hidden; /* arenas made so far (given back ones included) */
/* mi_purge_all_ex(MI_PURGE_RECLAIM): the empty arenas of ours unmapped; the bytes */
size_t _mi_arenas_reclaim(size_t* reclaimed, size_t* kept, bool* refused) mi_decl_hidden;
#define MI_ARENA_CHUNK MI_SEGMENT_SIZE /* an arena's unit: one segment */
#define MI_HUGE_OS_PAGE_SIZE ((size_t)1 << 30)
/* reservations, without the process set-up the public entries do first (api/reserve.c) */
int _mi_arena_reserve_os(size_t size, bool commit, bool allow_large, bool exclusive, mi_arena_id_t* id) mi_decl_hidden;
int _mi_arena_reserve_huge(size_t pages, bool exclusive, mi_arena_id_t* id) mi_decl_hidden; /* ENOMEM: none */
int _mi_arena_manage(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, bool exclusive,
                     mi_arena_id_t* id) mi_decl_hidden;
bool _mi_arena_eager_commit(void) mi_decl_hidden;
void* _mi_arena_area(mi_arena_id_t id, size_t* size) mi_decl_hidden;
bool _mi_arena_id_valid(mi_arena_id_t id) mi_decl_hidden;
void _mi_arenas_print(void) mi_decl_hidden;
/* `req`: the asking heap's arena (0: none); NULL: ask the OS (if `req` is 0) */
void* _mi_arena_alloc(size_t size, mi_arena_id_t req, bool* is_pinned) mi_decl_hidden;
bool _mi_arena_suits(const void* p, mi_arena_id_t req) mi_decl_hidden;
bool _mi_arena_free(void* p, size_t size) mi_decl_hidden;
bool _mi_arena_contains(const void* p) mi_decl_hidden;
void* _mi_os_alloc_meta(size_t size) mi_decl_hidden;
void _mi_os_free_meta(void* p, size_t size) mi_decl_hidden;
size_t _mi_os_page_size(void) mi_decl_hidden;
size_t _mi_os_large_page_size(void) mi_decl_hidden; /* 0: none */

/* segment-map.c */
bool _mi_segment_map_set(const mi_segment_t* segment, size_t size, bool present) mi_decl_hidden;
mi_segment_t* _mi_segment_containing(const void* p) mi_decl_hidden;
uintptr_t _mi_segment_map_next(uintptr_t from) mi_decl_hidden;
/* Is p inside a chunk that starts one of our segments? It never touches p:
   free validates a pointer with it before reading anything near it. */
#define MI_ADDRESS_BITS 48
#define MI_SEGMENT_MAP_BITS ((size_t)1 << (MI_ADDRESS_BITS - MI_SEGMENT_SHIFT))
extern _Atomic(uint64_t)* _Atomic _mi_segment_map mi_decl_hidden;
static inline bool _mi_segment_map_contains(const void* p) {
  uintptr_t chunk = (uintptr_t)p >> MI_SEGMENT_SHIFT;
  if (chunk >= MI_SEGMENT_MAP_BITS) return false;
  _Atomic(uint64_t)* map = atomic_load_explicit(&_mi_segment_map, memory_order_acquire);
  if (map == NULL) return false;
  uint64_t bit = (uint64_t)1 << (chunk % 64);
  return (atomic_load_explicit(&map[chunk / 64], memory_order_acquire) & bit) != 0;
}

#endif
