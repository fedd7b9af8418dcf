/* The secure front's part in a report (base/secure-report.c raises
   secure_report after the first lines): the stack where the misuse was
   seen, and the report's JSON copy (MIMALLOC_REPORT_FILE).

   The heap may be what is corrupted, and the thread may hold any of our
   locks: nothing here allocates or takes a lock. The stack is a
   frame-pointer walk whose every read goes through mi_prim_read_self (a
   chain that leads off the stack ends the walk, it does not fault); the
   frames are named by the profilers' symboliser (OS memory only, entered
   only if no dump is using it) where it is built in, else by the loader's
   dladdr, else as module and offset. The allocator's own frames before the
   entry point the program called are left out. */
#include "stacks.h"
#include "../base/listeners.h"
#include "../base/observers.h"
#if MI_DHAT || MI_PPROF
#include "../dhat/dhat.h"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#if !defined(_WIN32)
#include <dlfcn.h>
#endif

#if MI_SECURE

#define MI_REPORT_FRAMES 32

typedef struct mi_report_frame_s {
  uintptr_t pc;
  uintptr_t module_offset;
  int line;
  bool ours;  /* the allocator's own code */
  bool exact; /* pc is the instruction itself (a fault's), not a return address: shown one less */
  char function[160];
  char file[96];
  char module[160];
} mi_report_frame_t;

