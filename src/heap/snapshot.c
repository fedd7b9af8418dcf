/* The live heap snapshot: the seed system's binary format "MIHS" v1
   (docs/heap-snapshot.md), mapped onto this allocator's segments: one
   arena record per segment (an OS reservation, or a range of an arena),
   its 64 KiB slices' committed, free and purge-scheduled bitmaps, and a
   page record per page in use; free maps for the calling thread's pages.

   It allocates nothing (a 16 KiB buffer on the stack, flushed with write)
   and stops no thread. The segments come from the segment map; another
   thread's header is copied with mi_prim_read_self, which fails instead of
   faulting when the owner unmaps it meanwhile, so what it says may be
   stale but is never read from freed memory. The arena count in the header
   is counted first; a segment gone by the time it is written is written as
   an empty record and one that appeared is left out, so the file always
   holds what its header says. Where no such copy is allowed (a sandbox
   without process_vm_readv), only the caller's own segments are written and
   the header's flags say so (MI_SNAPSHOT_PARTIAL). */
#include "heap.h"

#include <stddef.h>

#define MI_SNAPSHOT_MAGIC 0x5348494Du
#define MI_SNAPSHOT_VERSION 1u
#define MI_SNAPSHOT_SLICE ((size_t)64 * 1024)
#define MI_SNAPSHOT_TAG_ARENA 0x414E5241u
#define MI_SNAPSHOT_TAG_PAGE 0x45474150u
#define MI_SNAPSHOT_TAG_HEAP 0x50414548u
#define MI_SNAPSHOT_TAG_END 0x444E4520u
#define MI_SNAPSHOT_CHUNK_BYTES 64u /* a bitmap chunk: 512 slices */
/* upstream's memory kinds */
#define MI_SNAPSHOT_MEM_OS 3
#define MI_SNAPSHOT_MEM_OS_HUGE 4
#define MI_SNAPSHOT_MEM_ARENA 6

/* ---- Output: a buffer on the stack, written out when full -------------------- */

typedef struct mi_snap_out_s {
  int fd;
  int err;
  size_t len;
  uint64_t pages; /* page records written */
  uint8_t buf[16 * 1024];
} mi_snap_out_t;

static void mi_snap_flush(mi_snap_out_t* out) {
  if (out->err == 0 && out->len > 0) out->err = mi_prim_file_write(out->fd, out->buf, out->len);
  out->len = 0;
}

static void mi_snap_bytes(mi_snap_out_t* out, const void* p, size_t n) {
  const uint8_t* b = (const uint8_t*)p;
  while (n > 0) {
    if (out->len == sizeof(out->buf)) mi_snap_flush(out);
    size_t k = sizeof(out->buf) - out->len;
    if (k > n) k = n;
    memcpy(out->buf + out->len, b, k);
    out->len += k;
    b += k;
    n -= k;
  }
}

/* host byte order, as the format says (little-endian on every target) */
static void mi_snap_u8(mi_snap_out_t* out, uint8_t v) {
  mi_snap_bytes(out, &v, 1);
}
static void mi_snap_u32(mi_snap_out_t* out, uint32_t v) {
  mi_snap_bytes(out, &v, 4);
}
static void mi_snap_u64(mi_snap_out_t* out, uint64_t v) {
  mi_snap_bytes(out, &v, 8);
}

/* ---- Reading a segment: the caller's own directly, another's as a copy -------- */

/* What the snapshot needs of a segment and its pages, copied. */
typedef struct mi_snap_seg_s {
  uintptr_t base;
  bool own;            /* the calling thread's: its pages may be walked */
  mi_segment_t header; /* its fields up to the page table (the table itself not copied) */
} mi_snap_seg_t;

static bool mi_snap_read(const void* addr, void* buf, size_t size) {
  return (mi_prim_read_self(addr, buf, size) == 0);
}

/* The header of the segment at `base`, if it is still one of ours. */
static bool mi_snap_segment_read(uintptr_t base, mi_snap_seg_t* seg) {
  seg->base = base;
  if (!mi_snap_read((const void*)base, &seg->header, offsetof(mi_segment_t, pages))) return false;
  const mi_segment_t* h = &seg->header;
  if (h->cookie != (base ^ _mi_process_key)) return false;
  if (h->segment_size < MI_SEGMENT_SIZE / 2 || h->page_count == 0 || h->page_count > MI_SMALL_PAGES_PER_SEGMENT) {
    return false;
  }
  seg->own = (atomic_load_explicit(&h->thread_id, memory_order_relaxed) == _mi_thread_id() &&
              _mi_owner_state_of(atomic_load_explicit(&h->owner, memory_order_relaxed)) == MI_OWNER_OWNED);
  return true;
}

