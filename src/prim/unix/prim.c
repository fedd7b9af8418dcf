/* POSIX implementation of the OS contract in prim.h (Linux first, other
   POSIX systems where the calls exist). */
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

static mi_prim_config_t prim_config;
static int64_t prim_start_ms;

void mi_prim_init(mi_prim_config_t* config) {
  long ps = sysconf(_SC_PAGESIZE);
  config->page_size = (ps > 0 ? (size_t)ps : 4096);
  config->alloc_granularity = config->page_size;
  config->large_page_size = (size_t)2 * 1024 * 1024;
  config->has_overcommit = true;
  config->has_partial_free = true;
#if defined(MADV_FREE)
  config->has_madv_free = true;
#else
  config->has_madv_free = false;
#endif
  prim_config = *config;
  prim_start_ms = mi_prim_clock_now();
}

static int mi_prim_errno(void) {
  return (errno == 0 ? ENOMEM : errno);
}

/* An injected failure sets errno as the system call would have, then takes
   the same path as a real failure. */
static bool mi_prim_fault(mi_fault_kind_t kind) {
  int f = mi_fault_point(kind);
  if (f == 0) return false;
  errno = (f == mi_fault_error_oom + 1 ? ENOMEM : (f == mi_fault_error_again + 1 ? EAGAIN : EINVAL));
  return true;
}

static void* mi_prim_mmap(mi_fault_kind_t kind, void* hint, size_t size, int prot, int flags) {
  if (mi_prim_fault(kind)) return MAP_FAILED;
  void* p = mmap(hint, size, prot, flags, -1, 0);
  if (p != MAP_FAILED && (flags & MAP_FIXED) == 0) mi_fault_reserved((long long)size);
  return p;
}

/* Aligned requests are placed at hint addresses that walk upward from 2 TiB
   in steps of the alignment, so the kernel usually returns them aligned and
   the caller need not over-reserve and trim.
   Not under AddressSanitizer (MI_TRACK_ASAN): the shadow of a range that was
   poisoned stays resident after the range is unmapped, and is reused only if
   the address is. The walk never reuses one until it wraps: from 16 TiB (the
   end of ASan's shadow, where the hints start to be taken) each mapping gets
   fresh addresses, and the process grew by an eighth of all it ever mapped
   (1 GB per 200 fuzz inputs, docs/fuzzing.md). The kernel's placement reuses
   what was given back. */
#if INTPTR_MAX > INT32_MAX && !MI_TRACK_ASAN
#define MI_HINT_BASE ((uintptr_t)2 << 40)
#define MI_HINT_MAX ((uintptr_t)30 << 40)
static _Atomic(uintptr_t) prim_aligned_hint;

static void* mi_prim_aligned_hint(size_t size, size_t try_alignment) {
  if (try_alignment < ((size_t)1 << 20) || (try_alignment & (try_alignment - 1)) != 0) return NULL;
  size = (size + try_alignment - 1) & ~(try_alignment - 1);
  uintptr_t hint = atomic_fetch_add_explicit(&prim_aligned_hint, size, memory_order_relaxed);
  if (hint == 0 || hint > MI_HINT_MAX) {
    uintptr_t expected = hint + size;
    atomic_compare_exchange_strong_explicit(&prim_aligned_hint, &expected, MI_HINT_BASE + size, memory_order_relaxed,
                                            memory_order_relaxed);
    hint = MI_HINT_BASE;
  }
  return (void*)((hint + try_alignment - 1) & ~(try_alignment - 1));
}
#else
static void* mi_prim_aligned_hint(size_t size, size_t try_alignment) {
  (void)size;
  (void)try_alignment;
  return NULL;
}
#endif