static bool mi_has_prefix(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The names the allocator's entry points go by when it is linked into the
   program (its frames then share the program's module). */
static bool mi_allocator_name(const char* name) {
  static const char* const names[] = {
      "malloc",  "calloc",        "realloc",        "free",         "cfree",      "memalign",           "valloc",
      "pvalloc", "aligned_alloc", "posix_memalign", "reallocarray", "free_sized", "free_aligned_sized", NULL};
  if (mi_has_prefix(name, "mi_") || mi_has_prefix(name, "_mi_")) return true;
  if (mi_has_prefix(name, "_Znw") || mi_has_prefix(name, "_Zna") || mi_has_prefix(name, "_Zdl") ||
      mi_has_prefix(name, "_Zda") || mi_has_prefix(name, "operator new") || mi_has_prefix(name, "operator delete")) {
    return true;
  }
  for (size_t i = 0; names[i] != NULL; i++) {
    if (strcmp(name, names[i]) == 0) return true;
  }
  return false;
}

/* the module holding `pc` (its path and base); false if none is known */
static bool mi_report_module(uintptr_t pc, char* path, size_t size, uintptr_t* base) {
#if !defined(_WIN32)
  Dl_info info;
  if (dladdr((void*)pc, &info) == 0 || info.dli_fname == NULL) return false;
  _mi_str_copy(path, size, info.dli_fname);
  *base = (uintptr_t)info.dli_fbase;
  return true;
#elif MI_PPROF
  *base = _mi_pe_module_of(pc);
  return (*base != 0 && _mi_pe_module_path(*base, path, size, false));
#else
  (void)pc, (void)path, (void)size, (void)base;
  return false;
#endif
}

/* Frames named: `pcs` return addresses (with `exact0`, the first is an
   instruction's address plus one: a fault's). */
static void mi_report_name(mi_report_frame_t* frames, const uintptr_t* pcs, size_t n, bool exact0) {
  char self[160];
  uintptr_t self_base = 0;
  bool shared = mi_report_module((uintptr_t)&_mi_secure_fatal_report, self, sizeof(self), &self_base);
#if MI_DHAT || MI_PPROF
  bool named = _mi_dhat_symbolizer_try_enter();
#endif
  char exe[160] = "";
  (void)mi_prim_exe_path(exe, sizeof(exe));
  bool linked_in = (shared && exe[0] != 0 && strcmp(self, exe) == 0);
  for (size_t i = 0; i < n; i++) {
    mi_report_frame_t* f = &frames[i];
    memset(f, 0, sizeof(*f));
    f->pc = pcs[i];
    f->exact = (exact0 && i == 0);
    uintptr_t base = 0;
    if (mi_report_module(f->pc - 1, f->module, sizeof(f->module), &base)) {
      f->module_offset = (f->exact ? f->pc - 1 : f->pc) - base;
    }
#if MI_DHAT || MI_PPROF
    if (named) (void)_mi_dhat_symbol_parts(f->pc, f->function, sizeof(f->function), f->file, sizeof(f->file), &f->line);
#endif
#if !defined(_WIN32)
    if (f->function[0] == 0) {
      Dl_info info;
      if (dladdr((void*)(f->pc - 1), &info) != 0 && info.dli_sname != NULL) {
        _mi_str_copy(f->function, sizeof(f->function), info.dli_sname);
      }
    }
#endif
    if (linked_in || !shared) f->ours = (f->function[0] != 0 && mi_allocator_name(f->function));
    else f->ours = (base == self_base);
  }
#if MI_DHAT || MI_PPROF
  if (named) _mi_dhat_symbolizer_leave();
#endif
}

/* The frames of the calling thread, or of a fault (`where`: the faulting
   instruction first, then the callers from its frame). */
static size_t mi_report_frames(mi_report_frame_t* frames, size_t max, const mi_fault_where_t* where) {
  uintptr_t pcs[MI_REPORT_FRAMES] = {0};
  if (max > MI_REPORT_FRAMES) max = MI_REPORT_FRAMES;
  size_t n = 0;
  if (where == NULL) {
    n = _mi_stack_walk(pcs, max, 0);
  } else if (where->pc != 0) {
    /* the faulting instruction itself, looked up as a return address one past it */
    pcs[0] = where->pc + 1;
    n = 1 + (where->fp != 0 ? _mi_stack_walk(pcs + 1, max - 1, where->fp) : 0);
  }
  mi_report_name(frames, pcs, n, where != NULL);
  return n;
}

/* The first frame to show: the entry point the program called (the last of
   the allocator's own frames the walk starts with). */
static size_t mi_report_first(const mi_report_frame_t* frames, size_t n) {
  size_t i = 0;
  while (i + 1 < n && frames[i].ours && frames[i + 1].ours) i++;
  if (i >= n || !frames[i].ours) return 0;
  /* an internal function the entry point tail-called (its frame gone, as
     free's is when an observer runs) is not what the program called: its
     caller is the first frame then */
  const char* name = frames[i].function;
  if (i + 1 < n &&
      (mi_has_prefix(name, "_mi_") || mi_has_prefix(name, "mi_secure_") || mi_has_prefix(name, "mi_guard"))) {
    return i + 1;
  }
  return i;
}

static uintptr_t mi_shown_pc(const mi_report_frame_t* f) {
  return (f->exact ? f->pc - 1 : f->pc);
}

static void mi_report_frame_text(const mi_report_frame_t* f, size_t k, char* buf, size_t size) {
  if (f->function[0] != 0 && f->file[0] != 0) {
    (void)snprintf(buf, size, "mimalloc:     #%zu 0x%zx in %s %s:%d\n", k, (size_t)mi_shown_pc(f), f->function, f->file,
                   f->line);
  } else if (f->function[0] != 0) {
    (void)snprintf(buf, size, "mimalloc:     #%zu 0x%zx in %s (%s+0x%zx)\n", k, (size_t)mi_shown_pc(f), f->function,
                   f->module[0] != 0 ? _mi_path_base(f->module) : "?", (size_t)f->module_offset);
  } else {
    (void)snprintf(buf, size, "mimalloc:     #%zu 0x%zx (%s+0x%zx)\n", k, (size_t)mi_shown_pc(f),
                   f->module[0] != 0 ? _mi_path_base(f->module) : "?", (size_t)f->module_offset);
  }
}

/* ---- The JSON copy ---------------------------------------------------------------- */

typedef struct mi_json_s {
  char buf[12 * 1024];
  size_t len;
} mi_json_t;

static void mi_json_raw(mi_json_t* j, const char* s) {
  size_t n = strlen(s);
  if (j->len + n >= sizeof(j->buf)) n = sizeof(j->buf) - 1 - j->len;
  memcpy(j->buf + j->len, s, n);
  j->len += n;
  j->buf[j->len] = 0;
}

static void mi_json_fmt(mi_json_t* j, const char* fmt, ...) mi_attr_printf(2, 3);
static void mi_json_fmt(mi_json_t* j, const char* fmt, ...) {
  char tmp[160];
  va_list args;
  va_start(args, fmt);
  /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above; clang 14 misreads it */
  (void)vsnprintf(tmp, sizeof(tmp), fmt, args);
  va_end(args);
  mi_json_raw(j, tmp);
}

static void mi_json_str(mi_json_t* j, const char* s) {
  mi_json_raw(j, "\"");
  for (; *s != 0; s++) {
    char c = *s;
    if (c == '"' || c == '\\') {
      char esc[3] = {'\\', c, 0};
      mi_json_raw(j, esc);
    } else if ((unsigned char)c < 0x20) {
      mi_json_fmt(j, "\\u%04x", (unsigned)(unsigned char)c);
    } else {
      char one[2] = {c, 0};
      mi_json_raw(j, one);
    }
  }
  mi_json_raw(j, "\"");
}

static void mi_json_size(mi_json_t* j, const char* key, size_t v) {
  mi_json_fmt(j, ",\"%s\":", key);
  if (v == MI_REPORT_UNKNOWN) mi_json_raw(j, "null");
  else mi_json_fmt(j, "%zu", v);
}

static void mi_json_stack(mi_json_t* j, const char* key, const mi_report_frame_t* frames, size_t from, size_t n) {
  mi_json_fmt(j, ",\"%s\":[", key);
  for (size_t i = from; i < n; i++) {
    const mi_report_frame_t* f = &frames[i];
    mi_json_fmt(j, "%s{\"pc\":\"0x%zx\",\"function\":", i > from ? "," : "", (size_t)mi_shown_pc(f));
    if (f->function[0] != 0) mi_json_str(j, f->function);
    else mi_json_raw(j, "null");
    mi_json_raw(j, ",\"file\":");
    if (f->file[0] != 0) mi_json_str(j, f->file);
    else mi_json_raw(j, "null");
    mi_json_fmt(j, ",\"line\":%d,\"module\":", f->line);
    if (f->module[0] != 0) mi_json_str(j, f->module);
    else mi_json_raw(j, "null");
    mi_json_fmt(j, ",\"module_offset\":\"0x%zx\"}", (size_t)f->module_offset);
  }
  mi_json_raw(j, "]");
}

/* The dedup key: FNV-1a over the kind and the detecting stack's top frames past the
   allocator's (their functions, or module and offset where unnamed): the
   same bug reached the same way hashes the same in every run */
static uint64_t mi_fnv(uint64_t h, const char* s) {
  for (; *s != 0; s++) h = (h ^ (uint8_t)*s) * 1099511628211ULL;
  return h;
}

/* the hash continued over a stack's top three frames past the allocator's
   (their functions, or module and offset where unnamed), each after a `sep` */
static uint64_t mi_report_dedup_frames(uint64_t h, const char* sep, const mi_report_frame_t* frames, size_t from,
                                       size_t n) {
  size_t taken = 0;
  for (size_t i = from; i < n && taken < 3; i++) {
    if (frames[i].ours) continue;
    char key[200];
    if (frames[i].function[0] != 0) _mi_str_copy(key, sizeof(key), frames[i].function);
    else (void)snprintf(key, sizeof(key), "%s+0x%zx", _mi_path_base(frames[i].module), (size_t)frames[i].module_offset);
    h = mi_fnv(mi_fnv(h, sep), key);
    taken++;
  }
  return h;
}

/* MIMALLOC_REPORT_FILE's path, `%p` the process id */
static bool mi_report_path(char* path, size_t size) {
  char spec[256];
  if (!mi_prim_getenv("MIMALLOC_REPORT_FILE", spec, sizeof(spec)) || spec[0] == 0) return false;
  size_t len = 0;
  for (const char* s = spec; *s != 0 && len + 1 < size; s++) {
    if (s[0] == '%' && s[1] == 'p') {
      char pid[24];
      (void)snprintf(pid, sizeof(pid), "%ld", mi_prim_getpid());
      for (const char* d = pid; *d != 0 && len + 1 < size; d++) path[len++] = *d;
      s++;
    } else {
      path[len++] = *s;
    }
  }
  path[len] = 0;
  return true;
}

/* A stack of a report: its frames from `first`, and its thread */
typedef struct mi_report_stack_s {
  const mi_report_frame_t* frames;
  size_t first;
  size_t count;
  long thread;
} mi_report_stack_t;

static void mi_json_stack_or_null(mi_json_t* j, const char* key, const mi_report_stack_t* st) {
  if (st == NULL) {
    mi_json_fmt(j, ",\"%s\":null,\"%s_thread\":null", key, key);
    return;
  }
  mi_json_stack(j, key, st->frames, st->first, st->count);
  if (st->thread != 0) mi_json_fmt(j, ",\"%s_thread\":%ld", key, st->thread);
  else mi_json_fmt(j, ",\"%s_thread\":null", key);
}

/* The key over the kind and the detecting stack, as a sanitizer's crash
   state: not the allocating stack, which is recorded in some runs only (a
   guarded sample, MIMALLOC_SECURE_STACKS), so that the same bug keys the
   same in a campaign and in its reproduction with the stacks on. */
static uint64_t mi_report_dedup(const mi_secure_report_t* r, const mi_report_stack_t* detected) {
  return mi_report_dedup_frames(mi_fnv(14695981039346656037ULL, r->kind), "|", detected->frames, detected->first,
                                detected->count);
}

static void mi_report_json(const mi_secure_report_t* r, uint64_t dedup, const mi_report_stack_t* detected,
                           const mi_report_stack_t* allocated, const mi_report_stack_t* freed) {
  char path[512];
  if (!mi_report_path(path, sizeof(path))) return;
  static mi_json_t j; /* (one report at a time: _mi_secure_report_claim) */
  j.len = 0;
  mi_json_raw(&j, "{\"kind\":");
  mi_json_str(&j, r->kind);
  mi_json_raw(&j, ",\"message\":");
  char first_line[320];
  (void)snprintf(first_line, sizeof(first_line), "%s 0x%zx (size %zu)", r->what, (size_t)(uintptr_t)r->address,
                 r->size);
  mi_json_str(&j, first_line);
  mi_json_fmt(&j, ",\"address\":\"0x%zx\"", (size_t)(uintptr_t)r->address);
  if (r->block != NULL) mi_json_fmt(&j, ",\"block\":\"0x%zx\"", (size_t)(uintptr_t)r->block);
  else mi_json_raw(&j, ",\"block\":null");
  mi_json_size(&j, "block_size", r->block_size != 0 ? r->block_size : MI_REPORT_UNKNOWN);
  mi_json_size(&j, "requested_size", r->requested);
  mi_json_size(&j, "offset", r->offset);
  mi_json_fmt(&j, ",\"thread\":%ld", detected->thread);
  mi_json_raw(&j, ",\"caught_late\":");
  if (r->late != NULL) mi_json_str(&j, r->late);
  else mi_json_raw(&j, "null");
  mi_json_stack(&j, "detected", detected->frames, detected->first, detected->count);
  mi_json_stack_or_null(&j, "allocated", allocated);
  mi_json_stack_or_null(&j, "freed", freed);
  mi_json_fmt(&j, ",\"dedup\":\"%016llx\"}\n", (unsigned long long)dedup);
  int fd = -1;
  if (mi_prim_file_create(path, &fd) != 0) {
    char line[600];
    (void)snprintf(line, sizeof(line), "mimalloc:   (the report's JSON copy could not be written to %s)\n", path);
    _mi_fputs(NULL, NULL, NULL, line);
    return;
  }
  (void)mi_prim_file_write(fd, j.buf, j.len);
  (void)mi_prim_file_close(fd);
}

static void mi_report_print(const char* heading, const mi_report_stack_t* st) {
  if (st->count <= st->first) return;
  _mi_fputs(NULL, NULL, NULL, heading);
  for (size_t i = st->first; i < st->count; i++) {
    char line[512];
    mi_report_frame_text(&st->frames[i], i - st->first, line, sizeof(line));
    _mi_fputs(NULL, NULL, NULL, line);
  }
}

/* A guarded sample's recorded stacks, where the report's block is one
   (live, or freed and held in the guard quarantine) */
static mi_guard_stacks_t* mi_report_guard_stacks(const mi_secure_report_t* report) {
#if MI_GUARDED
  if (report->block == NULL) return NULL;
  mi_segment_t* segment = _mi_segment_containing(report->block);
  if (segment == NULL || segment->cookie != ((uintptr_t)segment ^ _mi_process_key) ||
      segment->kind != MI_SEGMENT_SINGLE || !segment->pages[0].is_guarded) {
    return NULL;
  }
  return mi_guard_stacks_of(segment);
#else
  (void)report;
  return NULL;
#endif
}

/* The block's recorded stacks: a guarded sample's, or any block's while
   MIMALLOC_SECURE_STACKS keeps them. */
static bool mi_report_recorded(const mi_secure_report_t* report, mi_secure_stack_t* allocated,
                               mi_secure_stack_t* freed) {
  allocated->count = freed->count = 0;
  mi_guard_stacks_t* gs = mi_report_guard_stacks(report);
  if (gs != NULL) {
    if (gs->alloc_count <= MI_GUARD_STACK_FRAMES) {
      *allocated = (mi_secure_stack_t){gs->alloc_thread, gs->alloc_count, gs->alloc};
    }
    if (gs->free_thread != 0 && gs->free_count <= MI_GUARD_STACK_FRAMES) {
      *freed = (mi_secure_stack_t){gs->free_thread, gs->free_count, gs->free};
    }
    return true;
  }
#if MI_SECURE_STACKS
  return _mi_secure_stacks_of(report->block, allocated, freed);
#else
  return false;
#endif
}

/* A recorded stack named and printed under its heading; false if there is none. */
static bool mi_report_recorded_print(const char* what, const mi_secure_stack_t* rec, mi_report_frame_t* frames,
                                     mi_report_stack_t* out) {
  if (rec->count == 0) return false;
  size_t n = (rec->count < MI_REPORT_FRAMES ? rec->count : MI_REPORT_FRAMES);
  mi_report_name(frames, rec->frames, n, false);
  *out = (mi_report_stack_t){frames, mi_report_first(frames, n), n, rec->thread};
  char heading[96];
  if (rec->thread != 0)
    (void)snprintf(heading, sizeof(heading), "mimalloc:   %s by thread %ld at:\n", what, rec->thread);
  else (void)snprintf(heading, sizeof(heading), "mimalloc:   %s by a thread not recorded at:\n", what);
  mi_report_print(heading, out);
  return true;
}

static void mi_report_stack(const mi_secure_report_t* report, const mi_fault_where_t* where) {
  /* (one report at a time: _mi_secure_report_claim) */
  static mi_report_frame_t frames[MI_REPORT_FRAMES];
  static mi_report_frame_t alloc_frames[MI_REPORT_FRAMES];
  static mi_report_frame_t free_frames[MI_REPORT_FRAMES];
  mi_report_stack_t detected = {frames, 0, mi_report_frames(frames, MI_REPORT_FRAMES, where), mi_prim_thread_os_id()};
  detected.first = mi_report_first(frames, detected.count);
  mi_report_print("mimalloc:   detected at:\n", &detected);
  mi_report_stack_t allocated, freed;
  mi_secure_stack_t alloc_rec, free_rec;
  bool has_alloc = false, has_free = false;
  if (mi_report_recorded(report, &alloc_rec, &free_rec)) {
    has_alloc = mi_report_recorded_print("allocated", &alloc_rec, alloc_frames, &allocated);
    has_free = mi_report_recorded_print("freed", &free_rec, free_frames, &freed);
  }
#if MI_SECURE_STACKS
  /* a block whose sites were not kept: how to have them */
  if (!has_alloc && report->block != NULL && (mi_observers_armed() & MI_OBSERVER_STACKS) == 0) {
    _mi_fputs(NULL, NULL, NULL,
              "mimalloc:   where the block was allocated and freed: not recorded; rerun with "
              "MIMALLOC_SECURE_STACKS=1\n");
  } else if (!has_alloc && report->block != NULL) {
    /* kept, but not this block's: said, so that its absence is not read as a lost section */
    _mi_fputs(NULL, NULL, NULL,
              "mimalloc:   where the block was allocated: not recorded (allocated before the stacks were "
              "kept, or no memory or room for its record)\n");
  }
#endif
  /* the key in the text too, as the sanitizers print theirs: a fuzzing
     campaign's crash log has it, and libFuzzer's crash minimizer
     (-minimize_crash) keeps only reductions whose DEDUP_TOKEN line stays the same */
  uint64_t dedup = mi_report_dedup(report, &detected);
  char key[64];
  (void)snprintf(key, sizeof(key), "mimalloc:   DEDUP_TOKEN: %016llx\n", (unsigned long long)dedup);
  _mi_fputs(NULL, NULL, NULL, key);
  mi_report_json(report, dedup, &detected, has_alloc ? &allocated : NULL, has_free ? &freed : NULL);
}

void _mi_secure_report_detail(const mi_secure_report_t* report) {
  mi_report_stack(report, NULL);
}

void _mi_secure_report_detail_at(const mi_secure_report_t* report, const mi_fault_where_t* where) {
  mi_report_stack(report, where);
}

#endif
