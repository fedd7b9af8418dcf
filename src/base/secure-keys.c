/* The secure build's process keys: the trailer's, the header check's and
   the heap handles', derived from the process key at start-up. */
#include "base.h"
#include "../secure/secure.h"

/* Derived from the process key once, at start-up: free and malloc both use it. */
uintptr_t _mi_secure_trailer_key;
uint64_t _mi_secure_geometry_keys[2]; /* the header's check words (mi_page_geometry); the second odd */
uintptr_t _mi_secure_heap_key;        /* heaps' handle checks (mi_heap_handle_check) */

void _mi_secure_keys_init(void) {
  _mi_secure_trailer_key = _mi_process_key * 0xBF58476D1CE4E5B9ULL;
  _mi_secure_geometry_keys[0] = _mi_process_key * 0x94D049BB133111EBULL;
  _mi_secure_geometry_keys[1] = ((_mi_process_key ^ (_mi_process_key >> 29)) * 0xD6E8FEB86659FD93ULL) | 1;
  _mi_secure_heap_key = (_mi_process_key ^ (_mi_process_key >> 31)) * 0x9E3779B97F4A7C15ULL;
}
