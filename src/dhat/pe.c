/* PE images for the profilers on Windows, where the modules are PE files
   rather than ELF objects: the module holding an address (the loader,
   GetModuleHandleExW), its size (the image's own headers), its file's path
   as UTF-8, its exports (the image's export directory) and the function
   symbols of its file's COFF symbol table (MinGW's linker keeps one unless
   told -s; the file is mapped read-only through the primitives and the
   names copied out). The ELF counterparts are symbolize.c and stack.c.

   Calling the loader here, outside src/prim, is the exception the
   profilers make on Linux too (docs/architecture.md). All memory is the
   OS's; nothing here allocates from the heap. */
#include "dhat.h"

#if (MI_DHAT || MI_PPROF) && defined(_WIN32)

#include "win-api.h"

/* ---- Little-endian reads from a file or image, bounds checked by the callers ---- */

static uint16_t mi_pe_u16(const uint8_t* p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t mi_pe_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* The offset of the PE signature ("PE\0\0") in an image or file of `size`
   bytes (SIZE_MAX: unknown, a loaded image); 0 if it is not a PE. */
static size_t mi_pe_nt_offset(const uint8_t* base, size_t size) {
  if (size < 0x40 || base[0] != 'M' || base[1] != 'Z') return 0;
  size_t nt = mi_pe_u32(base + 0x3c);
  if (nt < 0x40 || nt > 0x10000000 || (size != SIZE_MAX && nt + 24 > size)) return 0;
  if (memcmp(base + nt, "PE\0\0", 4) != 0) return 0;
  return nt;
}

/* ---- The module of an address, its size and path ----------------------------------- */

uintptr_t _mi_pe_module_of(uintptr_t addr) {
  HMODULE mod = NULL;
  if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                          (LPCWSTR)addr, &mod)) {
    return 0;
  }
  return (uintptr_t)mod;
}

size_t _mi_pe_image_size(uintptr_t base) {
  if (base == 0) return 0;
  const uint8_t* image = (const uint8_t*)base;
  size_t nt = mi_pe_nt_offset(image, SIZE_MAX);
  if (nt == 0) return 0;
  /* the optional header follows the 20-byte file header; SizeOfImage is at 56 in both formats */
  uint16_t opt_size = mi_pe_u16(image + nt + 4 + 16);
  if (opt_size < 60) return 0;
  return mi_pe_u32(image + nt + 24 + 56);
}

bool _mi_pe_module_path(uintptr_t base, char* buf, size_t size, bool no_spaces) {
  if (size == 0) return false;
  buf[0] = 0;
  WCHAR wpath[1024];
  DWORD n = GetModuleFileNameW((HMODULE)base, wpath, (DWORD)(sizeof(wpath) / sizeof(wpath[0])));
  if (n == 0 || n >= sizeof(wpath) / sizeof(wpath[0])) return false;
  wpath[n] = 0;
  bool space = false;
  for (DWORD i = 0; i < n; i++) space = space || (wpath[i] == L' ');
  if (no_spaces && space) {
    WCHAR wshort[1024];
    DWORD m = GetShortPathNameW(wpath, wshort, (DWORD)(sizeof(wshort) / sizeof(wshort[0])));
    if (m > 0 && m < sizeof(wshort) / sizeof(wshort[0])) memcpy(wpath, wshort, (m + 1) * sizeof(WCHAR));
  }
  int len = WideCharToMultiByte(CP_UTF8, 0, wpath, -1, buf, (int)(size > INT32_MAX ? INT32_MAX : size), NULL, NULL);
  if (len <= 0) {
    buf[0] = 0;
    return false;
  }
  return true;
}

/* ---- Exports ------------------------------------------------------------------------- */

/* The start of the function holding `pc`, by the unwind table (x64); 0 if none. */
static uintptr_t mi_pe_function_start(uintptr_t pc) {
#if defined(_M_X64) || defined(__x86_64__)
  DWORD64 image = 0;
  PRUNTIME_FUNCTION fn = RtlLookupFunctionEntry((DWORD64)pc, &image, NULL);
  if (fn == NULL) return 0;
  return (uintptr_t)image + fn->BeginAddress;
#else
  (void)pc;
  return 0;
#endif
}

