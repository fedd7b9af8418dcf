/* Windows stand-in for <sys/mman.h> in the tests: anonymous private
   mappings (all the tests map) by VirtualAlloc. */
#ifndef MI_TEST_WIN_SYS_MMAN_H
#define MI_TEST_WIN_SYS_MMAN_H

#include <stddef.h>
#include <windows.h>

#define PROT_NONE 0
#define PROT_READ 1
#define PROT_WRITE 2
#define MAP_PRIVATE 2
#define MAP_ANONYMOUS 0x20
#define MAP_FAILED ((void*)-1)

static inline void* mmap(void* addr, size_t size, int prot, int flags, int fd, long offset) {
  (void)flags;
  (void)fd;
  (void)offset;
  void* p = VirtualAlloc(addr, size, MEM_RESERVE | MEM_COMMIT, (prot & PROT_WRITE) ? PAGE_READWRITE : PAGE_READONLY);
  return (p != NULL ? p : MAP_FAILED);
}

static inline int munmap(void* addr, size_t size) {
  (void)size;
  return (VirtualFree(addr, 0, MEM_RELEASE) ? 0 : -1);
}

#endif
