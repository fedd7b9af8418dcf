/* Force-included into the Windows test builds (-include): the few POSIX
   calls the shared test sources make that have a direct Windows meaning.
   Anything with no such meaning (fork, signals) has a Windows branch in
   the test itself instead. */
#ifndef MI_TEST_WIN_POSIX_COMPAT_H
#define MI_TEST_WIN_POSIX_COMPAT_H

#include <limits.h>
#include <stdlib.h>
#include <windows.h>

#ifndef _SC_PAGESIZE
#define _SC_PAGESIZE 30
#endif
static inline long mi_compat_sysconf(int name) {
  if (name != _SC_PAGESIZE) return -1;
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  return (long)si.dwPageSize;
}
#define sysconf(name) mi_compat_sysconf(name)

/* the C runtime's absolute path of what exists, as mi_realpath on Windows */
#include <io.h>
static inline char* mi_compat_realpath(const char* path, char* resolved) {
  if (_access(path, 0) != 0) return NULL;
  return _fullpath(resolved, path, PATH_MAX);
}
#define realpath(path, resolved) mi_compat_realpath(path, resolved)

#endif
