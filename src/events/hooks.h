/* The memory events' entry points (MI_MEMORY_EVENTS), called through the
   observers' dispatch (api/observe.h) and the rare events (base/listeners.h,
   their listener): the floors below api/ never include this header. Only declarations of the base layer's types. */
#ifndef MI_EVENTS_HOOKS_H
#define MI_EVENTS_HOOKS_H

#include "../base/base.h"

#if MI_MEMORY_EVENTS
/* What a free or a reallocation takes of its block before the block may go
   (another thread may be handed the same address once it has): the block's
   usable bytes and, when it was counted, its record, taken out. */
typedef struct mi_events_held_s {
  bool armed;    /* the operation is told (not suppressed) */
  bool counted;  /* the block was counted, its record taken out (to put back if the call fails) */
  uint8_t mark;  /* the record's value */
  void* p;       /* the program's pointer */
  uintptr_t key; /* where the record is */
  size_t usable;
} mi_events_held_t;

/* A block handed to the program (not NULL): ALLOCATE. */
void _mi_events_alloc(void* p, size_t size) mi_decl_hidden;
/* Before a free (`realloc` false) or a reallocation of p: the secure build
   validates p first (a double or invalid free is reported before anything
   is counted). p may be NULL. */
void _mi_events_take(void* p, bool realloc, mi_events_held_t* held) mi_decl_hidden;
/* After the free: FREE. */
void _mi_events_free_done(mi_events_held_t* held) mi_decl_hidden;
/* After the reallocation (newp NULL: it failed, the block stays). */
void _mi_events_realloc_done(mi_events_held_t* held, void* newp, size_t newsize) mi_decl_hidden;
/* A destroyed heap's page goes with the blocks it still holds: FREE each. */
void _mi_events_page_gone(const mi_page_t* page) mi_decl_hidden;
/* A segment's range goes back to the OS: the records kept beside it go. */
void _mi_events_segment_unmapped(const void* segment) mi_decl_hidden;
/* The locks made (process set-up, before any is taken). */
void _mi_events_process_init(void) mi_decl_hidden;
/* MIMALLOC_MEMORY_EVENTS read; the ETW provider registered (and at exit
   unregistered). */
void _mi_events_process_ready(void) mi_decl_hidden;
void _mi_events_process_done(void) mi_decl_hidden;
#endif

/* unwrapped.c (every build): its lock made at the process set-up. */
void _mi_unwrapped_process_init(void) mi_decl_hidden;

#endif
