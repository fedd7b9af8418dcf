/* The heap profiler's internal interface (src/dhat): stack capture
   (stack.c; Windows: stack-windows.c), symbolisation (symbolize.c, one user
   at a time by symbolizer-gate.c; Windows: symbolize-pe.c and pe.c), the
   JSON writer (json.c) and the recorder with its tables (record.c). Nothing
   here allocates from the allocator: tables and buffers come from the OS
   (_mi_os_alloc_meta). */
#ifndef MI_DHAT_INTERNAL_H
#define MI_DHAT_INTERNAL_H

#include "../heap/heap.h"
#include "hooks.h"
#include "../os/side-map.h"

/* Frames kept per allocation site, innermost first. Valgrind's default
   (--num-callers=12) counts the allocation function itself; ours start at
   its caller. */
#define MI_DHAT_MAX_FRAMES 16
/* The most frames one capture returns (the pprof sampler's deepest stacks). */
#define MI_CAPTURE_MAX_FRAMES 128

/* ---- stack.c ---------------------------------------------------------------- */
/* Set up before recording first starts (the unwinder is loaded, the code
   ranges and `main` are found). Call with the thread's recursion guard up,
   under no lock of ours (it may allocate). */
void _mi_dhat_stack_init(void) mi_decl_hidden;
/* Where a thread keeps the site of a stack it captured before, so that the
   recorder need not look the stack up again: the site's number and the
   profile it is of (0: none yet). Thread-local memory (stack.c's cache). */
typedef struct mi_dhat_site_hint_s {
  uint32_t site;       /* DHAT's site of the stack ... */
  uint32_t profile;    /* ... in this profile (0: none) */
  uint32_t prof_stack; /* the pprof sampler's stack of it ... */
  uint32_t prof_epoch; /* ... while its stack table is this one (0: none) */
} mi_dhat_site_hint_t;
/* The return addresses of the calling thread, innermost first, starting
   outside the allocator where that can be told from the address alone
   (symbolize.c trims the rest by name). `*hint` is set to this stack's hint
   slot in the thread's cache, or NULL; it stays valid until the thread's
   next capture. Call with the recursion guard up: the first call on a thread
   may allocate. */
int _mi_dhat_stack_capture(uintptr_t* frames, int max, mi_dhat_site_hint_t** hint) mi_decl_hidden;
/* Windows (stack-windows.c): the walk of the secure stacks, which ELF
   builds inline from stack-walk.h (frame pointers from `frame`, a frame of
   the allocator's entry path); here the unwinder. */
int _mi_stack_capture_fp(uintptr_t* frames, int max, const void* frame) mi_decl_hidden;

/* A hash of a stack's frames, taken as they are walked
   (stack-walk.h): the secure build's per-block stacks find a stack they
   saw by it */
#define MI_WALK_HASH_SEED 0x243F6A8885A308D3ULL
static mi_forceinline uint64_t mi_walk_hash_step(uint64_t h, uintptr_t frame) {
  h = (h ^ (uint64_t)frame) * 0xBF58476D1CE4E5B9ULL;
  return h ^ (h >> 29);
}
static inline uint64_t mi_walk_hash_end(uint64_t h, uint32_t n) {
  return (h ^ n) * 0x94D049BB133111EBULL;
}

/* Whether `addr` lies in the code of the shared object holding the allocator
   (false when the allocator is linked into the program). */
bool _mi_dhat_addr_in_allocator(uintptr_t addr) mi_decl_hidden;
/* True when the allocator is part of the program (static library): its
   frames are then told by name. */
bool _mi_dhat_allocator_linked_in(void) mi_decl_hidden;

/* ---- symbolize.c ----------------------------------------------------------- */
typedef struct mi_dhat_sym_s {
  bool internal; /* a function of the allocator: trimmed from the stack's top */
  bool is_main;  /* `main`: the stack's last frame, as Valgrind shows it */
} mi_dhat_sym_t;
/* The DHAT frame string of the return address `addr` ("0x...: fn (in obj)")
   written to `buf`. */
void _mi_dhat_symbolize(uintptr_t addr, char* buf, size_t size, mi_dhat_sym_t* sym) mi_decl_hidden;
/* The address range of the program's `main` (false if it has no symbol). */
bool _mi_dhat_find_main(uintptr_t* lo, uintptr_t* hi) mi_decl_hidden;
/* Release the mapped object files of the last dump. */
void _mi_dhat_symbolize_done(void) mi_decl_hidden;
/* The function holding the return address `addr` (looked up at addr - 1)
   and, where the line table tells, its source file (without directories)
   and line (else file "" and line 0), each into a buffer of its own; false
   if no function is known. Never asks libdw (it mallocs): its memory is
   the OS's, but for the C library's own when lines.c first loads zlib for a
   compressed line table. Call between _mi_dhat_symbolizer_enter and _leave,
   then _mi_dhat_symbolize_done. */
