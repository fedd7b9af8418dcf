/* Windows implementation of the OS contract (prim.h): clock, random bytes,
   process figures, standard error, environment, files and process identity.
   Functions newer than the oldest supported Windows, or in DLLs a program
   need not load, are bound at run time. */
#include "win.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static int64_t prim_start_ms;
static LARGE_INTEGER prim_qpc_freq;

void _mi_win_sys_init(void) mi_decl_hidden;

void _mi_win_sys_init(void) {
  QueryPerformanceFrequency(&prim_qpc_freq);
  prim_start_ms = mi_prim_clock_now();
}

int64_t mi_prim_clock_realtime_ns(void) {
  FILETIME ft;
  GetSystemTimeAsFileTime(&ft);
  uint64_t t = ((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime; /* 100 ns since 1601 */
  return (int64_t)(t - 116444736000000000ULL) * 100;
}

int64_t mi_prim_clock_now(void) {
  LARGE_INTEGER t;
  QueryPerformanceCounter(&t);
  if (prim_qpc_freq.QuadPart <= 0) QueryPerformanceFrequency(&prim_qpc_freq);
  int64_t freq = prim_qpc_freq.QuadPart;
  /* seconds and remainder apart: counter * 1000 overflows after a few weeks at 10 MHz */
  return (t.QuadPart / freq) * 1000 + ((t.QuadPart % freq) * 1000) / freq;
}

/* ---- Random bytes ---------------------------------------------------------------------
   BCryptGenRandom from bcrypt.dll, else RtlGenRandom (exported by advapi32
   as SystemFunction036) on systems or sandboxes without bcrypt. */
typedef LONG(WINAPI* mi_bcrypt_gen_random_fn)(void* alg, PUCHAR buf, ULONG size, ULONG flags);
typedef BOOLEAN(WINAPI* mi_rtl_gen_random_fn)(PVOID buf, ULONG size);
#define MI_BCRYPT_USE_SYSTEM_PREFERRED_RNG 0x00000002

bool mi_prim_random_buf(void* buf, size_t size) {
  if (size > ULONG_MAX) return false;
  static mi_bcrypt_gen_random_fn bcrypt;
  static mi_rtl_gen_random_fn rtl;
  static _Atomic(int) bound; /* 0: not yet; both pointers are written before it is set */
  if (!atomic_load_explicit(&bound, memory_order_acquire)) {
    bcrypt = (mi_bcrypt_gen_random_fn)_mi_win_bind("bcrypt.dll", "BCryptGenRandom", true);
    rtl = (mi_rtl_gen_random_fn)_mi_win_bind("advapi32.dll", "SystemFunction036", true);
    atomic_store_explicit(&bound, 1, memory_order_release);
  }
  if (bcrypt != NULL && bcrypt(NULL, (PUCHAR)buf, (ULONG)size, MI_BCRYPT_USE_SYSTEM_PREFERRED_RNG) >= 0) return true;
  return (rtl != NULL && rtl(buf, (ULONG)size));
}

/* ---- Process figures ------------------------------------------------------------------ */
typedef struct mi_win_memory_counters_s { /* PROCESS_MEMORY_COUNTERS, without psapi.h */
  DWORD cb;
  DWORD PageFaultCount;
  SIZE_T PeakWorkingSetSize;
  SIZE_T WorkingSetSize;
  SIZE_T QuotaPeakPagedPoolUsage;
  SIZE_T QuotaPagedPoolUsage;
  SIZE_T QuotaPeakNonPagedPoolUsage;
  SIZE_T QuotaNonPagedPoolUsage;
  SIZE_T PagefileUsage;
  SIZE_T PeakPagefileUsage;
} mi_win_memory_counters_t;
typedef BOOL(WINAPI* mi_get_process_memory_info_fn)(HANDLE process, mi_win_memory_counters_t* counters, DWORD cb);

static int64_t mi_filetime_ms(FILETIME ft) {
  ULARGE_INTEGER u;
  u.LowPart = ft.dwLowDateTime;
  u.HighPart = ft.dwHighDateTime;
  return (int64_t)(u.QuadPart / 10000); /* 100 ns units */
}

void mi_prim_process_info(mi_prim_process_info_t* info) {
  info->elapsed_ms = mi_prim_clock_now() - prim_start_ms;
  FILETIME created, exited, kernel, user;
  if (GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user)) {
    info->utime_ms = mi_filetime_ms(user);
    info->stime_ms = mi_filetime_ms(kernel);
  } else {
    info->utime_ms = info->stime_ms = 0;
  }
  static mi_get_process_memory_info_fn get_info;
  static _Atomic(int) bound;
  if (!atomic_load_explicit(&bound, memory_order_acquire)) {
    get_info = (mi_get_process_memory_info_fn)_mi_win_bind("psapi.dll", "GetProcessMemoryInfo", true);
    atomic_store_explicit(&bound, 1, memory_order_release);
  }
  mi_win_memory_counters_t c;
  memset(&c, 0, sizeof(c));
  c.cb = sizeof(c);
  if (get_info != NULL && get_info(GetCurrentProcess(), &c, sizeof(c))) {
    info->current_rss = c.WorkingSetSize;
    info->peak_rss = (c.PeakWorkingSetSize > c.WorkingSetSize ? c.PeakWorkingSetSize : c.WorkingSetSize);
    info->page_faults = c.PageFaultCount;
  } else {
    info->current_rss = info->peak_rss = info->page_faults = 0;
  }
}

/* ---- Standard error, environment -------------------------------------------------------- */

void mi_prim_out_stderr(const char* msg) {
  HANDLE h = GetStdHandle(STD_ERROR_HANDLE);
  if (h == NULL || h == INVALID_HANDLE_VALUE) return;
  size_t len = strlen(msg);
  DWORD mode;
  bool console = (GetConsoleMode(h, &mode) != 0); /* a redirected handle is a file or pipe */
  while (len > 0) {
    DWORD chunk = (len > 0x10000 ? 0x10000 : (DWORD)len);
    DWORD written = 0;
    BOOL ok = (console ? WriteConsoleA(h, msg, chunk, &written, NULL) : WriteFile(h, msg, chunk, &written, NULL));
    if (!ok || written == 0) return;
    msg += written;
    len -= written;
  }
}

bool mi_prim_getenv(const char* name, char* result, size_t result_size) {
  if (result_size == 0) return false;
  char buf[1024]; /* longer values are not ours: reading them would need the heap */
  DWORD n = GetEnvironmentVariableA(name, buf, sizeof(buf));
  if (n == 0) {
    if (GetLastError() == ERROR_ENVVAR_NOT_FOUND) return false;
    buf[0] = 0; /* set and empty */
  } else if (n >= sizeof(buf)) {
    return false;
  }
  size_t len = strlen(buf);
  if (len >= result_size) len = result_size - 1;
  memcpy(result, buf, len);
  result[len] = 0;
  return true;
}

/* ---- Files -----------------------------------------------------------------------------
   The contract's descriptors are ints; Windows guarantees that handle values
   fit in 32 bits (HandleToLong / LongToHandle exist for that). Paths are
   UTF-8 (the profilers pass module paths so, from GetModuleFileNameW); one
   that is not valid UTF-8 is taken in the ANSI code page, as the A calls
   take it. */

static HANDLE mi_win_create_file(const char* path, DWORD access, DWORD share, DWORD disposition) {
  WCHAR wpath[1024];
  int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, wpath, (int)(sizeof(wpath) / sizeof(wpath[0])));
  if (n > 0) return CreateFileW(wpath, access, share, NULL, disposition, FILE_ATTRIBUTE_NORMAL, NULL);
  return CreateFileA(path, access, share, NULL, disposition, FILE_ATTRIBUTE_NORMAL, NULL);
}

