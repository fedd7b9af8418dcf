/* The memory events' internal interface (src/events, MI_MEMORY_EVENTS):
   the counting and the calls (events.c), the record of each counted block
   (records.c), the ETW provider (etw-windows.c, MI_TRACK_ETW) and the
   memory outside the heap (unwrapped.c, every build). Nothing here
   allocates from the allocator: the records are OS memory. */
#ifndef MI_EVENTS_INTERNAL_H
#define MI_EVENTS_INTERNAL_H

#include "../heap/heap.h"
#include "hooks.h"
#include "../os/side-map.h"
#include "../../include/mimalloc/memory-events.h"

#if MI_MEMORY_EVENTS
/* ---- records.c --------------------------------------------------------------
   One byte per 16 bytes of a segment's first 4 MiB, beside the heap (OS
   memory mapped as records are first written): the mark of the switch-on
   under which the block starting there was counted, 0 if none. A block is
   keyed by its start (an aligned pointer's block by the block's), a
   single-block segment's by the segment. */
_Atomic(uint8_t)* _mi_events_record(uintptr_t key, bool create) mi_decl_hidden; /* NULL: none (or no memory) */
/* Every record reads 0 again (the marks wrapped around), under `memevt`. */
void _mi_events_records_clear(void) mi_decl_hidden;
void _mi_events_records_unmapped(const void* segment) mi_decl_hidden;

/* ---- events.c ---------------------------------------------------------------- */
/* The observers' word bit MI_OBSERVER_EVENTS is set iff counting is on or
   an ETW session listens; called when either changes. */
void _mi_events_rearm(void) mi_decl_hidden;

/* ---- etw-windows.c ----------------------------------------------------------- */
#if MI_TRACK_ETW
#define MI_ETW_EVENT_ALLOC 100
#define MI_ETW_EVENT_FREE 101
extern _Atomic(bool) _mi_etw_listening mi_decl_hidden; /* a session enabled the provider */
void _mi_etw_register(void) mi_decl_hidden;
void _mi_etw_unregister(void) mi_decl_hidden;
/* event 100 (`alloc`) or 101: the program's pointer and its usable bytes */
void _mi_etw_write(bool alloc, const void* p, uint64_t size) mi_decl_hidden;
#endif
#endif

#endif
