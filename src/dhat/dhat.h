/* The heap profiler's internal interface (src/dhat): stack capture
   (stack.c), symbolisation (symbolize.c), the JSON writer (json.c) and the
   recorder with its tables (record.c). Nothing here allocates from the
   allocator: tables and buffers come from the OS (_mi_os_alloc_meta). */
#ifndef MI_DHAT_INTERNAL_H
#define MI_DHAT_INTERNAL_H

#include "../internal.h"

/* Frames kept per allocation site, innermost first. Valgrind's default
   (--num-callers=12) counts the allocation function itself; ours start at
   its caller. */
#define MI_DHAT_MAX_FRAMES 16

/* ---- stack.c ---------------------------------------------------------------- */
/* Set up before recording first starts (the unwinder is loaded, the code
   ranges and `main` are found). Call with the thread's recursion guard up,
   under no lock of ours (it may allocate). */
void _mi_dhat_stack_init(void) mi_decl_hidden;
/* The return addresses of the calling thread, innermost first, starting
   outside the allocator where that can be told from the address alone
   (symbolize.c trims the rest by name). Call with the recursion guard up:
   the first call on a thread may allocate. */
int _mi_dhat_stack_capture(uintptr_t* frames, int max) mi_decl_hidden;
/* Whether `addr` lies in the code of the shared object holding the allocator
   (false when the allocator is linked into the program). */
bool _mi_dhat_addr_in_allocator(uintptr_t addr) mi_decl_hidden;
/* The calling thread's stack cache goes back to the OS. */
void _mi_dhat_stack_thread_done(void) mi_decl_hidden;
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

/* ---- json.c ----------------------------------------------------------------- */
typedef struct mi_dhat_out_s {
  int fd;
  int err;
  size_t len;
  char buf[16 * 1024];
} mi_dhat_out_t;
void _mi_dhat_out_str(mi_dhat_out_t* out, const char* s) mi_decl_hidden;   /* raw text */
void _mi_dhat_out_quoted(mi_dhat_out_t* out, const char* s) mi_decl_hidden; /* a JSON string */
void _mi_dhat_out_u64(mi_dhat_out_t* out, uint64_t v) mi_decl_hidden;
void _mi_dhat_out_flush(mi_dhat_out_t* out) mi_decl_hidden;

/* ---- record.c ---------------------------------------------------------------- */
/* OS memory for the profiler's tables, zeroed; sizes rounded to pages. */
void* _mi_dhat_os_alloc(size_t size) mi_decl_hidden;
void _mi_dhat_os_free(void* p, size_t size) mi_decl_hidden;

#endif