static bool mi_snap_page_read(const mi_snap_seg_t* seg, size_t i, mi_page_t* page) {
  const mi_page_t* at = &((const mi_segment_t*)seg->base)->pages[i];
  if (seg->own) {
    memcpy(page, at, sizeof(*page)); /* ours: no other thread changes its table's slots */
    return true;
  }
  return mi_snap_read(at, page, sizeof(*page));
}

/* ---- Records -------------------------------------------------------------------- */

static size_t mi_snap_slices(size_t bytes) {
  return (bytes + MI_SNAPSHOT_SLICE - 1) / MI_SNAPSHOT_SLICE;
}

/* A page's slot: [offset, offset + size) in its segment. */
static size_t mi_snap_slot(const mi_snap_seg_t* seg, size_t i, size_t* size) {
  const mi_segment_t* h = &seg->header;
  if (h->kind == MI_SEGMENT_SINGLE) {
    *size = h->segment_size;
    return 0;
  }
  *size = (size_t)1 << h->page_shift;
  return i << h->page_shift;
}

/* What the bitmaps need of a page slot. */
typedef struct mi_snap_slot_s {
  uint32_t state;
  size_t committed;
} mi_snap_slot_t;

typedef enum mi_snap_map_e { MI_SNAP_COMMITTED, MI_SNAP_FREE, MI_SNAP_PURGE } mi_snap_map_t;

/* Bit `slice` of a bitmap: by the page slot the slice lies in; committed
   also for the header, and for a page's area up to what it committed. */
static bool mi_snap_slice_bit(const mi_snap_seg_t* seg, const mi_snap_slot_t* slots, size_t npages, size_t slice,
                              mi_snap_map_t want) {
  const mi_segment_t* h = &seg->header;
  size_t at = slice * MI_SNAPSHOT_SLICE;
  bool single = (h->kind == MI_SEGMENT_SINGLE);
  size_t i = (single ? 0 : at >> h->page_shift);
  if (i >= npages) return (want == MI_SNAP_FREE);
  bool in_use = (slots[i].state == MI_PAGE_IN_USE || slots[i].state == MI_PAGE_HELD);
  if (want == MI_SNAP_FREE) return !in_use;
  if (want == MI_SNAP_PURGE) return (slots[i].state == MI_PAGE_FREE_DIRTY);
  if (at < h->info_size) return true;
  size_t area_start = (single || i == 0 ? h->info_size : i << h->page_shift);
  return (at < area_start + slots[i].committed);
}

static void mi_snap_bitmap(mi_snap_out_t* out, const mi_snap_seg_t* seg, const mi_snap_slot_t* slots, size_t npages,
                           size_t slices, mi_snap_map_t want) {
  uint32_t chunks = (uint32_t)((slices + 511) / 512);
  mi_snap_u32(out, chunks);
  mi_snap_u32(out, MI_SNAPSHOT_CHUNK_BYTES);
  for (size_t byte = 0; byte < (size_t)chunks * MI_SNAPSHOT_CHUNK_BYTES; byte++) {
    uint8_t v = 0;
    for (size_t bit = 0; bit < 8; bit++) {
      size_t slice = byte * 8 + bit;
      if (slice < slices && mi_snap_slice_bit(seg, slots, npages, slice, want)) v |= (uint8_t)(1u << bit);
    }
    mi_snap_u8(out, v);
  }
}

/* The place of `heap` among the calling thread's heaps in the order they
   were made, the backing heap 0 (the list's last); 0 for none of them. */
static uint64_t mi_snap_heap_seq(const mi_heap_t* heap) {
  mi_heap_t* own = mi_get_default_heap();
  if (heap == NULL || !mi_heap_is_initialized(own)) return 0;
  bool found = false;
  uint64_t after = 0;
  for (const mi_heap_t* h = own->tld->heaps; h != NULL; h = h->next) {
    if (found) after++;
    if (h == heap) found = true;
  }
  return (found ? after : 0);
}

/* The owner thread of a single block: its heap's (copied: another thread
   may be deleting that heap). */
static uint64_t mi_snap_single_tid(const mi_page_t* page) {
  if (page->heap == NULL) return 0;
  uintptr_t tid = 0;
  if (!mi_snap_read((const uint8_t*)page->heap + offsetof(mi_heap_t, thread_id), &tid, sizeof(tid))) return 0;
  return tid;
}

