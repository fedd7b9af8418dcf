/* Symbolisation at dump time on Windows, the counterpart of symbolize.c
   (ELF): the module holding a return address comes from the loader, the
   function from the module file's COFF symbol table (pe.c; it names static
   functions too), or, for a module without one (Windows' and Wine's own
   DLLs), from the image's exports where the function the unwind table
   gives for the address starts exactly at an exported name. No source
   lines: the file and line are left empty (pprof and addr2line get them
   from the binary's DWARF).

   Runs on the dumping thread with its recursion guard up and no profiler
   lock held; what it reads is kept in OS memory until
   _mi_dhat_symbolize_done, the calling thread's own (two threads dumping at
   once never share it). */
#include "dhat.h"

#if (MI_DHAT || MI_PPROF) && defined(_WIN32)

#include "win-api.h"

typedef struct mi_pe_object_s {
  uintptr_t base;
  bool loaded; /* its symbols were read (or found missing) */
  mi_pe_syms_t syms;
  char path[1024]; /* UTF-8; "" if unknown */
} mi_pe_object_t;

#define MI_PE_OBJECTS 128
/* A thread's symbolisation: the modules it read, in OS memory from its
   first lookup to _mi_dhat_symbolize_done. */
typedef struct mi_pe_session_s {
  mi_pe_object_t objects[MI_PE_OBJECTS];
  size_t object_count;
} mi_pe_session_t;
static mi_decl_thread mi_pe_session_t* mi_pe_session;

static mi_pe_object_t* mi_pe_object_of(uintptr_t pc) {
  uintptr_t base = _mi_pe_module_of(pc);
  if (base == 0) return NULL;
  if (mi_pe_session == NULL) {
    mi_pe_session = (mi_pe_session_t*)_mi_dhat_os_alloc(sizeof(mi_pe_session_t));
    if (mi_pe_session == NULL) return NULL;
  }
  mi_pe_session_t* session = mi_pe_session;
  for (size_t i = 0; i < session->object_count; i++) {
    if (session->objects[i].base == base) return &session->objects[i];
  }
  if (session->object_count == MI_PE_OBJECTS) return NULL;
  mi_pe_object_t* obj = &session->objects[session->object_count++];
  memset(obj, 0, sizeof(*obj));
  obj->base = base;
  if (!_mi_pe_module_path(base, obj->path, sizeof(obj->path), false)) obj->path[0] = 0;
  return obj;
}

/* The function holding `pc` (a return address minus one), and its module. */
static const char* mi_pe_lookup(uintptr_t pc, mi_pe_object_t** pobj) {
  mi_pe_object_t* obj = mi_pe_object_of(pc);
  *pobj = obj;
  if (obj == NULL) return NULL;
  if (!obj->loaded) {
    obj->loaded = true;
    (void)_mi_pe_syms_load(obj->base, &obj->syms);
  }
  const mi_pe_fn_t* fn = _mi_pe_syms_find(&obj->syms, pc);
  if (fn != NULL) return _mi_pe_fn_name(&obj->syms, fn);
  return _mi_pe_export_name(obj->base, pc);
}

static void mi_pe_append(char* buf, size_t size, size_t* len, const char* s) {
  while (*s != 0 && *len + 1 < size) buf[(*len)++] = *s++;
  buf[*len] = 0;
}

void _mi_dhat_symbolize(uintptr_t addr, char* buf, size_t size, mi_dhat_sym_t* sym) {
  uintptr_t pc = addr - 1; /* the call instruction: a return address may lie past the function's end */
  mi_pe_object_t* obj = NULL;
  const char* name = mi_pe_lookup(pc, &obj);
  sym->internal =
      _mi_dhat_addr_in_allocator(pc) || (name != NULL && _mi_dhat_allocator_linked_in() && _mi_pe_allocator_name(name));
  sym->is_main = (name != NULL && strcmp(name, "main") == 0);
  size_t len = 0;
  buf[0] = 0;
  char hex[20];
  size_t n = 0;
  uintptr_t v = addr;
  do {
    hex[n++] = "0123456789ABCDEF"[v & 15];
    v >>= 4;
  } while (v != 0 && n < sizeof(hex));
  mi_pe_append(buf, size, &len, "0x");
  char digit[2] = {0, 0};
  while (n > 0) {
    digit[0] = hex[--n];
    mi_pe_append(buf, size, &len, digit);
  }
  mi_pe_append(buf, size, &len, ": ");
  mi_pe_append(buf, size, &len, name != NULL ? name : "???");
  if (obj != NULL && obj->path[0] != 0) {
    mi_pe_append(buf, size, &len, " (in ");
    mi_pe_append(buf, size, &len, obj->path);
    mi_pe_append(buf, size, &len, ")");
  }
}

bool _mi_dhat_symbol_parts(uintptr_t addr, char* name, size_t nsize, char* file, size_t fsize, int* line) {
  name[0] = 0;
  if (fsize > 0) file[0] = 0;
  *line = 0;
  mi_pe_object_t* obj = NULL;
  const char* fn = mi_pe_lookup(addr - 1, &obj);
  if (fn == NULL || fn[0] == 0 || nsize == 0) return false;
  size_t n = strlen(fn);
  if (n >= nsize) n = nsize - 1;
  memcpy(name, fn, n);
  name[n] = 0;
  return true;
}

bool _mi_dhat_find_main(uintptr_t* lo, uintptr_t* hi) {
  mi_pe_syms_t syms;
  bool found = _mi_pe_syms_load((uintptr_t)GetModuleHandleW(NULL), &syms) && _mi_pe_syms_range(&syms, "main", lo, hi);
  _mi_pe_syms_free(&syms);
  return found;
}

void _mi_dhat_symbolize_done(void) {
  mi_pe_session_t* session = mi_pe_session;
  if (session == NULL) return;
  mi_pe_session = NULL;
  for (size_t i = 0; i < session->object_count; i++) _mi_pe_syms_free(&session->objects[i].syms);
  _mi_dhat_os_free(session, sizeof(mi_pe_session_t));
}

#endif
