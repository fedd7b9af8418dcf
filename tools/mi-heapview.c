/* mi-heapview: read an MIHS v1 heap snapshot and print tables from it.

   Standalone: it never links the allocator (the file format is the whole
   interface; docs/heap-snapshot.md describes both).

     cc -std=c11 -O2 -Wall -Wextra -Werror tools/mi-heapview.c -o mi-heapview
     mi-heapview <snapshot> <cmd> [options]

   The reader here validates exactly as tools/mi_snapshot.py does and reports the
   same message texts. Every read is bounds-checked against the bytes left in the
   file, and every array grows only with records actually read, so a malformed
   count can neither overrun the buffer nor make us allocate more than the file
   can describe. Multi-byte fields are decoded byte by byte (little-endian), so
   the host's byte order and alignment never matter.

   Sizes are printed in bytes unless --human is given. Arithmetic on sizes
   saturates at 2^64-1 and waste (committed - used*block_size) is clamped at 0,
   so hostile field values print large numbers instead of wrapping. */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIHS_MAGIC    0x5348494Du  /* "MIHS" */
#define MIHS_VERSION  1u
#define TAG_ARNA      0x414E5241u
#define TAG_PAGE      0x45474150u
#define TAG_HEAP      0x50414548u
#define TAG_END       0x444E4520u
#define NO_ARENA      0xFFFFFFFFu
#define FLAG_BLOCKS   0x01u

#define HEADER_SIZE   44
#define ARENA_SIZE    36   /* after the tag */
#define PAGE_SIZE_REC 80
#define HEAP_SIZE     20   /* after the tag */

/* ------------------------------------------------------------------ model */

typedef struct bitmap_s {
  uint32_t chunk_count, chunk_bytes;
  const uint8_t* data;      /* into the file buffer */
  uint64_t nbytes;
} bitmap_t;

enum { LIST_ARENA, LIST_THREAD, LIST_HEAP };

typedef struct page_s {
  uint64_t page_start, slice_start, block_size;
  uint32_t reserved, capacity, used;
  uint64_t committed, tid, heap_seq;
  uint32_t arena_idx, slice_index, slice_count;
  uint8_t memkind, page_kind, abandoned, full, has_freemap;
  const uint8_t* freemap;   /* into the file buffer, NULL without a map */
  uint32_t freemap_nbytes;
  int list;                 /* LIST_* */
  size_t order;             /* position in the file, the last tie-break of every sort */
} page_t;

typedef struct arena_s {
  uint32_t idx;
  uint64_t base, size;
  uint32_t slice_count, info_slices;
  int32_t numa_node;
  uint8_t pinned, exclusive;
  bitmap_t bm[3];           /* committed, free, purge */
  size_t first_page, page_count;
} arena_t;

typedef struct heap_s {
  uint64_t heap_seq;
  int32_t numa_node;
  uint64_t exclusive_arena;
  size_t first_page, page_count;
} heap_t;

typedef struct snap_s {
  uint8_t* buf;
  size_t len;
  uint32_t magic, version, ptr_size, slice_size, flags, reserved, arena_count;
  uint64_t clock_ms, writer_tid, footer_count;
  arena_t* arenas; size_t narenas, arenas_cap;
  page_t* pages;   size_t npages, pages_cap;
  heap_t* heaps;   size_t nheaps, heaps_cap;
  size_t thread_first, thread_count;
} snap_t;

static const char* const bitmap_names[3] = { "committed", "free", "purge" };
static const char* const memkind_names[] = { "none", "external", "static", "os", "os_huge", "os_remap", "arena", "malloc" };
static const char* const page_kind_names[] = { "small", "medium", "large", "singleton" };

/* ------------------------------------------------------------------ small helpers */

static void die_oom(void) {
  fputs("mi-heapview: out of memory\n", stderr);
  exit(1);
}

/* grow *arr (of elem-sized items) so that index n is valid */
static void* grow(void* arr, size_t* cap, size_t n, size_t elem) {
  if (n < *cap) return arr;
  size_t ncap = (*cap == 0 ? 16 : *cap * 2);
  if (ncap <= n || ncap > SIZE_MAX / elem) die_oom();
  void* p = realloc(arr, ncap * elem);
  if (p == NULL) die_oom();
  *cap = ncap;
  return p;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return (a > UINT64_MAX - b ? UINT64_MAX : a + b); }
static uint64_t sat_mul(uint64_t a, uint64_t b) { return (a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b); }
static uint64_t page_used_bytes(const page_t* p) { return sat_mul(p->used, p->block_size); }
static uint64_t page_waste(const page_t* p) {
  uint64_t u = page_used_bytes(p);
  return (p->committed > u ? p->committed - u : 0);
}

static int64_t delta(uint64_t before, uint64_t after) {
  if (after >= before) {
    uint64_t d = after - before;
    return (d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d);
  }
  uint64_t d = before - after;
  return (d > (uint64_t)INT64_MAX ? -INT64_MAX : -(int64_t)d);
}

static uint32_t rd32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const uint8_t* p) {
  return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32);
}

/* "0x%08x", then the four bytes in quotes when all are printable ASCII */
static void tag_name(uint32_t tag, char* out, size_t outsz) {
  char text[5];
  bool printable = true;
  for (int i = 0; i < 4; i++) {
    unsigned c = (tag >> (8 * i)) & 0xFF;
    text[i] = (char)c;
    if (c < 0x20 || c >= 0x7F) printable = false;
  }
  text[4] = 0;
  if (printable) snprintf(out, outsz, "0x%08" PRIx32 " \"%s\"", tag, text);
  else snprintf(out, outsz, "0x%08" PRIx32, tag);
}

/* ------------------------------------------------------------------ reading */

typedef struct cursor_s {
  const uint8_t* p;
  size_t len, off;
  char err[256];
} cursor_t;

static bool fail(cursor_t* c, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof(c->err), fmt, ap);
  va_end(ap);
  return false;
}

/* n more bytes available at the cursor? otherwise the truncation error */
static bool need(cursor_t* c, uint64_t n, const char* what) {
  if (n > (uint64_t)(c->len - c->off)) return fail(c, "truncated at offset %zu (reading %s)", c->off, what);
  return true;
}