/* demangle-rust.c: a legacy-mangled Rust symbol's readable name; false for
   any other symbol (`out` then unspecified) */
bool _mi_dhat_demangle_rust(const char* sym, char* out, size_t size) mi_decl_hidden;
bool _mi_dhat_symbol_parts(uintptr_t addr, char* name, size_t nsize, char* file, size_t fsize,
                           int* line) mi_decl_hidden;
/* One user of the symboliser's caches at a time (the DHAT dump, the pprof
   writer): enter waits until the other has left. */
void _mi_dhat_symbolizer_enter(void) mi_decl_hidden;
bool _mi_dhat_symbolizer_try_enter(void) mi_decl_hidden; /* false: in use */
void _mi_dhat_symbolizer_leave(void) mi_decl_hidden;
void _mi_dhat_symbolizer_after_fork_child(void) mi_decl_hidden;

/* ---- lines.c ----------------------------------------------------------------- */
/* The line table of one object, read from its own .debug_line or from its
   separate debug file (by build id or .gnu_debuglink), indexed by address. */
typedef struct mi_dhat_lines_s mi_dhat_lines_t;
/* The line table of the object file mapped at `map` (`path` locates its
   separate debug file). NULL where there is none; `*unread` then tells that
   there may be one this reader cannot read (ask libdw). */
mi_dhat_lines_t* _mi_dhat_lines_open(const void* map, size_t size, const char* path, bool* unread) mi_decl_hidden;
/* The file name (without directories) and line of the link-time address
   `addr`; false without line information. */
bool _mi_dhat_lines_find(mi_dhat_lines_t* lines, uintptr_t addr, const char** file, int* line) mi_decl_hidden;
void _mi_dhat_lines_close(mi_dhat_lines_t* lines) mi_decl_hidden;

/* ---- pe.c (Windows): the loaded modules' PE images and their files ----------- */
#if defined(_WIN32)
/* The base of the module (image) holding `addr`, 0 if none. */
uintptr_t _mi_pe_module_of(uintptr_t addr) mi_decl_hidden;
/* The image size (SizeOfImage) of the module loaded at `base`; 0 if not a PE image. */
size_t _mi_pe_image_size(uintptr_t base) mi_decl_hidden;
/* The file of the module loaded at `base`, as UTF-8, NUL-terminated; with
   `no_spaces`, its short (8.3) form where the long one has a space (the
   text format's map lines end at a space). False if it does not fit. */
bool _mi_pe_module_path(uintptr_t base, char* buf, size_t size, bool no_spaces) mi_decl_hidden;
/* A function of a module, from its file's COFF symbol table. */
typedef struct mi_pe_fn_s {
  uint32_t rva;  /* its start, relative to the image base */
  uint32_t name; /* offset of its name in the names pool */
  uint32_t mark; /* the caller's: 0 when loaded */
} mi_pe_fn_t;
/* The function symbols of one module, sorted by address, in OS memory (the
   file is not kept mapped). */
typedef struct mi_pe_syms_s {
  uintptr_t base;
  size_t image_size;
  mi_pe_fn_t* fns;
  size_t count;
  size_t fns_bytes;
  char* names;
  size_t names_bytes;
} mi_pe_syms_t;
/* Read the function symbols of the module loaded at `base` from its file;
   false without the file, without a symbol table (linked with -s) or
   without memory (`syms` is then empty). */
bool _mi_pe_syms_load(uintptr_t base, mi_pe_syms_t* syms) mi_decl_hidden;
void _mi_pe_syms_free(mi_pe_syms_t* syms) mi_decl_hidden;
/* The function holding the code address `pc` (the last one starting at or
   below it, inside the image); NULL if none. */
mi_pe_fn_t* _mi_pe_syms_find(const mi_pe_syms_t* syms, uintptr_t pc) mi_decl_hidden;
static inline const char* _mi_pe_fn_name(const mi_pe_syms_t* syms, const mi_pe_fn_t* fn) {
  return syms->names + fn->name;
}
/* The range [lo, hi) of the function named `name`; false if there is none. */
bool _mi_pe_syms_range(const mi_pe_syms_t* syms, const char* name, uintptr_t* lo, uintptr_t* hi) mi_decl_hidden;
/* The exported name of the function holding `pc` in the module loaded at
   `base`, only where the function (by the unwind table, x64) starts
   exactly at that export: NULL otherwise. Points into the image. */
