/* The OS contract. Everything the allocator asks of the operating system goes
   through these functions and nothing else in src/ includes a system header
   for memory, threads or locks. That boundary is what lets fault injection
   wrap every call and lets a Windows implementation stand beside the POSIX
   one.

   Every function assumes:
   - addresses and sizes are multiples of mi_prim_page_size() and non-zero;
   - results come back through out-pointers, and the return value is 0 on
     success or an errno-style code (ENOMEM, EINVAL, ...) on failure;
   - no function here allocates from the allocator;
   - each memory call passes the fault-injection point (prim/fault.h) right
     where it makes its system call. */
#ifndef MI_PRIM_H
#define MI_PRIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mi_prim_config_s {
  size_t page_size;         /* OS page size */
  size_t alloc_granularity; /* granularity of reservations */
  size_t large_page_size;   /* 2 MiB pages where available, else 0 */
  bool has_overcommit;      /* the OS lends address space that is committed on touch */
  bool has_madv_free;
  bool has_partial_free; /* a part of a reservation can be given back (POSIX munmap; not
                              Windows, where MEM_RELEASE takes a whole reservation) */
} mi_prim_config_t;

/* Fill in the configuration; called once at process start. */
void mi_prim_init(mi_prim_config_t* config);

/* Reserve (and, if `commit`, make read/write) `size` bytes of fresh zeroed
   address space. `try_alignment` is a hint the implementation may ignore.
   With `allow_large`, transparent huge pages may back the range. */
int mi_prim_alloc(size_t size, size_t try_alignment, bool commit, bool allow_large, bool* is_large, void** addr);
/* Reserve (and, if `commit`, make read/write) exactly [addr, addr+size) of
   fresh zeroed address space; fails (ENOMEM) if any of it is in use. Only
   for systems without partial free, which place aligned reservations with
   it (os.c); elsewhere it fails with ENOTSUP. */
int mi_prim_alloc_at(void* addr, size_t size, bool commit);
/* Return a range obtained from mi_prim_alloc (or, with has_partial_free, a
   page-aligned part of one) to the OS. */
int mi_prim_free(void* addr, size_t size);
/* Make a reserved range usable; `*is_zero` tells whether it reads as zero. */
int mi_prim_commit(void* addr, size_t size, bool* is_zero);
/* Make a range unusable and give its memory back; it must be committed again before use. */
int mi_prim_decommit(void* addr, size_t size);
/* Give the memory of a range back while keeping it usable: it reads as zero
   after (`*is_zero` true) or keeps unspecified contents (MADV_FREE). */
int mi_prim_purge(void* addr, size_t size, bool allow_lazy, bool* is_zero);
/* Make a range inaccessible (protect) or read/write again. */
int mi_prim_protect(void* addr, size_t size, bool protect);
/* Ask that transparent huge pages back a committed range (`on`), which stays
   purgeable and protectable in parts (the OS splits them), or take that back.
   Only a hint: where there are none, or the OS refuses, the range keeps the
   pages it has and nothing else changes, so it has no failure to report or
   inject. */
void mi_prim_hint_huge_pages(void* addr, size_t size, bool on);
/* No transparent huge pages for the whole process, asked for or not (Linux:
   PR_SET_THP_DISABLE); nothing where the OS has no such switch. */
void mi_prim_thp_disable(void);
/* Count the OS pages of a page-aligned range that are resident (touched and
   not given back); ENOTSUP where the OS cannot tell. */
int mi_prim_resident(const void* addr, size_t size, size_t* resident);
/* Reserve explicit huge (1 GiB) pages; fails with ENOTSUP where unavailable.
   `size` is a multiple of 1 GiB. */
int mi_prim_alloc_huge_os_pages(size_t size, void** addr);
/* Reserve explicit large (2 MiB) pages, committed and pinned: they are never
   purged or protected in parts. `size` is a multiple of 2 MiB; fails (ENOMEM,
   ENOTSUP) where the system has none to give. */
