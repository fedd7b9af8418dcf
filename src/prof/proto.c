/* profile.proto (perftools.profiles.Profile, proto3) of a snapshot: what
   `go tool pprof` and google/pprof read, written without a protobuf
   library. Values are already unsampled (the period is written too, but
   clients scale proto values only when told to, never by period), each
   sample carries Go's numeric label `bytes`, every location points into a
   mapping with its file offset and build id, and the functions are
   symbolised here, at dump time, so that `pprof -top heap.pb.gz` names them
   without the binary.

   Runs without the profiler lock (the snapshot is a copy) and allocates
   nothing from the heap: the output, the scratch messages and the tables
   are OS memory. */
#include "prof.h"

#if MI_PPROF

/* The symboliser is DHAT's ELF reader (src/dhat/symbolize.c), on Windows
   the PE reader (src/dhat/symbolize-pe.c: function names, no lines);
   elsewhere the proto has no Function table and pprof symbolises from the
   mappings. */
#if !defined(__APPLE__)
#include "../dhat/dhat.h"
#define MI_PROF_SYMBOLS 1
#else
#define MI_PROF_SYMBOLS 0
#endif

/* ---- protobuf wire format ------------------------------------------------------- */

#define MI_PB_VARINT 0
#define MI_PB_LEN 2

