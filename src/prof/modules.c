/* The loaded modules, for the two writers: the proto's Mapping table
   (start, limit, file offset, path and build id of each executable
   segment, the main program first) and the text format's memory map (the
   MAPPED_LIBRARIES: section). Both let pprof turn a PIE or shared-library
   address into a file offset, which is what symbolisation needs.

   Linux: /proc/self/maps (what gperftools and Go read too), with the build
   ids taken from the loaded images' PT_NOTE segments through the loader,
   not from the files: the image in memory is the one the addresses belong
   to, even when its file has been replaced since. Windows:
   modules-windows.c (this file has what both share). Calling the loader
   here, outside src/prim, is the exception the profilers already make
   (docs/architecture.md). All memory is from the OS. */
#include "prof.h"

#if MI_PPROF

#if defined(_WIN32)
#define MI_PROF_PROC_MAPS 0 /* modules-windows.c */
#elif !defined(__APPLE__)
#include <elf.h>
#include <link.h>
#define MI_PROF_PROC_MAPS 1
#else
#define MI_PROF_PROC_MAPS 0
#endif

/* The mappings and their paths share one OS block; its size sits in a
   header before the array, so that freeing needs only the array. */
#define MI_PROF_MAPS_HEADER 16

mi_prof_mapping_t* _mi_prof_maps_alloc(size_t count, size_t path_bytes, char** paths) {
  size_t size = MI_PROF_MAPS_HEADER + count * sizeof(mi_prof_mapping_t) + path_bytes;
  uint8_t* block = (uint8_t*)_mi_os_alloc_meta(size); /* zeroed */
  if (block == NULL) return NULL;
  memcpy(block, &size, sizeof(size));
  mi_prof_mapping_t* maps = (mi_prof_mapping_t*)(block + MI_PROF_MAPS_HEADER);
  *paths = (char*)(maps + count);
  return maps;
}

void _mi_prof_mappings_free(mi_prof_mapping_t* maps, size_t count) {
  (void)count; /* the block knows its size */
  if (maps == NULL) return;
  uint8_t* block = (uint8_t*)maps - MI_PROF_MAPS_HEADER;
  size_t size;
  memcpy(&size, block, sizeof(size));
  _mi_os_free_meta(block, size);
}

/* Put the mapping that holds `addr` (the main program's code) first,
   keeping the order of the others. */
void _mi_prof_maps_main_first(mi_prof_mapping_t* maps, size_t count, uintptr_t addr) {
  for (size_t i = 0; i < count; i++) {
    if (addr >= maps[i].start && addr < maps[i].limit) {
      mi_prof_mapping_t m = maps[i];
      memmove(&maps[1], &maps[0], i * sizeof(mi_prof_mapping_t));
      maps[0] = m;
      return;
    }
  }
}

#if MI_PROF_PROC_MAPS

/* The whole of a /proc file (its size reads as 0, so it is read in chunks). */
static bool mi_prof_read_file(const char* path, mi_prof_buf_t* out) {
  int fd = -1;
  if (mi_prim_file_open_read(path, &fd) != 0) return false;
  char chunk[4096];
  bool ok = true;
  for (;;) {
    size_t got = 0;
    if (mi_prim_file_read(fd, chunk, sizeof(chunk), &got) != 0) {
      ok = false;
      break;
    }
    if (got == 0) break;
    _mi_prof_buf_put(out, chunk, got);
  }
  mi_prim_file_close(fd);
  return ok && !out->failed;
}

/* One line of /proc/self/maps: "start-limit perms offset dev inode   path". */
typedef struct mi_prof_maps_line_s {
  uintptr_t start, limit;
  uint64_t offset;
  bool exec;
  const char* path; /* in the line; not terminated */
  size_t path_len;
} mi_prof_maps_line_t;

static uint64_t mi_prof_hex(const char** p, const char* end) {
  uint64_t v = 0;
  for (; *p < end; (*p)++) {
    char c = **p;
    int d = (c >= '0' && c <= '9' ? c - '0' : (c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1));
    if (d < 0) break;
    v = v * 16 + (uint64_t)d;
  }
  return v;
}

static const char* mi_prof_skip_field(const char* p, const char* end) {
  while (p < end && *p != ' ') p++;
  while (p < end && *p == ' ') p++;
  return p;
}

static bool mi_prof_maps_parse(const char* p, const char* end, mi_prof_maps_line_t* ln) {
  memset(ln, 0, sizeof(*ln));
  ln->start = (uintptr_t)mi_prof_hex(&p, end);
  if (p >= end || *p != '-') return false;
  p++;
  ln->limit = (uintptr_t)mi_prof_hex(&p, end);
  if (p >= end || *p != ' ') return false;
  p++;
  if (end - p < 4) return false;
  ln->exec = (p[2] == 'x');
  p = mi_prof_skip_field(p, end);
  ln->offset = mi_prof_hex(&p, end);
  p = mi_prof_skip_field(p, end); /* to dev */
  p = mi_prof_skip_field(p, end); /* to inode */
  p = mi_prof_skip_field(p, end); /* to the path, if any */
  ln->path = p;
  ln->path_len = (size_t)(end - p);
  return true;
}

/* dl_iterate_phdr: the main program's code, and each object's build id
   given to the mappings of its executable segments. */
