/* Windows implementation of the OS contract (prim.h): memory. Reservations
   and commit with VirtualAlloc, decommit and release with VirtualFree,
   large and huge pages with the lock-memory privilege. The rest of the
   contract is in sys.c (clock, random, process, files) and thread.c (locks,
   threads, thread exit). See docs/windows.md. */
#include "win.h"
#include "../fault.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

static mi_prim_config_t prim_config;

/* VirtualAlloc2 (Windows 10 1803+): aligned reservations and 1 GiB pages.
   Bound at run time so the binary still starts where it is missing. */
typedef PVOID(WINAPI* mi_virtual_alloc2_fn)(HANDLE process, PVOID base, SIZE_T size, ULONG type, ULONG protect,
                                            MEM_EXTENDED_PARAMETER* params, ULONG count);
static mi_virtual_alloc2_fn prim_virtual_alloc2;

void _mi_win_sys_init(void) mi_decl_hidden; /* sys.c */

void mi_prim_init(mi_prim_config_t* config) {
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  config->page_size = (si.dwPageSize > 0 ? si.dwPageSize : 4096);
  config->alloc_granularity = (si.dwAllocationGranularity > 0 ? si.dwAllocationGranularity : 65536);
  SIZE_T large = GetLargePageMinimum();
  config->large_page_size = (large == ((size_t)2 << 20) ? large : 0); /* the common code sizes for 2 MiB */
  config->has_overcommit = false; /* committed memory is charged against the commit limit at once */
  config->has_madv_free = false;
  config->has_partial_free = false; /* MEM_RELEASE takes a whole reservation or nothing */
  prim_config = *config;
  _mi_win_use_virtual_alloc2(true);
  _mi_win_sys_init();
}

bool _mi_win_use_virtual_alloc2(bool use) {
  prim_virtual_alloc2 = (use ? (mi_virtual_alloc2_fn)_mi_win_bind("kernelbase.dll", "VirtualAlloc2", false) : NULL);
  return (prim_virtual_alloc2 != NULL);
}

/* An injected failure sets the Windows error the call would have left
   (out of memory, commit limit reached, or an address the call rejects)
   and then takes the same path as a real failure: GetLastError, mapped. */
static bool mi_win_fault(mi_fault_kind_t kind) {
  int f = mi_fault_point(kind);
  if (f == 0) return false;
  _mi_win_path_note(MI_WIN_INJECTED);
  SetLastError(f == mi_fault_error_oom + 1     ? ERROR_NOT_ENOUGH_MEMORY
               : f == mi_fault_error_again + 1 ? ERROR_COMMITMENT_LIMIT
                                               : ERROR_INVALID_ADDRESS);
  return true;
}

/* ---- Reservations ---------------------------------------------------------------- */

static DWORD mi_win_alloc_type(bool commit) {
  return MEM_RESERVE | (commit ? MEM_COMMIT : 0);
}
static DWORD mi_win_protect(bool commit) {
  return (commit ? PAGE_READWRITE : PAGE_NOACCESS);
}

static void* mi_win_alloc_va2_aligned(size_t size, size_t alignment, bool commit) {
  MEM_ADDRESS_REQUIREMENTS req;
  memset(&req, 0, sizeof(req));
  req.Alignment = alignment;
  MEM_EXTENDED_PARAMETER param;
  memset(&param, 0, sizeof(param));
  param.Type = MemExtendedParameterAddressRequirements;
  param.Pointer = &req;
  return prim_virtual_alloc2(GetCurrentProcess(), NULL, size, mi_win_alloc_type(commit), mi_win_protect(commit), &param,
                             1);
}

/* Reserve `size` at `offset` past an aligned address: reserve enough to
   find one, give it back whole, and reserve there. Another thread may take
   the hole in between: NULL then, with the error of the last call. */
static void* mi_win_alloc_placed(size_t size, size_t alignment, size_t offset, bool commit) {
  size_t over = size + alignment + offset;
  void* probe = VirtualAlloc(NULL, over, MEM_RESERVE, PAGE_NOACCESS);
  if (probe == NULL) return NULL;
  uintptr_t aligned = ((uintptr_t)probe + alignment - 1) & ~(uintptr_t)(alignment - 1);
  /* a reservation of our own, released from its base: cannot fail */
  VirtualFree(probe, 0, MEM_RELEASE);
  return VirtualAlloc((void*)(aligned + offset), size, mi_win_alloc_type(commit), mi_win_protect(commit));
}

