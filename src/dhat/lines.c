/* Source lines for the dump: a reader of DWARF line tables (.debug_line,
   versions 2 to 5), so that symbolising needs only the one section it uses.
   libdw, which this replaces where it can, opens the whole of an object's
   debug information, and with separate debug files (Debian's libc6-dbg)
   that means inflating every compressed debug section of the C library,
   about 0.07 s at each dump, for the few frames that lie in it. This reader
   inflates .debug_line and the string sections its file names point into,
   indexes the line programs' address ranges once per object, and keeps the
   rows of the last program it ran: the dump asks in address order, so each
   program is run once for all the addresses in it.

   Where the line table is not one this reads (an unknown form or version,
   compression other than zlib, no zlib), the caller falls back to libdw for
   that object; also where no debug file is found here and DEBUGINFOD_URLS is
   set (libdw asks the server). All memory is from the OS. */
#include "dhat.h"

#if MI_DHAT || MI_PPROF

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

typedef struct mi_dhat_sect_s {
  const uint8_t* data;
  size_t size;
  void* owned; /* inflated copy (OS memory) */
  size_t owned_size;
} mi_dhat_sect_t;

/* A sequence of a line program: the addresses [lo, hi) and the unit's offset. */
typedef struct mi_dhat_seq_s {
  uint64_t lo, hi;
  size_t unit;
} mi_dhat_seq_t;

/* A row of a decoded line program. */
typedef struct mi_dhat_row_s {
  uint64_t addr;
  uint64_t file;
  int64_t line;
  bool end_seq;
} mi_dhat_row_t;

struct mi_dhat_lines_s {
  void* map; /* the separate debug file (NULL: the sections lie in the object's) */
  size_t map_size;
  mi_dhat_sect_t line, line_str, str;
  /* the string sections are inflated when a file name is first read from
     them: most of .debug_str is the names of other debug entries */
  const void* dmap;
  const ElfW(Shdr) * line_str_sh, *str_sh;
  mi_dhat_seq_t* seqs;
  size_t seq_count, seq_cap;
  /* The rows of the last unit looked up: the dump asks for addresses in
     increasing order, so the addresses of one unit come one after the
     other, and its program is run once for all of them. */
  mi_dhat_row_t* rows;
  size_t row_count, row_cap;
  size_t rows_unit; /* its offset + 1; 0: none */
};

/* ---- zlib, loaded on first need (libdw needs it too, so it is there) ------------ */

typedef int (*mi_uncompress_fn)(uint8_t*, unsigned long*, const uint8_t*, unsigned long);
typedef unsigned long (*mi_crc32_fn)(unsigned long, const uint8_t*, unsigned int);
static mi_uncompress_fn mi_z_uncompress;
static mi_crc32_fn mi_z_crc32;
static bool mi_z_tried;

static bool mi_dhat_zlib(void) {
  if (!mi_z_tried) {
    mi_z_tried = true;
    void* h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) {
      *(void**)&mi_z_uncompress = dlsym(h, "uncompress");
      *(void**)&mi_z_crc32 = dlsym(h, "crc32");
    }
  }
  return (mi_z_uncompress != NULL && mi_z_crc32 != NULL);
}

/* ---- ELF sections --------------------------------------------------------------- */

static const ElfW(Shdr) * mi_dhat_elf_section(const void* map, size_t size, const char* name) {
  const uint8_t* base = (const uint8_t*)map;
  if (map == NULL || size < sizeof(ElfW(Ehdr))) return NULL;
  const ElfW(Ehdr)* eh = (const ElfW(Ehdr)*)base;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr))) return NULL;
  if (eh->e_shoff == 0 || eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > size) return NULL;
  if (eh->e_shstrndx >= eh->e_shnum) return NULL;
  const ElfW(Shdr)* sh = (const ElfW(Shdr)*)(base + eh->e_shoff);
  const ElfW(Shdr)* names = &sh[eh->e_shstrndx];
  if (names->sh_offset + names->sh_size > size) return NULL;
  size_t len = strlen(name) + 1;
  for (size_t i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type == SHT_NOBITS || sh[i].sh_name + len > names->sh_size) continue;
    if (memcmp(base + names->sh_offset + sh[i].sh_name, name, len) != 0) continue;
    if (sh[i].sh_offset + sh[i].sh_size > size) return NULL;
    return &sh[i];
  }
  return NULL;
}

