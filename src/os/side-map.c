/* Side arrays beside the segments (side-map.h): their making, detaching and
   clearing. */
#include <string.h>
#include "side-map.h"
#include "os.h"

static mi_side_ref_t* mi_side_l2_make(mi_side_map_t* map, size_t i) {
  mi_side_ref_t* l2 = (mi_side_ref_t*)_mi_os_alloc_meta(MI_SIDE_L2_COUNT * sizeof(mi_side_ref_t));
  if (l2 == NULL) return NULL;
  mi_side_ref_t* expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&map->l1[i], &expected, l2, memory_order_acq_rel,
                                               memory_order_acquire)) {
    _mi_os_free_meta(l2, MI_SIDE_L2_COUNT * sizeof(mi_side_ref_t));
    return expected; /* another thread's */
  }
  return l2;
}

static uint8_t* mi_side_array_make(mi_side_map_t* map, mi_side_ref_t* ref, size_t slot_size) {
  uint8_t* side = (uint8_t*)_mi_os_alloc_meta(MI_SIDE_SLOTS * slot_size);
  if (side == NULL) return NULL;
  atomic_store_explicit(&map->used, true, memory_order_relaxed);
  uint8_t* expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(ref, &expected, side, memory_order_acq_rel, memory_order_acquire)) {
    _mi_os_free_meta(side, MI_SIDE_SLOTS * slot_size);
    return expected;
  }
  return side;
}

mi_noinline uint8_t* _mi_side_make(mi_side_map_t* map, uintptr_t key, size_t slot_size) {
  uintptr_t seg = key >> MI_SEGMENT_SHIFT;
  if (seg >= ((uintptr_t)1 << MI_SIDE_SEG_BITS)) return NULL;
  size_t i = (size_t)(seg >> MI_SIDE_L2_BITS);
  mi_side_ref_t* l2 = atomic_load_explicit(&map->l1[i], memory_order_acquire);
  if (l2 == NULL && (l2 = mi_side_l2_make(map, i)) == NULL) return NULL;
  mi_side_ref_t* ref = &l2[seg & (MI_SIDE_L2_COUNT - 1)];
  uint8_t* side = atomic_load_explicit(ref, memory_order_acquire);
  if (side == NULL && (side = mi_side_array_make(map, ref, slot_size)) == NULL) return NULL;
  return side + ((key & MI_SEGMENT_MASK) / MI_MAX_ALIGN_SIZE) * slot_size;
}

uint8_t* _mi_side_detach(mi_side_map_t* map, const void* segment) {
  if (!mi_side_used(map)) return NULL;
  uintptr_t seg = (uintptr_t)segment >> MI_SEGMENT_SHIFT;
  if (seg >= ((uintptr_t)1 << MI_SIDE_SEG_BITS)) return NULL;
  mi_side_ref_t* l2 = atomic_load_explicit(&map->l1[seg >> MI_SIDE_L2_BITS], memory_order_acquire);
  if (l2 == NULL) return NULL;
  return atomic_exchange_explicit(&l2[seg & (MI_SIDE_L2_COUNT - 1)], NULL, memory_order_acq_rel);
}

void _mi_side_free(uint8_t* side, size_t slot_size) {
  if (side != NULL) _mi_os_free_meta(side, MI_SIDE_SLOTS * slot_size);
}

void _mi_side_clear(mi_side_map_t* map, size_t slot_size) {
  if (!mi_side_used(map)) return;
  for (size_t i = 0; i < MI_SIDE_L1_COUNT; i++) {
    mi_side_ref_t* l2 = atomic_load_explicit(&map->l1[i], memory_order_acquire);
    if (l2 == NULL) continue;
    for (size_t j = 0; j < MI_SIDE_L2_COUNT; j++) {
      uint8_t* side = atomic_load_explicit(&l2[j], memory_order_acquire);
      if (side != NULL) memset(side, 0, MI_SIDE_SLOTS * slot_size);
    }
  }
}