#define MI_WIN_PLACE_TRIES 3

static void* mi_win_alloc_aligned(size_t size, size_t alignment, bool commit) {
  if (mi_fault_misalign()) {
    /* test knob: land one allocation granule past the aligned address */
    void* p = mi_win_alloc_placed(size, alignment, prim_config.alloc_granularity, commit);
    if (p != NULL) return p;
  } else if (prim_virtual_alloc2 != NULL) {
    void* p = mi_win_alloc_va2_aligned(size, alignment, commit);
    if (p != NULL) {
      _mi_win_path_note(MI_WIN_ALIGNED_VA2);
      return p;
    }
    DWORD err = GetLastError();
    if (err != ERROR_INVALID_PARAMETER && err != ERROR_NOT_SUPPORTED) return NULL; /* placing will not help */
    _mi_win_path_note(MI_WIN_ALIGNED_VA2_REFUSED);
  }
  for (int i = 0; i < MI_WIN_PLACE_TRIES && !mi_fault_misalign(); i++) {
    void* p = mi_win_alloc_placed(size, alignment, 0, commit);
    if (p != NULL) {
      _mi_win_path_note(MI_WIN_ALIGNED_PLACED);
      return p;
    }
    if (GetLastError() != ERROR_INVALID_ADDRESS) return NULL; /* not a lost race */
    _mi_win_path_note(MI_WIN_ALIGNED_PLACE_LOST);
  }
  _mi_win_path_note(MI_WIN_ALIGNED_UNPLACED);
  return VirtualAlloc(NULL, size, mi_win_alloc_type(commit), mi_win_protect(commit));
}

int mi_prim_alloc(size_t size, size_t try_alignment, bool commit, bool allow_large, bool* is_large, void** addr) {
  (void)allow_large; /* Windows has no transparent large pages: explicit ones only (below) */
  *is_large = false;
  *addr = NULL;
  void* p = NULL;
  if (!mi_win_fault(mi_fault_reserve)) {
    if (try_alignment > prim_config.alloc_granularity && (try_alignment & (try_alignment - 1)) == 0 &&
        size <= SIZE_MAX - 2 * try_alignment) {
      p = mi_win_alloc_aligned(size, try_alignment, commit);
    } else {
      p = VirtualAlloc(NULL, size, mi_win_alloc_type(commit), mi_win_protect(commit));
      if (p != NULL) _mi_win_path_note(MI_WIN_PLAIN);
    }
  }
  if (p == NULL) {
    return _mi_win_errno(); /* fault path */
  }
  mi_fault_reserved((long long)size);
  *addr = p;
  return 0;
}

int mi_prim_alloc_at(void* addr, size_t size, bool commit) {
  void* p = NULL;
  if (!mi_win_fault(mi_fault_reserve)) p = VirtualAlloc(addr, size, mi_win_alloc_type(commit), mi_win_protect(commit));
  if (p == NULL) {
    return _mi_win_errno(); /* fault path */
  }
  if (p != addr) {
    /* cannot happen for an allocation-granularity aligned address; never keep a wrong range */
    VirtualFree(p, 0, MEM_RELEASE);
    return EINVAL;
  }
  _mi_win_path_note(MI_WIN_AT);
  mi_fault_reserved((long long)size);
  return 0;
}

/* The whole extent of the reservation that starts at `base`. */
static size_t mi_win_reservation_size(void* base) {
  size_t total = 0;
  uint8_t* p = (uint8_t*)base;
  MEMORY_BASIC_INFORMATION info;
  while (VirtualQuery(p + total, &info, sizeof(info)) == sizeof(info) && info.AllocationBase == base &&
         info.State != MEM_FREE) {
    total += info.RegionSize;
  }
  return total;
}

