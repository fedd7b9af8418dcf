/* The secure build's reports: one line on stderr (what, which address, which
   size), the error callback, then abort. */
#include "block.h"

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
