/* POSIX implementation of the OS contract (prim.h): clock, random bytes,
   process figures, standard error, environment, files and process
   identity, stacks. */
#include "unix.h"
#include <stdio.h> /* rename */

int64_t mi_prim_clock_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return ((int64_t)t.tv_sec * 1000) + ((int64_t)t.tv_nsec / 1000000);
}

int64_t mi_prim_clock_realtime_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return ((int64_t)t.tv_sec * 1000000000) + (int64_t)t.tv_nsec;
}

bool mi_prim_random_buf(void* buf, size_t size) {
#if defined(__linux__)
  size_t got = 0;
  while (got < size) {
    ssize_t n = getrandom((char*)buf + got, size - got, GRND_NONBLOCK);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    got += (size_t)n;
  }
  if (got == size) return true;
#endif
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t got2 = 0;
  while (got2 < size) {
    ssize_t n = read(fd, (char*)buf + got2, size - got2);
    if (n <= 0) break;
    got2 += (size_t)n;
  }
  close(fd);
  return (got2 == size);
}

static int64_t mi_timeval_ms(struct timeval tv) {
  return ((int64_t)tv.tv_sec * 1000) + ((int64_t)tv.tv_usec / 1000);
}

static size_t mi_read_rss_bytes(void) {
  /* /proc/self/statm: size resident ... (in pages); read with plain syscalls */
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char* s = buf;
  while (*s && *s != ' ') s++;
  while (*s == ' ') s++;
  size_t pages = 0;
  while (*s >= '0' && *s <= '9') pages = pages * 10 + (size_t)(*s++ - '0');
  return pages * _mi_unix_config.page_size;
}

void mi_prim_process_info(mi_prim_process_info_t* info) {
  info->elapsed_ms = mi_prim_clock_now() - _mi_unix_start_ms;
  struct rusage ru;
  memset(&ru, 0, sizeof(ru));
  getrusage(RUSAGE_SELF, &ru);
  info->utime_ms = mi_timeval_ms(ru.ru_utime);
  info->stime_ms = mi_timeval_ms(ru.ru_stime);
  info->peak_rss = (size_t)ru.ru_maxrss * 1024; /* Linux reports KiB */
  info->page_faults = (size_t)ru.ru_majflt;
  info->current_rss = mi_read_rss_bytes();
  if (info->current_rss == 0) info->current_rss = info->peak_rss;
  /* the kernel's maximum is updated lazily and can trail the current figure */
  if (info->peak_rss < info->current_rss) info->peak_rss = info->current_rss;
}

void mi_prim_out_stderr(const char* msg) {
  size_t len = strlen(msg);
  while (len > 0) {
    ssize_t n = write(STDERR_FILENO, msg, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    msg += n;
    len -= (size_t)n;
  }
}

bool mi_prim_getenv(const char* name, char* result, size_t result_size) {
  if (result_size == 0) return false;
  const char* s = getenv(name);
  if (s == NULL) return false;
  size_t len = strlen(s);
  if (len >= result_size) len = result_size - 1;
  memcpy(result, s, len);
  result[len] = 0;
  return true;
}

/* ---- Files and process identity ------------------------------------------- */

int mi_prim_file_create(const char* path, int* fd) {
  int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f < 0) return mi_prim_errno();
  *fd = f;
  return 0;
}

