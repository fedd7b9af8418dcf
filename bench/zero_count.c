/* zero_count: an LD_PRELOAD counter of the bytes the secure build would zero
 * on free while a workload runs (the input of zero_floor).
 *
 * The program runs on glibc's malloc; every block carries a header with its
 * request and the block the secure build would have given it (zero_floor.h:
 * the size class of request + trailer). A free counts that block; so does a
 * realloc that the secure build would move (it frees the old block), by the
 * secure build's rule (src/api/alloc.c, _mi_heap_realloc_zero): in place when the
 * new size is at least half the old one and fits the block with its trailer;
 * otherwise a new block, with half its size again as room when it grows into
 * the large sizes. The block sizes are then exact, also for blocks grown and
 * shrunk in place, which the usable size of the secure build itself would
 * not tell (it reports the request).
 *
 * At exit it writes to $ZERO_COUNT_OUT (or stderr) one `block_size count`
 * line per size class freed at most ZF_MAX_BLOCK, then `#` lines with the
 * blocks above it (not zeroed). Guarded samples (1 allocation in 4000 by
 * default, not zeroed either) are not told apart.
 *
 * build: gcc -O2 -shared -fPIC -o zero_count.so zero_count.c */
#define _GNU_SOURCE
#include "zero_floor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void* __libc_malloc(size_t n);
extern void* __libc_calloc(size_t c, size_t n);
extern void* __libc_realloc(void* p, size_t n);
extern void __libc_free(void* p);

#define ZC_EXPORT __attribute__((visibility("default")))

/* 32 bytes keep the caller's pointer 16-byte aligned, as malloc's are */
typedef struct {
  size_t req;
  size_t block;
  size_t offset; /* from glibc's block to the caller's pointer */
  size_t unused;
} zc_header_t;

#define ZC_HDR sizeof(zc_header_t)
#define ZC_CLASSES 288 /* the size classes up to 2^40 bytes */

static size_t zc_count[ZC_CLASSES];
static size_t zc_bytes[ZC_CLASSES]; /* a large class's blocks differ in size (page-rounded): their mean is written */
static size_t zc_large_count, zc_large_bytes;

static zc_header_t* zc_header(void* p) {
  return (zc_header_t*)((uint8_t*)p - ZC_HDR);
}

/* index of a size class: 1..8 the 16-byte steps, then eight per doubling;
   0 is the one class outside the eighths (ZF_MEDIUM_MAX) */
static unsigned zc_class(size_t block) {
  if (block == ZF_MEDIUM_MAX) return 0;
  if (block <= 128) return (unsigned)(block / 16);
  unsigned b = 63u - (unsigned)__builtin_clzll((unsigned long long)(block - 1));
  unsigned i = 9 + (b - 7) * 8 + (unsigned)(((block - 1) >> (b - 3)) & 7);
  return i < ZC_CLASSES ? i : ZC_CLASSES - 1;
}

/* the relaxed atomic adds keep the counts exact across threads; this run is
   never the one timed */
static void zc_count_free(size_t block) {
  if (block <= ZF_MAX_BLOCK) {
    unsigned i = zc_class(block);
    __atomic_fetch_add(&zc_bytes[i], block, __ATOMIC_RELAXED);
    __atomic_fetch_add(&zc_count[i], 1, __ATOMIC_RELAXED);
  } else {
    __atomic_fetch_add(&zc_large_count, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&zc_large_bytes, block, __ATOMIC_RELAXED);
  }
}

static void* zc_place(void* raw, size_t offset, size_t req, size_t block) {
  if (raw == NULL) return NULL;
  void* p = (uint8_t*)raw + offset;
  zc_header_t* h = zc_header(p);
  h->req = req;
  h->block = block;
  h->offset = offset;
  return p;
}

static void* zc_raw(void* p) {
  return (uint8_t*)p - zc_header(p)->offset;
}

ZC_EXPORT void* malloc(size_t n) {
  if (n > PTRDIFF_MAX - 4096) {
    errno = ENOMEM;
    return NULL;
  }
  return zc_place(__libc_malloc(n + ZC_HDR), ZC_HDR, n, zf_block_size(n));
}

ZC_EXPORT void* calloc(size_t c, size_t n) {
  size_t total;
  if (__builtin_mul_overflow(c, n, &total) || total > PTRDIFF_MAX - 4096) {
    errno = ENOMEM;
    return NULL;
  }
  return zc_place(__libc_calloc(1, total + ZC_HDR), ZC_HDR, total, zf_block_size(total));
}

