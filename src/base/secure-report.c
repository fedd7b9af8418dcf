/* The secure build's reports: one line on stderr (what, which address, which
   size), the error callback, then abort. */
#include "base.h"
#include "../secure/secure.h"

#include <stdio.h>
#include <stdlib.h>

void _mi_secure_fatal(const char* what, const void* p, size_t size) {
  char buf[256];
  (void)snprintf(buf, sizeof(buf), "mimalloc: error: %s %p (size %zu)\n", what, p, size); /* cut to the buffer */
  _mi_fputs(NULL, NULL, NULL, buf);
  atomic_fetch_add_explicit(&_mi_stats.secure_reports, 1, memory_order_relaxed);
  _mi_error_callback(EFAULT);
  abort();
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
  _mi_secure_fatal_op(op, op == MI_OP_FREE ? "double free detected of block" : "use of a freed block detected at", p,
                      size);
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
  _mi_secure_fatal(buf, p, size);
}
