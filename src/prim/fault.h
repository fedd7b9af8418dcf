/* The fault-injection decision point, used by every implementation of the
   OS contract (prim.h) right where it makes its system call, so an injected
   failure takes the same error path as a real one. With MI_FAULT off the
   macros are constants and the hooks vanish. */
#ifndef MI_PRIM_FAULT_H
#define MI_PRIM_FAULT_H

#include "../../include/mimalloc/fault.h"

#if MI_FAULT
/* 0: make the call; otherwise fail it with this mi_fault_error_t + 1 */
int _mi_fault_decide(mi_fault_kind_t kind) __attribute__((visibility("hidden")));
void _mi_fault_note_reserved(long long delta) __attribute__((visibility("hidden")));
void _mi_fault_note_event(mi_fault_event_t event) __attribute__((visibility("hidden")));
/* read MIMALLOC_FAULT_* once at process start */
void _mi_fault_init_from_env(void) __attribute__((visibility("hidden")));
/* with MIMALLOC_FAULT_REPORT=1: print the counters at exit */
void _mi_fault_register_report(void) __attribute__((visibility("hidden")));
/* true: aligned reservations should miss their alignment (drives the
   over-reserve-and-trim path) */
bool _mi_fault_misalign(void) __attribute__((visibility("hidden")));
#define mi_fault_point(kind) _mi_fault_decide(kind)
#define mi_fault_misalign() _mi_fault_misalign()
#define mi_fault_reserved(delta) _mi_fault_note_reserved(delta)
#define mi_fault_event(event) _mi_fault_note_event(event)
/* a step of the teardown protocol: the test hook may yield, sleep or wait here */
void _mi_sched_point(mi_sched_point_t point) __attribute__((visibility("hidden")));
#define mi_sched_point(point) _mi_sched_point(point)
#else
#define mi_fault_point(kind) ((void)(kind), 0)
#define mi_fault_misalign() false
#define mi_fault_reserved(delta) ((void)0)
#define mi_fault_event(event) ((void)0)
#define mi_sched_point(point) ((void)0)
#endif

#endif
