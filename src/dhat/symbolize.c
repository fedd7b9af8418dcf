/* Symbolisation at dump time: a return address becomes a DHAT frame string,
   "0x4011A3: parse_line (in /usr/bin/prog)". The object comes from the
   dynamic loader (dladdr1); the function from the object's ELF symbol table
   (.symtab, which names static functions too; .dynsym where the file is
   stripped), read from the file mapped read-only, or from dladdr's nearest
   exported symbol as the last resort. Source file and line come from the
   object's DWARF line table, read by lines.c, or through elfutils' libdw
   for a table that reader cannot read (libdw is loaded with dlopen at the
   first such frame, so the library does not depend on it):
   "0x4011A3: parse_line (prog.c:42)", as Valgrind writes it.

   Runs on the dumping thread with its recursion guard up and no profiler lock
   held; the loader's lookups do not allocate. What a symbolisation reads
   (the objects' mapped files, libdw's session) is the calling thread's own,
   from its first lookup to _mi_dhat_symbolize_done: two threads dumping at
   once (the program's dump and the background thread's) never share it. */
#include "dhat.h"

#if MI_DHAT || MI_PPROF

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

typedef struct mi_dhat_object_s {
  uintptr_t bias;  /* load address minus link-time address */
  const void* map; /* the file, mapped (NULL: not readable) */
  size_t map_size;
  const ElfW(Sym) * syms;
  size_t sym_count;
  const char* strs;
  size_t strs_size;
  mi_dhat_lines_t* lines; /* its line table, read on the first address asked for */
  uint8_t lines_state;    /* 0: not read yet, 1: ours (or none), 2: libdw's */
  char path[256];
} mi_dhat_object_t;

#define MI_DHAT_OBJECTS 128

/* ---- Source lines through libdw (optional, loaded at run time) -------------
   The few libdwfl calls used, declared here so that building needs no
   elfutils headers; their ABI has been stable since elfutils 0.1xx. */
typedef struct mi_dwfl_callbacks_s {
  void* find_elf;
  void* find_debuginfo;
  void* section_address;
  char** debuginfo_path;
} mi_dwfl_callbacks_t;

typedef struct mi_dwfl_s {
  bool tried;
  void* dwfl;
  void* (*begin)(const mi_dwfl_callbacks_t*);
  int (*proc_report)(void*, int);
  int (*report_end)(void*, void*, void*);
  void* (*addrmodule)(void*, uint64_t);
  void* (*getsrc)(void*, uint64_t);
  const char* (*lineinfo)(void*, uint64_t*, int*, int*, uint64_t*, uint64_t*);
  void (*end)(void*);
} mi_dwfl_t;

/* A thread's symbolisation, in OS memory from its first lookup to
   _mi_dhat_symbolize_done. */
typedef struct mi_dhat_session_s {
  mi_dhat_object_t objects[MI_DHAT_OBJECTS];
  size_t object_count;
  mi_dwfl_t dwfl;
  mi_dwfl_callbacks_t callbacks; /* (libdw's session points to them) */
} mi_dhat_session_t;

static mi_decl_thread mi_dhat_session_t* mi_dhat_session;

/* The calling thread's session, begun if none; NULL without memory. */
static mi_dhat_session_t* mi_dhat_session_get(void) {
  if (mi_dhat_session == NULL) {
    mi_dhat_session = (mi_dhat_session_t*)_mi_dhat_os_alloc(sizeof(mi_dhat_session_t));
  }
  return mi_dhat_session;
}

/* The symbol table of a mapped ELF file: .symtab if present, else .dynsym. */
static void mi_dhat_object_load(mi_dhat_object_t* obj) {
  if (mi_prim_file_map(obj->path, (void**)&obj->map, &obj->map_size) != 0) {
    obj->map = NULL;
    return;
  }
  const uint8_t* base = (const uint8_t*)obj->map;
  if (obj->map_size < sizeof(ElfW(Ehdr))) return;
  const ElfW(Ehdr)* eh = (const ElfW(Ehdr)*)base;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr))) return;
  if (eh->e_shoff == 0 || eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > obj->map_size) return;
  const ElfW(Shdr)* sh = (const ElfW(Shdr)*)(base + eh->e_shoff);
  const ElfW(Shdr)* pick = NULL;
  for (int want = SHT_SYMTAB; pick == NULL && want != 0; want = (want == SHT_SYMTAB ? SHT_DYNSYM : 0)) {
    for (size_t i = 0; i < eh->e_shnum; i++) {
      if (sh[i].sh_type == (ElfW(Word))want && sh[i].sh_link < eh->e_shnum) {
        pick = &sh[i];
        break;
      }
    }
  }
  if (pick == NULL) return;
  const ElfW(Shdr)* str = &sh[pick->sh_link];
  if (pick->sh_offset + pick->sh_size > obj->map_size || str->sh_offset + str->sh_size > obj->map_size) return;
  obj->syms = (const ElfW(Sym)*)(base + pick->sh_offset);
  obj->sym_count = pick->sh_size / sizeof(ElfW(Sym));
  obj->strs = (const char*)(base + str->sh_offset);
  obj->strs_size = str->sh_size;
}

