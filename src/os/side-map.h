/* Side arrays beside the segments: per-block data kept out of the blocks and
   their pages, found from a block's address in O(1), without hashing and
   without a lock (DHAT's records, dhat/blocks.c; the memory events' marks,
   events/records.c).

   Each segment that ever held a block with data gets a side array: one
   slot per 16 bytes (the smallest block) of the segment's first 4 MiB,
   indexed by the key's offset in its segment. The side arrays are found
   through a two-level map indexed by the segment's number, over the 48-bit
   address space; both levels are OS memory, mapped when first needed (a
   side array is 4 MiB / 16 slots of address space, of which only the pages
   holding written slots become memory). The map is filled in with
   compare-and-swap; a side array goes when its segment is unmapped. A slot
   is written and read by whoever the map's user orders (the block's
   allocation and free, which the program's hand-over of the pointer
   orders). */
#ifndef MI_SIDE_MAP_H
#define MI_SIDE_MAP_H

#include "os.h"

#define MI_SIDE_SEG_BITS (MI_ADDRESS_BITS - MI_SEGMENT_SHIFT)
#define MI_SIDE_L2_BITS 13
#define MI_SIDE_L1_COUNT ((size_t)1 << (MI_SIDE_SEG_BITS - MI_SIDE_L2_BITS))
#define MI_SIDE_L2_COUNT ((size_t)1 << MI_SIDE_L2_BITS)
#define MI_SIDE_SLOTS (MI_SEGMENT_SIZE / MI_MAX_ALIGN_SIZE)

typedef _Atomic(uint8_t*) mi_side_ref_t;
typedef struct mi_side_map_s {
  _Atomic(mi_side_ref_t*) l1[MI_SIDE_L1_COUNT];
  _Atomic(bool) used; /* a side array was ever made */
} mi_side_map_t;

/* The slot of `key` (`slot_size` bytes); NULL if its segment has no side
   array (yet). Inline: its users' common path. */
static inline uint8_t* mi_side_at(mi_side_map_t* map, uintptr_t key, size_t slot_size) {
  uintptr_t seg = key >> MI_SEGMENT_SHIFT;
  if (mi_unlikely(seg >= ((uintptr_t)1 << MI_SIDE_SEG_BITS))) return NULL;
  mi_side_ref_t* l2 = atomic_load_explicit(&map->l1[seg >> MI_SIDE_L2_BITS], memory_order_acquire);
  if (mi_unlikely(l2 == NULL)) return NULL;
  uint8_t* side = atomic_load_explicit(&l2[seg & (MI_SIDE_L2_COUNT - 1)], memory_order_acquire);
  if (mi_unlikely(side == NULL)) return NULL;
  return side + ((key & MI_SEGMENT_MASK) / MI_MAX_ALIGN_SIZE) * slot_size;
}

static inline bool mi_side_used(mi_side_map_t* map) {
  return atomic_load_explicit(&map->used, memory_order_relaxed);
}

/* The slot of `key`, its side array made if needed; NULL without memory. */
uint8_t* _mi_side_make(mi_side_map_t* map, uintptr_t key, size_t slot_size) mi_decl_hidden;
/* The side array of `segment` (unmapped), out of the map: NULL if none;
   the caller frees it once no clearing pass can be writing it. */
uint8_t* _mi_side_detach(mi_side_map_t* map, const void* segment) mi_decl_hidden;
void _mi_side_free(uint8_t* side, size_t slot_size) mi_decl_hidden;
/* Every side array's slots zeroed (the caller keeps the map from changing). */
void _mi_side_clear(mi_side_map_t* map, size_t slot_size) mi_decl_hidden;

#endif