static bool read_tag(cursor_t* c, uint32_t want1, uint32_t want2, const char* expected, uint32_t* tag) {
  size_t off = c->off;
  if (!need(c, 4, "record tag")) return false;
  *tag = rd32(c->p + c->off);
  c->off += 4;
  if (*tag != want1 && *tag != want2) {
    char name[32];
    tag_name(*tag, name, sizeof(name));
    return fail(c, "unknown record tag %s at offset %zu (expected %s)", name, off, expected);
  }
  return true;
}

static bool read_bitmap(cursor_t* c, bitmap_t* bm) {
  if (!need(c, 8, "bitmap header")) return false;
  bm->chunk_count = rd32(c->p + c->off);
  bm->chunk_bytes = rd32(c->p + c->off + 4);
  c->off += 8;
  bm->nbytes = (uint64_t)bm->chunk_count * bm->chunk_bytes;   /* < 2^64: both factors < 2^32 */
  if (!need(c, bm->nbytes, "bitmap")) return false;
  bm->data = c->p + c->off;
  c->off += (size_t)bm->nbytes;
  return true;
}

static bool read_page_list(cursor_t* c, snap_t* s, int list, size_t* first, size_t* count) {
  uint32_t tag;
  if (!read_tag(c, TAG_PAGE, TAG_PAGE, "PAGE", &tag)) return false;
  *first = s->npages;
  *count = 0;
  for (;;) {
    if (!need(c, 8, "page record")) return false;
    if (rd64(c->p + c->off) == 0) {   /* the sentinel, where page_start would be */
      c->off += 8;
      return true;
    }
    if (!need(c, PAGE_SIZE_REC, "page record")) return false;
    const uint8_t* r = c->p + c->off;
    s->pages = grow(s->pages, &s->pages_cap, s->npages, sizeof(page_t));
    page_t* pg = &s->pages[s->npages];
    memset(pg, 0, sizeof(*pg));
    pg->page_start = rd64(r + 0);
    pg->slice_start = rd64(r + 8);
    pg->block_size = rd64(r + 16);
    pg->reserved = rd32(r + 24);
    pg->capacity = rd32(r + 28);
    pg->used = rd32(r + 32);
    pg->committed = rd64(r + 36);
    pg->tid = rd64(r + 44);
    pg->heap_seq = rd64(r + 52);
    pg->arena_idx = rd32(r + 60);
    pg->slice_index = rd32(r + 64);
    pg->slice_count = rd32(r + 68);
    pg->memkind = r[72];
    pg->page_kind = r[73];
    pg->abandoned = r[74];
    pg->full = r[75];
    pg->has_freemap = r[76];
    pg->list = list;
    pg->order = s->npages;
    c->off += PAGE_SIZE_REC;
    if (pg->has_freemap) {
      size_t noff = c->off;
      if (!need(c, 4, "free map length")) return false;
      uint32_t nbytes = rd32(c->p + c->off);
      uint32_t want = (uint32_t)(((uint64_t)pg->capacity + 7) / 8);
      if (nbytes != want) {
        return fail(c, "free map nbytes %" PRIu32 " != ceil(capacity/8) = %" PRIu32 " at offset %zu", nbytes, want, noff);
      }
      c->off += 4;
      if (!need(c, nbytes, "free map")) return false;
      pg->freemap = c->p + c->off;
      pg->freemap_nbytes = nbytes;
      c->off += nbytes;
    }
    s->npages++;
    (*count)++;
  }
}

/* parse s->buf[0..s->len); on failure the message is in err */
static bool parse(snap_t* s, char* err, size_t errsz) {
  cursor_t c;
  memset(&c, 0, sizeof(c));
  c.p = s->buf;
  c.len = s->len;
  bool ok = false;
  /* magic and version first, so a short file of the wrong kind still says what it is */
  if (!need(&c, 4, "header")) goto done;
  s->magic = rd32(c.p);
  if (s->magic != MIHS_MAGIC) {
    char name[32];
    tag_name(s->magic, name, sizeof(name));
    fail(&c, "bad magic %s (expected 0x%08x \"MIHS\")", name, MIHS_MAGIC);
    goto done;
  }
  if (!need(&c, 8, "header")) goto done;
  s->version = rd32(c.p + 4);
  if (s->version != MIHS_VERSION) { fail(&c, "unsupported version %" PRIu32, s->version); goto done; }
  if (!need(&c, HEADER_SIZE, "header")) goto done;
  s->ptr_size = rd32(c.p + 8);
  s->slice_size = rd32(c.p + 12);
  s->flags = rd32(c.p + 16);
  s->reserved = rd32(c.p + 20);
  s->clock_ms = rd64(c.p + 24);
  s->writer_tid = rd64(c.p + 32);
  s->arena_count = rd32(c.p + 40);
  c.off = HEADER_SIZE;

  for (uint32_t i = 0; i < s->arena_count; i++) {
    uint32_t tag;
    if (!read_tag(&c, TAG_ARNA, TAG_ARNA, "ARNA", &tag)) goto done;
    if (!need(&c, ARENA_SIZE, "ARNA record")) goto done;
    const uint8_t* r = c.p + c.off;
    s->arenas = grow(s->arenas, &s->arenas_cap, s->narenas, sizeof(arena_t));
    arena_t* a = &s->arenas[s->narenas];
    memset(a, 0, sizeof(*a));
    a->idx = rd32(r + 0);
    a->base = rd64(r + 4);
    a->size = rd64(r + 12);
    a->slice_count = rd32(r + 20);
    a->info_slices = rd32(r + 24);
    a->numa_node = (int32_t)rd32(r + 28);  /* two's complement on every target we build for */
    a->pinned = r[32];
    a->exclusive = r[33];
    c.off += ARENA_SIZE;
    s->narenas++;   /* counted before its parts: the fields above are complete */
    for (int b = 0; b < 3; b++) {
      if (!read_bitmap(&c, &a->bm[b])) goto done;
    }
    if (!read_page_list(&c, s, LIST_ARENA, &a->first_page, &a->page_count)) goto done;
  }
  if (!read_page_list(&c, s, LIST_THREAD, &s->thread_first, &s->thread_count)) goto done;
  for (;;) {
    uint32_t tag;
    if (!read_tag(&c, TAG_HEAP, TAG_END, "HEAP or END", &tag)) goto done;
    if (tag == TAG_END) break;
    if (!need(&c, HEAP_SIZE, "HEAP record")) goto done;
    const uint8_t* r = c.p + c.off;
    s->heaps = grow(s->heaps, &s->heaps_cap, s->nheaps, sizeof(heap_t));
    heap_t* h = &s->heaps[s->nheaps];
    memset(h, 0, sizeof(*h));
    h->heap_seq = rd64(r + 0);
    h->numa_node = (int32_t)rd32(r + 8);
    h->exclusive_arena = rd64(r + 12);
    c.off += HEAP_SIZE;
    s->nheaps++;
    if (!read_page_list(&c, s, LIST_HEAP, &h->first_page, &h->page_count)) goto done;
  }
  if (!need(&c, 8, "footer")) goto done;
  s->footer_count = rd64(c.p + c.off);
  c.off += 8;
  if (s->footer_count != (uint64_t)s->npages) {
    fail(&c, "footer page_count %" PRIu64 " but %zu page records", s->footer_count, s->npages);
    goto done;
  }
  if (c.off != c.len) {
    fail(&c, "trailing %zu bytes after footer at offset %zu", c.len - c.off, c.off);
    goto done;
  }
  ok = true;
done:
  if (!ok) snprintf(err, errsz, "%s", c.err);
  return ok;
}