static mi_dhat_object_t* mi_dhat_object_of(const struct link_map* lm) {
  mi_dhat_session_t* session = mi_dhat_session_get();
  if (session == NULL) return NULL;
  for (size_t i = 0; i < session->object_count; i++) {
    if (session->objects[i].bias == (uintptr_t)lm->l_addr) return &session->objects[i];
  }
  if (session->object_count == MI_DHAT_OBJECTS) return NULL;
  mi_dhat_object_t* obj = &session->objects[session->object_count++];
  memset(obj, 0, sizeof(*obj));
  obj->bias = (uintptr_t)lm->l_addr;
  if (lm->l_name == NULL || lm->l_name[0] == 0) {
    if (!mi_prim_exe_path(obj->path, sizeof(obj->path))) obj->path[0] = 0;
  } else {
    size_t n = strlen(lm->l_name);
    if (n >= sizeof(obj->path)) n = sizeof(obj->path) - 1;
    memcpy(obj->path, lm->l_name, n);
    obj->path[n] = 0;
  }
  if (obj->path[0] != 0) mi_dhat_object_load(obj);
  return obj;
}

/* The function symbol whose range holds `addr` (a link-time address). */
static const char* mi_dhat_object_lookup(const mi_dhat_object_t* obj, uintptr_t addr) {
  const ElfW(Sym)* best = NULL;
  for (size_t i = 0; i < obj->sym_count; i++) {
    const ElfW(Sym)* s = &obj->syms[i];
    if (ELF64_ST_TYPE(s->st_info) != STT_FUNC && ELF64_ST_TYPE(s->st_info) != STT_GNU_IFUNC) continue;
    if (s->st_value == 0 || addr < s->st_value) continue;
    if (addr < s->st_value + (s->st_size == 0 ? 1 : s->st_size)) {
      /* prefer a global name over a local alias of the same code */
      if (best == NULL || ELF64_ST_BIND(s->st_info) == STB_GLOBAL) best = s;
    }
  }
  if (best == NULL || best->st_name >= obj->strs_size) return NULL;
  return obj->strs + best->st_name;
}

/* libdw, for the session (its calls looked up in each: the library, once
   loaded, stays). */
static void mi_dhat_dwfl_open(mi_dhat_session_t* session) {
  mi_dwfl_t* dw = &session->dwfl;
  mi_dwfl_callbacks_t* cb = &session->callbacks;
  dw->tried = true;
  void* h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) return;
  /* function pointers from dlsym: POSIX guarantees the conversion */
  *(void**)&dw->begin = dlsym(h, "dwfl_begin");
  *(void**)&dw->proc_report = dlsym(h, "dwfl_linux_proc_report");
  *(void**)&dw->report_end = dlsym(h, "dwfl_report_end");
  *(void**)&dw->addrmodule = dlsym(h, "dwfl_addrmodule");
  *(void**)&dw->getsrc = dlsym(h, "dwfl_module_getsrc");
  *(void**)&dw->lineinfo = dlsym(h, "dwfl_lineinfo");
  *(void**)&dw->end = dlsym(h, "dwfl_end");
  cb->find_elf = dlsym(h, "dwfl_linux_proc_find_elf");
  cb->find_debuginfo = dlsym(h, "dwfl_standard_find_debuginfo");
  if (dw->begin == NULL || dw->proc_report == NULL || dw->report_end == NULL || dw->addrmodule == NULL ||
      dw->getsrc == NULL || dw->lineinfo == NULL || dw->end == NULL || cb->find_elf == NULL ||
      cb->find_debuginfo == NULL) {
    return; /* the handle stays open: unloading is not worth the risk */
  }
  void* dwfl = dw->begin(cb);
  if (dwfl == NULL) return;
  if (dw->proc_report(dwfl, (int)mi_prim_getpid()) != 0 || dw->report_end(dwfl, NULL, NULL) != 0) {
    dw->end(dwfl);
    return;
  }
  dw->dwfl = dwfl;
}

/* "file.c:42" for `pc`, or false where there is no line information: from
   our reader of the object's line table (lines.c), or from libdw for an
   object whose table that does not read (unless `!use_libdw`: libdw
   allocates with malloc, which the pprof writer must not). */