/* A section's bytes, inflated if compressed; false if it cannot be read. */
static bool mi_dhat_sect_read(const void* map, const ElfW(Shdr) * sh, mi_dhat_sect_t* out) {
  const uint8_t* raw = (const uint8_t*)map + sh->sh_offset;
  if ((sh->sh_flags & SHF_COMPRESSED) == 0) {
    out->data = raw;
    out->size = sh->sh_size;
    return true;
  }
  if (sh->sh_size < sizeof(ElfW(Chdr)) || !mi_dhat_zlib()) return false;
  ElfW(Chdr) ch;
  memcpy(&ch, raw, sizeof(ch));
  if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size == 0) return false;
  uint8_t* buf = (uint8_t*)_mi_dhat_os_alloc(ch.ch_size);
  if (buf == NULL) return false;
  unsigned long len = (unsigned long)ch.ch_size;
  if (mi_z_uncompress(buf, &len, raw + sizeof(ch), (unsigned long)(sh->sh_size - sizeof(ch))) != 0 ||
      len != ch.ch_size) {
    _mi_dhat_os_free(buf, ch.ch_size);
    return false;
  }
  out->data = buf;
  out->size = ch.ch_size;
  out->owned = buf;
  out->owned_size = ch.ch_size;
  return true;
}

static void mi_dhat_sect_free(mi_dhat_sect_t* s) {
  _mi_dhat_os_free(s->owned, s->owned_size);
  memset(s, 0, sizeof(*s));
}

/* ---- Finding the debug file --------------------------------------------------- */

static void mi_dhat_path_add(char* buf, size_t size, size_t* len, const char* s, size_t n) {
  while (n > 0 && *s != 0 && *len + 1 < size) {
    buf[(*len)++] = *s++;
    n--;
  }
  buf[*len] = 0;
}

/* The object's build id as a path in /usr/lib/debug/.build-id. */
static bool mi_dhat_build_id_path(const void* map, size_t size, char* buf, size_t bufsize) {
  const ElfW(Shdr)* sh = mi_dhat_elf_section(map, size, ".note.gnu.build-id");
  if (sh == NULL || sh->sh_type != SHT_NOTE || sh->sh_size < sizeof(ElfW(Nhdr))) return false;
  const uint8_t* p = (const uint8_t*)map + sh->sh_offset;
  ElfW(Nhdr) nh;
  memcpy(&nh, p, sizeof(nh));
  size_t desc = sizeof(nh) + ((nh.n_namesz + 3) & ~(size_t)3);
  if (nh.n_type != NT_GNU_BUILD_ID || nh.n_descsz < 2 || desc + nh.n_descsz > sh->sh_size) return false;
  size_t len = 0;
  mi_dhat_path_add(buf, bufsize, &len, "/usr/lib/debug/.build-id/", SIZE_MAX);
  for (size_t i = 0; i < nh.n_descsz; i++) {
    char hex[3] = {"0123456789abcdef"[p[desc + i] >> 4], "0123456789abcdef"[p[desc + i] & 15], 0};
    mi_dhat_path_add(buf, bufsize, &len, hex, 2);
    if (i == 0) mi_dhat_path_add(buf, bufsize, &len, "/", 1);
  }
  mi_dhat_path_add(buf, bufsize, &len, ".debug", SIZE_MAX);
  return (len + 1 < bufsize);
}

/* Map `path` if it is an ELF file with a line table (and, when `crc` is
   given, the .gnu_debuglink checksum `*crc`). */
static bool mi_dhat_debug_file_map(const char* path, const uint32_t* crc, void** map, size_t* size) {
  if (mi_prim_file_map(path, map, size) != 0) return false;
  bool ok = (mi_dhat_elf_section(*map, *size, ".debug_line") != NULL);
  if (ok && crc != NULL) {
    unsigned long c = 0;
    const uint8_t* p = (const uint8_t*)*map;
    for (size_t done = 0; done < *size;) {
      unsigned int n = (unsigned int)(*size - done > (1u << 30) ? (1u << 30) : *size - done);
      c = mi_z_crc32(c, p + done, n);
      done += n;
    }
    ok = ((uint32_t)c == *crc);
  }
  if (!ok) mi_prim_file_unmap(*map, *size);
  return ok;
}

