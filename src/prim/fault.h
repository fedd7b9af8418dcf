/* The fault-injection decision point, used by every implementation of the
   OS contract (prim.h) right where it makes its system call, so an injected
   failure takes the same error path as a real one. With MI_FAULT off the
   macros are constants and the hooks vanish. */
#ifndef MI_PRIM_FAULT_H
#define MI_PRIM_FAULT_H

#include "../../include/mimalloc/fault.h"
#include "../compiler.h"
#include "../config.h"

#if MI_FAULT
/* 0: make the call; otherwise fail it with this mi_fault_error_t + 1 */
int _mi_fault_decide(mi_fault_kind_t kind) mi_decl_hidden;
void _mi_fault_note_reserved(long long delta) mi_decl_hidden;
void _mi_fault_note_event(mi_fault_event_t event) mi_decl_hidden;
/* read MIMALLOC_FAULT_* once at process start; an invalid value is passed to
   `warn` (the caller's message function: this layer calls nothing above it) */
typedef void mi_fault_warn_fun(const char* name, const char* value);
void _mi_fault_init_from_env(mi_fault_warn_fun* warn) mi_decl_hidden;
/* with MIMALLOC_FAULT_REPORT=1: print the counters at exit */
void _mi_fault_register_report(void) mi_decl_hidden;
/* true: aligned reservations should miss their alignment (drives the
   over-reserve-and-trim path) */
bool _mi_fault_misalign(void) mi_decl_hidden;
#define mi_fault_point(kind) _mi_fault_decide(kind)
#define mi_fault_misalign() _mi_fault_misalign()
#define mi_fault_reserved(delta) _mi_fault_note_reserved(delta)
#define mi_fault_event(event) _mi_fault_note_event(event)
#else
#define mi_fault_point(kind) ((void)(kind), 0)
#define mi_fault_misalign() false
#define mi_fault_reserved(delta) ((void)(delta)) /* its operands count as used */
#define mi_fault_event(event) ((void)0)
#endif

#endif
