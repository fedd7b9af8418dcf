/* The secure build's page header checks on the segment floor (MI_SECURE):
   the check word sealed over a page's geometry (secure-geometry.h), checked
   again before a page goes back to its segment, and the report of a header
   found corrupted. */
#include "segment.h"
#include "secure-geometry.h"

#if MI_SECURE
void _mi_secure_page_seal(mi_page_t* page) {
  const mi_segment_t* segment = _mi_page_segment(page);
  uint64_t geometry = (segment->kind == MI_SEGMENT_SINGLE
                           ? mi_single_geometry(segment, page)
                           : mi_page_geometry(page, mi_segment_bits(segment->kind, segment->page_shift)));
  /* (marked as its flag says: base.h, mi_page_sampled_set) */
  if (segment->kind <= MI_SEGMENT_MEDIUM && (mi_page_flags(page) & MI_PAGE_FLAG_SAMPLED) != 0) {
    geometry ^= mi_geometry_sampled_mark();
  }
  atomic_store_explicit(&page->geometry, geometry, memory_order_release);
}

/* Nothing of the header is followed once it is found corrupted. The size is
   the header's, which starts at the address given. */
mi_noinline mi_decl_noreturn void _mi_secure_report_corrupted_header(const mi_segment_t* segment) {
  _mi_secure_fatal("corrupted segment header detected at", segment, sizeof(mi_segment_t));
}

void _mi_secure_corrupted_header(const mi_segment_t* segment) {
  _mi_secure_report_corrupted_header(segment);
}

/* A small or medium page about to go back to its segment, which walks its
   blocks (_mi_secure_page_freed): its geometry is checked again. */
void _mi_secure_page_check(const mi_page_t* page) {
  const mi_segment_t* segment = _mi_page_segment(page);
  if (!mi_geometry_holds(page, mi_page_geometry(page, mi_segment_bits(segment->kind, segment->page_shift))) ||
      page->capacity > page->reserved) {
    _mi_secure_report_corrupted_header(segment);
  }
}
#endif
