/* The secure build's reports: one line on stderr (what, which address,
   which size: scripts and tests read it), then what the detecting code
   knows of the block (its size, the size asked for, where the bad byte
   lies), the thread, whether the misuse was caught late and how to catch it
   at the act; then what the features listening add (the secure front: the
   stack where it was seen, the report's JSON copy); the error callback, and
   abort. Nothing here allocates: the heap may be what is corrupted. */
#include "base.h"
#include "listeners.h"
#include "../secure/secure.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the kind by the first line's words, for the reports that give only those */
static const struct {
  const char* prefix;
  const char* kind;
} mi_report_kinds[] = {
    {"double free", "double-free"},
    {"invalid free detected of interior pointer", "interior-free"},
    {"use of a freed block", "freed-block-use"},
    {"heap buffer overflow", "heap-buffer-overflow"},
    {"use-after-free write", "use-after-free-write"},
    {"allocation kind mismatch", "kind-mismatch"},
    {"sized deallocation mismatch", "sized-delete-mismatch"},
    {"invalid aligned deallocation", "aligned-delete-mismatch"},
    {"corrupted free list", "corrupted-free-list"},
    {"corrupted segment header", "corrupted-header"},
    {"invalid heap", "invalid-heap"},
    {"invalid ", "invalid-pointer"},
};

const char* _mi_secure_report_kind(const mi_secure_report_t* report) {
  if (report->kind != NULL) return report->kind;
  for (size_t i = 0; i < sizeof(mi_report_kinds) / sizeof(mi_report_kinds[0]); i++) {
    if (strncmp(report->what, mi_report_kinds[i].prefix, strlen(mi_report_kinds[i].prefix)) == 0) {
      return mi_report_kinds[i].kind;
    }
  }
  return "misuse";
}

static void mi_report_line(const char* fmt, ...) mi_attr_printf(1, 2);
static void mi_report_line(const char* fmt, ...) {
  char buf[320];
  va_list args;
  va_start(args, fmt);
  /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above; clang 14 misreads it */
  (void)vsnprintf(buf, sizeof(buf), fmt, args); /* cut to the buffer */
  va_end(args);
  _mi_fputs(NULL, NULL, NULL, buf);
}

/* One report a process: a second thread that finds a misuse meanwhile waits
   for the first to end the process; a report found while reporting (the
   reporter's own call into the heap) is only its first line. A fault's
   report lets go when done (the signal then takes its course, and a
   program's own handler may let the process go on). */
static _Atomic(long) mi_reporting_thread;

bool _mi_secure_report_claim(bool wait) {
  long self = mi_prim_thread_os_id();
  long other = 0;
  if (atomic_compare_exchange_strong_explicit(&mi_reporting_thread, &other, self, memory_order_acq_rel,
                                              memory_order_acquire)) {
    return true;
  }
  if (other == self || !wait) return false;
  for (;;) mi_prim_yield();
}

void _mi_secure_report_release(void) {
  atomic_store_explicit(&mi_reporting_thread, 0, memory_order_release);
}

void _mi_secure_report_lines(mi_secure_report_t* report) {
  report->kind = _mi_secure_report_kind(report);
  if (report->block != NULL) {
    char size[48] = "";
    char requested[48] = "";
    char offset[96] = "";
    if (report->block_size != 0) (void)snprintf(size, sizeof(size), " of %zu bytes", report->block_size);
    if (report->requested != MI_REPORT_UNKNOWN) {
      (void)snprintf(requested, sizeof(requested), ", %zu asked for", report->requested);
    }
    if (report->offset != MI_REPORT_UNKNOWN && strcmp(report->kind, "interior-free") == 0) {
      (void)snprintf(offset, sizeof(offset), "; the pointer freed at offset %zu", report->offset);
    } else if (report->offset != MI_REPORT_UNKNOWN) {
      if (report->requested != MI_REPORT_UNKNOWN && report->offset >= report->requested) {
        (void)snprintf(offset, sizeof(offset), "; the bad byte at offset %zu, %zu past the end asked for",
                       report->offset, report->offset - report->requested);
      } else {
        (void)snprintf(offset, sizeof(offset), "; the bad byte at offset %zu", report->offset);
      }
    }
    mi_report_line("mimalloc:   block 0x%zx%s%s%s\n", (size_t)(uintptr_t)report->block, size, requested, offset);
  }
  mi_report_line("mimalloc:   detected by thread %ld\n", mi_prim_thread_os_id());
  if (report->late != NULL) {
    mi_report_line(
        "mimalloc:   caught late: %s, not at the write itself; to stop at the write, rerun with "
        "MIMALLOC_GUARDED_SAMPLE_RATE=1 (a guard page after every block up to "
        "MIMALLOC_GUARDED_MAX bytes: slow)\n",
        report->late);
  }
}

