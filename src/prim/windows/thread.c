/* Windows implementation of the OS contract (prim.h): locks, the purge
   thread's event, threads, the thread-exit hook and the fault handler.

   Thread exit. The hook must run exactly once for every thread that has
   allocator data, whether the program is built with MinGW or MSVC, and
   whatever started the thread (CreateThread, _beginthreadex, a pool). The
   primary mechanism is a TLS callback: the loader calls every callback in
   the image's TLS directory with DLL_THREAD_DETACH on the exiting thread,
   before its TLS is torn down. The callback pointer is placed in section
   .CRT$XLB, which the linker sorts between the CRT's __xl_a and __xl_z
   markers of the TLS callback array, ahead of the MinGW CRT's own callbacks
   (.CRT$XLC/XLD, which free emulated TLS): so the hook still finds the
   thread's __thread variables. A reference to _tls_used keeps the TLS
   directory in the image. The value is kept in a TlsAlloc slot, cleared
   before the hook is called: a second detach finds nothing.
   For a DLL the same callback runs (DLLs get DLL_THREAD_DETACH in their TLS
   callbacks as in DllMain), so no DllMain is needed. Compilers with neither
   GCC's section attribute nor MSVC's pragmas use a fiber-local-storage
   destructor instead (MI_WIN_EXIT_FLS; also selectable for tests). */
#include "win.h"
#include "../../config.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* ---- Locks ------------------------------------------------------------------------------ */
_Static_assert(sizeof(SRWLOCK) <= sizeof(((mi_prim_lock_t*)0)->opaque), "mi_prim_lock_t too small");

void mi_prim_lock_init(mi_prim_lock_t* lock) {
  InitializeSRWLock((SRWLOCK*)lock->opaque);
}
void mi_prim_lock_acquire(mi_prim_lock_t* lock) {
  AcquireSRWLockExclusive((SRWLOCK*)lock->opaque);
}
bool mi_prim_lock_try_acquire(mi_prim_lock_t* lock) {
  return (TryAcquireSRWLockExclusive((SRWLOCK*)lock->opaque) != 0);
}
void mi_prim_lock_release(mi_prim_lock_t* lock) {
  ReleaseSRWLockExclusive((SRWLOCK*)lock->opaque);
}

typedef struct mi_win_event_s {
  SRWLOCK lock;
  CONDITION_VARIABLE cond;
  int signalled;
} mi_win_event_t;
_Static_assert(sizeof(mi_win_event_t) <= sizeof(((mi_prim_event_t*)0)->opaque), "mi_prim_event_t too small");

void mi_prim_event_init(mi_prim_event_t* ev) {
  mi_win_event_t* e = (mi_win_event_t*)ev->opaque;
  InitializeSRWLock(&e->lock);
  InitializeConditionVariable(&e->cond);
  e->signalled = 0;
}

void mi_prim_event_wait(mi_prim_event_t* ev, int64_t timeout_ms) {
  mi_win_event_t* e = (mi_win_event_t*)ev->opaque;
  DWORD wait = (timeout_ms < 0 ? INFINITE : (timeout_ms >= (int64_t)INFINITE ? INFINITE - 1 : (DWORD)timeout_ms));
  AcquireSRWLockExclusive(&e->lock);
  if (!e->signalled) SleepConditionVariableSRW(&e->cond, &e->lock, wait, 0); /* one wait, as on POSIX */
  e->signalled = 0;
  ReleaseSRWLockExclusive(&e->lock);
}

void mi_prim_event_signal(mi_prim_event_t* ev) {
  mi_win_event_t* e = (mi_win_event_t*)ev->opaque;
  AcquireSRWLockExclusive(&e->lock);
  e->signalled = 1;
  ReleaseSRWLockExclusive(&e->lock);
  WakeConditionVariable(&e->cond);
}

/* ---- Threads ------------------------------------------------------------------------------ */

static DWORD WINAPI mi_win_thread_main(LPVOID arg) {
  void (*fn)(void) = (void (*)(void))(uintptr_t)arg;
  fn();
  return 0;
}

