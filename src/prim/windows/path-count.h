/* Which paths of the Windows primitives a run took: counted always (one
   relaxed add on calls that are system calls anyway), read by the Windows
   tests to show what Wine exercised (docs/windows.md). */
#ifndef MI_PRIM_WIN_PATH_COUNT_H
#define MI_PRIM_WIN_PATH_COUNT_H

#include "../../compiler.h"

typedef enum mi_win_path_e {
  MI_WIN_ALIGNED_VA2 = 0,     /* aligned reservation by VirtualAlloc2 with MEM_ADDRESS_REQUIREMENTS */
  MI_WIN_ALIGNED_VA2_REFUSED, /* ... VirtualAlloc2 refused the requirement: placed instead */
  MI_WIN_ALIGNED_PLACED,      /* over-reserve, release, reserve at the aligned address */
  MI_WIN_ALIGNED_PLACE_LOST,  /* ... another reservation took the hole: tried again */
  MI_WIN_ALIGNED_UNPLACED,    /* ... every try lost: a plain reservation (os.c places it) */
  MI_WIN_PLAIN,               /* reservation with no alignment asked */
  MI_WIN_AT,                  /* reservation at an exact address (mi_prim_alloc_at) */
  MI_WIN_RELEASE,             /* MEM_RELEASE of a reservation's base */
  MI_WIN_RELEASE_BY_QUERY,    /* ... an interior pointer: the base found with VirtualQuery */
  MI_WIN_COMMIT,              /* MEM_COMMIT */
  MI_WIN_DECOMMIT,            /* MEM_DECOMMIT */
  MI_WIN_PURGE_RESET,         /* lazy purge: MEM_RESET */
  MI_WIN_PURGE_RECOMMIT,      /* eager purge: MEM_DECOMMIT then MEM_COMMIT (reads as zero) */
  MI_WIN_PROTECT,             /* VirtualProtect */
  MI_WIN_LARGE,               /* MEM_LARGE_PAGES granted */
  MI_WIN_LARGE_NO_PRIVILEGE,  /* SeLockMemoryPrivilege could not be enabled */
  MI_WIN_HUGE,                /* 1 GiB pages granted (MEM_EXTENDED_PARAMETER_NONPAGED_HUGE) */
  MI_WIN_HUGE_NO_VA2,         /* no VirtualAlloc2: huge pages unsupported */
  MI_WIN_INJECTED,            /* a failure injected with a Windows error code */
  MI_WIN_OOM_MAPPED,          /* a failure whose code mapped to ENOMEM */
  MI_WIN_OTHER_MAPPED,        /* a failure whose code mapped to something else */
  MI_WIN_THREAD_EXIT_HOOK,    /* the thread-exit hook ran for a thread with allocator data */
  MI_WIN_PATH_COUNT
} mi_win_path_t;

/* How often `path` was taken since the process started. */
unsigned long long _mi_win_path_count(mi_win_path_t path) mi_decl_hidden;
const char* _mi_win_path_name(mi_win_path_t path) mi_decl_hidden;

#endif