const char* _mi_pe_export_name(uintptr_t base, uintptr_t pc) {
  uintptr_t start = mi_pe_function_start(pc);
  size_t image_size = _mi_pe_image_size(base);
  if (start < base || image_size == 0 || start >= base + image_size) return NULL;
  const uint8_t* image = (const uint8_t*)base;
  size_t nt = mi_pe_nt_offset(image, image_size);
  if (nt == 0) return NULL;
  uint16_t magic = mi_pe_u16(image + nt + 24);
  size_t dirs = nt + 24 + (magic == 0x20b ? 112 : 96); /* the data directories: export first */
  uint16_t opt_size = mi_pe_u16(image + nt + 4 + 16);
  if (dirs + 8 > nt + 24 + opt_size) return NULL;
  uint32_t exp_rva = mi_pe_u32(image + dirs);
  uint32_t exp_size = mi_pe_u32(image + dirs + 4);
  if (exp_rva == 0 || exp_size < 40 || (size_t)exp_rva + 40 > image_size) return NULL;
  const uint8_t* exp = image + exp_rva;
  uint32_t nfuncs = mi_pe_u32(exp + 20);
  uint32_t nnames = mi_pe_u32(exp + 24);
  uint32_t funcs = mi_pe_u32(exp + 28);
  uint32_t names = mi_pe_u32(exp + 32);
  uint32_t ords = mi_pe_u32(exp + 36);
  if ((size_t)funcs + 4 * (size_t)nfuncs > image_size || (size_t)names + 4 * (size_t)nnames > image_size ||
      (size_t)ords + 2 * (size_t)nnames > image_size) {
    return NULL;
  }
  uint32_t want = (uint32_t)(start - base);
  for (uint32_t i = 0; i < nnames; i++) {
    uint16_t ord = mi_pe_u16(image + ords + 2 * (size_t)i);
    if (ord >= nfuncs || mi_pe_u32(image + funcs + 4 * (size_t)ord) != want) continue;
    uint32_t name = mi_pe_u32(image + names + 4 * (size_t)i);
    return (name != 0 && name < image_size ? (const char*)(image + name) : NULL);
  }
  return NULL;
}

/* ---- The COFF symbol table of a module's file ------------------------------------------ */

#define MI_COFF_SYM_SIZE 18
#define MI_COFF_CLASS_EXTERNAL 2
#define MI_COFF_CLASS_STATIC 3
#define MI_COFF_TYPE_FUNCTION 0x20 /* DT_FCN << 4: `.type 32` in GCC's output */
#define MI_PE_SCN_CODE 0x00000020
#define MI_PE_SCN_EXECUTE 0x20000000

typedef struct mi_pe_file_s {
  const uint8_t* map;
  size_t size;
  const uint8_t* sections; /* the section headers (40 bytes each) */
  uint16_t section_count;
  const uint8_t* syms;
  uint32_t sym_count;
  const uint8_t* strs; /* the string table, its 4-byte size first */
  uint32_t strs_size;
} mi_pe_file_t;

static bool mi_pe_file_parse(mi_pe_file_t* f) {
  size_t nt = mi_pe_nt_offset(f->map, f->size);
  if (nt == 0) return false;
  const uint8_t* fh = f->map + nt + 4;
  f->section_count = mi_pe_u16(fh + 2);
  uint32_t symtab = mi_pe_u32(fh + 8);
  f->sym_count = mi_pe_u32(fh + 12);
  uint16_t opt_size = mi_pe_u16(fh + 16);
  size_t sections = nt + 24 + (size_t)opt_size;
  if (sections + 40 * (size_t)f->section_count > f->size) return false;
  f->sections = f->map + sections;
  if (symtab == 0 || f->sym_count == 0) return false; /* stripped */
  size_t strs = (size_t)symtab + (size_t)f->sym_count * MI_COFF_SYM_SIZE;
  if (strs + 4 > f->size) return false;
  f->syms = f->map + symtab;
  f->strs = f->map + strs;
  f->strs_size = mi_pe_u32(f->strs);
  if (f->strs_size < 4 || strs + f->strs_size > f->size) return false;
  return true;
}

