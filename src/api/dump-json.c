/* The live heaps as JSON (mi_heap_dump_json, the seed's per-heap dump):
   the calling thread's heaps page by page, and with `include_blocks` every
   live block. Another thread's pages change under any reader but their
   owner: they are left out, never read while they change, and counted
   (`skipped_pages`, `busy_theaps`, `complete`). The text is built in
   OS-backed scratch memory; the one heap allocation is the result. */
#include "api.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

/* A growing text in OS memory: the allocator's own heap is what it describes. */
typedef struct mi_dump_s {
  char* buf;
  size_t size;
  size_t len;
  bool failed;
  bool hash;
  uint64_t key; /* per dump: hashed ids are consistent within one dump only */
  /* the page being counted (include_blocks: its entries come first) */
  bool page_open;
  mi_heap_area_t area;
  size_t blocks;
  bool first_entry;
} mi_dump_t;

static void mi_dump_add(mi_dump_t* d, const char* fmt, ...) mi_attr_printf(2, 3);
static void mi_dump_add(mi_dump_t* d, const char* fmt, ...) {
  char line[160];
  va_list args;
  va_start(args, fmt);
  /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above; clang 14 misreads it */
  int n = vsnprintf(line, sizeof(line), fmt, args);
  va_end(args);
  if (n <= 0 || d->failed) return;
  size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
  if (d->len + len + 1 > d->size) {
    size_t size = (d->size == 0 ? (size_t)64 * 1024 : 2 * d->size);
    while (size < d->len + len + 1) size *= 2;
    char* buf = (char*)_mi_os_alloc_meta(size);
    if (buf == NULL) {
      d->failed = true; /* fault path */
      return;
    }
    if (d->buf != NULL) {
      memcpy(buf, d->buf, d->len);
      _mi_os_free_meta(d->buf, d->size);
    }
    d->buf = buf;
    d->size = size;
  }
  memcpy(d->buf + d->len, line, len + 1);
  d->len += len;
}

/* An address as the dump shows it: itself, or a keyed hash below 2^53
   (exact in a JSON reader's double). */
static uint64_t mi_dump_id(const mi_dump_t* d, const void* p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  if (!d->hash) return x;
  x ^= d->key;
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ULL;
  x ^= x >> 27;
  x *= 0x81DADEF4BC2DD44DULL;
  x ^= x >> 33;
  return (x & (((uint64_t)1 << 53) - 1)) | 1; /* never 0, never an address of ours by chance alone */
}

static void mi_dump_page_close(mi_dump_t* d, const mi_heap_t* heap, bool with_blocks) {
  if (!d->page_open) return;
  d->page_open = false;
  size_t used = (with_blocks ? d->blocks : d->area.used);
  mi_dump_add(d, "%s      { \"id\": %llu, \"block_size\": %zu, \"used\": %zu, \"reserved\": %zu, \"thread_id\": %llu }",
              d->first_entry ? "" : ",\n", (unsigned long long)mi_dump_id(d, d->area.blocks), d->area.block_size, used,
              d->area.block_size == 0 ? (size_t)0 : d->area.reserved / d->area.block_size,
              (unsigned long long)heap->thread_id);
  d->first_entry = false;
}

/* First walk: a page entry once its blocks are counted. (A visitor's
   signature: cppcheck would have `block` const.) */
/* cppcheck-suppress constParameter */
static bool mi_dump_page(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)block_size;
  mi_dump_t* d = (mi_dump_t*)arg;
  if (block != NULL) {
    d->blocks++;
    return true;
  }
  mi_dump_page_close(d, heap, true);
  d->page_open = true;
  d->area = *area;
  d->blocks = 0;
  return true;
}

/* Second walk: the blocks. */
static bool mi_dump_block(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size,
                          void* arg) {
  (void)heap, (void)area;
  mi_dump_t* d = (mi_dump_t*)arg;
  if (block == NULL) return true;
  mi_dump_add(d, "%s[%llu,%zu]", d->first_entry ? "" : ",", (unsigned long long)mi_dump_id(d, block), block_size);
  d->first_entry = false;
  return true;
}

static void mi_dump_heap(mi_dump_t* d, const mi_heap_t* heap, size_t seq, bool include_blocks) {
  mi_dump_add(d, "%s  { \"seq\": %zu,\n    \"pages\": [\n", seq == 0 ? "" : ",\n", seq);
  d->first_entry = true;
  d->page_open = false;
  /* without blocks, the page's own count (with other threads' frees not
     yet collected): the walk of blocks is skipped */
  (void)mi_heap_visit_blocks(heap, include_blocks, &mi_dump_page, d);
  mi_dump_page_close(d, heap, include_blocks);
  if (!include_blocks) {
    mi_dump_add(d, "\n    ] }");
    return;
  }
  mi_dump_add(d, "\n    ],\n    \"blocks\": [");
  d->first_entry = true;
  (void)mi_heap_visit_blocks(heap, true, &mi_dump_block, d);
  mi_dump_add(d, "] }");
}

/* No owner is waited for: another thread's pages are read by their owner
   only, whatever the wait (`wait_ms` is accepted for the seed's signature). */
char* mi_heap_dump_json_ex(bool include_blocks, bool hash_addresses, size_t wait_ms) {
  (void)wait_ms;
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) heap = _mi_heap_init_thread();
  if (heap == NULL) return NULL;
  mi_dump_t d;
  memset(&d, 0, sizeof(d));
  d.hash = hash_addresses;
  if (hash_addresses && !mi_prim_random_buf(&d.key, sizeof(d.key)))
    d.key = (uint64_t)mi_prim_clock_now() * 0x9E3779B97F4A7C15ULL;
  mi_dump_add(&d, "{ \"heaps\": [\n");
  /* in the order they were made: the backing heap (0) is the list's last */
  size_t count = 0;
  for (const mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) count++;
  for (size_t seq = 0; seq < count; seq++) {
    const mi_heap_t* h = heap->tld->heaps;
    for (size_t k = 0; k + 1 + seq < count; k++) h = h->next;
    mi_dump_heap(&d, h, seq, include_blocks);
  }
  size_t skipped = 0, busy = 0;
  _mi_heap_foreign_pages(&skipped, &busy);
  /* where other threads' segments cannot be copied to be counted, other
     live threads are taken as busy */
  uint64_t probe = 1, copy = 0;
  if (mi_prim_read_self(&probe, &copy, sizeof(copy)) != 0) {
    int64_t threads = atomic_load_explicit(&_mi_stats.threads.current, memory_order_relaxed);
    busy = (threads > 1 ? (size_t)(threads - 1) : 0);
  }
  mi_dump_add(&d, "\n], \"complete\": %s, \"skipped_pages\": %zu, \"busy_theaps\": %zu }\n",
              skipped == 0 && busy == 0 ? "true" : "false", skipped, busy);
  char* result = NULL;
  if (!d.failed) {
    result = (char*)mi_malloc(d.len + 1);
    if (result != NULL) memcpy(result, d.buf, d.len + 1);
  } else {
    errno = ENOMEM; /* fault path: the text could not grow */
  }
  if (d.buf != NULL) _mi_os_free_meta(d.buf, d.size);
  return result;
}

char* mi_heap_dump_json(bool include_blocks, bool hash_addresses) {
  return mi_heap_dump_json_ex(include_blocks, hash_addresses, 100);
}
