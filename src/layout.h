/* The allocator's layout (segments, pages, size classes, bins), derived
   from the build switches of config.h, which includes this header last. */
#ifndef MI_LAYOUT_H
#define MI_LAYOUT_H

#include "config.h"

/* Segments are 4 MiB aligned, so a block's segment is its address with the low
   22 bits cleared: pointer to page in O(1) without any table. */
#define MI_SEGMENT_SHIFT 22
#define MI_SEGMENT_SIZE ((size_t)1 << MI_SEGMENT_SHIFT)
#define MI_SEGMENT_MASK (MI_SEGMENT_SIZE - 1)

#define MI_SMALL_PAGE_SHIFT 16  /* 64 KiB pages for blocks up to 8 KiB */
#define MI_MEDIUM_PAGE_SHIFT 19 /* 512 KiB pages for blocks up to 128 KiB */
#define MI_SMALL_PAGE_SIZE ((size_t)1 << MI_SMALL_PAGE_SHIFT)
#define MI_MEDIUM_PAGE_SIZE ((size_t)1 << MI_MEDIUM_PAGE_SHIFT)
#define MI_SMALL_PAGES_PER_SEGMENT (MI_SEGMENT_SIZE / MI_SMALL_PAGE_SIZE)
#define MI_MEDIUM_PAGES_PER_SEGMENT (MI_SEGMENT_SIZE / MI_MEDIUM_PAGE_SIZE)

#define MI_SMALL_BLOCK_MAX ((size_t)8 * 1024)
/* Secure builds add an 8-byte trailer to every request, so the last medium
   bin is 128 KiB + 16 there (bin 89, after the 88 of the size classes): a
   request of exactly 128 KiB, a common buffer size, stays on a medium page
   instead of taking a segment of its own. */
#define MI_MEDIUM_BLOCK_MAX ((size_t)128 * 1024 + (MI_SECURE ? 16 : 0))

/* Blocks above MI_MEDIUM_BLOCK_MAX get a segment of their own ("single-block"
   segments): "large" up to MI_LARGE_SEGMENT_MAX (these segments are cached
   for reuse and purged after the purge delay), "huge" above that (unmapped
   as soon as they are freed). */
#define MI_LARGE_SEGMENT_MAX ((size_t)32 * 1024 * 1024)

#define MI_MAX_ALIGN_SIZE 16 /* every block is at least this aligned */
/* Larger alignments than this are not over-allocated inside a segment's
   first chunk: the block gets a sparse segment of its own placed at the
   alignment (segment/single.c), which serves any the address space allows. */
#define MI_ALIGNMENT_IN_SEGMENT_MAX (MI_SEGMENT_SIZE / 2)
#define MI_MAX_ALLOC_SIZE ((size_t)PTRDIFF_MAX)

/* Size classes: 16-byte steps up to 128 bytes, then 8 classes per doubling, so
   that above 128 bytes rounding wastes less than 1/8 of a block. */
#define MI_BIN_SMALL_MAX 56                     /* last bin of small pages (8 KiB) */
#define MI_BIN_MEDIUM_MAX (MI_SECURE ? 89 : 88) /* last bin of medium pages (MI_MEDIUM_BLOCK_MAX) */
#define MI_BIN_FULL (MI_BIN_MEDIUM_MAX + 1)     /* queue of pages with no free block */
#define MI_BIN_COUNT (MI_BIN_FULL + 1)
/* Sizes up to MI_BIN_WSIZE_MAX words find their bin by table (page.c's
   _mi_bin_of_wsize) and their page by the heap's direct table (pages_direct) */
#define MI_BIN_WSIZE_MAX 128
#define MI_BIN_WSIZE_BYTES_MAX ((size_t)MI_BIN_WSIZE_MAX * 8)
#define MI_BIN_DIRECT_MAX 32 /* the bin of MI_BIN_WSIZE_BYTES_MAX: the last the direct table serves */

/* The statistics' histograms are kept in upstream mimalloc's bin numbering
   (include/mimalloc-stats.h), so that tools written for it read ours: bins
   1..72 by block size, 73 ("huge") above 512 KiB. */
#define MI_STAT_BIN_HUGE 73
#define MI_STAT_BIN_COUNT (MI_STAT_BIN_HUGE + 1)

/* Secure mode: bytes reserved at the end of every block for the encoded
   trailer (requested size and check), canary bytes checked after the
   requested size, the largest blocks checked for use-after-free writes
   inline at every hand-out (larger ones are zeroed with streaming stores and
   checked out of line, but at their first hand-out from their page:
   secure/memory.c), and the per-thread quarantine of freed small blocks. */
#define MI_SECURE_TRAILER 8
#define MI_SECURE_CANARY_MAX 16
#define MI_SECURE_UAF_CHECK_MAX MI_SMALL_BLOCK_MAX
#define MI_SECURE_QUARANTINE 64
#define MI_SECURE_CARVE_MAX 32 /* blocks linked in random order per extension of a page */

/* Free segments kept for reuse before they are unmapped. */
#define MI_SEGMENT_CACHE_MAX 32
/* Full pages scanned per slow-path call for frees from other threads. Each
   page found with frees is collected (its list walked, its blocks' lines
   brought into this core's cache) ahead of use: 2 pages of 64 KiB stay in
   the cache until their blocks are handed out, 8 did not (`xmalloc-1t`,
   one thread allocating what another frees: 2.20 -> 2.02 s of its relative
   time in three interleaved rounds; `xmalloc-2t` 1.52 -> 1.56; the 21-row
   geomean level, 0.92 and 0.91 x mimalloc 2.4.1). */
#define MI_FULL_SCAN_BATCH 2

#endif