static bool read_file(const char* path, uint8_t** out, size_t* outlen, char* err, size_t errsz) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(err, errsz, "cannot open: %s", strerror(errno));
    return false;
  }
  size_t cap = 0, len = 0;
  uint8_t* buf = NULL;
  for (;;) {
    if (len == cap) {
      size_t ncap = (cap == 0 ? 65536 : cap * 2);
      if (ncap < cap) die_oom();
      uint8_t* nb = realloc(buf, ncap);
      if (nb == NULL) die_oom();
      buf = nb;
      cap = ncap;
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0) break;
  }
  bool bad = ferror(f) != 0;
  fclose(f);
  if (bad) {
    free(buf);
    snprintf(err, errsz, "read error");
    return false;
  }
  *out = buf;
  *outlen = len;
  return true;
}

static void snap_free(snap_t* s) {
  free(s->buf);
  free(s->arenas);
  free(s->pages);
  free(s->heaps);
  memset(s, 0, sizeof(*s));
}

/* read and validate; on failure print "mi-heapview: <path>: <message>" and exit 1 */
static void snap_load(const char* path, snap_t* s) {
  char err[300];
  memset(s, 0, sizeof(*s));
  if (!read_file(path, &s->buf, &s->len, err, sizeof(err)) || !parse(s, err, sizeof(err))) {
    fprintf(stderr, "mi-heapview: %s: %s\n", path, err);
    snap_free(s);
    exit(1);
  }
}

/* set bits among the first nbits of a bitmap (bits past the arena's slices do not count) */
static uint64_t bitmap_count(const bitmap_t* bm, uint64_t nbits) {
  uint64_t have = sat_mul(bm->nbytes, 8);
  if (nbits > have) nbits = have;
  uint64_t n = 0;
  for (uint64_t i = 0; i < nbits / 8; i++) {
    for (unsigned v = bm->data[i]; v != 0; v &= v - 1) n++;
  }
  if (nbits % 8) {
    for (unsigned v = bm->data[nbits / 8] & ((1u << (nbits % 8)) - 1); v != 0; v &= v - 1) n++;
  }
  return n;
}

static bool freemap_is_free(const page_t* p, uint32_t i) {
  return ((p->freemap[i >> 3] >> (i & 7)) & 1) != 0;
}

/* ------------------------------------------------------------------ formatting */

static bool opt_human;

static const char* fmt_size(char* buf, size_t sz, uint64_t v) {
  static const char* const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
  if (!opt_human) snprintf(buf, sz, "%" PRIu64, v);
  else if (v < 1024) snprintf(buf, sz, "%" PRIu64 " B", v);
  else {
    double d = (double)v;
    int u = 0;
    while (d >= 1024.0 && u < 6) { d /= 1024.0; u++; }
    snprintf(buf, sz, "%.1f %s", d, units[u]);
  }
  return buf;
}

static const char* fmt_delta(char* buf, size_t sz, int64_t d, bool is_size) {
  char tmp[40];
  uint64_t mag = (d < 0 ? (uint64_t)(-d) : (uint64_t)d);
  if (d == 0) return (snprintf(buf, sz, "0"), buf);
  if (is_size) fmt_size(tmp, sizeof(tmp), mag);
  else snprintf(tmp, sizeof(tmp), "%" PRIu64, mag);
  snprintf(buf, sz, "%c%s", (d < 0 ? '-' : '+'), tmp);
  return buf;
}

static const char* fmt_pct(char* buf, size_t sz, uint64_t part, uint64_t whole) {
  if (whole == 0) snprintf(buf, sz, "-");
  else snprintf(buf, sz, "%.1f%%", (double)part * 100.0 / (double)whole);
  return buf;
}

static const char* fmt_name(char* buf, size_t sz, unsigned v, const char* const* names, unsigned n) {
  if (v < n) snprintf(buf, sz, "%s", names[v]);
  else snprintf(buf, sz, "%u", v);
  return buf;
}

/* A table: every cell a string; widths from the widest cell or heading; columns
   two spaces apart; 'L' columns padded on the right, 'R' on the left; no
   trailing blanks. heapview.py lays out its tables by the same rules. */
typedef struct table_s {
  size_t ncols;
  const char* const* heads;
  const char* align;
  char** cells;
  size_t ncells, cap;
} table_t;