int mi_prim_alloc(size_t size, size_t try_alignment, bool commit, bool allow_large, bool* is_large, void** addr) {
  *is_large = false;
  *addr = NULL;
  int prot = (commit ? PROT_READ | PROT_WRITE : PROT_NONE);
  void* hint = mi_prim_aligned_hint(size, try_alignment);
  if (hint != NULL && mi_fault_misalign()) hint = (uint8_t*)hint + prim_config.page_size;
  void* p = mi_prim_mmap(mi_fault_reserve, hint, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
  if (p == MAP_FAILED) {
    return mi_prim_errno(); /* fault path */
  }
#if defined(MADV_HUGEPAGE)
  if (allow_large && commit && prim_config.large_page_size != 0 && size >= prim_config.large_page_size) {
    /* transparent huge pages: a hint; failure just means normal pages */
    if (madvise(p, size, MADV_HUGEPAGE) == 0) *is_large = true;
  }
#else
  (void)allow_large;
#endif
  *addr = p;
  return 0;
}

int mi_prim_alloc_at(void* addr, size_t size, bool commit) {
  /* munmap gives back any part of a mapping: os.c trims instead */
  (void)addr;
  (void)size;
  (void)commit;
  return ENOTSUP;
}

int mi_prim_free(void* addr, size_t size) {
  if (mi_prim_fault(mi_fault_release) || munmap(addr, size) != 0) {
    return mi_prim_errno(); /* fault path */
  }
  mi_fault_reserved(-(long long)size);
  return 0;
}

int mi_prim_commit(void* addr, size_t size, bool* is_zero) {
  /* decommitted ranges are fresh mappings (see decommit): they read as zero */
  *is_zero = true;
  if (mi_prim_fault(mi_fault_commit) || mprotect(addr, size, PROT_READ | PROT_WRITE) != 0) {
    return mi_prim_errno(); /* fault path */
  }
  return 0;
}

int mi_prim_decommit(void* addr, size_t size) {
  /* replacing the mapping drops its pages and its commit charge at once */
  void* p =
      mi_prim_mmap(mi_fault_decommit, addr, size, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
  if (p == MAP_FAILED) {
    return mi_prim_errno(); /* fault path */
  }
  return 0;
}

int mi_prim_purge(void* addr, size_t size, bool allow_lazy, bool* is_zero) {
  *is_zero = false;
  bool failed = mi_prim_fault(mi_fault_purge);
#if defined(MADV_FREE)
  if (!failed && allow_lazy && madvise(addr, size, MADV_FREE) == 0) return 0;
#else
  (void)allow_lazy;
#endif
  if (failed || madvise(addr, size, MADV_DONTNEED) != 0) {
    return mi_prim_errno(); /* fault path */
  }
  *is_zero = true;
  return 0;
}

int mi_prim_protect(void* addr, size_t size, bool protect) {
  int prot = (protect ? PROT_NONE : PROT_READ | PROT_WRITE);
  if (mi_prim_fault(mi_fault_protect) || mprotect(addr, size, prot) != 0) {
    return mi_prim_errno(); /* fault path */
  }
  return 0;
}

void mi_prim_hint_huge_pages(void* addr, size_t size, bool on) {
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  if (prim_config.large_page_size != 0 && size >= prim_config.large_page_size) {
    (void)madvise(addr, size, on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  }
#else
  (void)addr;
  (void)size;
  (void)on;
#endif
}

void mi_prim_thp_disable(void) {
#if defined(__linux__) && defined(PR_SET_THP_DISABLE)
  (void)prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); /* a kernel without it keeps its setting */
#endif
}

int mi_prim_resident(const void* addr, size_t size, size_t* resident) {
  *resident = 0;
#if defined(__linux__) || defined(__APPLE__) || defined(__FreeBSD__)
  /* a vector of 256 pages at a time: bounded stack, whatever the range */
  unsigned char vec[256];
  const uint8_t* p = (const uint8_t*)addr;
  const uint8_t* end = p + size;
  while (p < end) {
    size_t len = (size_t)(end - p);
    if (len > sizeof(vec) * prim_config.page_size) len = sizeof(vec) * prim_config.page_size;
    if (mi_prim_fault(mi_fault_resident) || mincore((void*)p, len, (void*)vec) != 0) {
      return mi_prim_errno(); /* fault path */
    }
    size_t pages = (len + prim_config.page_size - 1) / prim_config.page_size;
    for (size_t i = 0; i < pages; i++) *resident += (vec[i] & 1);
    p += len;
  }
  return 0;
#else
  (void)addr;
  (void)size;
  return ENOTSUP;
#endif
}

int mi_prim_alloc_huge_os_pages(size_t size, void** addr) {
  *addr = NULL;
#if defined(MAP_HUGETLB) && defined(MAP_HUGE_SHIFT)
  /* no MAP_NORESERVE: without a reservation a later touch of a page the
     pool cannot supply kills the process with SIGBUS; with one, mmap fails */
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (30 << MAP_HUGE_SHIFT);
  void* p = mi_prim_mmap(mi_fault_huge, NULL, size, PROT_READ | PROT_WRITE, flags);
  if (p == MAP_FAILED) {
    return mi_prim_errno(); /* fault path */
  }
  *addr = p;
  return 0;
#else
  (void)size;
  return ENOTSUP;
#endif
}

int mi_prim_alloc_large_os_pages(size_t size, size_t try_alignment, void** addr) {
  *addr = NULL;
#if defined(MAP_HUGETLB) && defined(MAP_HUGE_SHIFT)
  /* explicit 2 MiB pages: pinned, and only there if the administrator set some aside */
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (21 << MAP_HUGE_SHIFT); /* reserved: see above */
  void* p =
      mi_prim_mmap(mi_fault_large, mi_prim_aligned_hint(size, try_alignment), size, PROT_READ | PROT_WRITE, flags);
  if (p == MAP_FAILED) {
    return mi_prim_errno(); /* fault path */
  }
  *addr = p;
  return 0;
#else
  (void)size;
  (void)try_alignment;
  return ENOTSUP;
#endif
}

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
  return pages * prim_config.page_size;
}

void mi_prim_process_info(mi_prim_process_info_t* info) {
  info->elapsed_ms = mi_prim_clock_now() - prim_start_ms;
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

/* ---- Locks ---------------------------------------------------------------- */
_Static_assert(sizeof(pthread_mutex_t) <= sizeof(((mi_prim_lock_t*)0)->opaque), "mi_prim_lock_t too small");

void mi_prim_lock_init(mi_prim_lock_t* lock) {
  pthread_mutex_init((pthread_mutex_t*)lock->opaque, NULL);
}
void mi_prim_lock_acquire(mi_prim_lock_t* lock) {
  pthread_mutex_lock((pthread_mutex_t*)lock->opaque);
}
bool mi_prim_lock_try_acquire(mi_prim_lock_t* lock) {
  return (pthread_mutex_trylock((pthread_mutex_t*)lock->opaque) == 0);
}
void mi_prim_lock_release(mi_prim_lock_t* lock) {
  pthread_mutex_unlock((pthread_mutex_t*)lock->opaque);
}

typedef struct mi_unix_event_s {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int signalled;
} mi_unix_event_t;
_Static_assert(sizeof(mi_unix_event_t) <= sizeof(((mi_prim_event_t*)0)->opaque), "mi_prim_event_t too small");

void mi_prim_event_init(mi_prim_event_t* ev) {
  mi_unix_event_t* e = (mi_unix_event_t*)ev->opaque;
  pthread_mutex_init(&e->mutex, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&e->cond, &attr);
  pthread_condattr_destroy(&attr);
  e->signalled = 0;
}

void mi_prim_event_wait(mi_prim_event_t* ev, int64_t timeout_ms) {
  mi_unix_event_t* e = (mi_unix_event_t*)ev->opaque;
  pthread_mutex_lock(&e->mutex);
  if (!e->signalled) {
    if (timeout_ms < 0) {
      pthread_cond_wait(&e->cond, &e->mutex);
    } else {
      struct timespec t;
      clock_gettime(CLOCK_MONOTONIC, &t);
      t.tv_sec += timeout_ms / 1000;
      t.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
      if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&e->cond, &e->mutex, &t);
    }
  }
  e->signalled = 0;
  pthread_mutex_unlock(&e->mutex);
}

void mi_prim_event_signal(mi_prim_event_t* ev) {
  mi_unix_event_t* e = (mi_unix_event_t*)ev->opaque;
  pthread_mutex_lock(&e->mutex);
  e->signalled = 1;
  pthread_cond_signal(&e->cond);
  pthread_mutex_unlock(&e->mutex);
}

/* ---- Threads ---------------------------------------------------------------- */
static void* mi_prim_thread_main(void* arg) {
  void (*fn)(void) = (void (*)(void))(uintptr_t)arg;
  fn();
  return NULL;
}

/* The thread starts with every signal blocked (it inherits the mask of its
   creator, set so around the create, then put back): a signal the program
   blocks in its own threads and waits for (sigwait, sigtimedwait, signalfd)
   is never delivered to ours, which would die of it or run the program's
   handler where the program does not expect it. (A fault in it still kills
   the process: Linux delivers a blocked fault signal with the default
   action, without the handlers, ours included.) */
bool mi_prim_thread_start(void (*fn)(void), void** handle) {
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, (size_t)64 * 1024);
  sigset_t all, caller;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &caller);
  int err = pthread_create(&t, &attr, &mi_prim_thread_main, (void*)(uintptr_t)fn);
  pthread_sigmask(SIG_SETMASK, &caller, NULL);
  pthread_attr_destroy(&attr);
  if (err != 0) return false;
  *handle = (void*)t;
  return true;
}