int mi_prim_alloc_large_os_pages(size_t size, size_t try_alignment, void** addr);

/* Monotonic clock in milliseconds. */
int64_t mi_prim_clock_now(void);
/* Wall clock, nanoseconds since 1970 (profiles carry their time). */
int64_t mi_prim_clock_realtime_ns(void);
/* Fill `buf` with random bytes from the OS; false if none are available. */
bool mi_prim_random_buf(void* buf, size_t size);
/* Process-wide figures for mi_process_info. */
typedef struct mi_prim_process_info_s {
  int64_t elapsed_ms, utime_ms, stime_ms;
  size_t current_rss, peak_rss, page_faults;
} mi_prim_process_info_t;
void mi_prim_process_info(mi_prim_process_info_t* info);
/* Write a message to standard error without allocating. */
void mi_prim_out_stderr(const char* msg);
/* Read an environment variable into `result` (NUL-terminated); false if unset. */
bool mi_prim_getenv(const char* name, char* result, size_t result_size);

/* ---- Locks: the one lock type of the allocator -------------------------- */
typedef struct mi_prim_lock_s {
  _Alignas(8) unsigned char opaque[48];
} mi_prim_lock_t;
void mi_prim_lock_init(mi_prim_lock_t* lock);
void mi_prim_lock_acquire(mi_prim_lock_t* lock);
bool mi_prim_lock_try_acquire(mi_prim_lock_t* lock);
void mi_prim_lock_release(mi_prim_lock_t* lock);
/* Wait on / signal the event of the background thread. A lock and a
   condition in one, since that thread is the only waiter. */
typedef struct mi_prim_event_s {
  _Alignas(8) unsigned char opaque[96];
} mi_prim_event_t;
void mi_prim_event_init(mi_prim_event_t* ev);
/* Wait until signalled or `timeout_ms` has passed (<0: no timeout). */
void mi_prim_event_wait(mi_prim_event_t* ev, int64_t timeout_ms);
void mi_prim_event_signal(mi_prim_event_t* ev);

/* ---- Threads ---------------------------------------------------------------- */
/* Start a detached-joinable background thread; false on failure. On POSIX
   it blocks every signal (the program's signals are the program's threads'). */
bool mi_prim_thread_start(void (*fn)(void), void** handle);
void mi_prim_thread_join(void* handle);
/* Whether a thread started so may detach itself and end unjoined, and the
   detach, by the thread itself. */
bool mi_prim_thread_can_detach_self(void);
void mi_prim_thread_detach_self(void);
/* Ask for `done(value)` to be called when the calling thread exits, once
   `value` has been set for it (value NULL: nothing is called). */
void mi_prim_thread_exit_hook_init(void (*done)(void* value));
void mi_prim_thread_exit_hook_set(void* value);
void mi_prim_yield(void);
/* A mark the calling thread holds until it ends, however it ends, so that
   another thread can tell afterwards that it is gone (init.c: the data of a
   thread that allocated again after its exit hook ran). Taken and dropped by
   the thread itself; `ended` may be asked by any other thread, and once it
   has answered true the mark is released and must not be asked again. */
typedef struct mi_prim_thread_mark_s {
  _Alignas(8) unsigned char opaque[48];
} mi_prim_thread_mark_t;
bool mi_prim_thread_mark_take(mi_prim_thread_mark_t* mark); /* false: none to be had */
bool mi_prim_thread_mark_ended(mi_prim_thread_mark_t* mark);
void mi_prim_thread_mark_drop(mi_prim_thread_mark_t* mark);
/* Install a handler for memory faults (SIGSEGV/SIGBUS). `report(addr)` runs
   first for a fault caused by an access (not for a signal that was sent);
   whatever it returns, the signal then takes its course as if the handler
   were not there (the previous handler, or death by the signal), and the
   handler stays installed. */