/* The separate debug file of the object at `path`: by build id, else by
   .gnu_debuglink (checksum checked) next to it, in its .debug directory, or
   under /usr/lib/debug, where gdb and libdw look. */
static bool mi_dhat_debug_file(const void* map, size_t size, const char* path, void** dmap, size_t* dsize) {
  char buf[512];
  if (mi_dhat_build_id_path(map, size, buf, sizeof(buf)) && mi_dhat_debug_file_map(buf, NULL, dmap, dsize)) {
    return true;
  }
  const ElfW(Shdr)* sh = mi_dhat_elf_section(map, size, ".gnu_debuglink");
  if (sh == NULL || sh->sh_size < 8 || !mi_dhat_zlib()) return false;
  const char* name = (const char*)map + sh->sh_offset;
  size_t name_len = strnlen(name, sh->sh_size);
  size_t crc_at = (name_len + 4) & ~(size_t)3;
  if (name_len == 0 || crc_at + 4 > sh->sh_size) return false;
  uint32_t crc;
  memcpy(&crc, (const uint8_t*)map + sh->sh_offset + crc_at, 4);
  const char* slash = strrchr(path, '/');
  size_t dir_len = (slash == NULL ? 0 : (size_t)(slash - path));
  static const char* const ways[3][2] = {{"", "/"}, {"", "/.debug/"}, {"/usr/lib/debug", "/"}};
  for (int w = 0; w < 3; w++) {
    size_t len = 0;
    mi_dhat_path_add(buf, sizeof(buf), &len, ways[w][0], SIZE_MAX);
    mi_dhat_path_add(buf, sizeof(buf), &len, path, dir_len);
    mi_dhat_path_add(buf, sizeof(buf), &len, ways[w][1], SIZE_MAX);
    mi_dhat_path_add(buf, sizeof(buf), &len, name, name_len);
    if (len + 1 < sizeof(buf) && strcmp(buf, path) != 0 && mi_dhat_debug_file_map(buf, &crc, dmap, dsize)) return true;
  }
  return false;
}

/* ---- Reading DWARF ---------------------------------------------------------------- */

typedef struct mi_dhat_cur_s {
  const uint8_t* p;
  const uint8_t* end;
  bool bad;
} mi_dhat_cur_t;

static uint64_t mi_dhat_fixed(mi_dhat_cur_t* c, size_t n) {
  if (c->bad || (size_t)(c->end - c->p) < n) {
    c->bad = true;
    return 0;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)c->p[i] << (8 * i); /* little-endian hosts only (x86-64, arm64) */
  c->p += n;
  return v;
}

static void mi_dhat_skip(mi_dhat_cur_t* c, uint64_t n) {
  if (c->bad || n > (uint64_t)(c->end - c->p)) c->bad = true;
  else c->p += n;
}

static uint64_t mi_dhat_uleb(mi_dhat_cur_t* c) {
  uint64_t v = 0;
  for (int shift = 0; !c->bad; shift += 7) {
    if (c->p >= c->end || shift > 63) {
      c->bad = true;
      break;
    }
    uint8_t b = *c->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) break;
  }
  return v;
}

static int64_t mi_dhat_sleb(mi_dhat_cur_t* c) {
  int64_t v = 0;
  int shift = 0;
  uint8_t b = 0;
  do {
    if (c->bad || c->p >= c->end || shift > 63) {
      c->bad = true;
      return 0;
    }
    b = *c->p++;
    v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
    shift += 7;
  } while ((b & 0x80) != 0);
  if (shift < 64 && (b & 0x40) != 0) v |= -(int64_t)((uint64_t)1 << shift);
  return v;
}

static const char* mi_dhat_cstr(mi_dhat_cur_t* c) {
  const uint8_t* s = c->p;
  while (c->p < c->end && *c->p != 0) c->p++;
  if (c->p >= c->end) {
    c->bad = true;
    return NULL;
  }
  c->p++;
  return (const char*)s;
}

