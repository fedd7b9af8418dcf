/* The teardown protocol's schedule points (sched.c), passed by the core
   layers: a test hook, not a primitive. With MI_FAULT off they vanish. */
#ifndef MI_BASE_SCHED_H
#define MI_BASE_SCHED_H

#include "../../include/mimalloc/fault.h"
#include "../compiler.h"
#include "../config.h"

#if MI_FAULT
void _mi_sched_point(mi_sched_point_t point) mi_decl_hidden;
#define mi_sched_point(point) _mi_sched_point(point)
#else
#define mi_sched_point(point) ((void)0)
#endif

#endif