typedef struct mi_prof_phdr_walk_s {
  mi_prof_mapping_t* maps;
  size_t count;
  uintptr_t main_code; /* an address in the main program's code */
  bool first;
} mi_prof_phdr_walk_t;

/* The NT_GNU_BUILD_ID note of a loaded object; its length, 0 if none (or
   longer than the mapping's field holds). */
static size_t mi_prof_build_id(const struct dl_phdr_info* info, uint8_t id[20]) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const uint8_t* p = (const uint8_t*)(info->dlpi_addr + ph->p_vaddr);
    size_t left = ph->p_memsz;
    while (left >= sizeof(ElfW(Nhdr))) {
      ElfW(Nhdr) nh;
      memcpy(&nh, p, sizeof(nh));
      size_t name_sz = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
      size_t desc_sz = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
      size_t total = sizeof(nh) + name_sz + desc_sz;
      if (total > left) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(p + sizeof(nh), "GNU", 4) == 0) {
        if (nh.n_descsz == 0 || nh.n_descsz > 20) return 0;
        memcpy(id, p + sizeof(nh) + name_sz, nh.n_descsz);
        return nh.n_descsz;
      }
      p += total;
      left -= total;
    }
  }
  return 0;
}

static int mi_prof_phdr_visit(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  mi_prof_phdr_walk_t* walk = (mi_prof_phdr_walk_t*)arg;
  uint8_t id[20];
  size_t id_len = mi_prof_build_id(info, id);
  uintptr_t page = (uintptr_t)_mi_os_page_size();
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X) == 0) continue;
    uintptr_t lo = (uintptr_t)(info->dlpi_addr + ph->p_vaddr);
    uintptr_t hi = lo + (uintptr_t)ph->p_memsz;
    if (walk->first && walk->main_code == 0) walk->main_code = lo; /* the first object is the program */
    for (size_t k = 0; k < walk->count && id_len > 0; k++) {
      mi_prof_mapping_t* m = &walk->maps[k];
      if (m->start >= (lo & ~(page - 1)) && m->start < hi) {
        memcpy(m->build_id, id, id_len);
        m->build_id_len = id_len;
      }
    }
  }
  walk->first = false;
  return 0;
}

bool _mi_prof_mappings(mi_prof_mapping_t** maps, size_t* count) {
  *maps = NULL;
  *count = 0;
  mi_prof_buf_t text = {0};
  if (!mi_prof_read_file("/proc/self/maps", &text)) {
    bool failed = text.failed;
    _mi_prof_buf_free(&text);
    return !failed; /* no /proc: no mappings, but not out of memory */
  }
  if (text.len == 0) { /* nothing mapped is not possible, but then nothing to say */
    _mi_prof_buf_free(&text);
    return true;
  }
  /* first pass: how many executable mappings, and their paths' bytes */
  size_t n = 0, path_bytes = 0;
  const char* end = text.data + text.len;
  for (const char* p = text.data; p < end;) {
    const char* eol = (const char*)memchr(p, '\n', (size_t)(end - p));
    if (eol == NULL) eol = end;
    mi_prof_maps_line_t ln;
    if (mi_prof_maps_parse(p, eol, &ln) && ln.exec) {
      n++;
      path_bytes += ln.path_len + 1;
    }
    p = eol + 1;
  }
  char* paths = NULL;
  mi_prof_mapping_t* m = (n == 0 ? NULL : _mi_prof_maps_alloc(n, path_bytes, &paths));
  if (n > 0 && m == NULL) {
    _mi_prof_buf_free(&text);
    return false;
  }
  size_t k = 0;
  for (const char* p = text.data; p < end && k < n;) {
    const char* eol = (const char*)memchr(p, '\n', (size_t)(end - p));
    if (eol == NULL) eol = end;
    mi_prof_maps_line_t ln;
    if (mi_prof_maps_parse(p, eol, &ln) && ln.exec) {
      m[k].start = ln.start;
      m[k].limit = ln.limit;
      m[k].file_offset = ln.offset;
      memcpy(paths, ln.path, ln.path_len);
      paths[ln.path_len] = 0;
      m[k].path = paths;
      paths += ln.path_len + 1;
      k++;
    }
    p = eol + 1;
  }
  _mi_prof_buf_free(&text);
  mi_prof_phdr_walk_t walk = {m, n, 0, true};
  dl_iterate_phdr(&mi_prof_phdr_visit, &walk);
  _mi_prof_maps_main_first(m, n, walk.main_code);
  *maps = m;
  *count = n;
  return true;
}

bool _mi_prof_maps_text(mi_prof_buf_t* out) {
  _mi_prof_buf_str(out, "MAPPED_LIBRARIES:\n");
  /* verbatim, as gperftools writes it: clients keep the lines with 'x' */
  if (!mi_prof_read_file("/proc/self/maps", out)) return false;
  return !out->failed;
}

#elif !defined(_WIN32) /* neither: no modules known */

bool _mi_prof_mappings(mi_prof_mapping_t** maps, size_t* count) {
  *maps = NULL;
  *count = 0;
  return true;
}

bool _mi_prof_maps_text(mi_prof_buf_t* out) {
  _mi_prof_buf_str(out, "MAPPED_LIBRARIES:\n");
  return !out->failed;
}

#endif

#endif