static const char* mi_dhat_str_at(const mi_dhat_sect_t* s, uint64_t off) {
  if (s->data == NULL || off >= s->size || memchr(s->data + off, 0, s->size - off) == NULL) return NULL;
  return (const char*)s->data + off;
}

/* A line program unit's header, as far as it is used. */
typedef struct mi_dhat_unit_s {
  int version;
  size_t offset_size;
  uint8_t min_len, line_range, opcode_base;
  int8_t line_base;
  const uint8_t* opcode_lengths;
  const uint8_t* tables; /* the directory and file tables */
  const uint8_t* program;
  const uint8_t* end;
} mi_dhat_unit_t;

/* A string section, inflated on first use (`*sh` NULL: read or absent). */
static const mi_dhat_sect_t* mi_dhat_strs(mi_dhat_lines_t* L, mi_dhat_sect_t* sect, const ElfW(Shdr) * *sh) {
  if (*sh != NULL && !mi_dhat_sect_read(L->dmap, *sh, sect)) memset(sect, 0, sizeof(*sect));
  *sh = NULL;
  return sect;
}

/* DWARF 5 entry formats: skip a value of `form`, or read a string of it
   (with `str` NULL, only skip). False for a form that has no place in a line
   table header. */
static bool mi_dhat_form(mi_dhat_lines_t* L, const mi_dhat_unit_t* u, mi_dhat_cur_t* c, uint64_t form,
                         const char** str) {
  if (str == NULL && (form == 0x1f || form == 0x0e)) {
    mi_dhat_skip(c, u->offset_size); /* line_strp, strp */
    return true;
  }
  switch (form) {
    case 0x08: {
      const char* s = mi_dhat_cstr(c);
      if (str != NULL) *str = s;
      return true;
    } /* string */
    case 0x1f:
      *str = mi_dhat_str_at(mi_dhat_strs(L, &L->line_str, &L->line_str_sh), mi_dhat_fixed(c, u->offset_size));
      return true; /* line_strp */
    case 0x0e:
      *str = mi_dhat_str_at(mi_dhat_strs(L, &L->str, &L->str_sh), mi_dhat_fixed(c, u->offset_size));
      return true;                                            /* strp */
    case 0x0b: (void)mi_dhat_fixed(c, 1); return true;        /* data1 */
    case 0x05: (void)mi_dhat_fixed(c, 2); return true;        /* data2 */
    case 0x06: (void)mi_dhat_fixed(c, 4); return true;        /* data4 */
    case 0x07: (void)mi_dhat_fixed(c, 8); return true;        /* data8 */
    case 0x1e: mi_dhat_skip(c, 16); return true;              /* data16 */
    case 0x0f: (void)mi_dhat_uleb(c); return true;            /* udata */
    case 0x09: mi_dhat_skip(c, mi_dhat_uleb(c)); return true; /* block */
    default: return false;
  }
}

static bool mi_dhat_unit_parse(const mi_dhat_sect_t* line, size_t off, mi_dhat_unit_t* u, size_t* next) {
  mi_dhat_cur_t c = {line->data + off, line->data + line->size, false};
  memset(u, 0, sizeof(*u));
  uint64_t len = mi_dhat_fixed(&c, 4);
  u->offset_size = 4;
  if (len == 0xffffffff) {
    len = mi_dhat_fixed(&c, 8);
    u->offset_size = 8;
  }
  if (c.bad || len > (uint64_t)(c.end - c.p)) return false;
  u->end = c.p + len;
  c.end = u->end;
  *next = (size_t)(u->end - line->data);
  u->version = (int)mi_dhat_fixed(&c, 2);
  if (u->version < 2 || u->version > 5) return false;
  if (u->version >= 5) {
    if (mi_dhat_fixed(&c, 1) != sizeof(uintptr_t)) return false; /* address size */
    (void)mi_dhat_fixed(&c, 1);
  }
  uint64_t header_len = mi_dhat_fixed(&c, u->offset_size);
  if (c.bad || header_len > (uint64_t)(c.end - c.p)) return false;
  u->program = c.p + header_len;
  u->min_len = (uint8_t)mi_dhat_fixed(&c, 1);
  if (u->version >= 4 && mi_dhat_fixed(&c, 1) != 1) return false; /* VLIW operations: not on our targets */
  (void)mi_dhat_fixed(&c, 1);                                     /* default_is_stmt: all rows count */
  u->line_base = (int8_t)mi_dhat_fixed(&c, 1);
  u->line_range = (uint8_t)mi_dhat_fixed(&c, 1);
  u->opcode_base = (uint8_t)mi_dhat_fixed(&c, 1);
  if (c.bad || u->line_range == 0 || u->opcode_base == 0 || (size_t)(c.end - c.p) < u->opcode_base - 1u) return false;
  u->opcode_lengths = c.p;
  u->tables = c.p + u->opcode_base - 1;
  return (u->tables <= u->program);
}