static void t_cell(table_t* t, const char* fmt, ...) {
  char buf[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  t->cells = grow(t->cells, &t->cap, t->ncells, sizeof(char*));
  size_t n = strlen(buf) + 1;
  char* c = malloc(n);
  if (c == NULL) die_oom();
  memcpy(c, buf, n);
  t->cells[t->ncells++] = c;
}

static void t_print(table_t* t) {
  size_t width[32] = { 0 };
  size_t nrows = t->ncells / t->ncols;
  for (size_t j = 0; j < t->ncols && j < 32; j++) width[j] = strlen(t->heads[j]);
  for (size_t k = 0; k < t->ncells; k++) {
    size_t n = strlen(t->cells[k]);
    if (n > width[k % t->ncols]) width[k % t->ncols] = n;
  }
  for (size_t i = 0; i <= nrows; i++) {
    char line[1024];
    size_t pos = 0;
    for (size_t j = 0; j < t->ncols; j++) {
      const char* c = (i == 0 ? t->heads[j] : t->cells[(i - 1) * t->ncols + j]);
      int w = (int)width[j];
      int n = snprintf(line + pos, sizeof(line) - pos, (t->align[j] == 'L' ? "%s%-*s" : "%s%*s"), (j == 0 ? "" : "  "), w, c);
      if (n < 0) break;
      pos += (size_t)n;
      if (pos >= sizeof(line)) { pos = sizeof(line) - 1; break; }
    }
    while (pos > 0 && line[pos - 1] == ' ') pos--;
    line[pos] = 0;
    puts(line);
  }
  for (size_t k = 0; k < t->ncells; k++) free(t->cells[k]);
  free(t->cells);
  t->cells = NULL;
  t->ncells = t->cap = 0;
}

/* ------------------------------------------------------------------ options */

enum { SORT_ADDR, SORT_WASTE, SORT_USED };
enum { GROUP_NONE, GROUP_TID, GROUP_HEAP };

typedef struct opts_s {
  uint64_t top, min_waste, size, addr;
  bool has_top, has_size, has_addr, bytes;
  int sort, group;
  const char* other;   /* diff: the second snapshot */
} opts_t;

static uint64_t group_of(const page_t* p, int group) {
  return (group == GROUP_TID ? p->tid : group == GROUP_HEAP ? p->heap_seq : 0);
}

static void group_cell(table_t* t, int group, uint64_t g) {
  if (group == GROUP_TID) t_cell(t, "0x%" PRIx64, g);
  else if (group == GROUP_HEAP) t_cell(t, "%" PRIu64, g);
}

/* sizes and diff both gather per (block_size, group) rows */
typedef struct agg_s {
  uint64_t block_size, group;
  uint64_t pages[2], blocks[2], used[2], live[2], committed[2], waste[2];
} agg_t;

typedef struct keyed_s {
  uint64_t block_size, group;
  const page_t* page;
  int side;
} keyed_t;

static int cmp_keyed(const void* a, const void* b) {
  const keyed_t* x = a;
  const keyed_t* y = b;
  if (x->block_size != y->block_size) return (x->block_size < y->block_size ? -1 : 1);
  if (x->group != y->group) return (x->group < y->group ? -1 : 1);
  return 0;
}

static agg_t* aggregate(const snap_t* s0, const snap_t* s1, int group, size_t* nrows) {
  size_t n = s0->npages + (s1 ? s1->npages : 0);
  keyed_t* keys = malloc((n ? n : 1) * sizeof(keyed_t));
  agg_t* rows = malloc((n ? n : 1) * sizeof(agg_t));
  if (keys == NULL || rows == NULL) die_oom();
  size_t k = 0;
  for (int side = 0; side < 2; side++) {
    const snap_t* s = (side == 0 ? s0 : s1);
    if (s == NULL) continue;
    for (size_t i = 0; i < s->npages; i++) {
      keys[k].block_size = s->pages[i].block_size;
      keys[k].group = group_of(&s->pages[i], group);
      keys[k].page = &s->pages[i];
      keys[k].side = side;
      k++;
    }
  }
  qsort(keys, n, sizeof(keyed_t), cmp_keyed);
  size_t r = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || cmp_keyed(&keys[i], &keys[i - 1]) != 0) {
      memset(&rows[r], 0, sizeof(agg_t));
      rows[r].block_size = keys[i].block_size;
      rows[r].group = keys[i].group;
      r++;
    }
    agg_t* a = &rows[r - 1];
    const page_t* p = keys[i].page;
    int sd = keys[i].side;
    a->pages[sd]++;
    a->blocks[sd] = sat_add(a->blocks[sd], p->capacity);
    a->used[sd] = sat_add(a->used[sd], p->used);
    a->live[sd] = sat_add(a->live[sd], page_used_bytes(p));
    a->committed[sd] = sat_add(a->committed[sd], p->committed);
    a->waste[sd] = sat_add(a->waste[sd], page_waste(p));
  }
  free(keys);
  *nrows = r;
  return rows;
}

/* ------------------------------------------------------------------ commands */

static int cmd_summary(const snap_t* s) {
  char b1[48], b2[48];
  uint64_t reserved = 0, bits[3] = { 0, 0, 0 };
  for (size_t i = 0; i < s->narenas; i++) {
    const arena_t* a = &s->arenas[i];
    reserved = sat_add(reserved, a->size);
    for (int b = 0; b < 3; b++) bits[b] = sat_add(bits[b], sat_mul(bitmap_count(&a->bm[b], a->slice_count), s->slice_size));
  }
  uint64_t committed = 0, used = 0, waste = 0, in_arena = 0, in_heaps = 0, with_map = 0;
  for (size_t i = 0; i < s->npages; i++) {
    const page_t* p = &s->pages[i];
    committed = sat_add(committed, p->committed);
    used = sat_add(used, page_used_bytes(p));
    waste = sat_add(waste, page_waste(p));
    if (p->list == LIST_ARENA) in_arena++;
    if (p->list == LIST_HEAP) in_heaps++;
    if (p->has_freemap) with_map++;
  }
  printf("%-20s %" PRIu32 "\n", "version", s->version);
  printf("%-20s %" PRIu32 "\n", "ptr_size", s->ptr_size);
  printf("%-20s %s\n", "slice_size", fmt_size(b1, sizeof(b1), s->slice_size));
  printf("%-20s 0x%" PRIx32 "%s\n", "flags", s->flags, (s->flags & FLAG_BLOCKS ? " (blocks)" : ""));
  printf("%-20s %" PRIu64 "\n", "clock_ms", s->clock_ms);
  printf("%-20s 0x%" PRIx64 "\n", "writer_tid", s->writer_tid);
  printf("%-20s %zu\n", "arenas", s->narenas);
  printf("%-20s %s\n", "arena reserved", fmt_size(b1, sizeof(b1), reserved));
  printf("%-20s %s\n", "arena committed", fmt_size(b1, sizeof(b1), bits[0]));
  printf("%-20s %s\n", "arena free", fmt_size(b1, sizeof(b1), bits[1]));
  printf("%-20s %s\n", "arena purgeable", fmt_size(b1, sizeof(b1), bits[2]));
  printf("%-20s %zu\n", "heaps", s->nheaps);
  /* the page lines say in words what they count: the list names alone
     ("writer thread") read as counts of threads or blocks */
  printf("%-20s %zu (page records: in arenas + writer thread + in heap lists)\n", "pages", s->npages);
  printf("%-20s %" PRIu64 " (pages inside an arena's reservation; from mimalloc-pprof, a segment)\n", "  in arenas",
         in_arena);
  printf("%-20s %zu (pages outside every arena, owned by the thread that wrote the snapshot)\n", "  writer thread",
         s->thread_count);
  printf("%-20s %" PRIu64 " (pages outside every arena, abandoned, listed under their heap)\n", "  in heap lists",
         in_heaps);
  printf("%-20s %" PRIu64 " (pages, of any list, whose live blocks were recorded)\n", "  with free map", with_map);
  printf("%-20s %s\n", "page committed", fmt_size(b1, sizeof(b1), committed));
  printf("%-20s %s\n", "page used", fmt_size(b1, sizeof(b1), used));
  printf("%-20s %s (%s of page committed)\n", "internal frag", fmt_size(b1, sizeof(b1), waste), fmt_pct(b2, sizeof(b2), waste, committed));
  return 0;
}