/* The name of symbol `s`: inline (8 bytes, NUL-padded) or in the string
   table; its length in *len. NULL if it lies outside the table. */
static const char* mi_pe_sym_name(const mi_pe_file_t* f, const uint8_t* s, size_t* len) {
  if (mi_pe_u32(s) != 0) {
    size_t n = 0;
    while (n < 8 && s[n] != 0) n++;
    *len = n;
    return (const char*)s;
  }
  uint32_t off = mi_pe_u32(s + 4);
  if (off < 4 || off >= f->strs_size) return NULL;
  const char* name = (const char*)f->strs + off;
  size_t n = 0;
  while (off + n < f->strs_size && name[n] != 0) n++;
  if (off + n >= f->strs_size) return NULL; /* not terminated */
  *len = n;
  return name;
}

/* Whether symbol `s` is a function in code, and its RVA. */
static bool mi_pe_sym_function(const mi_pe_file_t* f, const uint8_t* s, uint32_t* rva) {
  int16_t section = (int16_t)mi_pe_u16(s + 12);
  uint16_t type = mi_pe_u16(s + 14);
  uint8_t cls = s[16];
  if (section <= 0 || section > f->section_count) return false;
  if (cls != MI_COFF_CLASS_EXTERNAL && cls != MI_COFF_CLASS_STATIC) return false;
  /* functions are typed so by GCC; an external symbol in code without a
     type is an assembler routine (the C runtime's) */
  if ((type & 0x30) != MI_COFF_TYPE_FUNCTION && cls != MI_COFF_CLASS_EXTERNAL) return false;
  const uint8_t* sh = f->sections + 40 * (size_t)(section - 1);
  uint32_t flags = mi_pe_u32(sh + 36);
  if ((flags & (MI_PE_SCN_CODE | MI_PE_SCN_EXECUTE)) == 0) return false;
  *rva = mi_pe_u32(sh + 12) + mi_pe_u32(s + 8);
  return true;
}

/* Heap sort by address (no recursion, no allocation). */
static void mi_pe_sift(mi_pe_fn_t* a, size_t i, size_t n) {
  for (;;) {
    size_t j = 2 * i + 1;
    if (j >= n) return;
    if (j + 1 < n && a[j + 1].rva > a[j].rva) j++;
    if (a[j].rva <= a[i].rva) return;
    mi_pe_fn_t tmp = a[i];
    a[i] = a[j];
    a[j] = tmp;
    i = j;
  }
}

static void mi_pe_sort(mi_pe_fn_t* a, size_t n) {
  for (size_t k = n / 2; k-- > 0;) mi_pe_sift(a, k, n);
  for (size_t end = n; end-- > 1;) {
    mi_pe_fn_t tmp = a[0];
    a[0] = a[end];
    a[end] = tmp;
    mi_pe_sift(a, 0, end);
  }
}

void _mi_pe_syms_free(mi_pe_syms_t* syms) {
  if (syms->fns != NULL) _mi_dhat_os_free(syms->fns, syms->fns_bytes);
  if (syms->names != NULL) _mi_dhat_os_free(syms->names, syms->names_bytes);
  memset(syms, 0, sizeof(*syms));
}