/* Where the fault happened: the faulting instruction and the frame pointer
   of the function it is in (0 where the platform does not tell). */
typedef struct mi_fault_where_s {
  uintptr_t pc;
  uintptr_t fp;
} mi_fault_where_t;
void mi_prim_fault_handler_install(void (*report)(void* addr, const mi_fault_where_t* where));
/* The signal named `name` ("SIGUSR2", "USR2" or its number) calls
   `handler` (which may only do what a signal handler may); false if there
   is no such signal, or none on this platform. */
bool mi_prim_signal_handler_install(const char* name, void (*handler)(int));

/* ---- Files and process identity (the profiler's dump) -------------------- */
/* (Windows: a path is UTF-8, or where it is not valid UTF-8, in the ANSI
   code page.) */
/* Create (truncate) a file for writing; `*fd` receives the descriptor. */
int mi_prim_file_create(const char* path, int* fd);
/* Write all of `size` bytes (retrying short writes). */
int mi_prim_file_write(int fd, const void* buf, size_t size);
int mi_prim_file_close(int fd);
/* Rename `from` to `to`, replacing a file there in one step (a reader opens
   the old file or the new one). */
int mi_prim_file_rename(const char* from, const char* to);
/* Open an existing file for reading (a /proc file too, whose size reads 0). */
int mi_prim_file_open_read(const char* path, int* fd);
/* Read up to `size` bytes; `*got` receives the count (0: end of file). */
int mi_prim_file_read(int fd, void* buf, size_t size, size_t* got);
/* Map a whole file read-only; `*size` receives its length. */
int mi_prim_file_map(const char* path, void** addr, size_t* size);
void mi_prim_file_unmap(void* addr, size_t size);
/* Path of the running executable, NUL-terminated, truncated to fit. */
bool mi_prim_exe_path(char* buf, size_t size);
/* The command line, arguments separated by spaces, truncated to fit. */
void mi_prim_cmdline(char* buf, size_t size);
long mi_prim_getpid(void);
/* The calling thread's number as the OS shows it (Linux: gettid; Windows:
   GetCurrentThreadId): what debuggers and /proc name the thread by. */
long mi_prim_thread_os_id(void);
/* Copy `size` bytes at `addr` of this process into `buf` without touching
   `addr` directly: an error (EFAULT) instead of a fault when the range is
   not mapped or not readable, as another thread may unmap it meanwhile
   (the heap snapshot reads other threads' segments so); ENOSYS or EPERM
   where the platform or a sandbox allows no such read. */
int mi_prim_read_self(const void* addr, void* buf, size_t size);
/* As mi_prim_read_self, for as much of [addr, addr + size) as is readable
   from its start, in one call: the count copied (0: none). A stack walk
   reads its frames so, a window at a time. */
size_t mi_prim_read_self_prefix(const void* addr, void* buf, size_t size);
/* The calling thread's stack [lo, hi); false if unknown. May allocate (it
   asks the C library): call it with the caller's recursion guard up. */
bool mi_prim_thread_stack_bounds(uintptr_t* lo, uintptr_t* hi);
/* Return addresses of the calling thread's stack, innermost first, by the
   platform unwinder (unwind tables; no frame pointers needed). The first
   call may allocate (it loads the unwinder). Returns the count. */
int mi_prim_backtrace(void** frames, int max);
/* As mi_prim_backtrace, with the unwinder's frame address for each return
   address (on x86-64 the return address lies in the word just below it).
   Returns -1 where the unwinder does not give it. Call mi_prim_backtrace
   once first (it loads the unwinder). (Windows x64: RtlVirtualUnwind, its
   first return address the caller's.) */
int mi_prim_unwind(uintptr_t* ips, uintptr_t* cfas, int max);

/* Register the handlers run around fork(). */
void mi_prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
/* Run `fn` at process exit. */
void mi_prim_atexit(void (*fn)(void));

#endif
