/* The calls that also report the block's usable size (mimalloc's mi_u*):
   what mi_usable_size would say of the result, read while the block is at
   hand, so that a program sizing a buffer to its block needs no second
   call. A failed allocation reports 0. Also v3's mi_free_small. */
#include "api.h"

static inline void* mi_usable_out(void* p, size_t* block_size) {
  if (block_size != NULL) *block_size = (p != NULL ? mi_usable_size(p) : 0);
  return p;
}

void* mi_umalloc(size_t size, size_t* block_size) {
  return mi_usable_out(mi_malloc(size), block_size);
}

void* mi_ucalloc(size_t count, size_t size, size_t* block_size) {
  return mi_usable_out(mi_calloc(count, size), block_size);
}

/* the old block's size is read before it may be freed */
void* mi_urealloc(void* p, size_t newsize, size_t* block_size_pre, size_t* block_size_post) {
  if (block_size_pre != NULL) *block_size_pre = mi_usable_size(p);
  return mi_usable_out(mi_realloc(p, newsize), block_size_post);
}

void mi_ufree(void* p, size_t* block_size) {
  if (block_size != NULL) *block_size = mi_usable_size(p);
  mi_free(p);
}

void* mi_umalloc_aligned(size_t size, size_t alignment, size_t* block_size) {
  return mi_usable_out(mi_malloc_aligned(size, alignment), block_size);
}

void* mi_uzalloc_aligned(size_t size, size_t alignment, size_t* block_size) {
  return mi_usable_out(mi_zalloc_aligned(size, alignment), block_size);
}

void* mi_umalloc_small(size_t size, size_t* block_size) {
  return mi_usable_out(mi_malloc_small(size), block_size);
}

void* mi_uzalloc_small(size_t size, size_t* block_size) {
  return mi_usable_out(mi_zalloc_small(size), block_size);
}

/* v3 frees small blocks by a shorter path; here every block takes the same
   one, so any block of ours is accepted */
void mi_free_small(void* p) {
  mi_free(p);
}
