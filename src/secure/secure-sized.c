/* Sized and aligned deallocation in secure builds: C++'s sized and aligned
   delete, C23's free_sized and free_aligned_sized, mimalloc's mi_free_size*.
   The caller states the block's size (or alignment); when that is wrong the
   program has lost track of what the block is (a delete through a base class
   without a virtual destructor, the wrong buffer of a pair), which a plain
   free cannot see. The secure build knows each block's requested size
   exactly (it is what mi_usable_size returns), so the check is exact, not by
   size class. Compiled in secure builds only: the default build's forms just
   free. */
#include "../page/secure-validate.h"
#include "secure.h"

#include <stdio.h>

static mi_noinline mi_decl_noreturn void mi_report_size_mismatch(const void* p, size_t given, size_t size) {
  char what[96];
  /* the given size goes in the text: `(size N)` stays last, the block's own */
  (void)snprintf(what, sizeof(what), "sized deallocation mismatch detected (%zu bytes given) of block", given);
  _mi_secure_report_block(what, p, p, 0, size, MI_REPORT_UNKNOWN, NULL);
}

static mi_noinline mi_decl_noreturn void mi_report_misaligned(const void* p, size_t alignment, size_t size) {
  char what[96];
  (void)snprintf(what, sizeof(what), "invalid aligned deallocation detected (alignment %zu) of pointer", alignment);
  _mi_secure_report_block(what, p, p, 0, size, MI_REPORT_UNKNOWN, NULL);
}

/* The size p's block was asked with, p validated as free validates it (a
   bad pointer is reported as an invalid or double free, a block of another
   kind as a kind mismatch, before its size is looked at). */
static inline size_t mi_requested_size(const void* p, mi_alloc_kind_t kind) {
  size_t size;
  _mi_secure_validate_kind(p, MI_OP_FREE, kind, NULL, &size);
  return size;
}

/* Checks only: the free itself is the caller's (api/), through mi_free or
   the delete of its kind, which validates the pointer again (the cost is in
   docs/secure-mode.md), so the heap profiler sees it as any free. */
void _mi_secure_check_sized(void* p, size_t size, mi_alloc_kind_t kind) {
  if (p == NULL) return;
  size_t requested = mi_requested_size(p, kind);
  if (mi_unlikely(requested != size)) mi_report_size_mismatch(p, size, requested);
}

/* An alignment that is not a power of two cannot be one the block was
   allocated with (aligned new and aligned_alloc refuse it). */
void _mi_secure_check_aligned(void* p, size_t size, size_t alignment, bool sized, mi_alloc_kind_t kind) {
  if (p == NULL) return;
  size_t requested = mi_requested_size(p, kind);
  if (mi_unlikely(!_mi_is_power_of_two(alignment) || ((uintptr_t)p & (alignment - 1)) != 0)) {
    mi_report_misaligned(p, alignment, requested);
  }
  if (mi_unlikely(sized && requested != size)) mi_report_size_mismatch(p, size, requested);
}