/* Walks a DWARF 5 unit's directory and file tables. With `path`, stops at
   file `index` and reads its name (which may inflate a string section: only
   that entry's strings are read); without, only checks that every entry can
   be skipped. False if an entry cannot be read, or `index` is not there. */
static bool mi_dhat_v5_files(mi_dhat_lines_t* L, const mi_dhat_unit_t* u, uint64_t index, const char** path) {
  mi_dhat_cur_t c = {u->tables, u->program, false};
  for (int table = 0; table < 2 && !c.bad; table++) {
    uint64_t formats[2 * 16] = {0};
    uint64_t nformats = mi_dhat_fixed(&c, 1);
    if (nformats > 16) return false;
    for (uint64_t f = 0; f < 2 * nformats; f++) formats[f] = mi_dhat_uleb(&c);
    uint64_t count = mi_dhat_uleb(&c);
    for (uint64_t i = 0; i < count && !c.bad; i++) {
      bool wanted = (path != NULL && table == 1 && i == index);
      const char* name = NULL;
      for (uint64_t f = 0; f < nformats; f++) {
        const char* s = NULL;
        if (!mi_dhat_form(L, u, &c, formats[2 * f + 1], wanted ? &s : NULL)) return false;
        if (formats[2 * f] == 1) name = s; /* DW_LNCT_path */
      }
      if (wanted) {
        *path = name;
        return !c.bad;
      }
    }
  }
  return (!c.bad && path == NULL);
}

/* The name of file `index` of a unit (NULL if there is none). */
static const char* mi_dhat_unit_file(mi_dhat_lines_t* L, const mi_dhat_unit_t* u, uint64_t index) {
  if (u->version >= 5) {
    const char* path = NULL;
    return (mi_dhat_v5_files(L, u, index, &path) ? path : NULL);
  }
  mi_dhat_cur_t c = {u->tables, u->program, false};
  while (!c.bad && c.p < c.end && *c.p != 0) (void)mi_dhat_cstr(&c); /* directories */
  c.p++;
  for (uint64_t i = 1; !c.bad && c.p < c.end && *c.p != 0; i++) {
    const char* name = mi_dhat_cstr(&c);
    (void)mi_dhat_uleb(&c);
    (void)mi_dhat_uleb(&c);
    (void)mi_dhat_uleb(&c);
    if (i == index) return (c.bad ? NULL : name);
  }
  return NULL;
}

/* Whether every file entry of a unit can be read (checked once, when the
   object is indexed, so that a lookup never meets a form it cannot skip). */
static bool mi_dhat_unit_files_ok(mi_dhat_lines_t* L, const mi_dhat_unit_t* u) {
  return (u->version < 5 || mi_dhat_v5_files(L, u, 0, NULL));
}

/* Runs a unit's line program: indexing (`decode` false), each sequence's
   range is added to L; decoding, its rows are kept in L->rows. */