void mi_prim_thread_join(void* handle) {
  pthread_join((pthread_t)handle, NULL);
}

bool mi_prim_thread_can_detach_self(void) {
  return true;
}

void mi_prim_thread_detach_self(void) {
  pthread_detach(pthread_self());
}

static pthread_key_t mi_exit_key;
static bool mi_exit_key_valid = false;

void mi_prim_thread_exit_hook_init(void (*done)(void* value)) {
  if (mi_exit_key_valid) return;
  if (pthread_key_create(&mi_exit_key, done) == 0) mi_exit_key_valid = true;
}

void mi_prim_thread_exit_hook_set(void* value) {
  if (mi_exit_key_valid) pthread_setspecific(mi_exit_key, value);
}

void mi_prim_yield(void) {
  sched_yield();
}

/* The mark is a robust mutex the thread locks: when a thread ends holding
   one, the kernel (or the C library) marks it, and the next trylock answers
   EOWNERDEAD, whatever the thread was doing when it ended. */
_Static_assert(sizeof(pthread_mutex_t) <= sizeof(((mi_prim_thread_mark_t*)0)->opaque), "mark too small");

bool mi_prim_thread_mark_take(mi_prim_thread_mark_t* mark) {
  pthread_mutex_t* mutex = (pthread_mutex_t*)mark->opaque;
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0) return false;
  bool ok = (pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) == 0 && pthread_mutex_init(mutex, &attr) == 0);
  pthread_mutexattr_destroy(&attr);
  if (ok && pthread_mutex_lock(mutex) != 0) {
    pthread_mutex_destroy(mutex);
    ok = false;
  }
  return ok;
}

