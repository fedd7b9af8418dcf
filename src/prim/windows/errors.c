/* Windows error codes to the contract's errno-style codes, the path
   counters, and run-time binding. The mapping decides what os.c retries:
   exactly the codes that mean "no memory or commit charge now" become
   ENOMEM, as ENOMEM and EAGAIN are on POSIX. */
#include "win.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

int _mi_win_errno_of(DWORD err) {
  switch (err) {
    case 0: /* no code: a failure all the same, and memory is the likely cause */
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
    case ERROR_COMMITMENT_LIMIT:
    case ERROR_COMMITMENT_MINIMUM:
    case ERROR_PAGEFILE_QUOTA:
    case ERROR_NO_SYSTEM_RESOURCES: _mi_win_path_note(MI_WIN_OOM_MAPPED); return ENOMEM;
    default: break;
  }
  _mi_win_path_note(MI_WIN_OTHER_MAPPED);
  switch (err) {
    case ERROR_INVALID_ADDRESS:
    case ERROR_INVALID_PARAMETER:
    case ERROR_INVALID_HANDLE: return EINVAL;
    case ERROR_ACCESS_DENIED:
    case ERROR_PRIVILEGE_NOT_HELD: return EPERM;
    case ERROR_NOT_SUPPORTED:
    case ERROR_CALL_NOT_IMPLEMENTED:
    case ERROR_INVALID_FUNCTION: return ENOTSUP;
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND: return ENOENT;
    default: return EFAULT;
  }
}

int _mi_win_errno(void) {
  return _mi_win_errno_of(GetLastError());
}

static _Atomic(unsigned long long) mi_win_paths[MI_WIN_PATH_COUNT];

void _mi_win_path_note(mi_win_path_t path) {
  atomic_fetch_add_explicit(&mi_win_paths[path], 1, memory_order_relaxed);
}

unsigned long long _mi_win_path_count(mi_win_path_t path) {
  if ((unsigned)path >= MI_WIN_PATH_COUNT) return 0;
  return atomic_load_explicit(&mi_win_paths[path], memory_order_relaxed);
}

static const char* const mi_win_path_names[MI_WIN_PATH_COUNT] = {"aligned_va2",
                                                                 "aligned_va2_refused",
                                                                 "aligned_placed",
                                                                 "aligned_place_lost",
                                                                 "aligned_unplaced",
                                                                 "plain",
                                                                 "at",
                                                                 "release",
                                                                 "release_by_query",
                                                                 "commit",
                                                                 "decommit",
                                                                 "purge_reset",
                                                                 "purge_recommit",
                                                                 "protect",
                                                                 "large",
                                                                 "large_no_privilege",
                                                                 "huge",
                                                                 "huge_no_va2",
                                                                 "injected",
                                                                 "oom_mapped",
                                                                 "other_mapped",
                                                                 "thread_exit_hook"};

const char* _mi_win_path_name(mi_win_path_t path) {
  return ((unsigned)path < MI_WIN_PATH_COUNT ? mi_win_path_names[path] : "?");
}

void* _mi_win_bind(const char* module, const char* name, bool load) {
  HMODULE h = GetModuleHandleA(module);
  if (h == NULL && load) h = LoadLibraryA(module);
  if (h == NULL) return NULL;
  FARPROC f = GetProcAddress(h, name);
  void* p;
  _Static_assert(sizeof(p) == sizeof(f), "function and data pointers differ");
  memcpy(&p, &f, sizeof(p));
  return p;
}