int mi_prim_file_write(int fd, const void* buf, size_t size) {
  const char* p = (const char*)buf;
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return mi_prim_errno();
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

/* The process's and the thread's numbers, each a system call (glibc caches
   neither), kept: a guarded sample's stacks (two walks, their frames read
   through process_vm_readv, which names the process) and its threads took
   14 system calls a sample, 25 us of a 1.3 s `glibc-simple`'s 12,000 samples
   each. A fork's child forgets both (mi_prim_atfork): its
   process and its one thread have numbers of their own. */
static _Atomic(long) mi_self_pid;
static mi_decl_thread long mi_self_tid;

void _mi_prim_ids_forget(void) {
  atomic_store_explicit(&mi_self_pid, 0, memory_order_relaxed);
  mi_self_tid = 0;
}

static long mi_self_pid_get(void) {
  long pid = atomic_load_explicit(&mi_self_pid, memory_order_relaxed);
  if (mi_unlikely(pid == 0)) {
    pid = (long)getpid();
    atomic_store_explicit(&mi_self_pid, pid, memory_order_relaxed);
  }
  return pid;
}

long mi_prim_thread_os_id(void) {
  long tid = mi_self_tid;
  if (mi_unlikely(tid == 0)) {
#if defined(__linux__) && defined(SYS_gettid)
    tid = (long)syscall(SYS_gettid);
#else
    tid = mi_self_pid_get(); /* (no per-thread number here: the process's) */
#endif
    mi_self_tid = tid;
  }
  return tid;
}

int mi_prim_read_self(const void* addr, void* buf, size_t size) {
#if defined(__linux__)
  struct iovec local = {buf, size};
  struct iovec remote = {(void*)(uintptr_t)addr, size};
  ssize_t n = process_vm_readv((pid_t)mi_self_pid_get(), &local, 1, &remote, 1, 0);
  if (n < 0) return mi_prim_errno();
  return ((size_t)n == size ? 0 : EFAULT);
#else
  (void)addr, (void)buf, (void)size;
  return ENOSYS;
#endif
}

size_t mi_prim_read_self_prefix(const void* addr, void* buf, size_t size) {
#if defined(__linux__)
  /* one remote element a page, as the man page promises no partial copy of
     an element: the count returned then ends at the first unreadable page */
  enum { MI_PREFIX_PAGES = 8 };
  struct iovec remote[MI_PREFIX_PAGES];
  const size_t page = 4096; /* (finer than any page size, so never straddling one) */
  uintptr_t at = (uintptr_t)addr;
  uintptr_t end = at + size;
  int count = 0;
  while (at < end && count < MI_PREFIX_PAGES) {
    uintptr_t next = (at | (page - 1)) + 1;
    if (next > end || next == 0) next = end;
    remote[count].iov_base = (void*)at;
    remote[count].iov_len = (size_t)(next - at);
    count++;
    at = next;
  }
  struct iovec local = {buf, (size_t)(at - (uintptr_t)addr)};
  ssize_t n = process_vm_readv((pid_t)mi_self_pid_get(), &local, 1, remote, (unsigned long)count, 0);
  return (n > 0 ? (size_t)n : 0);
#else
  return (mi_prim_read_self(addr, buf, size) == 0 ? size : 0);
#endif
}

int mi_prim_file_close(int fd) {
  return (close(fd) == 0 ? 0 : mi_prim_errno());
}

int mi_prim_file_rename(const char* from, const char* to) {
  return (rename(from, to) == 0 ? 0 : mi_prim_errno());
}

int mi_prim_file_open_read(const char* path, int* fd) {
  int f = open(path, O_RDONLY | O_CLOEXEC);
  if (f < 0) return mi_prim_errno();
  *fd = f;
  return 0;
}

int mi_prim_file_read(int fd, void* buf, size_t size, size_t* got) {
  for (;;) {
    ssize_t n = read(fd, buf, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return mi_prim_errno();
    *got = (size_t)n;
    return 0;
  }
}

int mi_prim_file_map(const char* path, void** addr, size_t* size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return mi_prim_errno();
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    return EINVAL;
  }
  void* p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return mi_prim_errno();
  *addr = p;
  *size = (size_t)st.st_size;
  return 0;
}

void mi_prim_file_unmap(void* addr, size_t size) {
  munmap(addr, size);
}

bool mi_prim_exe_path(char* buf, size_t size) {
  if (size == 0) return false;
  ssize_t n = readlink("/proc/self/exe", buf, size - 1);
  if (n <= 0) return false;
  buf[n] = 0;
  return true;
}

void mi_prim_cmdline(char* buf, size_t size) {
  if (size == 0) return;
  buf[0] = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  size_t len = 0;
  while (len + 1 < size) {
    ssize_t n = read(fd, buf + len, size - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  while (len > 0 && buf[len - 1] == 0) len--; /* the last argument's terminator */
  for (size_t i = 0; i < len; i++) {
    if (buf[i] == 0) buf[i] = ' ';
  }
  buf[len] = 0;
}

long mi_prim_getpid(void) {
  return (long)getpid();
}

bool mi_prim_thread_stack_bounds(uintptr_t* lo, uintptr_t* hi) {
#if defined(__linux__) && defined(__GLIBC__)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return false;
  void* addr = NULL;
  size_t size = 0;
  int err = pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  if (err != 0 || addr == NULL || size == 0) return false;
  *lo = (uintptr_t)addr;
  *hi = (uintptr_t)addr + size;
  return true;
#else
  (void)lo;
  (void)hi;
  return false;
#endif
}

int mi_prim_backtrace(void** frames, int max) {
  return backtrace(frames, max);
}

/* libgcc's unwinder, which glibc's backtrace() loads: found once by name. */
typedef int (*mi_unwind_trace_fn)(void* ctx, void* arg);
static int (*prim_unwind_backtrace)(mi_unwind_trace_fn fn, void* arg);
static uintptr_t (*prim_unwind_get_ip)(void* ctx);
static uintptr_t (*prim_unwind_get_cfa)(void* ctx);
static _Atomic(int) prim_unwind_state; /* 0: not looked up, 1: found, 2: missing */

typedef struct mi_prim_unwind_s {
  uintptr_t* ips;
  uintptr_t* cfas;
  int max;
  int n;
} mi_prim_unwind_t;

static int mi_prim_unwind_step(void* ctx, void* arg) {
  mi_prim_unwind_t* u = (mi_prim_unwind_t*)arg;
  if (u->n >= u->max) return 5; /* _URC_END_OF_STACK: stop */
  uintptr_t ip = prim_unwind_get_ip(ctx);
  if (ip == 0) return 5;
  u->ips[u->n] = ip;
  u->cfas[u->n] = prim_unwind_get_cfa(ctx);
  u->n++;
  return 0; /* _URC_NO_REASON: go on */
}

int mi_prim_unwind(uintptr_t* ips, uintptr_t* cfas, int max) {
  int state = atomic_load_explicit(&prim_unwind_state, memory_order_acquire);
  if (state == 0) {
    void* h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL) {
      *(void**)&prim_unwind_backtrace = dlsym(h, "_Unwind_Backtrace");
      *(void**)&prim_unwind_get_ip = dlsym(h, "_Unwind_GetIP");
      *(void**)&prim_unwind_get_cfa = dlsym(h, "_Unwind_GetCFA");
    }
    state = (prim_unwind_backtrace != NULL && prim_unwind_get_ip != NULL && prim_unwind_get_cfa != NULL ? 1 : 2);
    atomic_store_explicit(&prim_unwind_state, state, memory_order_release);
  }
  if (state != 1) return -1;
  mi_prim_unwind_t u = {ips, cfas, max, 0};
  prim_unwind_backtrace(&mi_prim_unwind_step, &u);
  return u.n;
}