bool mi_prim_thread_mark_ended(mi_prim_thread_mark_t* mark) {
  pthread_mutex_t* mutex = (pthread_mutex_t*)mark->opaque;
  int err = pthread_mutex_trylock(mutex);
  if (err != EOWNERDEAD) {
    if (err == 0) pthread_mutex_unlock(mutex); /* not held (never taken): nothing tells */
    return false;
  }
  pthread_mutex_consistent(mutex);
  pthread_mutex_unlock(mutex);
  pthread_mutex_destroy(mutex);
  return true;
}

void mi_prim_thread_mark_drop(mi_prim_thread_mark_t* mark) {
  pthread_mutex_t* mutex = (pthread_mutex_t*)mark->opaque;
  pthread_mutex_unlock(mutex);
  pthread_mutex_destroy(mutex);
}

static void (*prim_fault_report)(void* addr);
static struct sigaction prim_prev_segv;
static struct sigaction prim_prev_bus;

/* What the signal would have done without our handler. A real fault
   (si_code > 0) is reported first; a sent one (raise, kill, sigqueue:
   si_code <= 0) accessed nothing and is only passed on. Our handler stays
   installed for the faults that follow, except where the process dies. */
static void mi_prim_fault_handler(int sig, siginfo_t* info, void* context) {
  bool sent = (info == NULL || info->si_code <= 0);
  if (!sent && prim_fault_report != NULL) prim_fault_report(info->si_addr);
  struct sigaction* prev = (sig == SIGSEGV ? &prim_prev_segv : &prim_prev_bus);
  /* (sa_handler and sa_sigaction share their storage: SIG_DFL and SIG_IGN
     are told apart whatever the flags say) */
  if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
    /* the program's handler, run as the kernel would have: its mask added
       (and the signal, unless SA_NODEFER), one shot if SA_RESETHAND */
    struct sigaction handler = *prev;
    if ((handler.sa_flags & SA_RESETHAND) != 0) {
      memset(prev, 0, sizeof(*prev));
      prev->sa_handler = SIG_DFL;
    }
    sigset_t mask = handler.sa_mask, before;
    if ((handler.sa_flags & SA_NODEFER) == 0) sigaddset(&mask, sig);
    pthread_sigmask(SIG_BLOCK, &mask, &before);
    if ((handler.sa_flags & SA_SIGINFO) != 0) handler.sa_sigaction(sig, info, context);
    else handler.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    return; /* a real fault runs the access again, as after the program's own handler */
  }
  if (sent && prev->sa_handler == SIG_IGN) return; /* ignored, as it would have been */
  /* the default action (a real fault that is ignored is not ignored: the
     kernel forces the default): the process dies of the signal */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  if (!sent) return; /* the access runs again and meets the default */
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, sig);
  pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
  (void)raise(sig); /* delivered before raise returns: the process is gone */
}

