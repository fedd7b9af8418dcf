/* The loaded modules on Windows, for the two writers (the ELF side is
   modules.c): the process's module list (K32EnumProcessModulesEx), each
   module one mapping, its whole image [base, base + SizeOfImage) at file
   offset 0, its path from GetModuleFileNameW as UTF-8. That is how pprof
   maps a PE address (its binutils' openPE): the address minus the
   mapping's start plus the file's preferred ImageBase is the address in
   the file, which is what addr2line and the file's symbols use.

   No build id: pprof reads none from a PE file, and a mapping that
   carries one makes pprof ignore the local file it finds for it
   ("build-id mismatch", internal/driver/fetch.go). All memory is the OS's. */
#include "prof.h"

#if MI_PPROF && defined(_WIN32)

#include "../dhat/win-api.h"
#include <psapi.h>

#define MI_PROF_MODULES_MAX 4096

/* The process's modules (at most 4096), into OS memory; false without it. */
static bool mi_prof_modules(HMODULE** mods, size_t* count, size_t* bytes) {
  *bytes = MI_PROF_MODULES_MAX * sizeof(HMODULE);
  *mods = (HMODULE*)_mi_os_alloc_meta(*bytes);
  *count = 0;
  if (*mods == NULL) return false;
  DWORD needed = 0;
  if (!K32EnumProcessModulesEx(GetCurrentProcess(), *mods, (DWORD)*bytes, &needed, LIST_MODULES_ALL)) needed = 0;
  *count = (needed > *bytes ? *bytes : needed) / sizeof(HMODULE);
  return true;
}

/* The mappings, with paths as the proto has them, or (`no_spaces`) as the
   text format's lines need them. */
static bool mi_prof_win_mappings(mi_prof_mapping_t** maps, size_t* count, bool no_spaces) {
  *maps = NULL;
  *count = 0;
  HMODULE* mods;
  size_t n, bytes;
  if (!mi_prof_modules(&mods, &n, &bytes)) return false;
  char path[1024];
  size_t path_bytes = 0;
  for (size_t i = 0; i < n; i++) {
    if (_mi_pe_image_size((uintptr_t)mods[i]) != 0 &&
        _mi_pe_module_path((uintptr_t)mods[i], path, sizeof(path), no_spaces)) {
      path_bytes += strlen(path) + 1;
    }
  }
  char* paths = NULL;
  mi_prof_mapping_t* m = (n == 0 ? NULL : _mi_prof_maps_alloc(n, path_bytes, &paths));
  bool ok = (n == 0 || m != NULL);
  size_t k = 0;
  size_t room = path_bytes;
  for (size_t i = 0; ok && i < n; i++) {
    uintptr_t base = (uintptr_t)mods[i];
    size_t size = _mi_pe_image_size(base);
    if (size == 0 || !_mi_pe_module_path(base, path, sizeof(path), no_spaces)) continue;
    size_t len = strlen(path);
    if (len + 1 > room) break; /* a module loaded between the passes */
    memcpy(paths, path, len + 1);
    m[k].start = base;
    m[k].limit = base + size;
    m[k].file_offset = 0; /* pprof maps a PE address by the file's ImageBase */
    m[k].path = paths;
    m[k].build_id_len = 0;
    paths += len + 1;
    room -= len + 1;
    k++;
  }
  _mi_os_free_meta(mods, bytes);
  if (!ok) return false;
  _mi_prof_maps_main_first(m, k, (uintptr_t)GetModuleHandleW(NULL));
  *maps = m;
  *count = k;
  return true;
}

bool _mi_prof_mappings(mi_prof_mapping_t** maps, size_t* count) {
  return mi_prof_win_mappings(maps, count, false);
}

/* Lowercase hex without "0x", as /proc/self/maps writes addresses. */
static void mi_prof_put_hex(mi_prof_buf_t* out, uint64_t v) {
  char tmp[16];
  size_t n = 0;
  do {
    tmp[sizeof(tmp) - 1 - n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v != 0);
  _mi_prof_buf_put(out, tmp + sizeof(tmp) - n, n);
}

/* One line per module in /proc/self/maps' form, which both google-pprof
   and Go's legacy parser read: the path is the line's last field and ends
   at a space, so a path with one is given in its short (8.3) form. */
bool _mi_prof_maps_text(mi_prof_buf_t* out) {
  _mi_prof_buf_str(out, "MAPPED_LIBRARIES:\n");
  mi_prof_mapping_t* maps;
  size_t count;
  if (!mi_prof_win_mappings(&maps, &count, true)) return false;
  for (size_t i = 0; i < count; i++) {
    /* "%llx-%llx r-xp 00000000 00:00 0    %s\n", without snprintf */
    mi_prof_put_hex(out, maps[i].start);
    _mi_prof_buf_put(out, "-", 1);
    mi_prof_put_hex(out, maps[i].limit);
    _mi_prof_buf_str(out, " r-xp 00000000 00:00 0    ");
    _mi_prof_buf_str(out, maps[i].path);
    _mi_prof_buf_put(out, "\n", 1);
  }
  _mi_prof_mappings_free(maps, count);
  return !out->failed;
}

#endif