static void mi_snap_page(mi_snap_out_t* out, const mi_snap_seg_t* seg, const mi_page_t* page, size_t i, uint32_t idx,
                         unsigned flags) {
  const mi_segment_t* h = &seg->header;
  bool single = (h->kind == MI_SEGMENT_SINGLE);
  size_t slot_size;
  size_t slot = mi_snap_slot(seg, i, &slot_size);
  mi_owner_state_t owner = _mi_owner_state_of(atomic_load_explicit(&h->owner, memory_order_relaxed));
  bool abandoned = (!single && owner == MI_OWNER_ABANDONED);
  uint64_t tid =
      (single ? mi_snap_single_tid(page) : (uint64_t)atomic_load_explicit(&h->thread_id, memory_order_relaxed));
  if (abandoned) tid = 0;
  /* the calling thread's pages (their slots cannot change under it) get free maps */
  mi_page_t* live = (mi_page_t*)&((mi_segment_t*)seg->base)->pages[i];
  bool freemap = ((flags & MI_SNAPSHOT_BLOCKS) != 0 && seg->own && !single && page->capacity > 0 &&
                  page->capacity <= MI_SMALL_PAGE_SIZE / 16 && page->heap != NULL);
  uint8_t map[MI_SMALL_PAGE_SIZE / 16 / 8];
  mi_page_t fresh;
  if (freemap) {
    freemap = _mi_page_free_map(live, map, sizeof(map));
    /* the map's walk collected the page's frees from other threads: its
       counts as they are now, to agree with the map */
    memcpy(&fresh, live, sizeof(fresh));
    page = &fresh;
  }
  mi_snap_u64(out, (uint64_t)(uintptr_t)page->start);
  mi_snap_u64(out, (uint64_t)(seg->base + slot));
  mi_snap_u64(out, (uint64_t)page->block_size);
  mi_snap_u32(out, page->reserved);
  mi_snap_u32(out, page->capacity);
  mi_snap_u32(out, page->used);
  mi_snap_u64(out, (uint64_t)page->committed);
  mi_snap_u64(out, tid);
  mi_snap_u64(out, seg->own ? mi_snap_heap_seq(page->heap) : 0);
  mi_snap_u32(out, idx);
  mi_snap_u32(out, (uint32_t)(slot / MI_SNAPSHOT_SLICE));
  mi_snap_u32(out, (uint32_t)mi_snap_slices(slot_size));
  mi_snap_u8(out, (uint8_t)(h->is_pinned ? MI_SNAPSHOT_MEM_OS_HUGE
                                         : (_mi_arena_contains((const void*)seg->base) ? MI_SNAPSHOT_MEM_ARENA
                                                                                       : MI_SNAPSHOT_MEM_OS)));
  uint8_t kind = (!single ? (h->kind == MI_SEGMENT_SMALL ? 0 : 1) : (h->segment_size > MI_LARGE_SEGMENT_MAX ? 3 : 2));
  mi_snap_u8(out, kind);
  mi_snap_u8(out, (uint8_t)abandoned);
  mi_snap_u8(out, (uint8_t)((mi_page_flags(page) & MI_PAGE_FLAG_IN_FULL) != 0));
  mi_snap_u8(out, (uint8_t)freemap);
  mi_snap_u8(out, 0);
  mi_snap_u8(out, 0);
  mi_snap_u8(out, 0);
  if (freemap) {
    uint32_t nbytes = (page->capacity + 7) / 8;
    mi_snap_u32(out, nbytes);
    mi_snap_bytes(out, map, nbytes);
  }
  out->pages++;
}

/* An arena record for the segment and its page list; `seg` NULL: an empty
   one (the segment went before it could be written). */
