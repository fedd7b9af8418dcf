/* POSIX implementation of the OS contract (prim.h): locks, the purge
   thread's event, threads, the thread-exit hook, a thread's mark, the
   fault handler, fork and exit handlers. */
#include "unix.h"

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

static void (*prim_fault_report)(void* addr, const mi_fault_where_t* where);

static void mi_prim_fault_where(const void* context, mi_fault_where_t* where) {
  where->pc = 0;
  where->fp = 0;
#if defined(__linux__) && defined(__x86_64__)
  const ucontext_t* uc = (const ucontext_t*)context;
  where->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  where->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__linux__) && defined(__aarch64__)
  const ucontext_t* uc = (const ucontext_t*)context;
  where->pc = (uintptr_t)uc->uc_mcontext.pc;
  where->fp = (uintptr_t)uc->uc_mcontext.regs[29];
#else
  (void)context;
#endif
}
static struct sigaction prim_prev_segv;
static struct sigaction prim_prev_bus;

/* What the signal would have done without our handler. A real fault
   (si_code > 0) is reported first; a sent one (raise, kill, sigqueue:
   si_code <= 0) accessed nothing and is only passed on. Our handler stays
   installed for the faults that follow, except where the process dies. */
static void mi_prim_fault_handler(int sig, siginfo_t* info, void* context) {
  bool sent = (info == NULL || info->si_code <= 0);
  if (!sent && prim_fault_report != NULL) {
    mi_fault_where_t where;
    mi_prim_fault_where(context, &where);
    prim_fault_report(info->si_addr, &where);
  }
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

void mi_prim_fault_handler_install(void (*report)(void* addr, const mi_fault_where_t* where)) {
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
  /* child handlers run in the order they were registered: the numbers kept
     (sys.c) are forgotten before the allocator's handler may use them */
  pthread_atfork(NULL, NULL, &_mi_prim_ids_forget);
  pthread_atfork(prepare, parent, child);
}

void mi_prim_atexit(void (*fn)(void)) {
  (void)atexit(fn); /* fails only out of memory, and then only the exit statistics are lost */
}