int mi_prim_file_create(const char* path, int* fd) {
  HANDLE h = mi_win_create_file(path, GENERIC_WRITE, FILE_SHARE_READ, CREATE_ALWAYS);
  if (h == INVALID_HANDLE_VALUE) return _mi_win_errno();
  *fd = (int)HandleToLong(h);
  return 0;
}

int mi_prim_file_write(int fd, const void* buf, size_t size) {
  HANDLE h = LongToHandle(fd);
  const char* p = (const char*)buf;
  while (size > 0) {
    DWORD chunk = (size > 0x40000000 ? 0x40000000 : (DWORD)size);
    DWORD written = 0;
    if (!WriteFile(h, p, chunk, &written, NULL) || written == 0) return _mi_win_errno();
    p += written;
    size -= written;
  }
  return 0;
}

int mi_prim_file_close(int fd) {
  return (CloseHandle(LongToHandle(fd)) ? 0 : _mi_win_errno());
}

int mi_prim_file_rename(const char* from, const char* to) {
  WCHAR wfrom[1024], wto[1024];
  const int cap = (int)(sizeof(wfrom) / sizeof(wfrom[0]));
  BOOL ok;
  if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, from, -1, wfrom, cap) > 0 &&
      MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, to, -1, wto, cap) > 0) {
    ok = MoveFileExW(wfrom, wto, MOVEFILE_REPLACE_EXISTING);
  } else {
    ok = MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING);
  }
  return (ok ? 0 : _mi_win_errno());
}