static int sizes_metric_bytes;
static int cmp_sizes(const void* a, const void* b) {
  const agg_t* x = a;
  const agg_t* y = b;
  uint64_t mx = (sizes_metric_bytes ? x->live[0] : x->committed[0]);
  uint64_t my = (sizes_metric_bytes ? y->live[0] : y->committed[0]);
  if (mx != my) return (mx > my ? -1 : 1);
  if (x->block_size != y->block_size) return (x->block_size < y->block_size ? -1 : 1);
  if (x->group != y->group) return (x->group < y->group ? -1 : 1);
  return 0;
}

static void trailer(size_t shown, size_t total, const char* what) {
  if (shown < total) printf("(%zu of %zu %s)\n", shown, total, what);
}

static int cmd_sizes(const snap_t* s, const opts_t* o) {
  static const char* const h_plain[] = { "block_size", "pages", "blocks", "used", "live_bytes", "committed", "waste", "waste%" };
  static const char* const h_tid[] = { "block_size", "tid", "pages", "blocks", "used", "live_bytes", "committed", "waste", "waste%" };
  static const char* const h_heap[] = { "block_size", "heap", "pages", "blocks", "used", "live_bytes", "committed", "waste", "waste%" };
  char b[48];
  size_t n;
  agg_t* rows = aggregate(s, NULL, o->group, &n);
  sizes_metric_bytes = o->bytes;
  qsort(rows, n, sizeof(agg_t), cmp_sizes);
  table_t t = { 0 };
  t.ncols = (o->group == GROUP_NONE ? 8 : 9);
  t.heads = (o->group == GROUP_TID ? h_tid : o->group == GROUP_HEAP ? h_heap : h_plain);
  t.align = (o->group == GROUP_NONE ? "RRRRRRRR" : "RLRRRRRRR");
  size_t shown = (o->has_top && o->top != 0 && o->top < n ? (size_t)o->top : n);
  agg_t tot;
  memset(&tot, 0, sizeof(tot));
  for (size_t i = 0; i < n; i++) {
    const agg_t* a = &rows[i];
    tot.pages[0] += a->pages[0];
    tot.blocks[0] = sat_add(tot.blocks[0], a->blocks[0]);
    tot.used[0] = sat_add(tot.used[0], a->used[0]);
    tot.live[0] = sat_add(tot.live[0], a->live[0]);
    tot.committed[0] = sat_add(tot.committed[0], a->committed[0]);
    tot.waste[0] = sat_add(tot.waste[0], a->waste[0]);
  }
  for (size_t i = 0; i <= shown; i++) {
    const agg_t* a = (i < shown ? &rows[i] : &tot);
    if (i < shown) t_cell(&t, "%s", fmt_size(b, sizeof(b), a->block_size));
    else t_cell(&t, "total");
    if (o->group != GROUP_NONE) {
      if (i < shown) group_cell(&t, o->group, a->group);
      else t_cell(&t, "");
    }
    t_cell(&t, "%" PRIu64, a->pages[0]);
    t_cell(&t, "%" PRIu64, a->blocks[0]);
    t_cell(&t, "%" PRIu64, a->used[0]);
    t_cell(&t, "%s", fmt_size(b, sizeof(b), a->live[0]));
    t_cell(&t, "%s", fmt_size(b, sizeof(b), a->committed[0]));
    t_cell(&t, "%s", fmt_size(b, sizeof(b), a->waste[0]));
    t_cell(&t, "%s", fmt_pct(b, sizeof(b), a->waste[0], a->committed[0]));
  }
  t_print(&t);
  trailer(shown, n, "rows");
  free(rows);
  return 0;
}

static int page_sort;
static int cmp_pages(const void* a, const void* b) {
  const page_t* x = *(const page_t* const*)a;
  const page_t* y = *(const page_t* const*)b;
  if (page_sort == SORT_WASTE && page_waste(x) != page_waste(y)) return (page_waste(x) > page_waste(y) ? -1 : 1);
  if (page_sort == SORT_USED && page_used_bytes(x) != page_used_bytes(y)) return (page_used_bytes(x) > page_used_bytes(y) ? -1 : 1);
  if (page_sort == SORT_ADDR && x->page_start != y->page_start) return (x->page_start < y->page_start ? -1 : 1);
  return (x->order < y->order ? -1 : x->order > y->order ? 1 : 0);
}