mi_decl_noreturn void _mi_secure_fatal_report(mi_secure_report_t* report) {
  if (!_mi_secure_report_claim(true)) {
    mi_report_line("mimalloc: error: %s 0x%zx (size %zu), while reporting\n", report->what,
                   (size_t)(uintptr_t)report->address, report->size);
    abort();
  }
  /* addresses as 0x..., the same on every platform (a C library's %p is its own: MinGW's has no 0x) */
  mi_report_line("mimalloc: error: %s 0x%zx (size %zu)\n", report->what, (size_t)(uintptr_t)report->address,
                 report->size);
  _mi_secure_report_lines(report);
  _mi_raise_secure_report(report);
  atomic_fetch_add_explicit(&_mi_stats.secure_reports, 1, memory_order_relaxed);
  _mi_error_callback(EFAULT);
  abort();
}

void _mi_secure_fatal(const char* what, const void* p, size_t size) {
  mi_secure_report_t report = {
      .what = what, .address = p, .size = size, .requested = MI_REPORT_UNKNOWN, .offset = MI_REPORT_UNKNOWN};
  _mi_secure_fatal_report(&report);
}

mi_decl_noreturn void _mi_secure_report_block(const char* what, const void* p, const void* block, size_t block_size,
                                              size_t requested, size_t offset, const char* late) {
  mi_secure_report_t report = {.what = what,
                               .address = p,
                               .size = (requested != MI_REPORT_UNKNOWN ? requested : block_size),
                               .block = block,
                               .block_size = block_size,
                               .requested = requested,
                               .offset = offset,
                               .late = late};
  _mi_secure_fatal_report(&report);
}

/* A freed block written to: found when it is zero no more (freed blocks are
   zeroed), at the first byte from `from` that is not (the bytes before it
   hold the free list's link). */
mi_decl_noreturn void _mi_secure_report_stale_write(const void* block, size_t block_size, size_t from,
                                                    const char* late) {
  const uint8_t* b = (const uint8_t*)block;
  size_t offset = from;
  while (offset < block_size && b[offset] == 0) offset++;
  _mi_secure_report_block("use-after-free write detected in block", block, block, block_size, MI_REPORT_UNKNOWN,
                          offset < block_size ? offset : MI_REPORT_UNKNOWN, late);
}

mi_noinline mi_decl_noreturn void _mi_secure_report_free_list(const void* block, size_t block_size) {
  _mi_secure_report_block("corrupted free list detected at", block, block, block_size, MI_REPORT_UNKNOWN, 0,
                          "when the block was handed out again");
}

static const char* const mi_op_names[] = {"free", "realloc", "usable_size", "visit"};

mi_decl_noreturn void _mi_secure_fatal_op(mi_secure_op_t op, const char* what, const void* p, size_t size) {
  char buf[96];
  (void)snprintf(buf, sizeof(buf), "invalid %s detected of pointer", mi_op_names[op]);
  _mi_secure_fatal(what != NULL ? what : buf, p, size);
}

/* A pointer to a block already freed: a double free, or a use after free
   through the other entry points. */
mi_decl_noreturn void _mi_secure_report_freed(mi_secure_op_t op, const void* p, size_t size) {
  if (size == 0) {
    _mi_secure_fatal_op(op, op == MI_OP_FREE ? "double free detected of block" : "use of a freed block detected at", p,
                        size);
  }
  _mi_secure_report_block(op == MI_OP_FREE ? "double free detected of block" : "use of a freed block detected at", p, p,
                          size, MI_REPORT_UNKNOWN, MI_REPORT_UNKNOWN, NULL);
}

/* A block freed (or reallocated) by a call of another family than the one
   that allocated it: `(new[] freed by delete)`. */
static const char* const mi_kind_alloc_names[] = {"malloc", "new", "new[]", "aligned new", "aligned new[]"};
static const char* const mi_kind_free_names[] = {"free", "delete", "delete[]", "aligned delete", "aligned delete[]"};

mi_decl_noreturn void _mi_secure_report_kind_mismatch(mi_alloc_kind_t found, mi_alloc_kind_t expected,
                                                      mi_secure_op_t op, const void* p, size_t size) {
  char buf[128];
  const char* by =
      (op == MI_OP_REALLOC ? "realloc" : (expected <= MI_KIND_NEW_ARRAY_ALIGNED ? mi_kind_free_names[expected] : "?"));
  const char* what = (found <= MI_KIND_NEW_ARRAY_ALIGNED ? mi_kind_alloc_names[found] : "?");
  (void)snprintf(buf, sizeof(buf), "allocation kind mismatch detected (%s %s by %s) of block", what,
                 op == MI_OP_REALLOC ? "resized" : "freed", by);
  _mi_secure_report_block(buf, p, p, 0, size, MI_REPORT_UNKNOWN, NULL);
}