static void mi_pb_varint(mi_prof_buf_t* b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  while (v >= 0x80) {
    tmp[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  tmp[n++] = (uint8_t)v;
  _mi_prof_buf_put(b, tmp, n);
}

static void mi_pb_key(mi_prof_buf_t* b, unsigned field, unsigned wire) {
  mi_pb_varint(b, ((uint64_t)field << 3) | wire);
}

/* A scalar field; proto3 leaves zero values out (they read back as 0). */
static void mi_pb_uint(mi_prof_buf_t* b, unsigned field, uint64_t v) {
  if (v == 0) return;
  mi_pb_key(b, field, MI_PB_VARINT);
  mi_pb_varint(b, v);
}

static void mi_pb_bytes(mi_prof_buf_t* b, unsigned field, const void* data, size_t len) {
  mi_pb_key(b, field, MI_PB_LEN);
  mi_pb_varint(b, len);
  _mi_prof_buf_put(b, data, len);
}

/* An embedded message, built in the scratch buffer `msg`. */
static void mi_pb_msg(mi_prof_buf_t* b, unsigned field, const mi_prof_buf_t* msg) {
  mi_pb_bytes(b, field, msg->data, msg->len);
}

static void mi_pb_fail(mi_prof_buf_t* b) {
  b->failed = true;
}

/* ---- OS-memory arrays and hash tables -------------------------------------------- */

static bool mi_pb_grow(void** arr, size_t* cap, size_t elem, size_t want) {
  if (*cap >= want) return true;
  size_t newcap = (*cap == 0 ? 256 : *cap);
  while (newcap < want) newcap *= 2;
  void* p = _mi_os_alloc_meta(newcap * elem); /* zeroed */
  if (p == NULL) return false;
  if (*arr != NULL) {
    memcpy(p, *arr, *cap * elem);
    _mi_os_free_meta(*arr, *cap * elem);
  }
  *arr = p;
  *cap = newcap;
  return true;
}

static void mi_pb_release(void* arr, size_t bytes) {
  if (arr != NULL) _mi_os_free_meta(arr, bytes);
}

/* Open addressing; a slot is used when v != 0 (ids and indices are stored
   plus one where they can be 0). `h` is kept for growing. */
typedef struct mi_pb_slot_s {
  uint64_t h, a, b, v;
} mi_pb_slot_t;

typedef struct mi_pb_table_s {
  mi_pb_slot_t* slots;
  size_t cap; /* a power of two */
  size_t count;
} mi_pb_table_t;

static uint64_t mi_pb_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

/* Room for one more (at most half full, so probes stay short). */
static bool mi_pb_table_reserve(mi_pb_table_t* t) {
  if ((t->count + 1) * 2 <= t->cap) return true;
  size_t cap = (t->cap == 0 ? 1024 : t->cap * 2);
  mi_pb_slot_t* slots = (mi_pb_slot_t*)_mi_os_alloc_meta(cap * sizeof(mi_pb_slot_t));
  if (slots == NULL) return false;
  for (size_t i = 0; i < t->cap; i++) {
    if (t->slots[i].v == 0) continue;
    size_t j = (size_t)t->slots[i].h & (cap - 1);
    while (slots[j].v != 0) j = (j + 1) & (cap - 1);
    slots[j] = t->slots[i];
  }
  mi_pb_release(t->slots, t->cap * sizeof(mi_pb_slot_t));
  t->slots = slots;
  t->cap = cap;
  return true;
}

/* ---- The writer ------------------------------------------------------------------- */

typedef struct mi_pb_loc_s {
  uintptr_t addr; /* return address */
  uint64_t mapping;
  uint64_t function; /* 0: not symbolised */
  int64_t line;
  bool has_file;
} mi_pb_loc_t;

typedef struct mi_pb_map_flags_s {
  bool used;      /* some location lies in it */
  bool functions; /* every one of them has a function ... */
  bool files;     /* ... with a file name ... */
  bool lines;     /* ... and a line */
} mi_pb_map_flags_t;

typedef struct mi_pb_writer_s {
  mi_prof_buf_t strs;  /* string_table entries, encoded, in index order */
  mi_prof_buf_t funcs; /* Function messages */
  mi_prof_buf_t msg;   /* scratch: one message */
  mi_prof_buf_t packed;
  mi_pb_table_t str_tab; /* a = offset of the bytes in strs, b = length, v = index + 1 */
  mi_pb_table_t loc_tab; /* a = address, v = location id */
  mi_pb_table_t fn_tab;  /* a = name index, b = file index, v = function id */
  uint64_t str_count;
  uint64_t fn_count;
  mi_pb_loc_t* locs; /* by id - 1 */
  size_t loc_count, loc_cap;
  mi_prof_mapping_t* maps;
  size_t map_count;
  size_t* map_order; /* mapping indices sorted by start */
  mi_pb_map_flags_t* map_flags;
  bool failed;
} mi_pb_writer_t;

static uint64_t mi_pb_str_hash(const char* s, size_t len) {
  uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
  for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
  return mi_pb_mix(h);
}

/* The string table index of `s`, added on first use. */
static uint64_t mi_pb_str(mi_pb_writer_t* w, const char* s) {
  size_t len = strlen(s);
  if (w->failed || !mi_pb_table_reserve(&w->str_tab)) {
    w->failed = true;
    return 0;
  }
  uint64_t h = mi_pb_str_hash(s, len);
  mi_pb_table_t* t = &w->str_tab;
  size_t i = (size_t)h & (t->cap - 1);
  for (; t->slots[i].v != 0; i = (i + 1) & (t->cap - 1)) {
    mi_pb_slot_t* e = &t->slots[i];
    if (e->h == h && e->b == len && memcmp(w->strs.data + e->a, s, len) == 0) return e->v - 1;
  }
  mi_pb_key(&w->strs, 6, MI_PB_LEN);
  mi_pb_varint(&w->strs, len);
  size_t off = w->strs.len;
  _mi_prof_buf_put(&w->strs, s, len);
  if (w->strs.failed) {
    w->failed = true;
    return 0;
  }
  t->slots[i].h = h;
  t->slots[i].a = off;
  t->slots[i].b = len;
  t->slots[i].v = ++w->str_count; /* index + 1 */
  t->count++;
  return w->str_count - 1;
}

/* The location id of return address `addr`, made on first use. */
static uint64_t mi_pb_loc(mi_pb_writer_t* w, uintptr_t addr) {
  if (w->failed || !mi_pb_table_reserve(&w->loc_tab)) {
    w->failed = true;
    return 0;
  }
  mi_pb_table_t* t = &w->loc_tab;
  uint64_t h = mi_pb_mix((uint64_t)addr);
  size_t i = (size_t)h & (t->cap - 1);
  for (; t->slots[i].v != 0; i = (i + 1) & (t->cap - 1)) {
    if (t->slots[i].a == addr) return t->slots[i].v;
  }
  if (!mi_pb_grow((void**)&w->locs, &w->loc_cap, sizeof(mi_pb_loc_t), w->loc_count + 1)) {
    w->failed = true;
    return 0;
  }
  memset(&w->locs[w->loc_count], 0, sizeof(mi_pb_loc_t));
  w->locs[w->loc_count].addr = addr;
  w->loc_count++;
  t->slots[i].h = h;
  t->slots[i].a = addr;
  t->slots[i].v = w->loc_count;
  t->count++;
  return w->loc_count;
}

#if MI_PROF_SYMBOLS
/* The function id of (symbol, file), written to the Function table on first
   use: its name demangled where it is Rust's, its system name the symbol. */
static uint64_t mi_pb_function(mi_pb_writer_t* w, const char* symbol, const char* file) {
  char readable[1024];
  const char* name = (_mi_dhat_demangle_rust(symbol, readable, sizeof(readable)) ? readable : symbol);
  uint64_t sys_idx = mi_pb_str(w, symbol);
  uint64_t name_idx = mi_pb_str(w, name);
  uint64_t file_idx = mi_pb_str(w, file);
  if (w->failed || !mi_pb_table_reserve(&w->fn_tab)) {
    w->failed = true;
    return 0;
  }
  mi_pb_table_t* t = &w->fn_tab;
  uint64_t h = mi_pb_mix(sys_idx * 0x9E3779B97F4A7C15ULL + file_idx);
  size_t i = (size_t)h & (t->cap - 1);
  for (; t->slots[i].v != 0; i = (i + 1) & (t->cap - 1)) {
    if (t->slots[i].a == sys_idx && t->slots[i].b == file_idx) return t->slots[i].v;
  }
  uint64_t id = ++w->fn_count;
  t->slots[i].h = h;
  t->slots[i].a = sys_idx;
  t->slots[i].b = file_idx;
  t->slots[i].v = id;
  t->count++;
  w->msg.len = 0;
  mi_pb_uint(&w->msg, 1, id);
  mi_pb_uint(&w->msg, 2, name_idx);
  mi_pb_uint(&w->msg, 3, sys_idx); /* system_name: the symbol as the object has it */
  mi_pb_uint(&w->msg, 4, file_idx);
  mi_pb_msg(&w->funcs, 5, &w->msg);
  return id;
}

/* Sorts location indices by address (heap sort: no allocation, no
   recursion), so the line reader runs each line program once for all the
   addresses in it (src/dhat/lines.c). */
static void mi_pb_sift(const mi_pb_loc_t* locs, size_t* a, size_t i, size_t n) {
  for (;;) {
    size_t j = 2 * i + 1;
    if (j >= n) return;
    if (j + 1 < n && locs[a[j + 1]].addr > locs[a[j]].addr) j++;
    if (locs[a[j]].addr <= locs[a[i]].addr) return;
    size_t tmp = a[i];
    a[i] = a[j];
    a[j] = tmp;
    i = j;
  }
}

static void mi_pb_symbolize(mi_pb_writer_t* w) {
  size_t n = w->loc_count;
  if (n == 0) return;
  size_t* order = (size_t*)_mi_os_alloc_meta(n * sizeof(size_t));
  if (order == NULL) {
    w->failed = true;
    return;
  }
  for (size_t i = 0; i < n; i++) order[i] = i;
  for (size_t k = n / 2; k-- > 0;) mi_pb_sift(w->locs, order, k, n);
  for (size_t end = n; end-- > 1;) {
    size_t tmp = order[0];
    order[0] = order[end];
    order[end] = tmp;
    mi_pb_sift(w->locs, order, 0, end);
  }
  /* the loader takes its locks, and a lock of ours held here would make
     this dump wait behind itself (the snapshot is a copy: none is needed) */
  mi_lock_assert_none_held("the loader, from the proto writer's symboliser");
  _mi_dhat_symbolizer_enter(); /* DHAT's dump shares the symboliser's caches */
  for (size_t k = 0; k < n && !w->failed; k++) {
    mi_pb_loc_t* loc = &w->locs[order[k]];
    char name[1024];
    char file[512];
    int line = 0;
    if (!_mi_dhat_symbol_parts(loc->addr, name, sizeof(name), file, sizeof(file), &line)) continue;
    loc->function = mi_pb_function(w, name, file);
    loc->line = line;
    loc->has_file = (file[0] != 0);
  }
  _mi_dhat_symbolize_done(); /* unmap the object files */
  _mi_dhat_symbolizer_leave();
  _mi_os_free_meta(order, n * sizeof(size_t));
}
#endif

/* The mapping (index + 1) holding `addr`; 0: none. */
static uint64_t mi_pb_mapping_of(const mi_pb_writer_t* w, uintptr_t addr) {
  size_t lo = 0, hi = w->map_count;
  while (lo < hi) { /* the first mapping starting above addr */
    size_t mid = (lo + hi) / 2;
    if (w->maps[w->map_order[mid]].start <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return 0;
  size_t m = w->map_order[lo - 1];
  return (addr < w->maps[m].limit ? m + 1 : 0);
}

static bool mi_pb_maps_load(mi_pb_writer_t* w) {
  if (!_mi_prof_mappings(&w->maps, &w->map_count)) return false;
  if (w->map_count == 0) return true;
  w->map_order = (size_t*)_mi_os_alloc_meta(w->map_count * sizeof(size_t));
  w->map_flags = (mi_pb_map_flags_t*)_mi_os_alloc_meta(w->map_count * sizeof(mi_pb_map_flags_t));
  if (w->map_order == NULL || w->map_flags == NULL) return false;
  for (size_t i = 0; i < w->map_count; i++) { /* insertion sort: a few hundred at most */
    size_t j = i;
    while (j > 0 && w->maps[w->map_order[j - 1]].start > w->maps[i].start) {
      w->map_order[j] = w->map_order[j - 1];
      j--;
    }
    w->map_order[j] = i;
  }
  return true;
}

static void mi_pb_value_type(mi_pb_writer_t* w, mi_prof_buf_t* out, unsigned field, const char* type,
                             const char* unit) {
  uint64_t t = mi_pb_str(w, type);
  uint64_t u = mi_pb_str(w, unit);
  w->msg.len = 0;
  mi_pb_uint(&w->msg, 1, t);
  mi_pb_uint(&w->msg, 2, u);
  mi_pb_msg(out, field, &w->msg);
}

/* One Sample: locations leaf first, the four unsampled values, the label. */
static void mi_pb_sample(mi_pb_writer_t* w, mi_prof_buf_t* out, const mi_prof_entry_t* e, size_t period) {
  int64_t v[4];
  _mi_prof_unsample(e->accum_objs, e->accum_bytes, period, &v[0], &v[1]);
  _mi_prof_unsample(e->live_objs, e->live_bytes, period, &v[2], &v[3]);
  w->msg.len = 0;
  w->packed.len = 0;
  for (uint32_t f = 0; f < e->depth; f++) mi_pb_varint(&w->packed, mi_pb_loc(w, e->frames[f]));
  if (w->packed.len > 0) mi_pb_bytes(&w->msg, 1, w->packed.data, w->packed.len);
  w->packed.len = 0;
  for (int k = 0; k < 4; k++) mi_pb_varint(&w->packed, (uint64_t)v[k]);
  mi_pb_bytes(&w->msg, 2, w->packed.data, w->packed.len);
  /* Go's writeHeapProto: the average object size before scaling, from the
     in-use pair, or the cumulative one when nothing is in use */
  uint64_t objs = (e->live_objs != 0 ? e->live_objs : e->accum_objs);
  uint64_t bytes = (e->live_objs != 0 ? e->live_bytes : e->accum_bytes);
  if (objs != 0) {
    uint64_t key = mi_pb_str(w, "bytes");
    w->packed.len = 0;
    mi_pb_uint(&w->packed, 1, key);
    mi_pb_uint(&w->packed, 3, bytes / objs);
    mi_pb_bytes(&w->msg, 3, w->packed.data, w->packed.len);
  }
  mi_pb_msg(out, 2, &w->msg);
}

static void mi_pb_hex(char* buf, const uint8_t* id, size_t len) {
  for (size_t i = 0; i < len; i++) {
    buf[2 * i] = "0123456789abcdef"[id[i] >> 4];
    buf[2 * i + 1] = "0123456789abcdef"[id[i] & 15];
  }
  buf[2 * len] = 0;
}

static void mi_pb_locations(mi_pb_writer_t* w, mi_prof_buf_t* out) {
  for (size_t i = 0; i < w->loc_count && !w->failed; i++) {
    mi_pb_loc_t* loc = &w->locs[i];
    loc->mapping = mi_pb_mapping_of(w, loc->addr);
    if (loc->mapping != 0) {
      mi_pb_map_flags_t* mf = &w->map_flags[loc->mapping - 1];
      if (!mf->used) mf->functions = mf->files = mf->lines = true;
      mf->used = true;
      mf->functions = mf->functions && loc->function != 0;
      mf->files = mf->files && loc->has_file;
      mf->lines = mf->lines && loc->line > 0;
    }
    w->msg.len = 0;
    mi_pb_uint(&w->msg, 1, i + 1);
    mi_pb_uint(&w->msg, 2, loc->mapping);
    /* the call instruction: pprof takes proto addresses as they are (only
       its legacy parsers subtract one) */
    mi_pb_uint(&w->msg, 3, (uint64_t)loc->addr - 1);
    if (loc->function != 0) {
      w->packed.len = 0;
      mi_pb_uint(&w->packed, 1, loc->function);
      mi_pb_uint(&w->packed, 2, (uint64_t)(loc->line > 0 ? loc->line : 0));
      mi_pb_bytes(&w->msg, 4, w->packed.data, w->packed.len);
    }
    mi_pb_msg(out, 4, &w->msg);
  }
}

static void mi_pb_mappings(mi_pb_writer_t* w, mi_prof_buf_t* out) {
  for (size_t i = 0; i < w->map_count && !w->failed; i++) {
    const mi_prof_mapping_t* m = &w->maps[i];
    const mi_pb_map_flags_t* mf = &w->map_flags[i];
    uint64_t file = mi_pb_str(w, m->path != NULL ? m->path : "");
    uint64_t build = 0;
    if (m->build_id_len > 0 && m->build_id_len <= sizeof(m->build_id)) {
      char hex[2 * sizeof(m->build_id) + 1];
      mi_pb_hex(hex, m->build_id, m->build_id_len);
      build = mi_pb_str(w, hex);
    }
    w->msg.len = 0;
    mi_pb_uint(&w->msg, 1, i + 1);
    mi_pb_uint(&w->msg, 2, m->start);
    mi_pb_uint(&w->msg, 3, m->limit);
    mi_pb_uint(&w->msg, 4, m->file_offset);
    mi_pb_uint(&w->msg, 5, file);
    mi_pb_uint(&w->msg, 6, build);
    /* "written" means for every location in it: a mapping that claims
       functions is not symbolised again by pprof */
    mi_pb_uint(&w->msg, 7, mf->used && mf->functions);
    mi_pb_uint(&w->msg, 8, mf->used && mf->files);
    mi_pb_uint(&w->msg, 9, mf->used && mf->lines);
    mi_pb_msg(out, 3, &w->msg);
  }
}

static void mi_pb_comment(mi_pb_writer_t* w, const mi_prof_snapshot_t* snap, mi_prof_buf_t* out) {
  mi_prof_buf_t c = {0};
  _mi_prof_buf_str(&c, "dropped_samples=");
  _mi_prof_buf_u64(&c, snap->dropped_samples);
  _mi_prof_buf_str(&c, " stack_table_overflows=");
  _mi_prof_buf_u64(&c, snap->stack_table_overflows);
  _mi_prof_buf_put(&c, "", 1); /* the terminator mi_pb_str reads up to */
  if (c.failed) w->failed = true;
  else mi_pb_uint(out, 13, mi_pb_str(w, c.data));
  _mi_prof_buf_free(&c);
}

static bool mi_pb_entry_empty(const mi_prof_entry_t* e) {
  return (e->live_objs == 0 && e->live_bytes == 0 && e->accum_objs == 0 && e->accum_bytes == 0);
}

/* The profile, field by field in the schema's order. */
static void mi_pb_build(mi_pb_writer_t* w, const mi_prof_snapshot_t* snap, mi_prof_buf_t* out) {
  if (mi_pb_str(w, "") != 0) w->failed = true; /* string_table[0] must be "" */
  if (!mi_pb_maps_load(w)) w->failed = true;
  /* the samples go to their own buffer first: their locations are numbered
     while they are written, and the schema puts samples before locations */
  mi_prof_buf_t samples = {0};
  for (size_t i = 0; i < snap->count && !w->failed; i++) {
    if (!mi_pb_entry_empty(&snap->entries[i])) mi_pb_sample(w, &samples, &snap->entries[i], snap->period);
  }
#if MI_PROF_SYMBOLS
  if (!w->failed) mi_pb_symbolize(w);
#endif
  /* Go's order of the four sample types (runtime/pprof's writeHeapProto) */
  mi_pb_value_type(w, out, 1, "alloc_objects", "count");
  mi_pb_value_type(w, out, 1, "alloc_space", "bytes");
  mi_pb_value_type(w, out, 1, "inuse_objects", "count");
  mi_pb_value_type(w, out, 1, "inuse_space", "bytes");
  _mi_prof_buf_put(out, samples.data, samples.len);
  if (samples.failed) w->failed = true;
  _mi_prof_buf_free(&samples);
  mi_prof_buf_t locations = {0};
  mi_pb_locations(w, &locations); /* before the mappings: it sets their flags */
  mi_pb_mappings(w, out);
  _mi_prof_buf_put(out, locations.data, locations.len);
  if (locations.failed) w->failed = true;
  _mi_prof_buf_free(&locations);
  _mi_prof_buf_put(out, w->funcs.data, w->funcs.len);
  /* the strings the remaining fields name, before the table is written */
  uint64_t drop = mi_pb_str(w, "mi_.*|_mi_.*"); /* a second defence: no frame should be ours */
  uint64_t space = mi_pb_str(w, "space");
  uint64_t bytes = mi_pb_str(w, "bytes");
  uint64_t inuse_space = mi_pb_str(w, "inuse_space");
  mi_prof_buf_t tail = {0};
  mi_pb_uint(&tail, 7, drop);
  mi_pb_uint(&tail, 9, snap->taken_nanos);
  mi_pb_uint(&tail, 10, (snap->taken_nanos > snap->start_nanos ? snap->taken_nanos - snap->start_nanos : 0));
  w->msg.len = 0;
  mi_pb_uint(&w->msg, 1, space);
  mi_pb_uint(&w->msg, 2, bytes);
  mi_pb_msg(&tail, 11, &w->msg);
  mi_pb_uint(&tail, 12, snap->period);
  mi_pb_comment(w, snap, &tail);
  /* a string table index: the type pprof shows unless told otherwise */
  mi_pb_uint(&tail, 14, inuse_space);
  _mi_prof_buf_put(out, w->strs.data, w->strs.len);
  _mi_prof_buf_put(out, tail.data, tail.len);
  if (tail.failed || w->strs.failed || w->funcs.failed || w->msg.failed || w->packed.failed) w->failed = true;
  _mi_prof_buf_free(&tail);
}

static void mi_pb_writer_free(mi_pb_writer_t* w) {
  _mi_prof_buf_free(&w->strs);
  _mi_prof_buf_free(&w->funcs);
  _mi_prof_buf_free(&w->msg);
  _mi_prof_buf_free(&w->packed);
  mi_pb_release(w->str_tab.slots, w->str_tab.cap * sizeof(mi_pb_slot_t));
  mi_pb_release(w->loc_tab.slots, w->loc_tab.cap * sizeof(mi_pb_slot_t));
  mi_pb_release(w->fn_tab.slots, w->fn_tab.cap * sizeof(mi_pb_slot_t));
  mi_pb_release(w->locs, w->loc_cap * sizeof(mi_pb_loc_t));
  mi_pb_release(w->map_order, w->map_count * sizeof(size_t));
  mi_pb_release(w->map_flags, w->map_count * sizeof(mi_pb_map_flags_t));
  if (w->maps != NULL) _mi_prof_mappings_free(w->maps, w->map_count);
}

bool _mi_prof_proto_build(const mi_prof_snapshot_t* snap, bool gzip, mi_prof_buf_t* out) {
  mi_pb_writer_t* w = (mi_pb_writer_t*)_mi_os_alloc_meta(sizeof(mi_pb_writer_t)); /* zeroed */
  if (w == NULL) {
    mi_pb_fail(out);
    return false;
  }
  mi_prof_buf_t plain = {0};
  mi_pb_build(w, snap, gzip ? &plain : out);
  bool ok = !w->failed && !(gzip ? plain.failed : out->failed);
  mi_pb_writer_free(w);
  _mi_os_free_meta(w, sizeof(mi_pb_writer_t));
  if (gzip) {
    ok = ok && _mi_prof_gzip(&plain, out);
    _mi_prof_buf_free(&plain);
  }
  if (!ok) mi_pb_fail(out);
  return ok;
}

#endif