static void mi_snap_segment(mi_snap_out_t* out, const mi_snap_seg_t* seg, uint32_t idx, unsigned flags) {
  mi_snap_slot_t slots[MI_SMALL_PAGES_PER_SEGMENT];
  size_t npages = 0;
  size_t slices = 0;
  mi_page_t page; /* one at a time: a secure build's page is large */
  if (seg != NULL) {
    npages = (seg->header.kind == MI_SEGMENT_SINGLE ? 1 : seg->header.page_count);
    slices = mi_snap_slices(seg->header.segment_size);
    for (size_t i = 0; i < npages; i++) {
      if (!mi_snap_page_read(seg, i, &page)) memset(&page, 0, sizeof(page));
      slots[i].state = atomic_load_explicit(&page.state, memory_order_relaxed);
      slots[i].committed = page.committed;
    }
  }
  mi_snap_u32(out, MI_SNAPSHOT_TAG_ARENA);
  mi_snap_u32(out, idx);
  mi_snap_u64(out, seg != NULL ? seg->base : 0);
  mi_snap_u64(out, seg != NULL ? seg->header.segment_size : 0);
  mi_snap_u32(out, (uint32_t)slices);
  mi_snap_u32(out, seg != NULL ? (uint32_t)mi_snap_slices(seg->header.info_size) : 0);
  mi_snap_u32(out, 0xFFFFFFFFu); /* no NUMA node */
  mi_snap_u8(out, (uint8_t)(seg != NULL && seg->header.is_pinned));
  mi_snap_u8(out, 0);
  mi_snap_u8(out, 0);
  mi_snap_u8(out, 0);
  mi_snap_bitmap(out, seg, slots, npages, slices, MI_SNAP_COMMITTED);
  mi_snap_bitmap(out, seg, slots, npages, slices, MI_SNAP_FREE);
  mi_snap_bitmap(out, seg, slots, npages, slices, MI_SNAP_PURGE);
  mi_snap_u32(out, MI_SNAPSHOT_TAG_PAGE);
  for (size_t i = 0; i < npages; i++) {
    if (!mi_snap_page_read(seg, i, &page)) continue;
    uint32_t state = atomic_load_explicit(&page.state, memory_order_relaxed);
    if (state != MI_PAGE_IN_USE || page.heap == NULL || page.block_size == 0) continue;
    mi_snap_page(out, seg, &page, i, idx, flags);
  }
  mi_snap_u64(out, 0);
}

/* ---- The file ------------------------------------------------------------------- */

#define MI_SNAPSHOT_PARTIAL 0x100u /* only the calling thread's segments: no copy of others allowed */

static size_t mi_snap_count(bool can_copy, const mi_tld_t* tld) {
  size_t n = 0;
  if (!can_copy) {
    for (const mi_segment_t* s = tld->segments; s != NULL; s = s->next) n++;
    return n;
  }
  for (uintptr_t at = _mi_segment_map_next(0); at != 0; at = _mi_segment_map_next(at + MI_SEGMENT_SIZE)) n++;
  return n;
}

int mi_heap_snapshot(int fd, unsigned flags) {
  if (fd < 0) return -1;
  mi_heap_t* heap = mi_get_default_heap();
  if (!mi_heap_is_initialized(heap)) heap = _mi_heap_init_thread();
  if (heap == NULL) return -1;
  mi_tld_t* tld = heap->tld;
  mi_snap_out_t out;
  out.fd = fd;
  out.err = 0;
  out.len = 0;
  out.pages = 0;
  /* may other segments be copied? (a sandbox may forbid it) */
  uint64_t probe = 0x5eed;
  uint64_t copy = 0;
  bool can_copy = (mi_snap_read(&probe, &copy, sizeof(copy)) && copy == probe);
  size_t count = mi_snap_count(can_copy, tld);
  mi_snap_u32(&out, MI_SNAPSHOT_MAGIC);
  mi_snap_u32(&out, MI_SNAPSHOT_VERSION);
  mi_snap_u32(&out, (uint32_t)sizeof(void*));
  mi_snap_u32(&out, (uint32_t)MI_SNAPSHOT_SLICE);
  mi_snap_u32(&out, (flags & MI_SNAPSHOT_BLOCKS) | (can_copy ? 0 : MI_SNAPSHOT_PARTIAL));
  mi_snap_u32(&out, 0);
  mi_snap_u64(&out, (uint64_t)mi_prim_clock_now());
  mi_snap_u64(&out, (uint64_t)_mi_thread_id());
  mi_snap_u32(&out, (uint32_t)count);
  size_t written = 0;
  mi_snap_seg_t seg;
  if (can_copy) {
    for (uintptr_t at = _mi_segment_map_next(0); at != 0 && written < count;
         at = _mi_segment_map_next(at + MI_SEGMENT_SIZE)) {
      bool ok = mi_snap_segment_read(at, &seg);
      mi_snap_segment(&out, ok ? &seg : NULL, (uint32_t)written, flags);
      written++;
    }
  } else {
    for (const mi_segment_t* s = tld->segments; s != NULL && written < count; s = s->next) {
      seg.base = (uintptr_t)s;
      seg.own = true;
      memcpy(&seg.header, s, offsetof(mi_segment_t, pages));
      mi_snap_segment(&out, &seg, (uint32_t)written, flags);
      written++;
    }
  }
  for (; written < count; written++) mi_snap_segment(&out, NULL, (uint32_t)written, flags);
  /* the writer's pages outside every arena record: none, all are in one */
  mi_snap_u32(&out, MI_SNAPSHOT_TAG_PAGE);
  mi_snap_u64(&out, 0);
  for (const mi_heap_t* h = tld->heaps; h != NULL; h = h->next) {
    mi_snap_u32(&out, MI_SNAPSHOT_TAG_HEAP);
    mi_snap_u64(&out, mi_snap_heap_seq(h));
    mi_snap_u32(&out, 0xFFFFFFFFu);
    mi_snap_u64(&out, (uint64_t)h->arena_id);
    mi_snap_u32(&out, MI_SNAPSHOT_TAG_PAGE); /* its abandoned pages outside arena records: none */
    mi_snap_u64(&out, 0);
  }
  mi_snap_u32(&out, MI_SNAPSHOT_TAG_END);
  mi_snap_u64(&out, out.pages);
  mi_snap_flush(&out);
  return (out.err == 0 ? 0 : -1);
}