static bool mi_dhat_source_line(mi_dhat_object_t* obj, uintptr_t pc, const char** file, int* line, bool use_libdw) {
  if (obj != NULL) {
    if (obj->lines_state == 0) {
      bool unread = false;
      obj->lines = _mi_dhat_lines_open(obj->map, obj->map_size, obj->path, &unread);
      obj->lines_state = (unread ? 2 : 1);
    }
    if (obj->lines_state == 1) return _mi_dhat_lines_find(obj->lines, pc - obj->bias, file, line);
  }
  mi_dhat_session_t* session = (use_libdw ? mi_dhat_session_get() : NULL);
  if (session == NULL) return false;
  mi_dwfl_t* dw = &session->dwfl;
  if (!dw->tried) mi_dhat_dwfl_open(session);
  if (dw->dwfl == NULL) return false;
  void* mod = dw->addrmodule(dw->dwfl, (uint64_t)pc);
  if (mod == NULL) return false;
  void* src = dw->getsrc(mod, (uint64_t)pc);
  if (src == NULL) return false;
  uint64_t addr = 0;
  const char* f = dw->lineinfo(src, &addr, line, NULL, NULL, NULL);
  if (f == NULL || *line <= 0) return false;
  const char* slash = strrchr(f, '/');
  *file = (slash != NULL ? slash + 1 : f);
  return true;
}

static bool mi_dhat_has_prefix(const char* s, const char* prefix) {
  return (strncmp(s, prefix, strlen(prefix)) == 0);
}

/* The allocation functions a stack may start inside of, by name: used when
   the allocator is linked into the program, where addresses cannot tell. */
static bool mi_dhat_is_allocator_name(const char* name) {
  static const char* const names[] = {"malloc",   "calloc",       "realloc",        "free",
                                      "cfree",    "reallocarray", "posix_memalign", "aligned_alloc",
                                      "memalign", "valloc",       "pvalloc",        NULL};
  if (mi_dhat_has_prefix(name, "mi_") || mi_dhat_has_prefix(name, "_mi_") || mi_dhat_has_prefix(name, "__libc_")) {
    return true;
  }
  /* Rust's global allocator shims (`__rust_alloc`, or v0-mangled
     `__rustc::__rust_alloc`), and the Rust crate's GlobalAlloc
     (rust/mimalloc-pprof: `<mimalloc_pprof::MiMalloc as GlobalAlloc>::alloc`,
     in either mangling) */
  if (strstr(name, "__rust_alloc") != NULL || strstr(name, "__rust_realloc") != NULL ||
      strstr(name, "__rdl_alloc") != NULL || strstr(name, "__rdl_realloc") != NULL ||
      strstr(name, "__rg_alloc") != NULL || strstr(name, "__rg_realloc") != NULL ||
      (strstr(name, "mimalloc_pprof") != NULL && strstr(name, "MiMalloc") != NULL &&
       strstr(name, "GlobalAlloc") != NULL)) {
    return true;
  }
  for (size_t i = 0; names[i] != NULL; i++) {
    if (strcmp(name, names[i]) == 0) return true;
  }
  return false;
}

static void mi_dhat_append(char* buf, size_t size, size_t* len, const char* s) {
  while (*s != 0 && *len + 1 < size) buf[(*len)++] = *s++;
  buf[*len] = 0;
}

static void mi_dhat_append_hex(char* buf, size_t size, size_t* len, uintptr_t v) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = "0123456789ABCDEF"[v & 15];
    v >>= 4;
  } while (v != 0);
  mi_dhat_append(buf, size, len, "0x");
  char tmp[2] = {0, 0};
  while (n > 0) {
    tmp[0] = digits[--n];
    mi_dhat_append(buf, size, len, tmp);
  }
}

/* The function holding `pc` (a return address minus one) and its object:
   the loader names the object, the object's symbol table the function,
   dladdr's nearest exported symbol where that has none. */
static const char* mi_dhat_lookup(uintptr_t pc, mi_dhat_object_t** pobj, const char** objname) {
  Dl_info info;
  struct link_map* lm = NULL;
  const char* name = NULL;
  *pobj = NULL;
  *objname = NULL;
  if (dladdr1((void*)pc, &info, (void**)&lm, RTLD_DL_LINKMAP) != 0 && lm != NULL) {
    mi_dhat_object_t* obj = mi_dhat_object_of(lm);
    if (obj != NULL) {
      *pobj = obj;
      *objname = (obj->path[0] != 0 ? obj->path : NULL);
      if (obj->syms != NULL) name = mi_dhat_object_lookup(obj, pc - obj->bias);
    }
    if (name == NULL) name = info.dli_sname;
    if (*objname == NULL) *objname = info.dli_fname;
  }
  return name;
}