/* pages and frag: the same table, different defaults */
static int page_table(const snap_t* s, const opts_t* o, int sort, uint64_t default_top) {
  static const char* const heads[] = { "page_start", "kind", "block_size", "reserved", "capacity", "used", "committed",
                                       "waste", "waste%", "tid", "heap", "arena", "slices", "memkind", "flags" };
  char b[48];
  const page_t** sel = malloc((s->npages ? s->npages : 1) * sizeof(page_t*));
  if (sel == NULL) die_oom();
  size_t n = 0;
  for (size_t i = 0; i < s->npages; i++) {
    const page_t* p = &s->pages[i];
    if (o->has_size && p->block_size != o->size) continue;
    if (page_waste(p) < o->min_waste) continue;
    sel[n++] = p;
  }
  page_sort = sort;
  qsort(sel, n, sizeof(page_t*), cmp_pages);
  uint64_t top = (o->has_top ? o->top : default_top);
  size_t shown = (top != 0 && top < n ? (size_t)top : n);
  table_t t = { 0 };
  t.ncols = 15;
  t.heads = heads;
  t.align = "LLRRRRRRRLRRRLL";
  for (size_t i = 0; i < shown; i++) {
    const page_t* p = sel[i];
    t_cell(&t, "0x%" PRIx64, p->page_start);
    t_cell(&t, "%s", fmt_name(b, sizeof(b), p->page_kind, page_kind_names, 4));
    t_cell(&t, "%s", fmt_size(b, sizeof(b), p->block_size));
    t_cell(&t, "%" PRIu32, p->reserved);
    t_cell(&t, "%" PRIu32, p->capacity);
    t_cell(&t, "%" PRIu32, p->used);
    t_cell(&t, "%s", fmt_size(b, sizeof(b), p->committed));
    t_cell(&t, "%s", fmt_size(b, sizeof(b), page_waste(p)));
    t_cell(&t, "%s", fmt_pct(b, sizeof(b), page_waste(p), p->committed));
    t_cell(&t, "0x%" PRIx64, p->tid);
    t_cell(&t, "%" PRIu64, p->heap_seq);
    if (p->arena_idx == NO_ARENA) t_cell(&t, "-");
    else t_cell(&t, "%" PRIu32, p->arena_idx);
    t_cell(&t, "%" PRIu32 "+%" PRIu32, p->slice_index, p->slice_count);
    t_cell(&t, "%s", fmt_name(b, sizeof(b), p->memkind, memkind_names, 8));
    t_cell(&t, "%s%s%s%s", (p->abandoned ? "a" : ""), (p->full ? "f" : ""), (p->has_freemap ? "m" : ""),
           (p->abandoned || p->full || p->has_freemap ? "" : "-"));
  }
  t_print(&t);
  trailer(shown, n, "pages");
  free(sel);
  return 0;
}

static int cmd_arenas(const snap_t* s) {
  static const char* const heads[] = { "idx", "base", "size", "slices", "info", "committed", "free", "purgeable",
                                       "numa", "pinned", "exclusive", "pages" };
  char b[48];
  table_t t = { 0 };
  t.ncols = 12;
  t.heads = heads;
  t.align = "RLRRRRRRRLLR";
  for (size_t i = 0; i < s->narenas; i++) {
    const arena_t* a = &s->arenas[i];
    t_cell(&t, "%" PRIu32, a->idx);
    t_cell(&t, "0x%" PRIx64, a->base);
    t_cell(&t, "%s", fmt_size(b, sizeof(b), a->size));
    t_cell(&t, "%" PRIu32, a->slice_count);
    t_cell(&t, "%" PRIu32, a->info_slices);
    for (int k = 0; k < 3; k++) t_cell(&t, "%s", fmt_size(b, sizeof(b), sat_mul(bitmap_count(&a->bm[k], a->slice_count), s->slice_size)));
    t_cell(&t, "%" PRId32, a->numa_node);
    t_cell(&t, "%s", (a->pinned ? "yes" : "no"));
    t_cell(&t, "%s", (a->exclusive ? "yes" : "no"));
    t_cell(&t, "%zu", a->page_count);
  }
  t_print(&t);
  return 0;
}

static int cmd_blocks(const snap_t* s, const char* path, const opts_t* o) {
  char b[48];
  const page_t* p = NULL;
  for (size_t i = 0; i < s->npages && p == NULL; i++) {
    const page_t* q = &s->pages[i];
    uint64_t n = (q->reserved > q->capacity ? q->reserved : q->capacity);
    uint64_t end = sat_add(q->page_start, sat_mul(n, q->block_size));
    if (o->addr >= q->page_start && o->addr < end) p = q;
  }
  if (p == NULL) {
    fprintf(stderr, "mi-heapview: %s: no page contains 0x%" PRIx64 "\n", path, o->addr);
    return 1;
  }
  if (p->freemap == NULL) {
    fprintf(stderr, "mi-heapview: %s: page 0x%" PRIx64 " has no free map (free maps are written only with "
            "MI_SNAPSHOT_BLOCKS, and only for the writer thread's pages)\n", path, p->page_start);
    return 1;
  }
  uint64_t live = 0;
  for (uint32_t i = 0; i < p->capacity; i++) live += !freemap_is_free(p, i);
  uint64_t idx = (o->addr - p->page_start) / p->block_size;   /* block_size > 0: the page contains addr */
  const char* state = (idx >= p->capacity ? "past capacity" : freemap_is_free(p, (uint32_t)idx) ? "free" : "live");
  printf("%-12s 0x%" PRIx64 "\n", "page", p->page_start);
  printf("%-12s %s\n", "kind", fmt_name(b, sizeof(b), p->page_kind, page_kind_names, 4));
  printf("%-12s %s\n", "block_size", fmt_size(b, sizeof(b), p->block_size));
  printf("%-12s %" PRIu32 "\n", "capacity", p->capacity);
  printf("%-12s %" PRIu32 "\n", "used", p->used);
  printf("%-12s %" PRIu64 "\n", "live", live);
  printf("%-12s 0x%" PRIx64 " in block %" PRIu64 " (%s)\n", "addr", o->addr, idx, state);
  printf("\n");
  static const char* const heads[] = { "index", "address" };
  table_t t = { 0 };
  t.ncols = 2;
  t.heads = heads;
  t.align = "RL";
  for (uint32_t i = 0; i < p->capacity; i++) {
    if (freemap_is_free(p, i)) continue;
    t_cell(&t, "%" PRIu32, i);
    t_cell(&t, "0x%" PRIx64, p->page_start + (uint64_t)i * p->block_size);
  }
  t_print(&t);
  return 0;
}

static int cmp_diff(const void* a, const void* b) {
  const agg_t* x = a;
  const agg_t* y = b;
  int64_t dx = delta(x->committed[0], x->committed[1]);
  int64_t dy = delta(y->committed[0], y->committed[1]);
  uint64_t mx = (uint64_t)(dx < 0 ? -dx : dx);
  uint64_t my = (uint64_t)(dy < 0 ? -dy : dy);
  if (mx != my) return (mx > my ? -1 : 1);
  if (x->block_size != y->block_size) return (x->block_size < y->block_size ? -1 : 1);
  if (x->group != y->group) return (x->group < y->group ? -1 : 1);
  return 0;
}

