/* The profilers' memory: from the OS, never from the heap they observe.
   Shared by DHAT's recorder and the stack machinery both profilers use. */
#include "dhat.h"

#if MI_DHAT || MI_PPROF

void* _mi_dhat_os_alloc(size_t size) {
  return _mi_os_alloc_meta(size);
}

void _mi_dhat_os_free(void* p, size_t size) {
  if (p != NULL) _mi_os_free_meta(p, size);
}

/* Grow an array to at least `want` elements, keeping its contents. */
bool _mi_dhat_grow(void** arr, size_t* cap, size_t elem, size_t want) {
  if (*cap >= want) return true;
  size_t newcap = (*cap == 0 ? 1024 : *cap);
  while (newcap < want) newcap *= 2;
  void* p = _mi_dhat_os_alloc(newcap * elem);
  if (p == NULL) return false;
  if (*arr != NULL) {
    memcpy(p, *arr, *cap * elem);
    _mi_dhat_os_free(*arr, *cap * elem);
  }
  *arr = p;
  *cap = newcap;
  return true;
}

#endif
