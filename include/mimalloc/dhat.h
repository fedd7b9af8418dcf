/* mimalloc-pprof: exact heap profiling in Valgrind DHAT's file format.

   Built in with the CMake option MI_DHAT (on by default). It records nothing
   until started, from the environment (MIMALLOC_DHAT=1, file name from
   MIMALLOC_DHAT_FILE, default "dhat-heap.json", "%p" expands to the process
   id; the file is written at exit) or with the calls below. Every allocation,
   reallocation and free through the allocator is counted while it runs; the
   file opens in Valgrind's viewer (dh_view.html). See docs/profiling.md.

   In a build without the profiler these functions exist and fail (start and
   dump return false). */
#ifndef MIMALLOC_DHAT_H
#define MIMALLOC_DHAT_H

#include <stdbool.h>

#include "../mimalloc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Start recording (again): the profile restarts empty. Blocks allocated
   before the start are not counted, and their frees are ignored. False if
   the profiler is not built in or could not get memory. */
mi_decl_export bool mi_dhat_start(void) mi_attr_noexcept;
/* Stop recording; what was recorded is kept for mi_dhat_dump. */
mi_decl_export void mi_dhat_stop(void) mi_attr_noexcept;
/* Write the profile so far to `path` ("%p": the process id; NULL: the
   MIMALLOC_DHAT_FILE name). Recording goes on if it was on. Blocks still
   live count as live at the end ("t-end" is now). False on failure (errno
   set). */
mi_decl_export bool mi_dhat_dump(const char* path) mi_attr_noexcept;
/* Whether the profiler is recording. */
mi_decl_export bool mi_dhat_is_running(void) mi_attr_noexcept;

#ifdef __cplusplus
}
#endif

#endif