const char* _mi_pe_export_name(uintptr_t base, uintptr_t pc) mi_decl_hidden;
/* A function of the allocator, by its name (mi_..., _mi_...). */
bool _mi_pe_allocator_name(const char* name) mi_decl_hidden;
#endif

/* ---- json.c ----------------------------------------------------------------- */
typedef struct mi_dhat_out_s {
  int fd;
  int err;
  size_t len;
  char buf[16 * 1024];
} mi_dhat_out_t;
void _mi_dhat_out_str(mi_dhat_out_t* out, const char* s) mi_decl_hidden;    /* raw text */
void _mi_dhat_out_quoted(mi_dhat_out_t* out, const char* s) mi_decl_hidden; /* a JSON string */
void _mi_dhat_out_u64(mi_dhat_out_t* out, uint64_t v) mi_decl_hidden;
void _mi_dhat_out_flush(mi_dhat_out_t* out) mi_decl_hidden;

/* ---- blocks.c ------------------------------------------------------------------ */
/* The record of a live block, kept beside the heap (blocks.c). */
typedef struct mi_dhat_rec_s {
  uint64_t time; /* 1 + its allocation time on the profiler's clock; 0: no block recorded */
  uint32_t site;
  uint32_t size; /* as counted (0 asked counts 1); MI_DHAT_SIZE_BIG: in the next record's `time` */
} mi_dhat_rec_t;
#define MI_DHAT_SIZE_BIG UINT32_MAX
/* The records, beside the segments (os/side-map.h, blocks.c) */
extern mi_side_map_t _mi_dhat_side mi_decl_hidden;
/* The record slot of the block keyed `key`, making its side array; NULL
   without memory. */
mi_dhat_rec_t* _mi_dhat_rec_make(uintptr_t key) mi_decl_hidden;

/* The key of the block that `p` (an address the allocator handed out) lies
   in: the block's start, or for a block with a segment of its own (whose
   pointer may lie anywhere in the segment's first 4 MiB) the segment. */
static inline uintptr_t _mi_dhat_key_of(const void* p) {
  mi_segment_t* segment = _mi_block_segment(p);
  if (segment->kind == MI_SEGMENT_SINGLE) return (uintptr_t)segment;
  mi_page_t* page = _mi_segment_page_of(segment, p);
  if (mi_unlikely(mi_page_flags(page) & MI_PAGE_FLAG_HAS_ALIGNED)) return (uintptr_t)_mi_page_block_start(page, p);
  return (uintptr_t)p;
}

/* The record slot of the block keyed `key`; NULL if its segment has no side
   array (yet). Inline: the hooks' common path. */
static inline mi_dhat_rec_t* _mi_dhat_rec_at(uintptr_t key) {
  return (mi_dhat_rec_t*)mi_side_at(&_mi_dhat_side, key, sizeof(mi_dhat_rec_t));
}

/* The record slot of the block holding `p`; made if `create`. NULL if there
   is none and !create, or without memory. */
static inline mi_dhat_rec_t* _mi_dhat_rec_of(const void* p, bool create) {
#if MI_SECURE
  /* secure builds check a freed pointer before they trust it: do not read a
     header that may not be one */
  if (!_mi_segment_map_contains(p)) return NULL;
#endif
  uintptr_t key = _mi_dhat_key_of(p);
  mi_dhat_rec_t* rec = _mi_dhat_rec_at(key);
  if (mi_unlikely(rec == NULL && create)) rec = _mi_dhat_rec_make(key);
  return rec;
}
/* The record slots of a page's blocks: block k's is (*recs)[k * *stride];
   returns the number of blocks carved (0: no records). */
size_t _mi_dhat_page_recs(const mi_page_t* page, mi_dhat_rec_t** recs, size_t* stride) mi_decl_hidden;

/* ---- record.c ---------------------------------------------------------------- */
/* OS memory for the profiler's tables, zeroed; sizes rounded to pages. */
void* _mi_dhat_os_alloc(size_t size) mi_decl_hidden;
void _mi_dhat_os_free(void* p, size_t size) mi_decl_hidden;
/* Grow an OS-memory array to at least `want` elements of `elem` bytes,
   keeping its contents. */
bool _mi_dhat_grow(void** arr, size_t* cap, size_t elem, size_t want) mi_decl_hidden;

#endif