int mi_heap_snapshot_to_file(const char* path, unsigned flags) {
  if (path == NULL) return -1;
  int fd = -1;
  if (mi_prim_file_create(path, &fd) != 0) return -1;
  int res = mi_heap_snapshot(fd, flags);
  if (mi_prim_file_close(fd) != 0) res = -1;
  return res;
}

/* MIMALLOC_SNAPSHOT_ON_EXIT: 1 the pages, 2 also the free maps; to
   MIMALLOC_SNAPSHOT_PATH ("%p": the process id) or mimalloc-snapshot.<pid>.bin. */
void _mi_snapshot_at_exit(void) {
  long level = mi_option_get(mi_option_snapshot_on_exit);
  if (level <= 0) return;
  char env[512];
  char path[600];
  const char* name =
      (mi_prim_getenv("MIMALLOC_SNAPSHOT_PATH", env, sizeof(env)) && env[0] != 0 ? env : "mimalloc-snapshot.%p.bin");
  if (!_mi_path_with_pid(name, path, sizeof(path))) return;
  if (mi_heap_snapshot_to_file(path, level >= 2 ? MI_SNAPSHOT_BLOCKS : 0) != 0) {
    _mi_warning_message("unable to write the heap snapshot to %s\n", path);
  }
}

/* ---- Other threads' pages, counted, not read (mi_heap_dump_json) ------------- */

/* The pages in use that the calling thread does not own (other threads',
   and ended threads' not yet taken over), and how many other threads own
   some: counted from copies of their segments' headers and slots. */
void _mi_heap_foreign_pages(size_t* pages, size_t* owners) {
  *pages = 0;
  *owners = 0;
  uintptr_t me = _mi_thread_id();
  uintptr_t seen[64];
  size_t nseen = 0;
  mi_snap_seg_t seg;
  mi_page_t page;
  for (uintptr_t at = _mi_segment_map_next(0); at != 0; at = _mi_segment_map_next(at + MI_SEGMENT_SIZE)) {
    if (!mi_snap_segment_read(at, &seg) || seg.own) continue;
    bool single = (seg.header.kind == MI_SEGMENT_SINGLE);
    size_t npages = (single ? 1 : seg.header.page_count);
    for (size_t i = 0; i < npages; i++) {
      if (!mi_snap_page_read(&seg, i, &page)) continue;
      if (atomic_load_explicit(&page.state, memory_order_relaxed) != MI_PAGE_IN_USE || page.heap == NULL) continue;
      uintptr_t tid = (single ? (uintptr_t)mi_snap_single_tid(&page)
                              : atomic_load_explicit(&seg.header.thread_id, memory_order_relaxed));
      if (tid == me) continue; /* the caller's own large blocks: its dump has them */
      (*pages)++;
      if (tid == 0) continue; /* abandoned: no thread owns it */
      bool known = false;
      for (size_t k = 0; k < nseen && !known; k++) known = (seen[k] == tid);
      if (known) continue;
      if (nseen < sizeof(seen) / sizeof(seen[0])) seen[nseen++] = tid;
      (*owners)++;
    }
  }
}
