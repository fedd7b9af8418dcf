/* What the POSIX implementation's files (prim.c: memory; sys.c: clock,
   random, process, output, environment, files, stacks; thread.c: locks,
   threads, signals, fork) share: the system headers, the configuration
   mi_prim_init found, and how a failure becomes an error code. */
#ifndef MI_PRIM_UNIX_H
#define MI_PRIM_UNIX_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "../prim.h"
#include "../fault.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <ucontext.h> /* a fault's registers */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h> /* process_vm_readv */
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h> /* PR_SET_THP_DISABLE */
#include <sys/random.h>
#endif

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

/* set by mi_prim_init (prim.c) */
extern mi_prim_config_t _mi_unix_config mi_decl_hidden;
/* sys.c: the process's and thread's numbers kept, forgotten in a fork's child (thread.c) */
void _mi_prim_ids_forget(void) mi_decl_hidden;
extern int64_t _mi_unix_start_ms mi_decl_hidden;

static inline int mi_prim_errno(void) {
  return (errno == 0 ? ENOMEM : errno);
}

/* An injected failure sets errno as the system call would have, then takes
   the same path as a real failure. */
static inline bool mi_prim_fault(mi_fault_kind_t kind) {
  int f = mi_fault_point(kind);
  if (f == 0) return false;
  errno = (f == mi_fault_error_oom + 1 ? ENOMEM : (f == mi_fault_error_again + 1 ? EAGAIN : EINVAL));
  return true;
}

#endif