static int cmd_diff(const snap_t* s0, const snap_t* s1, const opts_t* o) {
  static const char* const h_plain[] = { "block_size", "pages", "d_pages", "committed", "d_committed", "live_bytes", "d_live" };
  static const char* const h_tid[] = { "block_size", "tid", "pages", "d_pages", "committed", "d_committed", "live_bytes", "d_live" };
  static const char* const h_heap[] = { "block_size", "heap", "pages", "d_pages", "committed", "d_committed", "live_bytes", "d_live" };
  char b[48];
  size_t n;
  agg_t* rows = aggregate(s0, s1, o->group, &n);
  agg_t tot;
  memset(&tot, 0, sizeof(tot));
  size_t changed = 0;
  for (size_t i = 0; i < n; i++) {
    agg_t* a = &rows[i];
    for (int sd = 0; sd < 2; sd++) {
      tot.pages[sd] += a->pages[sd];
      tot.committed[sd] = sat_add(tot.committed[sd], a->committed[sd]);
      tot.live[sd] = sat_add(tot.live[sd], a->live[sd]);
    }
    if (a->pages[0] != a->pages[1] || a->committed[0] != a->committed[1] || a->live[0] != a->live[1]) rows[changed++] = *a;
  }
  qsort(rows, changed, sizeof(agg_t), cmp_diff);
  size_t shown = (o->has_top && o->top != 0 && o->top < changed ? (size_t)o->top : changed);
  table_t t = { 0 };
  t.ncols = (o->group == GROUP_NONE ? 7 : 8);
  t.heads = (o->group == GROUP_TID ? h_tid : o->group == GROUP_HEAP ? h_heap : h_plain);
  t.align = (o->group == GROUP_NONE ? "RRRRRRR" : "RLRRRRRR");
  for (size_t i = 0; i <= shown; i++) {
    const agg_t* a = (i < shown ? &rows[i] : &tot);
    if (i < shown) t_cell(&t, "%s", fmt_size(b, sizeof(b), a->block_size));
    else t_cell(&t, "total");
    if (o->group != GROUP_NONE) {
      if (i < shown) group_cell(&t, o->group, a->group);
      else t_cell(&t, "");
    }
    t_cell(&t, "%" PRIu64, a->pages[1]);
    t_cell(&t, "%s", fmt_delta(b, sizeof(b), delta(a->pages[0], a->pages[1]), false));
    t_cell(&t, "%s", fmt_size(b, sizeof(b), a->committed[1]));
    t_cell(&t, "%s", fmt_delta(b, sizeof(b), delta(a->committed[0], a->committed[1]), true));
    t_cell(&t, "%s", fmt_size(b, sizeof(b), a->live[1]));
    t_cell(&t, "%s", fmt_delta(b, sizeof(b), delta(a->live[0], a->live[1]), true));
  }
  t_print(&t);
  trailer(shown, changed, "changed rows");
  free(rows);
  return 0;
}

/* ------------------------------------------------------------------ json */

static void json_hex(const uint8_t* p, uint64_t n) {
  static const char digits[] = "0123456789abcdef";
  putchar('"');
  for (uint64_t i = 0; i < n; i++) {
    putchar(digits[p[i] >> 4]);
    putchar(digits[p[i] & 15]);
  }
  putchar('"');
}

static void json_pages(const snap_t* s, size_t first, size_t count, const char* indent) {
  if (count == 0) { printf("[]"); return; }
  printf("[\n");
  for (size_t i = 0; i < count; i++) {
    const page_t* p = &s->pages[first + i];
    printf("%s {\"page_start\": %" PRIu64 ", \"slice_start\": %" PRIu64 ", \"block_size\": %" PRIu64
           ", \"reserved\": %" PRIu32 ", \"capacity\": %" PRIu32 ", \"used\": %" PRIu32 ", \"committed\": %" PRIu64
           ", \"tid\": %" PRIu64 ", \"heap_seq\": %" PRIu64 ", \"arena_idx\": %" PRIu32 ", \"slice_index\": %" PRIu32
           ", \"slice_count\": %" PRIu32 ", \"memkind\": %u, \"page_kind\": %u, \"abandoned\": %u, \"full\": %u"
           ", \"has_freemap\": %u, \"freemap\": ",
           indent, p->page_start, p->slice_start, p->block_size, p->reserved, p->capacity, p->used, p->committed,
           p->tid, p->heap_seq, p->arena_idx, p->slice_index, p->slice_count, p->memkind, p->page_kind,
           p->abandoned, p->full, p->has_freemap);
    if (p->freemap == NULL) printf("null");
    else json_hex(p->freemap, p->freemap_nbytes);
    printf("}%s\n", (i + 1 < count ? "," : ""));
  }
  printf("%s]", indent);
}

static int cmd_json(const snap_t* s) {
  printf("{\n \"header\": {\"magic\": %" PRIu32 ", \"version\": %" PRIu32 ", \"ptr_size\": %" PRIu32
         ", \"slice_size\": %" PRIu32 ", \"flags\": %" PRIu32 ", \"reserved\": %" PRIu32 ", \"clock_ms\": %" PRIu64
         ", \"writer_tid\": %" PRIu64 ", \"arena_count\": %" PRIu32 "},\n",
         s->magic, s->version, s->ptr_size, s->slice_size, s->flags, s->reserved, s->clock_ms, s->writer_tid, s->arena_count);
  printf(" \"arenas\": [");
  for (size_t i = 0; i < s->narenas; i++) {
    const arena_t* a = &s->arenas[i];
    printf("%s\n  {\"idx\": %" PRIu32 ", \"base\": %" PRIu64 ", \"size\": %" PRIu64 ", \"slice_count\": %" PRIu32
           ", \"info_slices\": %" PRIu32 ", \"numa_node\": %" PRId32 ", \"pinned\": %u, \"exclusive\": %u,\n",
           (i == 0 ? "" : ","), a->idx, a->base, a->size, a->slice_count, a->info_slices, a->numa_node, a->pinned, a->exclusive);
    for (int b = 0; b < 3; b++) {
      printf("   \"%s\": {\"chunk_count\": %" PRIu32 ", \"chunk_bytes\": %" PRIu32 ", \"data\": ",
             bitmap_names[b], a->bm[b].chunk_count, a->bm[b].chunk_bytes);
      json_hex(a->bm[b].data, a->bm[b].nbytes);
      printf("},\n");
    }
    printf("   \"pages\": ");
    json_pages(s, a->first_page, a->page_count, "   ");
    printf("}");
  }
  printf("%s],\n \"thread_pages\": ", (s->narenas ? "\n " : ""));
  json_pages(s, s->thread_first, s->thread_count, " ");
  printf(",\n \"heaps\": [");
  for (size_t i = 0; i < s->nheaps; i++) {
    const heap_t* h = &s->heaps[i];
    printf("%s\n  {\"heap_seq\": %" PRIu64 ", \"numa_node\": %" PRId32 ", \"exclusive_arena\": %" PRIu64 ", \"pages\": ",
           (i == 0 ? "" : ","), h->heap_seq, h->numa_node, h->exclusive_arena);
    json_pages(s, h->first_page, h->page_count, "   ");
    printf("}");
  }
  printf("%s],\n \"footer\": {\"page_count\": %" PRIu64 "}\n}\n", (s->nheaps ? "\n " : ""), s->footer_count);
  return 0;
}