bool mi_prim_signal_handler_install(const char* name, void (*handler)(int)) {
  static const struct {
    const char* name;
    int sig;
  } names[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"USR1", SIGUSR1},  {"USR2", SIGUSR2},
               {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}};
  if (name == NULL || name[0] == 0) return false;
  if (strncmp(name, "SIG", 3) == 0) name += 3;
  int sig = 0;
  if (name[0] >= '0' && name[0] <= '9') {
    for (const char* s = name; *s != 0; s++) {
      if (*s < '0' || *s > '9' || sig > 1000) return false;
      sig = sig * 10 + (*s - '0');
    }
  } else {
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && sig == 0; i++) {
      if (strcmp(name, names[i].name) == 0) sig = names[i].sig;
    }
  }
  if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP) return false;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  return (sigaction(sig, &sa, NULL) == 0);
}

void mi_prim_fault_handler_install(void (*report)(void* addr)) {
  if (prim_fault_report != NULL) return;
  prim_fault_report = report;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = &mi_prim_fault_handler;
  /* SA_ONSTACK: on a thread's alternate stack where it has one (a fault on
     a stack's own guard would find no room on it) */
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &prim_prev_segv);
  sigaction(SIGBUS, &sa, &prim_prev_bus);
}

void mi_prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  pthread_atfork(prepare, parent, child);
}

void mi_prim_atexit(void (*fn)(void)) {
  (void)atexit(fn); /* fails only out of memory, and then only the exit statistics are lost */
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

int mi_prim_read_self(const void* addr, void* buf, size_t size) {
#if defined(__linux__)
  struct iovec local = {buf, size};
  struct iovec remote = {(void*)(uintptr_t)addr, size};
  ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (n < 0) return mi_prim_errno();
  return ((size_t)n == size ? 0 : EFAULT);
#else
  (void)addr, (void)buf, (void)size;
  return ENOSYS;
#endif
}

int mi_prim_file_close(int fd) {
  return (close(fd) == 0 ? 0 : mi_prim_errno());
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