bool _mi_pe_syms_load(uintptr_t base, mi_pe_syms_t* syms) {
  memset(syms, 0, sizeof(*syms));
  syms->base = base;
  syms->image_size = _mi_pe_image_size(base);
  char path[1024];
  if (syms->image_size == 0 || !_mi_pe_module_path(base, path, sizeof(path), false)) return false;
  mi_pe_file_t f;
  memset(&f, 0, sizeof(f));
  void* map = NULL;
  if (mi_prim_file_map(path, &map, &f.size) != 0) return false;
  f.map = (const uint8_t*)map;
  bool ok = mi_pe_file_parse(&f);
  /* two passes: how many functions and how many bytes of names, then the copy */
  size_t count = 0, name_bytes = 0;
  for (uint32_t i = 0; ok && i < f.sym_count; i++) {
    const uint8_t* s = f.syms + (size_t)i * MI_COFF_SYM_SIZE;
    uint32_t rva;
    size_t len;
    const char* name = mi_pe_sym_function(&f, s, &rva) ? mi_pe_sym_name(&f, s, &len) : NULL;
    if (name != NULL && len > 0 && name[0] != '.' && rva < syms->image_size) {
      count++;
      name_bytes += len + 1;
    }
    i += s[17]; /* its auxiliary records */
  }
  ok = ok && count > 0;
  if (ok) {
    syms->fns_bytes = count * sizeof(mi_pe_fn_t);
    syms->names_bytes = name_bytes;
    syms->fns = (mi_pe_fn_t*)_mi_dhat_os_alloc(syms->fns_bytes);
    syms->names = (char*)_mi_dhat_os_alloc(syms->names_bytes);
    ok = (syms->fns != NULL && syms->names != NULL);
  }
  size_t k = 0, used = 0;
  for (uint32_t i = 0; ok && i < f.sym_count && k < count; i++) {
    const uint8_t* s = f.syms + (size_t)i * MI_COFF_SYM_SIZE;
    uint32_t rva;
    size_t len;
    const char* name = mi_pe_sym_function(&f, s, &rva) ? mi_pe_sym_name(&f, s, &len) : NULL;
    if (name != NULL && len > 0 && name[0] != '.' && rva < syms->image_size && used + len + 1 <= name_bytes) {
      syms->fns[k].rva = rva;
      syms->fns[k].name = (uint32_t)used;
      syms->fns[k].mark = (s[16] == MI_COFF_CLASS_EXTERNAL); /* (cleared below) */
      memcpy(syms->names + used, name, len);
      syms->names[used + len] = 0;
      used += len + 1;
      k++;
    }
    i += s[17];
  }
  mi_prim_file_unmap(map, f.size);
  if (!ok) {
    _mi_pe_syms_free(syms);
    return false;
  }
  mi_pe_sort(syms->fns, k);
  /* one entry per address: of aliases, an external name over a static one */
  size_t kept = 0;
  for (size_t i = 0; i < k; i++) {
    if (kept > 0 && syms->fns[kept - 1].rva == syms->fns[i].rva) {
      if (syms->fns[i].mark && !syms->fns[kept - 1].mark) syms->fns[kept - 1] = syms->fns[i];
      continue;
    }
    syms->fns[kept++] = syms->fns[i];
  }
  for (size_t i = 0; i < kept; i++) syms->fns[i].mark = 0;
  syms->count = kept;
  return true;
}

mi_pe_fn_t* _mi_pe_syms_find(const mi_pe_syms_t* syms, uintptr_t pc) {
  if (syms->count == 0 || pc < syms->base || pc >= syms->base + syms->image_size) return NULL;
  uint32_t rva = (uint32_t)(pc - syms->base);
  size_t lo = 0, hi = syms->count;
  while (lo < hi) { /* the first function starting above pc */
    size_t mid = (lo + hi) / 2;
    if (syms->fns[mid].rva <= rva) lo = mid + 1;
    else hi = mid;
  }
  return (lo == 0 ? NULL : &syms->fns[lo - 1]);
}

bool _mi_pe_syms_range(const mi_pe_syms_t* syms, const char* name, uintptr_t* lo, uintptr_t* hi) {
  for (size_t i = 0; i < syms->count; i++) {
    if (strcmp(_mi_pe_fn_name(syms, &syms->fns[i]), name) != 0) continue;
    *lo = syms->base + syms->fns[i].rva;
    /* its end: the unwind table's where it has one, else the next symbol */
#if defined(_M_X64) || defined(__x86_64__)
    DWORD64 image = 0;
    PRUNTIME_FUNCTION fn = RtlLookupFunctionEntry((DWORD64)*lo, &image, NULL);
    if (fn != NULL && (uintptr_t)image + fn->BeginAddress == *lo) {
      *hi = (uintptr_t)image + fn->EndAddress;
      return true;
    }
#endif
    *hi = (i + 1 < syms->count ? syms->base + syms->fns[i + 1].rva : *lo + 1);
    return true;
  }
  return false;
}

bool _mi_pe_allocator_name(const char* name) {
  return (strncmp(name, "mi_", 3) == 0 || strncmp(name, "_mi_", 4) == 0);
}

#endif