static bool mi_dhat_unit_run(mi_dhat_lines_t* L, const mi_dhat_unit_t* u, size_t unit_off, bool decode) {
  mi_dhat_cur_t c = {u->program, u->end, false};
  uint64_t addr = 0, f = 1, seq_lo = 0;
  int64_t ln = 1;
  bool in_seq = false;
  while (c.p < c.end && !c.bad) {
    uint8_t op = *c.p++;
    bool row = false, end_seq = false;
    if (op >= u->opcode_base) {
      uint8_t adj = (uint8_t)(op - u->opcode_base);
      addr += (uint64_t)u->min_len * (adj / u->line_range);
      ln += u->line_base + (int64_t)(adj % u->line_range);
      row = true;
    } else if (op == 0) {
      uint64_t len = mi_dhat_uleb(&c);
      if (c.bad || len == 0 || len > (uint64_t)(c.end - c.p)) return false;
      const uint8_t* after = c.p + len;
      uint8_t sub = *c.p++;
      if (sub == 1) {
        row = end_seq = true;
      } else if (sub == 2 && len - 1 <= sizeof(uint64_t)) {
        addr = mi_dhat_fixed(&c, (size_t)(len - 1));
      }
      c.p = after; /* define_file, set_discriminator and vendor opcodes: skipped */
    } else {
      switch (op) {
        case 1: row = true; break;                                                               /* copy */
        case 2: addr += (uint64_t)u->min_len * mi_dhat_uleb(&c); break;                          /* advance_pc */
        case 3: ln += mi_dhat_sleb(&c); break;                                                   /* advance_line */
        case 4: f = mi_dhat_uleb(&c); break;                                                     /* set_file */
        case 8: addr += (uint64_t)u->min_len * ((255u - u->opcode_base) / u->line_range); break; /* const_add_pc */
        case 9: addr += mi_dhat_fixed(&c, 2); break;                                             /* fixed_advance_pc */
        default:
          for (uint8_t k = 0; k < u->opcode_lengths[op - 1]; k++) (void)mi_dhat_uleb(&c);
          break;
      }
    }
    if (!row) continue;
    if (decode) {
      if (!_mi_dhat_grow((void**)&L->rows, &L->row_cap, sizeof(mi_dhat_row_t), L->row_count + 1)) return false;
      L->rows[L->row_count++] = (mi_dhat_row_t){addr, f, ln, end_seq};
    } else {
      if (!in_seq) seq_lo = addr;
      in_seq = !end_seq;
      if (end_seq && addr > seq_lo) {
        if (!_mi_dhat_grow((void**)&L->seqs, &L->seq_cap, sizeof(mi_dhat_seq_t), L->seq_count + 1)) return false;
        L->seqs[L->seq_count++] = (mi_dhat_seq_t){seq_lo, addr, unit_off};
      }
    }
    if (end_seq) {
      addr = 0;
      f = 1;
      ln = 1;
    }
  }
  return !c.bad;
}

/* The row covering `pc` in the decoded unit: in the sequence that holds it,
   the last row at or below it (as libdw picks it). */
static const mi_dhat_row_t* mi_dhat_rows_find(const mi_dhat_lines_t* L, uint64_t pc) {
  size_t first = 0;
  for (size_t k = 0; k < L->row_count; k++) {
    if (!L->rows[k].end_seq) continue;
    if (L->rows[first].addr <= pc && pc < L->rows[k].addr) {
      size_t lo = first, hi = k; /* the first row above pc: rows climb within a sequence */
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (L->rows[mid].addr <= pc) lo = mid + 1;
        else hi = mid;
      }
      return &L->rows[lo - 1];
    }
    first = k + 1;
  }
  return NULL;
}

/* ---- The interface ---------------------------------------------------------------- */

void _mi_dhat_lines_close(mi_dhat_lines_t* L) {
  if (L == NULL) return;
  mi_dhat_sect_free(&L->line);
  mi_dhat_sect_free(&L->line_str);
  mi_dhat_sect_free(&L->str);
  _mi_dhat_os_free(L->seqs, L->seq_cap * sizeof(mi_dhat_seq_t));
  _mi_dhat_os_free(L->rows, L->row_cap * sizeof(mi_dhat_row_t));
  if (L->map != NULL) mi_prim_file_unmap(L->map, L->map_size);
  _mi_dhat_os_free(L, sizeof(*L));
}