bool mi_prim_thread_start(void (*fn)(void), void** handle) {
  HANDLE h = CreateThread(NULL, 64 * 1024, &mi_win_thread_main, (LPVOID)(uintptr_t)fn,
                          STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
  if (h == NULL) return false;
  *handle = h;
  return true;
}

void mi_prim_thread_join(void* handle) {
  WaitForSingleObject((HANDLE)handle, INFINITE);
  CloseHandle((HANDLE)handle);
}

/* The thread's handle is its starter's to close: the thread keeps running
   (a process ends when its main thread returns, whatever ours do). */
bool mi_prim_thread_can_detach_self(void) {
  return false;
}

void mi_prim_thread_detach_self(void) {}

void mi_prim_yield(void) {
  SwitchToThread();
}

/* The mark is a handle of the thread: it is signalled once the thread has
   ended. */
_Static_assert(sizeof(HANDLE) <= sizeof(((mi_prim_thread_mark_t*)0)->opaque), "mark too small");

bool mi_prim_thread_mark_take(mi_prim_thread_mark_t* mark) {
  HANDLE h = NULL;
  HANDLE self = GetCurrentProcess();
  if (!DuplicateHandle(self, GetCurrentThread(), self, &h, SYNCHRONIZE, FALSE, 0)) return false;
  memcpy(mark->opaque, &h, sizeof(h));
  return true;
}

bool mi_prim_thread_mark_ended(mi_prim_thread_mark_t* mark) {
  HANDLE h;
  memcpy(&h, mark->opaque, sizeof(h));
  if (WaitForSingleObject(h, 0) != WAIT_OBJECT_0) return false;
  CloseHandle(h);
  return true;
}

void mi_prim_thread_mark_drop(mi_prim_thread_mark_t* mark) {
  HANDLE h;
  memcpy(&h, mark->opaque, sizeof(h));
  CloseHandle(h);
}

/* ---- Thread exit ------------------------------------------------------------------------- */

static void (*prim_exit_done)(void* value);

static void mi_win_thread_exit_run(void* value) {
  if (value == NULL || prim_exit_done == NULL) return;
#if MI_WIN_PLANT_THREAD_LEAK
  /* test only: the hook never runs, as when a MinGW build's TLS callback
     is not linked in; every exiting thread strands its heap */
  return;
#endif
  _mi_win_path_note(MI_WIN_THREAD_EXIT_HOOK);
  prim_exit_done(value);
}

#if !MI_WIN_EXIT_FLS
static DWORD prim_exit_slot = TLS_OUT_OF_INDEXES;

void mi_prim_thread_exit_hook_init(void (*done)(void* value)) {
  if (prim_exit_slot != TLS_OUT_OF_INDEXES) return;
  prim_exit_done = done;
  prim_exit_slot = TlsAlloc();
}

void mi_prim_thread_exit_hook_set(void* value) {
  if (prim_exit_slot != TLS_OUT_OF_INDEXES) TlsSetValue(prim_exit_slot, value);
}

static void NTAPI mi_win_tls_callback(PVOID module, DWORD reason, PVOID reserved) {
  (void)module;
  (void)reserved;
  /* not at DLL_PROCESS_DETACH: as with POSIX key destructors, the thread
     that ends the process keeps its data */
  if (reason != DLL_THREAD_DETACH || prim_exit_slot == TLS_OUT_OF_INDEXES) return;
  void* value = TlsGetValue(prim_exit_slot);
  if (value == NULL) return;
  TlsSetValue(prim_exit_slot, NULL);
  mi_win_thread_exit_run(value);
}

#if defined(_MSC_VER) && !defined(__clang__)
#pragma comment(linker, "/INCLUDE:_tls_used")
#pragma comment(linker, "/INCLUDE:mi_win_tls_callback_entry")
#pragma const_seg(".CRT$XLB")
extern const PIMAGE_TLS_CALLBACK mi_win_tls_callback_entry;
const PIMAGE_TLS_CALLBACK mi_win_tls_callback_entry = &mi_win_tls_callback;
#pragma const_seg()
#else
extern const IMAGE_TLS_DIRECTORY _tls_used;
__attribute__((used)) static const void* const mi_win_tls_used_ref = &_tls_used;
__attribute__((used, section(".CRT$XLB"))) static const PIMAGE_TLS_CALLBACK mi_win_tls_callback_entry =
    &mi_win_tls_callback;
#endif

#else /* MI_WIN_EXIT_FLS */
static DWORD prim_exit_slot = FLS_OUT_OF_INDEXES;

/* Called by the system at thread (fiber) exit with the slot's non-NULL value. */
static void NTAPI mi_win_fls_done(PVOID value) {
  mi_win_thread_exit_run(value);
}

void mi_prim_thread_exit_hook_init(void (*done)(void* value)) {
  if (prim_exit_slot != FLS_OUT_OF_INDEXES) return;
  prim_exit_done = done;
  prim_exit_slot = FlsAlloc(&mi_win_fls_done);
}

void mi_prim_thread_exit_hook_set(void* value) {
  if (prim_exit_slot != FLS_OUT_OF_INDEXES) FlsSetValue(prim_exit_slot, value);
}
#endif

/* ---- Fault handler ------------------------------------------------------------------------ */

static void (*prim_fault_report)(void* addr, const mi_fault_where_t* where);

static LONG NTAPI mi_win_fault_handler(EXCEPTION_POINTERS* info) {
  EXCEPTION_RECORD* rec = info->ExceptionRecord;
  if (rec->ExceptionCode == EXCEPTION_ACCESS_VIOLATION && rec->NumberParameters >= 2 && prim_fault_report != NULL) {
    mi_fault_where_t where = {0, 0};
#if defined(_M_X64) || defined(__x86_64__)
    where.pc = (uintptr_t)info->ContextRecord->Rip;
    where.fp = (uintptr_t)info->ContextRecord->Rbp;
#endif
    prim_fault_report((void*)rec->ExceptionInformation[1], &where); /* [0]: read/write/execute, [1]: the address */
  }
  return EXCEPTION_CONTINUE_SEARCH; /* the fault takes its course */
}

bool mi_prim_signal_handler_install(const char* name, void (*handler)(int)) {
  (void)name, (void)handler;
  return false; /* no user signals on Windows */
}

void mi_prim_fault_handler_install(void (*report)(void* addr, const mi_fault_where_t* where)) {
  if (prim_fault_report != NULL) return;
  prim_fault_report = report;
  AddVectoredExceptionHandler(1, &mi_win_fault_handler);
}