int mi_prim_free(void* addr, size_t size) {
  if (mi_win_fault(mi_fault_release)) {
    return _mi_win_errno(); /* fault path */
  }
  if (VirtualFree(addr, 0, MEM_RELEASE)) {
    _mi_win_path_note(MI_WIN_RELEASE);
    mi_fault_reserved(-(long long)size);
    return 0;
  }
  DWORD err = GetLastError();
  MEMORY_BASIC_INFORMATION info;
  if (err != ERROR_INVALID_ADDRESS || VirtualQuery(addr, &info, sizeof(info)) != sizeof(info) ||
      info.AllocationBase == NULL || info.AllocationBase == addr) {
    return _mi_win_errno_of(err); /* fault path */
  }
  /* a pointer inside a larger reservation: the whole reservation goes, and
     the reserved-bytes balance says how much really went */
  size_t whole = mi_win_reservation_size(info.AllocationBase);
  if (!VirtualFree(info.AllocationBase, 0, MEM_RELEASE)) {
    return _mi_win_errno(); /* fault path */
  }
  _mi_win_path_note(MI_WIN_RELEASE_BY_QUERY);
  mi_fault_reserved(-(long long)whole);
  return 0;
}

/* ---- Commit, decommit, purge, protect ---------------------------------------------- */

int mi_prim_commit(void* addr, size_t size, bool* is_zero) {
  /* the ranges committed are reserved-only or decommitted: fresh zero pages */
  *is_zero = true;
  if (mi_win_fault(mi_fault_commit) || VirtualAlloc(addr, size, MEM_COMMIT, PAGE_READWRITE) == NULL) {
    return _mi_win_errno(); /* fault path */
  }
  _mi_win_path_note(MI_WIN_COMMIT);
  return 0;
}

int mi_prim_decommit(void* addr, size_t size) {
  if (mi_win_fault(mi_fault_decommit) || !VirtualFree(addr, size, MEM_DECOMMIT)) {
    return _mi_win_errno(); /* fault path */
  }
  _mi_win_path_note(MI_WIN_DECOMMIT);
  return 0;
}

/* A purge that must read as zero after (os.c asks only for that kind)
   decommits and commits again: MEM_RESET keeps the commit charge and leaves
   the contents unspecified. The commit right after the decommit asks back
   the charge just given up; should another process take it in between,
   the commit is retried briefly, since the caller holds the range as
   usable. */
#define MI_WIN_RECOMMIT_TRIES 50

int mi_prim_purge(void* addr, size_t size, bool allow_lazy, bool* is_zero) {
  *is_zero = false;
  if (mi_win_fault(mi_fault_purge)) {
    return _mi_win_errno(); /* fault path */
  }
  if (allow_lazy) {
    if (VirtualAlloc(addr, size, MEM_RESET, PAGE_READWRITE) == NULL) {
      return _mi_win_errno(); /* fault path */
    }
    _mi_win_path_note(MI_WIN_PURGE_RESET);
    return 0;
  }
  if (!VirtualFree(addr, size, MEM_DECOMMIT)) {
    return _mi_win_errno(); /* fault path */
  }
  for (int i = 0; VirtualAlloc(addr, size, MEM_COMMIT, PAGE_READWRITE) == NULL; i++) {
    if (i + 1 >= MI_WIN_RECOMMIT_TRIES) {
      return _mi_win_errno(); /* fault path: see docs/windows.md */
    }
    Sleep(1);
  }
  _mi_win_path_note(MI_WIN_PURGE_RECOMMIT);
  *is_zero = true;
  return 0;
}

int mi_prim_protect(void* addr, size_t size, bool protect) {
  DWORD old = 0;
  if (mi_win_fault(mi_fault_protect) || !VirtualProtect(addr, size, protect ? PAGE_NOACCESS : PAGE_READWRITE, &old)) {
    return _mi_win_errno(); /* fault path */
  }
  _mi_win_path_note(MI_WIN_PROTECT);
  return 0;
}

/* Windows has no transparent huge pages: large pages are only the explicit,
   locked ones below. So nothing asks which pages are resident either. */
void mi_prim_hint_huge_pages(void* addr, size_t size, bool on) {
  (void)addr;
  (void)size;
  (void)on;
}

void mi_prim_thp_disable(void) {} /* Windows has no transparent huge pages */