int mi_prim_file_open_read(const char* path, int* fd) {
  HANDLE h = mi_win_create_file(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, OPEN_EXISTING);
  if (h == INVALID_HANDLE_VALUE) return _mi_win_errno();
  *fd = (int)HandleToLong(h);
  return 0;
}

int mi_prim_file_read(int fd, void* buf, size_t size, size_t* got) {
  DWORD chunk = (size > 0x40000000 ? 0x40000000 : (DWORD)size);
  DWORD n = 0;
  if (!ReadFile(LongToHandle(fd), buf, chunk, &n, NULL)) return _mi_win_errno();
  *got = n;
  return 0;
}

int mi_prim_file_map(const char* path, void** addr, size_t* size) {
  HANDLE file = mi_win_create_file(path, GENERIC_READ, FILE_SHARE_READ, OPEN_EXISTING);
  if (file == INVALID_HANDLE_VALUE) return _mi_win_errno();
  LARGE_INTEGER len;
  if (!GetFileSizeEx(file, &len) || len.QuadPart <= 0 || (unsigned long long)len.QuadPart > SIZE_MAX) {
    CloseHandle(file);
    return EINVAL;
  }
  HANDLE mapping = CreateFileMappingA(file, NULL, PAGE_READONLY, 0, 0, NULL);
  CloseHandle(file); /* the mapping keeps the file open */
  if (mapping == NULL) return _mi_win_errno();
  void* p = MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0);
  int err = (p == NULL ? _mi_win_errno() : 0);
  CloseHandle(mapping); /* the view keeps the mapping */
  if (err != 0) return err;
  *addr = p;
  *size = (size_t)len.QuadPart;
  return 0;
}

void mi_prim_file_unmap(void* addr, size_t size) {
  (void)size;
  UnmapViewOfFile(addr);
}

/* ---- Process identity, stacks -------------------------------------------------------- */

bool mi_prim_exe_path(char* buf, size_t size) {
  if (size == 0 || size > MAXDWORD) return false;
  DWORD n = GetModuleFileNameA(NULL, buf, (DWORD)size);
  if (n == 0) return false;
  buf[(n < size ? n : size - 1)] = 0; /* truncation does not terminate on every version */
  return true;
}

void mi_prim_cmdline(char* buf, size_t size) {
  if (size == 0) return;
  const char* s = GetCommandLineA();
  size_t len = (s != NULL ? strlen(s) : 0);
  if (len >= size) len = size - 1;
  if (len > 0) memcpy(buf, s, len);
  buf[len] = 0;
}

long mi_prim_getpid(void) {
  return (long)GetCurrentProcessId();
}

long mi_prim_thread_os_id(void) {
  return (long)GetCurrentThreadId();
}

int mi_prim_read_self(const void* addr, void* buf, size_t size) {
  SIZE_T got = 0;
  if (!ReadProcessMemory(GetCurrentProcess(), addr, buf, size, &got) || got != size) return EFAULT;
  return 0;
}