ZC_EXPORT void free(void* p) {
  if (p == NULL) return;
  zc_count_free(zc_header(p)->block);
  __libc_free(zc_raw(p));
}

/* The secure build's block of an aligned allocation: its size class when
   that is a multiple of the alignment, else room to align inside. */
static void* zc_aligned(size_t align, size_t n) {
  if (align < 16) align = 16;
  if ((align & (align - 1)) != 0 || n > PTRDIFF_MAX - 2 * align - 4096) return NULL;
  size_t block = zf_block_size(n);
  if (block % align != 0) block = zf_block_size(n + align - 1);
  uint8_t* raw = (uint8_t*)__libc_malloc(n + align + ZC_HDR);
  if (raw == NULL) return NULL;
  uintptr_t p = ((uintptr_t)raw + ZC_HDR + align - 1) & ~(uintptr_t)(align - 1);
  return zc_place(raw, (size_t)(p - (uintptr_t)raw), n, block);
}

ZC_EXPORT void* realloc(void* p, size_t n) {
  if (p == NULL) return malloc(n);
  if (n > PTRDIFF_MAX - 4096) {
    errno = ENOMEM;
    return NULL;
  }
  zc_header_t h = *zc_header(p);
  size_t block = h.block;
  if (n == 0 || n < h.req / 2 || n + ZF_TRAILER > h.block) {
    zc_count_free(h.block); /* the secure build moves it: the old block is freed */
    bool room = n > h.req && n + ZF_TRAILER > ZF_MEDIUM_MAX && n <= ((size_t)16 << 20);
    block = zf_block_size(room ? n + n / 2 : n);
  }
  if (h.offset == ZC_HDR) return zc_place(__libc_realloc(zc_raw(p), n + ZC_HDR), ZC_HDR, n, block);
  void* q = zc_place(__libc_malloc(n + ZC_HDR), ZC_HDR, n, block);
  if (q == NULL) return NULL;
  memcpy(q, p, h.req < n ? h.req : n);
  __libc_free(zc_raw(p));
  return q;
}

ZC_EXPORT void* reallocarray(void* p, size_t c, size_t n) {
  size_t total;
  if (__builtin_mul_overflow(c, n, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, total);
}

ZC_EXPORT void* memalign(size_t align, size_t n) {
  void* p = zc_aligned(align, n);
  if (p == NULL) errno = (align & (align - 1)) ? EINVAL : ENOMEM;
  return p;
}

ZC_EXPORT void* aligned_alloc(size_t align, size_t n) {
  return memalign(align, n);
}

ZC_EXPORT int posix_memalign(void** out, size_t align, size_t n) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = zc_aligned(align, n);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}

ZC_EXPORT void* valloc(size_t n) {
  return memalign(4096, n);
}

ZC_EXPORT void* pvalloc(size_t n) {
  return memalign(4096, (n + 4095) & ~(size_t)4095);
}

ZC_EXPORT size_t malloc_usable_size(void* p) {
  return p == NULL ? 0 : zc_header(p)->req;
}

__attribute__((destructor)) static void zc_report(void) {
  const char* path = getenv("ZERO_COUNT_OUT");
  int fd = path != NULL ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : 2;
  if (fd < 0) return;
  size_t size[ZC_CLASSES] = {0}, count[ZC_CLASSES] = {0}, n = 0;
  for (unsigned i = 0; i < ZC_CLASSES; i++) {
    size_t c = __atomic_load_n(&zc_count[i], __ATOMIC_RELAXED);
    if (c == 0) continue;
    size_t s = (__atomic_load_n(&zc_bytes[i], __ATOMIC_RELAXED) / c + 15) & ~(size_t)15, k = n++;
    for (; k > 0 && size[k - 1] > s; k--) {
      size[k] = size[k - 1];
      count[k] = count[k - 1];
    }
    size[k] = s;
    count[k] = c;
  }
  dprintf(fd, "# zero_count: blocks freed up to %zu B (zeroed on free): block_size count\n", (size_t)ZF_MAX_BLOCK);
  for (size_t i = 0; i < n; i++) dprintf(fd, "%zu %zu\n", size[i], count[i]);
  dprintf(fd, "# above it, not zeroed: %zu blocks, %zu bytes\n", __atomic_load_n(&zc_large_count, __ATOMIC_RELAXED),
          __atomic_load_n(&zc_large_bytes, __ATOMIC_RELAXED));
  if (fd != 2) close(fd);
}