/* Sorts the sequences by start (heap sort: no allocation, no recursion). */
static void mi_dhat_seqs_sort(mi_dhat_seq_t* a, size_t n) {
  for (size_t k = n; k-- > 0;) {
    for (size_t i = k;;) { /* sift down */
      size_t j = 2 * i + 1;
      if (j >= n) break;
      if (j + 1 < n && a[j + 1].lo > a[j].lo) j++;
      if (a[j].lo <= a[i].lo) break;
      mi_dhat_seq_t t = a[i];
      a[i] = a[j];
      a[j] = t;
      i = j;
    }
  }
  for (size_t end = n; end-- > 1;) {
    mi_dhat_seq_t t = a[0];
    a[0] = a[end];
    a[end] = t;
    for (size_t i = 0;;) {
      size_t j = 2 * i + 1;
      if (j >= end) break;
      if (j + 1 < end && a[j + 1].lo > a[j].lo) j++;
      if (a[j].lo <= a[i].lo) break;
      t = a[i];
      a[i] = a[j];
      a[j] = t;
      i = j;
    }
  }
}

mi_dhat_lines_t* _mi_dhat_lines_open(const void* map, size_t size, const char* path, bool* unread) {
  *unread = false;
  if (map == NULL) {
    *unread = true;
    return NULL;
  }
  mi_dhat_lines_t* L = (mi_dhat_lines_t*)_mi_dhat_os_alloc(sizeof(mi_dhat_lines_t));
  if (L == NULL) return NULL;
  const void* dmap = map;
  size_t dsize = size;
  if (mi_dhat_elf_section(map, size, ".debug_line") == NULL) {
    if (!mi_dhat_debug_file(map, size, path, &L->map, &L->map_size)) {
      /* none here: where libdw could ask a debuginfod server, let it */
      char env[8];
      *unread = mi_prim_getenv("DEBUGINFOD_URLS", env, sizeof(env)) && env[0] != 0;
      _mi_dhat_lines_close(L);
      return NULL;
    }
    dmap = L->map;
    dsize = L->map_size;
  }
  const ElfW(Shdr)* line = mi_dhat_elf_section(dmap, dsize, ".debug_line");
  L->dmap = dmap;
  L->line_str_sh = mi_dhat_elf_section(dmap, dsize, ".debug_line_str");
  L->str_sh = mi_dhat_elf_section(dmap, dsize, ".debug_str");
  bool ok = (line != NULL && mi_dhat_sect_read(dmap, line, &L->line));
  for (size_t off = 0; ok && off < L->line.size;) {
    mi_dhat_unit_t u;
    size_t next = 0;
    ok = mi_dhat_unit_parse(&L->line, off, &u, &next) && mi_dhat_unit_files_ok(L, &u) &&
         mi_dhat_unit_run(L, &u, off, false);
    off = next;
  }
  if (!ok) {
    *unread = true; /* not a table this reads: libdw may */
    _mi_dhat_lines_close(L);
    return NULL;
  }
  mi_dhat_seqs_sort(L->seqs, L->seq_count);
  return L;
}

bool _mi_dhat_lines_find(mi_dhat_lines_t* L, uintptr_t addr, const char** file, int* line) {
  if (L == NULL || addr == 0) return false;
  size_t lo = 0, hi = L->seq_count;
  while (lo < hi) { /* the first sequence starting above addr */
    size_t mid = (lo + hi) / 2;
    if (L->seqs[mid].lo <= addr) lo = mid + 1;
    else hi = mid;
  }
  /* the one before it holds addr, or one before that where ranges overlap */
  for (size_t i = lo; i-- > 0 && lo - i <= 4;) {
    const mi_dhat_seq_t* s = &L->seqs[i];
    if (addr >= s->hi) continue;
    mi_dhat_unit_t u;
    size_t next;
    if (!mi_dhat_unit_parse(&L->line, s->unit, &u, &next)) continue;
    if (L->rows_unit != s->unit + 1) {
      L->row_count = 0;
      L->rows_unit = 0;
      if (!mi_dhat_unit_run(L, &u, s->unit, true)) continue;
      L->rows_unit = s->unit + 1;
    }
    const mi_dhat_row_t* r = mi_dhat_rows_find(L, addr);
    if (r == NULL) continue;
    const char* name = mi_dhat_unit_file(L, &u, r->file);
    int64_t ln = r->line;
    if (name == NULL || ln <= 0 || ln > INT32_MAX) return false;
    const char* slash = strrchr(name, '/');
    *file = (slash != NULL ? slash + 1 : name);
    *line = (int)ln;
    return true;
  }
  return false;
}

#endif
