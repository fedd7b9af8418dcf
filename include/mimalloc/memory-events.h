/* mimalloc-pprof: memory events, a running count of the program's live
   heap and a callback per allocation, free and resize.

   Built in with the CMake option MI_MEMORY_EVENTS (on by default) and idle
   until switched on, from the environment (MIMALLOC_MEMORY_EVENTS=1) or with
   mi_memory_tracking_set_enabled. While on, every allocation, free and
   reallocation the program makes through the allocator is one event: its
   kind, the change of the live bytes it makes and their total after it.
   Bytes are usable bytes: the whole block the allocator gave (an aligned
   allocation's slack included), less what the allocator keeps in it for
   itself (the secure build's trailer). See docs/memory-events.md.

   In a build without them these functions exist and fail (they return
   false); the mi_unwrapped_* calls work in every build. */
#ifndef MIMALLOC_MEMORY_EVENTS_H
#define MIMALLOC_MEMORY_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h> /* mi_memory_snapshot_t_decl */

#include "../mimalloc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Events ------------------------------------------------------------------ */

typedef enum mi_memory_change_kind_e {
  MI_MEMORY_ALLOCATE, /* a block handed to the program */
  MI_MEMORY_FREE,     /* a block the program gave back */
  MI_MEMORY_RESIZE,   /* a reallocation, in place or moved: one event */
  MI_MEMORY_CHANGE_COUNT
} mi_memory_change_kind_t;

typedef struct mi_memory_change_s {
  mi_memory_change_kind_t kind;
  uint64_t total_bytes;  /* the live usable bytes counted, after this operation */
  int64_t delta_bytes;   /* + an allocation or a growth, - a free or a shrink, 0 a resize within its block */
  uint64_t request_size; /* the size asked for (ALLOCATE, RESIZE); 0 for FREE */
} mi_memory_change_t;

/* Called on the thread that made the operation, after it, with no lock of
   the allocator held. It may allocate and free: on that thread those
   nested operations are not counted and not reported. */
typedef void(mi_cdecl mi_memory_change_fun)(const mi_memory_change_t* change, void* arg);

typedef struct mi_memory_callbacks_s {
  mi_memory_change_fun* handlers[MI_MEMORY_CHANGE_COUNT]; /* NULL: none for that kind */
  void* args[MI_MEMORY_CHANGE_COUNT];                     /* each valid until the table is replaced */
} mi_memory_callbacks_t;

/* Switch the counting and the callbacks on or off (it wins over
   MIMALLOC_MEMORY_EVENTS, before or after the environment is read). Off,
   an operation costs one relaxed load. Switched on again, the live counts
   start from zero: the blocks of before are not counted when freed. True
   iff built in. */
mi_decl_export bool mi_memory_tracking_set_enabled(bool enabled) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export bool mi_memory_tracking_is_enabled(void) mi_attr_noexcept;
/* Install the handlers (the table is copied; NULL removes them all). True
   iff built in. */
mi_decl_export bool mi_memory_set_callbacks(const mi_memory_callbacks_t* callbacks) mi_attr_noexcept;

/* ---- Counts -------------------------------------------------------------------- */

#define MI_MEMORY_SNAPSHOT_VERSION 1
typedef struct mi_memory_snapshot_s {
  size_t size;          /* sizeof(mi_memory_snapshot_t) */
  int version;          /* MI_MEMORY_SNAPSHOT_VERSION */
  uint64_t live_bytes;  /* usable bytes of the counted blocks still live */
  uint64_t accum_bytes; /* usable bytes ever allocated, and grown by a resize */
  uint64_t live_count;  /* counted blocks still live */
  uint64_t accum_count; /* allocations counted */
} mi_memory_snapshot_t;
/* a snapshot variable ready for mi_memory_snapshot */
/* (a declaration: the name cannot be parenthesized) */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define mi_memory_snapshot_t_decl(name) \
  mi_memory_snapshot_t name; \
  memset(&name, 0, sizeof(name)); \
  name.size = sizeof(mi_memory_snapshot_t); \
  name.version = MI_MEMORY_SNAPSHOT_VERSION
/* NOLINTEND(bugprone-macro-parentheses) */
/* The counts now. False for NULL, a size or version not this header's, or
   a build without memory events. */
mi_decl_export bool mi_memory_snapshot(mi_memory_snapshot_t* out) mi_attr_noexcept;

/* Every live block of the calling thread's heaps, with its usable bytes
   (an aligned block by its start). The visitor must not allocate, free or
   call the allocator; returning false stops the walk. False when stopped,
   when called from a memory-events handler, or not built in. */
typedef bool(mi_cdecl mi_memory_allocation_visit_fun)(void* allocation, size_t usable_size, void* arg);
mi_decl_export bool mi_memory_visit_live_allocations(mi_memory_allocation_visit_fun* visitor,
                                                     void* arg) mi_attr_noexcept;

/* ---- Memory outside the heap ------------------------------------------------------ */

/* One mapping from the OS per call, outside the heap, its statistics and
   its events: for memory a tracker must not see (its own tables). The
   pointer is aligned to `alignment` (0: to a pointer; a power of two).
   mi_unwrapped_free takes only pointers these calls returned: another
   pointer is reported (EINVAL) and left alone. */
mi_decl_nodiscard mi_decl_export void* mi_unwrapped_malloc(size_t size, size_t alignment) mi_attr_noexcept;
mi_decl_export void mi_unwrapped_free(void* p) mi_attr_noexcept;
/* A new mapping with the contents copied (NULL p: as mi_unwrapped_malloc);
   on failure NULL, and p stays valid. */
mi_decl_nodiscard mi_decl_export void* mi_unwrapped_realloc(void* p, size_t new_size,
                                                            size_t alignment) mi_attr_noexcept;

#ifdef __cplusplus
}
#endif

#endif