void _mi_dhat_symbolize(uintptr_t addr, char* buf, size_t size, mi_dhat_sym_t* sym) {
  sym->internal = false;
  sym->is_main = false;
  /* a return address may lie just past the end of a function that ends in a
     call (to a noreturn function): look up the call instruction's byte */
  uintptr_t pc = addr - 1;
  mi_dhat_object_t* obj = NULL;
  const char* objname = NULL;
  const char* name = mi_dhat_lookup(pc, &obj, &objname);
  sym->internal = _mi_dhat_addr_in_allocator(pc) ||
                  (name != NULL && _mi_dhat_allocator_linked_in() && mi_dhat_is_allocator_name(name));
  sym->is_main = (name != NULL && strcmp(name, "main") == 0);
  size_t len = 0;
  buf[0] = 0;
  mi_dhat_append_hex(buf, size, &len, addr);
  mi_dhat_append(buf, size, &len, ": ");
  mi_dhat_append(buf, size, &len, name != NULL ? name : "???");
  const char* file = NULL;
  int line = 0;
  if (name != NULL && mi_dhat_source_line(obj, pc, &file, &line, true)) {
    char digits[16];
    int n = 0;
    do {
      digits[n++] = (char)('0' + line % 10);
      line /= 10;
    } while (line != 0 && n < 15);
    char num[16];
    for (int i = 0; i < n; i++) num[i] = digits[n - 1 - i];
    num[n] = 0;
    mi_dhat_append(buf, size, &len, " (");
    mi_dhat_append(buf, size, &len, file);
    mi_dhat_append(buf, size, &len, ":");
    mi_dhat_append(buf, size, &len, num);
    mi_dhat_append(buf, size, &len, ")");
  } else if (objname != NULL && objname[0] != 0) {
    mi_dhat_append(buf, size, &len, " (in ");
    mi_dhat_append(buf, size, &len, objname);
    mi_dhat_append(buf, size, &len, ")");
  }
}

bool _mi_dhat_symbol_parts(uintptr_t addr, char* name, size_t nsize, char* file, size_t fsize, int* line) {
  name[0] = 0;
  file[0] = 0;
  *line = 0;
  uintptr_t pc = addr - 1; /* the call instruction, as in _mi_dhat_symbolize */
  mi_dhat_object_t* obj = NULL;
  const char* objname = NULL;
  const char* fn = mi_dhat_lookup(pc, &obj, &objname);
  if (fn == NULL || fn[0] == 0) return false;
  _mi_str_copy(name, nsize, fn);
  const char* f = NULL;
  int ln = 0;
  if (mi_dhat_source_line(obj, pc, &f, &ln, false)) {
    _mi_str_copy(file, fsize, f);
    *line = ln;
  }
  return true;
}

static int mi_dhat_main_bias(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  *(uintptr_t*)arg = (uintptr_t)info->dlpi_addr;
  return 1; /* the first object is the program */
}

bool _mi_dhat_find_main(uintptr_t* lo, uintptr_t* hi) {
  mi_dhat_object_t* obj = (mi_dhat_object_t*)_mi_dhat_os_alloc(sizeof(mi_dhat_object_t));
  if (obj == NULL) return false;
  bool found = false;
  uintptr_t bias = 0;
  dl_iterate_phdr(&mi_dhat_main_bias, &bias);
  if (mi_prim_exe_path(obj->path, sizeof(obj->path))) {
    mi_dhat_object_load(obj);
    for (size_t i = 0; i < obj->sym_count && !found; i++) {
      const ElfW(Sym)* s = &obj->syms[i];
      if (ELF64_ST_TYPE(s->st_info) == STT_FUNC && s->st_value != 0 && s->st_name < obj->strs_size &&
          strcmp(obj->strs + s->st_name, "main") == 0) {
        *lo = bias + (uintptr_t)s->st_value;
        *hi = *lo + (uintptr_t)(s->st_size == 0 ? 1 : s->st_size);
        found = true;
      }
    }
    if (obj->map != NULL) mi_prim_file_unmap((void*)obj->map, obj->map_size);
  }
  _mi_dhat_os_free(obj, sizeof(mi_dhat_object_t));
  return found;
}

void _mi_dhat_symbolize_done(void) {
  mi_dhat_session_t* session = mi_dhat_session;
  if (session == NULL) return;
  mi_dhat_session = NULL;
  if (session->dwfl.dwfl != NULL) session->dwfl.end(session->dwfl.dwfl);
  for (size_t i = 0; i < session->object_count; i++) {
    mi_dhat_object_t* obj = &session->objects[i];
    _mi_dhat_lines_close(obj->lines);
    if (obj->map != NULL) mi_prim_file_unmap((void*)obj->map, obj->map_size);
  }
  _mi_dhat_os_free(session, sizeof(mi_dhat_session_t));
}

#endif