int mi_prim_resident(const void* addr, size_t size, size_t* resident) {
  (void)addr;
  (void)size;
  *resident = 0;
  return ENOTSUP;
}

/* ---- Large and huge OS pages --------------------------------------------------------
   Both need SeLockMemoryPrivilege, which an administrator grants to the
   account ("Lock pages in memory") and the process must enable in its
   token. Tried once; the answer is kept. */
static _Atomic(int) prim_lock_privilege; /* 0: not tried, 1: enabled, 2: unavailable */

static bool mi_win_enable_lock_privilege(void) {
  int state = atomic_load_explicit(&prim_lock_privilege, memory_order_acquire);
  if (state != 0) return (state == 1);
  bool ok = false;
  HANDLE token = NULL;
  if (OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &token)) {
    TOKEN_PRIVILEGES tp;
    memset(&tp, 0, sizeof(tp));
    tp.PrivilegeCount = 1;
    tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
    if (LookupPrivilegeValueA(NULL, "SeLockMemoryPrivilege", &tp.Privileges[0].Luid)) {
      /* succeeds without the privilege too: ERROR_NOT_ALL_ASSIGNED says so */
      ok = (AdjustTokenPrivileges(token, FALSE, &tp, 0, NULL, NULL) && GetLastError() == ERROR_SUCCESS);
    }
    CloseHandle(token);
  }
  atomic_store_explicit(&prim_lock_privilege, ok ? 1 : 2, memory_order_release);
  return ok;
}

int mi_prim_alloc_large_os_pages(size_t size, size_t try_alignment, void** addr) {
  *addr = NULL;
  void* p = NULL;
  if (!mi_win_fault(mi_fault_large)) {
    if (!mi_win_enable_lock_privilege()) {
      _mi_win_path_note(MI_WIN_LARGE_NO_PRIVILEGE);
      return EPERM;
    }
    DWORD type = MEM_RESERVE | MEM_COMMIT | MEM_LARGE_PAGES;
    if (prim_virtual_alloc2 != NULL && try_alignment > prim_config.large_page_size) {
      MEM_ADDRESS_REQUIREMENTS req;
      memset(&req, 0, sizeof(req));
      req.Alignment = try_alignment;
      MEM_EXTENDED_PARAMETER param;
      memset(&param, 0, sizeof(param));
      param.Type = MemExtendedParameterAddressRequirements;
      param.Pointer = &req;
      p = prim_virtual_alloc2(GetCurrentProcess(), NULL, size, type, PAGE_READWRITE, &param, 1);
    } else {
      /* large pages are aligned to their size; os.c gives back a range that misses a larger alignment */
      p = VirtualAlloc(NULL, size, type, PAGE_READWRITE);
    }
  }
  if (p == NULL) {
    return _mi_win_errno(); /* fault path */
  }
  _mi_win_path_note(MI_WIN_LARGE);
  mi_fault_reserved((long long)size);
  *addr = p;
  return 0;
}

int mi_prim_alloc_huge_os_pages(size_t size, void** addr) {
  *addr = NULL;
  void* p = NULL;
  if (!mi_win_fault(mi_fault_huge)) {
    if (prim_virtual_alloc2 == NULL) {
      _mi_win_path_note(MI_WIN_HUGE_NO_VA2);
      return ENOTSUP;
    }
    if (!mi_win_enable_lock_privilege()) {
      _mi_win_path_note(MI_WIN_LARGE_NO_PRIVILEGE);
      return EPERM;
    }
    MEM_EXTENDED_PARAMETER param;
    memset(&param, 0, sizeof(param));
    param.Type = MemExtendedParameterAttributeFlags;
    param.ULong64 = MEM_EXTENDED_PARAMETER_NONPAGED_HUGE;
    p = prim_virtual_alloc2(GetCurrentProcess(), NULL, size, MEM_RESERVE | MEM_COMMIT | MEM_LARGE_PAGES, PAGE_READWRITE,
                            &param, 1);
  }
  if (p == NULL) {
    return _mi_win_errno(); /* fault path */
  }
  _mi_win_path_note(MI_WIN_HUGE);
  mi_fault_reserved((long long)size);
  *addr = p;
  return 0;
}