size_t mi_prim_read_self_prefix(const void* addr, void* buf, size_t size) {
  SIZE_T got = 0;
  if (ReadProcessMemory(GetCurrentProcess(), addr, buf, size, &got)) return (size_t)got;
  /* a range running into an unreadable page fails whole: its first page alone */
  uintptr_t page_end = ((uintptr_t)addr | 4095) + 1;
  size_t first = (size_t)(page_end - (uintptr_t)addr);
  if (first >= size) return 0;
  got = 0;
  if (!ReadProcessMemory(GetCurrentProcess(), addr, buf, first, &got)) return 0;
  return (size_t)got;
}

typedef VOID(WINAPI* mi_get_stack_limits_fn)(PULONG_PTR lo, PULONG_PTR hi);

bool mi_prim_thread_stack_bounds(uintptr_t* lo, uintptr_t* hi) {
  /* Windows 8+: the whole reservation (the TIB's limit is only the committed part) */
  static mi_get_stack_limits_fn limits;
  static _Atomic(int) bound;
  if (!atomic_load_explicit(&bound, memory_order_acquire)) {
    limits = (mi_get_stack_limits_fn)_mi_win_bind("kernel32.dll", "GetCurrentThreadStackLimits", false);
    atomic_store_explicit(&bound, 1, memory_order_release);
  }
  if (limits == NULL) return false;
  ULONG_PTR l = 0, h = 0;
  limits(&l, &h);
  if (l == 0 || h <= l) return false;
  *lo = (uintptr_t)l;
  *hi = (uintptr_t)h;
  return true;
}

int mi_prim_backtrace(void** frames, int max) {
  if (max <= 0) return 0;
  if (max > 62) max = 62; /* the documented limit of frames to skip plus capture is below 63 */
  return (int)RtlCaptureStackBackTrace(0, (DWORD)max, frames, NULL);
}

/* The unwinder itself (x64): every function of a PE image has its unwind
   information (.pdata/.xdata, MinGW's too), so the walk needs no frame
   pointers. Each step unwinds one frame: `ips` gets the return address
   into the caller, `cfas` the caller's stack pointer after the return (the
   return address lies in the word below it), starting with mi_prim_unwind's
   own caller. A function without unwind information is a leaf, its return
   address at the top of the stack. The walk ends at a zero return address,
   past the thread's stack, or where the stack pointer does not grow. */
int mi_prim_unwind(uintptr_t* ips, uintptr_t* cfas, int max) {
#if defined(_M_X64) || defined(__x86_64__)
  uintptr_t stack_lo = 0, stack_hi = 0;
  if (!mi_prim_thread_stack_bounds(&stack_lo, &stack_hi)) stack_hi = UINTPTR_MAX; /* before Windows 8 */
  CONTEXT ctx;
  RtlCaptureContext(&ctx);
  int n = 0;
  while (n < max) {
    const uintptr_t sp = (uintptr_t)ctx.Rsp;
    DWORD64 image = 0;
    PRUNTIME_FUNCTION fn = RtlLookupFunctionEntry(ctx.Rip, &image, NULL);
    if (fn != NULL) {
      PVOID handler_data = NULL;
      DWORD64 establisher = 0;
      RtlVirtualUnwind(UNW_FLAG_NHANDLER, image, ctx.Rip, fn, &ctx, &handler_data, &establisher, NULL);
    } else {
      PVOID module = NULL;
      if (RtlPcToFileHeader((PVOID)(uintptr_t)ctx.Rip, &module) == NULL) break; /* not code of a module */
      if (sp + sizeof(DWORD64) > stack_hi) break;
      ctx.Rip = *(const DWORD64*)sp;
      ctx.Rsp = sp + sizeof(DWORD64);
    }
    if (ctx.Rip == 0 || (uintptr_t)ctx.Rsp <= sp || (uintptr_t)ctx.Rsp > stack_hi) break;
    ips[n] = (uintptr_t)ctx.Rip;
    cfas[n] = (uintptr_t)ctx.Rsp;
    n++;
  }
  return n;
#else
  /* elsewhere no frame addresses: the profiler takes RtlCaptureStackBackTrace */
  (void)ips;
  (void)cfas;
  (void)max;
  return -1;
#endif
}

/* ---- Process life ------------------------------------------------------------------------ */

void mi_prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  /* Windows has no fork */
  (void)prepare;
  (void)parent;
  (void)child;
}

void mi_prim_atexit(void (*fn)(void)) {
  atexit(fn);
}
