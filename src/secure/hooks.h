/* The secure policy the floors apply at a page's set-up and release (hooks
   the core calls unconditionally; compiled to nothing in the default
   build). Issue 38's step 2 moves the policy onto those floors; until then
   they call the secure wing from here. */
#ifndef MI_SECURE_HOOKS_H
#define MI_SECURE_HOOKS_H

#include "secure.h"

/* A page slot is taken for `heap`: before its set-up (`was_dirty`: its
   memory is still committed and holds what it held) ... */
static inline void mi_hook_page_setup_begin(mi_heap_t* heap, mi_page_t* page, bool was_dirty, size_t block_size,
                                            size_t blocks) {
#if MI_SECURE
  _mi_secure_page_init(heap, page, was_dirty, block_size, blocks);
#endif
  (void)heap, (void)page, (void)was_dirty, (void)block_size, (void)blocks;
}

/* ... and after it, its geometry final. */
static inline void mi_hook_page_setup_end(mi_page_t* page) {
#if MI_SECURE
  _mi_secure_page_seal(page); /* free checks what it reads of the page against it */
#endif
  (void)page;
}

/* A page's blocks are all back and its slot goes back to its segment
   (before anything of the page or the segment is changed). */
static inline void mi_hook_page_freed(mi_segment_t* segment, mi_page_t* page) {
#if MI_SECURE
  _mi_secure_page_free_check(segment, page);
  _mi_secure_page_freed(page);
#endif
  (void)segment, (void)page;
}

/* The last page in use of `segment` went: before the segment is released. */
static inline void mi_hook_segment_emptied(const mi_segment_t* segment) {
#if MI_SECURE
  _mi_secure_segment_empty_check(segment);
#endif
  (void)segment;
}

#endif
