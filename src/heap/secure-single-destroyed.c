/* A destroyed heap's single blocks (large and sampled guarded ones) in
   secure builds: each goes as its free would have let it go (its memory
   discarded, fenced off and held), so that a use after the destroy faults
   or is reported as a use of a freed block. The heap floor hands it to
   segment/single.c's walk of the heap's single blocks. */
#include "heap.h"
#include "../page/secure-block.h"
#include "../secure/secure.h"

#if MI_SECURE
void _mi_secure_single_destroyed(mi_page_t* page) {
  mi_segment_t* segment = _mi_page_segment(page);
#if MI_GUARDED
  if (page->is_guarded) {
    mi_bit_set(page, 0, false); /* as free clears it */
    mi_guard_stacks_record(segment, true);
    _mi_guard_free(segment, page);
    return;
  }
#endif
  _mi_secure_large_free(segment);
}
#endif