/* ------------------------------------------------------------------ main */

static void usage(FILE* f) {
  fputs("usage: mi-heapview <snapshot> <cmd> [options] [--human]\n"
        "  summary\n"
        "  sizes   [--top N] [--by-tid|--by-heap] [--bytes]\n"
        "  frag    [--top N] [--min-waste B]\n"
        "  arenas\n"
        "  pages   [--top N] [--size B] [--sort waste|addr|used] [--min-waste B]\n"
        "  blocks  --addr 0xADDR\n"
        "  diff    <snapshot2> [--top N] [--by-tid|--by-heap]\n"
        "  json\n"
        "(peek is not implemented; see docs/heap-snapshot.md)\n", f);
}

static bool parse_u64(const char* text, uint64_t* v) {
  if (text == NULL || *text == 0 || *text == '-' || *text == '+' || *text == ' ') return false;
  char* end;
  errno = 0;
  unsigned long long x = strtoull(text, &end, 0);
  if (errno != 0 || *end != 0) return false;
  *v = (uint64_t)x;
  return true;
}

enum { CMD_SUMMARY, CMD_SIZES, CMD_FRAG, CMD_ARENAS, CMD_PAGES, CMD_BLOCKS, CMD_DIFF, CMD_JSON, CMD_COUNT };
static const char* const cmd_names[CMD_COUNT] = { "summary", "sizes", "frag", "arenas", "pages", "blocks", "diff", "json" };
/* options each command accepts (--human is accepted everywhere) */
static const char* const cmd_opts[CMD_COUNT] = {
  "", "--top --by-tid --by-heap --bytes", "--top --min-waste", "", "--top --size --sort --min-waste", "--addr",
  "--top --by-tid --by-heap", ""
};

static bool opt_allowed(int cmd, const char* opt) {
  const char* list = cmd_opts[cmd];
  size_t n = strlen(opt);
  for (const char* p = strstr(list, opt); p != NULL; p = strstr(p + 1, opt)) {
    if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ')) return true;
  }
  return false;
}

static int bad_usage(const char* fmt, const char* arg) {
  fputs("mi-heapview: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\n", stderr);
  usage(stderr);
  return 2;
}

int main(int argc, char** argv) {
  if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) { usage(stdout); return 0; }
  if (argc < 3) { usage(stderr); return 2; }
  const char* path = argv[1];
  int cmd = -1;
  for (int i = 0; i < CMD_COUNT; i++) if (strcmp(argv[2], cmd_names[i]) == 0) cmd = i;
  if (strcmp(argv[2], "peek") == 0) return bad_usage("%s: not implemented in this viewer", "peek");
  if (cmd < 0) return bad_usage("unknown command '%s'", argv[2]);
  opts_t o;
  memset(&o, 0, sizeof(o));
  o.sort = SORT_ADDR;
  int i = 3;
  if (cmd == CMD_DIFF) {
    if (argc < 4 || strncmp(argv[3], "--", 2) == 0) return bad_usage("%s needs a second snapshot", "diff");
    o.other = argv[3];
    i = 4;
  }
  for (; i < argc; i++) {
    const char* a = argv[i];
    if (strcmp(a, "--human") == 0) { opt_human = true; continue; }
    if (strncmp(a, "--", 2) != 0 || !opt_allowed(cmd, a)) return bad_usage("unexpected argument '%s'", a);
    bool takes_value = (strcmp(a, "--top") == 0 || strcmp(a, "--min-waste") == 0 || strcmp(a, "--size") == 0 ||
                        strcmp(a, "--sort") == 0 || strcmp(a, "--addr") == 0);
    const char* v = NULL;
    if (takes_value) {
      if (i + 1 >= argc) return bad_usage("%s needs a value", a);
      v = argv[++i];
    }
    bool ok = true;
    if (strcmp(a, "--top") == 0) { ok = parse_u64(v, &o.top); o.has_top = true; }
    else if (strcmp(a, "--min-waste") == 0) ok = parse_u64(v, &o.min_waste);
    else if (strcmp(a, "--size") == 0) { ok = parse_u64(v, &o.size); o.has_size = true; }
    else if (strcmp(a, "--addr") == 0) { ok = parse_u64(v, &o.addr); o.has_addr = true; }
    else if (strcmp(a, "--sort") == 0) {
      if (strcmp(v, "addr") == 0) o.sort = SORT_ADDR;
      else if (strcmp(v, "waste") == 0) o.sort = SORT_WASTE;
      else if (strcmp(v, "used") == 0) o.sort = SORT_USED;
      else ok = false;
    }
    else if (strcmp(a, "--by-tid") == 0) o.group = GROUP_TID;
    else if (strcmp(a, "--by-heap") == 0) o.group = GROUP_HEAP;
    else if (strcmp(a, "--bytes") == 0) o.bytes = true;
    if (!ok) return bad_usage("bad value '%s'", v);
  }
  if (cmd == CMD_BLOCKS && !o.has_addr) return bad_usage("%s needs --addr 0xADDR", "blocks");

  snap_t s;
  snap_load(path, &s);
  int rc = 0;
  switch (cmd) {
    case CMD_SUMMARY: rc = cmd_summary(&s); break;
    case CMD_SIZES:   rc = cmd_sizes(&s, &o); break;
    case CMD_FRAG:    rc = page_table(&s, &o, SORT_WASTE, 30); break;
    case CMD_ARENAS:  rc = cmd_arenas(&s); break;
    case CMD_PAGES:   rc = page_table(&s, &o, o.sort, 0); break;
    case CMD_BLOCKS:  rc = cmd_blocks(&s, path, &o); break;
    case CMD_JSON:    rc = cmd_json(&s); break;
    case CMD_DIFF: {
      snap_t s2;
      snap_load(o.other, &s2);
      rc = cmd_diff(&s, &s2, &o);
      snap_free(&s2);
      break;
    }
    default: break;
  }
  snap_free(&s);
  if (fflush(stdout) != 0) {
    fputs("mi-heapview: write error on stdout\n", stderr);
    return 1;
  }
  return rc;
}
