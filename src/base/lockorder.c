/* The run-time lock-order checker (MI_LOCKORDER, see docs/lock-order.md).

   Each thread keeps the stack of locks it holds, with where each was taken.
   Before a thread blocks on a lock it is checked against every lock it
   holds: a lower rank than a held lock, a second lock of a held class, or
   the very lock it holds (self-deadlock) is a violation. Every other pair
   becomes an edge held-class -> taken-class in a graph shared by all
   threads; an edge seen for the first time that closes a cycle is a
   violation too, so an inversion is caught even when the two orders never
   ran at the same time, and classes of the same rank (whose order the table
   does not fix) must still agree. Releasing a lock the thread does not hold
   is a violation; releasing out of order is allowed. A try-acquire cannot
   deadlock: it is not checked, but once it succeeds the lock counts as held.

   Nothing here allocates or takes a lock: the held stack is a fixed
   thread-local array, the graph a fixed matrix of atomics, and reports are
   formatted by hand into a stack buffer and written straight to stderr. So
   the checker is safe inside the allocator it checks and in a forked child. */
#include "base.h"
#include "lockorder.h"

#include <stdlib.h>

#define MI_LOCKORDER_MAX_HELD 16
_Static_assert(MI_LOCK_CLASS_COUNT <= 32, "the checker keeps one 32-bit mask per class");

typedef struct mi_held_s {
  const mi_lock_t* lock;
  const char* file;
  int line;
} mi_held_t;

typedef struct mi_lockorder_thread_s {
  mi_held_t held[MI_LOCKORDER_MAX_HELD];
  unsigned count;     /* entries in `held` */
  unsigned untracked; /* locks held beyond the array (not checked) */
} mi_lockorder_thread_t;

static mi_decl_thread mi_lockorder_thread_t mi_lo_thread;

/* Edge a -> b: a lock of class b was taken while one of class a was held.
   State 0: never seen; 1: its sites are being written; 2: sites recorded. */
typedef struct mi_edge_site_s {
  const char* held_file;
  int held_line;
  const char* taken_file;
  int taken_line;
} mi_edge_site_t;

static _Atomic(uint8_t) mi_edge_state[MI_LOCK_CLASS_COUNT][MI_LOCK_CLASS_COUNT];
static mi_edge_site_t mi_edge_site[MI_LOCK_CLASS_COUNT][MI_LOCK_CLASS_COUNT];
/* warn mode: bit b of row a set once the pair (a, b) was reported; row
   MI_LOCK_CLASS_COUNT for a lock not held (released, or asserted held),
   row MI_LOCK_CLASS_COUNT + 1 for a callback called with lock b held */
#define MI_REPORT_ROW_NOT_HELD MI_LOCK_CLASS_COUNT
#define MI_REPORT_ROW_CALLBACK (MI_LOCK_CLASS_COUNT + 1)
static _Atomic(uint32_t) mi_reported[MI_LOCK_CLASS_COUNT + 2];
static _Atomic(long) mi_violation_count;
static _Atomic(int) mi_mode = MI_LOCKORDER_ABORT;

void _mi_lockorder_init(void) {
  long mode = _mi_option_get_fast(mi_option_lockorder);
  if (mode < MI_LOCKORDER_OFF || mode > MI_LOCKORDER_WARN) mode = MI_LOCKORDER_ABORT;
  atomic_store_explicit(&mi_mode, (int)mode, memory_order_relaxed);
}

void _mi_lockorder_reset(mi_lockorder_mode_t mode) {
  for (int a = 0; a < MI_LOCK_CLASS_COUNT; a++) {
    for (int b = 0; b < MI_LOCK_CLASS_COUNT; b++) atomic_store(&mi_edge_state[a][b], 0);
  }
  for (int a = 0; a < MI_LOCK_CLASS_COUNT + 2; a++) atomic_store(&mi_reported[a], 0);
  atomic_store(&mi_violation_count, 0);
  mi_lo_thread.count = 0;
  mi_lo_thread.untracked = 0;
  atomic_store(&mi_mode, (int)mode);
}

long _mi_lockorder_violations(void) {
  return atomic_load(&mi_violation_count);
}

void _mi_lockorder_fork_child(void) {
  mi_lo_thread.count = 0;
  mi_lo_thread.untracked = 0;
}

static mi_lockorder_mode_t mi_lockorder_mode(void) {
  return (mi_lockorder_mode_t)atomic_load_explicit(&mi_mode, memory_order_relaxed);
}

/* ---- Reports: formatted by hand, nothing allocated ---------------------------- */

typedef struct mi_msg_s {
  char buf[480];
  size_t len;
} mi_msg_t;

static void mi_msg_str(mi_msg_t* m, const char* s) {
  if (s == NULL) s = "?";
  while (*s != 0 && m->len + 2 < sizeof(m->buf)) m->buf[m->len++] = *s++;
}

static void mi_msg_int(mi_msg_t* m, long v) {
  char digits[24];
  size_t n = 0;
  unsigned long u = (v < 0 ? 0UL - (unsigned long)v : (unsigned long)v);
  do {
    digits[n++] = (char)('0' + (u % 10));
    u /= 10;
  } while (u != 0);
  if (v < 0) mi_msg_str(m, "-");
  while (n > 0 && m->len + 2 < sizeof(m->buf)) m->buf[m->len++] = digits[--n];
}

/* A source path from its project directory on (src/..., tests/...), else its
   last component: the build passes absolute paths. */
static const char* mi_short_path(const char* file) {
  if (file == NULL) return "?";
  const char* best = NULL;
  const char* base = file;
  for (const char* p = file; *p != 0; p++) {
    if (*p != '/') continue;
    base = p + 1;
    if (strncmp(p + 1, "src/", 4) == 0 || strncmp(p + 1, "tests/", 6) == 0) best = p + 1;
  }
  return (best != NULL ? best : base);
}

static void mi_msg_site(mi_msg_t* m, const char* file, int line) {
  if (file == NULL) {
    mi_msg_str(m, "(site not recorded)");
    return;
  }
  mi_msg_str(m, mi_short_path(file));
  mi_msg_str(m, ":");
  mi_msg_int(m, line);
}

static void mi_msg_class(mi_msg_t* m, mi_lock_class_t c) {
  mi_msg_str(m, "'");
  mi_msg_str(m, _mi_lock_class_name(c));
  mi_msg_str(m, "'");
}

static void mi_msg_flush(mi_msg_t* m) {
  m->buf[m->len++] = '\n';
  m->buf[m->len] = 0;
  mi_prim_out_stderr(m->buf);
  m->len = 0;
}

/* Start a report. In warn mode each pair (a, b) is reported once: false
   if this one was. */
static bool mi_report_begin(mi_msg_t* m, int row, mi_lock_class_t c) {
  atomic_fetch_add_explicit(&mi_violation_count, 1, memory_order_relaxed);
  if (mi_lockorder_mode() == MI_LOCKORDER_WARN) {
    uint32_t bit = (uint32_t)1 << c;
    if ((atomic_fetch_or(&mi_reported[row], bit) & bit) != 0) return false;
  }
  m->len = 0;
  mi_msg_str(m, mi_lockorder_mode() == MI_LOCKORDER_WARN ? "mimalloc: warning: lock-order violation: "
                                                         : "mimalloc: error: lock-order violation: ");
  return true;
}

static void mi_report_held_line(mi_msg_t* m, const mi_held_t* h) {
  mi_msg_str(m, "mimalloc:   held:   ");
  mi_msg_class(m, h->lock->lock_class);
  mi_msg_str(m, " acquired at ");
  mi_msg_site(m, h->file, h->line);
  mi_msg_flush(m);
}

static void mi_report_taking_line(mi_msg_t* m, mi_lock_class_t c, const char* file, int line) {
  mi_msg_str(m, "mimalloc:   taking: ");
  mi_msg_class(m, c);
  mi_msg_str(m, " at ");
  mi_msg_site(m, file, line);
  mi_msg_flush(m);
}

static void mi_report_end(mi_msg_t* m) {
  if (mi_lockorder_mode() == MI_LOCKORDER_WARN) return;
  mi_msg_str(m, "mimalloc:   (lock order: docs/lock-order.md; MIMALLOC_LOCKORDER=warn reports without aborting)");
  mi_msg_flush(m);
  abort();
}

/* The thread blocks on the very lock it holds. */
static void mi_report_recursive(const mi_held_t* h, const char* file, int line) {
  mi_lock_class_t c = h->lock->lock_class;
  mi_msg_t m;
  if (!mi_report_begin(&m, (int)c, c)) return;
  mi_msg_str(&m, "taking ");
  mi_msg_class(&m, c);
  mi_msg_str(&m, " again while this thread holds it (self-deadlock)");
  mi_msg_flush(&m);
  mi_report_held_line(&m, h);
  mi_report_taking_line(&m, c, file, line);
  mi_report_end(&m);
}

/* A lower rank than a held lock, or a second lock of a held class. */
static void mi_report_order(const mi_held_t* h, mi_lock_class_t c, const char* file, int line) {
  mi_lock_class_t hc = h->lock->lock_class;
  mi_msg_t m;
  if (!mi_report_begin(&m, (int)hc, c)) return;
  if (hc == c) {
    mi_msg_str(&m, "taking a second lock of class ");
    mi_msg_class(&m, c);
    mi_msg_str(&m, " while holding one");
  } else {
    mi_msg_str(&m, "taking ");
    mi_msg_class(&m, c);
    mi_msg_str(&m, " (rank ");
    mi_msg_int(&m, _mi_lock_class_rank(c));
    mi_msg_str(&m, ") while holding ");
    mi_msg_class(&m, hc);
    mi_msg_str(&m, " (rank ");
    mi_msg_int(&m, _mi_lock_class_rank(hc));
    mi_msg_str(&m, ")");
  }
  mi_msg_flush(&m);
  mi_report_held_line(&m, h);
  mi_report_taking_line(&m, c, file, line);
  mi_report_end(&m);
}

/* The new edge h -> c closes the cycle c -> path[1] -> ... -> h -> c. */
static void mi_report_cycle(const mi_held_t* h, mi_lock_class_t c, const char* file, int line, const int* path, int n) {
  mi_lock_class_t hc = h->lock->lock_class;
  mi_msg_t m;
  if (!mi_report_begin(&m, (int)hc, c)) return;
  mi_msg_str(&m, "taking ");
  mi_msg_class(&m, c);
  mi_msg_str(&m, " while holding ");
  mi_msg_class(&m, hc);
  mi_msg_str(&m, " closes a cycle: ");
  for (int i = 0; i < n; i++) {
    mi_msg_str(&m, _mi_lock_class_name((mi_lock_class_t)path[i]));
    mi_msg_str(&m, " -> ");
  }
  mi_msg_str(&m, _mi_lock_class_name(c));
  mi_msg_flush(&m);
  mi_report_held_line(&m, h);
  mi_report_taking_line(&m, c, file, line);
  for (int i = 0; i + 1 < n; i++) {
    int a = path[i], b = path[i + 1];
    const mi_edge_site_t* s = &mi_edge_site[a][b];
    bool recorded = (atomic_load_explicit(&mi_edge_state[a][b], memory_order_acquire) == 2);
    mi_msg_str(&m, "mimalloc:   edge ");
    mi_msg_str(&m, _mi_lock_class_name((mi_lock_class_t)a));
    mi_msg_str(&m, " -> ");
    mi_msg_str(&m, _mi_lock_class_name((mi_lock_class_t)b));
    mi_msg_str(&m, " seen before: ");
    mi_msg_class(&m, (mi_lock_class_t)a);
    mi_msg_str(&m, " held from ");
    mi_msg_site(&m, recorded ? s->held_file : NULL, s->held_line);
    mi_msg_str(&m, ", ");
    mi_msg_class(&m, (mi_lock_class_t)b);
    mi_msg_str(&m, " taken at ");
    mi_msg_site(&m, recorded ? s->taken_file : NULL, s->taken_line);
    mi_msg_flush(&m);
  }
  mi_report_end(&m);
}

static void mi_report_not_held(const mi_lock_t* lock, const char* file, int line) {
  mi_lock_class_t c = lock->lock_class;
  mi_msg_t m;
  if (!mi_report_begin(&m, MI_REPORT_ROW_NOT_HELD, c)) return;
  mi_msg_str(&m, "releasing ");
  mi_msg_class(&m, c);
  mi_msg_str(&m, " at ");
  mi_msg_site(&m, file, line);
  mi_msg_str(&m, ", which this thread does not hold");
  mi_msg_flush(&m);
  const mi_lockorder_thread_t* t = &mi_lo_thread;
  if (t->count == 0) {
    mi_msg_str(&m, "mimalloc:   held:   (nothing)");
    mi_msg_flush(&m);
  }
  for (unsigned i = t->count; i > 0; i--) mi_report_held_line(&m, &t->held[i - 1]);
  mi_report_end(&m);
}

/* ---- The graph of classes ----------------------------------------------------- */

/* A shortest path from `from` to `to` over the edges seen so far, as class
   indices from `from` to `to` inclusive; its length, or 0 if there is none. */
static int mi_graph_path(int from, int to, int* path) {
  int parent[MI_LOCK_CLASS_COUNT];
  int queue[MI_LOCK_CLASS_COUNT];
  for (int i = 0; i < MI_LOCK_CLASS_COUNT; i++) parent[i] = -1;
  int head = 0, tail = 0;
  queue[tail++] = from;
  parent[from] = from;
  while (head < tail) {
    int a = queue[head++];
    if (a == to) break;
    for (int b = 0; b < MI_LOCK_CLASS_COUNT; b++) {
      if (parent[b] >= 0 || atomic_load(&mi_edge_state[a][b]) == 0) continue;
      parent[b] = a;
      queue[tail++] = b;
    }
  }
  if (parent[to] < 0) return 0;
  int n = 0;
  for (int v = to;; v = parent[v]) {
    path[n++] = v;
    if (v == from) break;
  }
  for (int i = 0; i < n / 2; i++) { /* reverse: from ... to */
    int x = path[i];
    path[i] = path[n - 1 - i];
    path[n - 1 - i] = x;
  }
  return n;
}

/* Record the edge h -> c. The first thread to see it writes its sites and
   then looks for a path back from c to h. The edge is published (seq_cst)
   before the search, so of two threads adding the two halves of an
   inversion at the same time at least one sees the other's edge. */
static void mi_graph_add(const mi_held_t* h, mi_lock_class_t c, const char* file, int line) {
  int a = (int)h->lock->lock_class, b = (int)c;
  if (atomic_load_explicit(&mi_edge_state[a][b], memory_order_relaxed) != 0) return;
  uint8_t expected = 0;
  if (!atomic_compare_exchange_strong(&mi_edge_state[a][b], &expected, 1)) return;
  mi_edge_site_t* s = &mi_edge_site[a][b];
  s->held_file = h->file;
  s->held_line = h->line;
  s->taken_file = file;
  s->taken_line = line;
  atomic_store(&mi_edge_state[a][b], 2);
  int path[MI_LOCK_CLASS_COUNT];
  int n = mi_graph_path(b, a, path);
  if (n > 0) mi_report_cycle(h, c, file, line, path, n);
}

/* ---- The hooks lock.c calls ---------------------------------------------------- */

void _mi_lockorder_before_acquire(const mi_lock_t* lock, const char* file, int line) {
  if (mi_lockorder_mode() == MI_LOCKORDER_OFF) return;
  const mi_lockorder_thread_t* t = &mi_lo_thread;
  mi_lock_class_t c = lock->lock_class;
  for (unsigned i = t->count; i > 0; i--) {
    const mi_held_t* h = &t->held[i - 1];
    if (h->lock == lock) {
      mi_report_recursive(h, file, line);
      return;
    }
  }
  for (unsigned i = t->count; i > 0; i--) {
    const mi_held_t* h = &t->held[i - 1];
    mi_lock_class_t hc = h->lock->lock_class;
    if (hc == c || _mi_lock_class_rank(hc) > _mi_lock_class_rank(c)) mi_report_order(h, c, file, line);
    else mi_graph_add(h, c, file, line);
  }
}

void _mi_lockorder_acquired(const mi_lock_t* lock, const char* file, int line) {
  if (mi_lockorder_mode() == MI_LOCKORDER_OFF) return;
  mi_lockorder_thread_t* t = &mi_lo_thread;
  if (t->count >= MI_LOCKORDER_MAX_HELD) {
    t->untracked++;
    return;
  }
  t->held[t->count].lock = lock;
  t->held[t->count].file = file;
  t->held[t->count].line = line;
  t->count++;
}

void _mi_lockorder_release(const mi_lock_t* lock, const char* file, int line) {
  if (mi_lockorder_mode() == MI_LOCKORDER_OFF) return;
  mi_lockorder_thread_t* t = &mi_lo_thread;
  for (unsigned i = t->count; i > 0; i--) {
    if (t->held[i - 1].lock != lock) continue;
    /* out of order is fine: close the gap */
    for (unsigned j = i; j < t->count; j++) t->held[j - 1] = t->held[j];
    t->count--;
    return;
  }
  if (t->untracked > 0) {
    t->untracked--;
    return;
  }
  mi_report_not_held(lock, file, line);
}

/* ---- Assertions --------------------------------------------------------------- */

static void mi_report_held_lines(mi_msg_t* m) {
  const mi_lockorder_thread_t* t = &mi_lo_thread;
  if (t->count == 0) {
    mi_msg_str(m, "mimalloc:   held:   (nothing)");
    mi_msg_flush(m);
  }
  for (unsigned i = t->count; i > 0; i--) mi_report_held_line(m, &t->held[i - 1]);
}

void _mi_lockorder_assert_held(const mi_lock_t* lock, const char* file, int line) {
  if (mi_lockorder_mode() == MI_LOCKORDER_OFF) return;
  const mi_lockorder_thread_t* t = &mi_lo_thread;
  for (unsigned i = t->count; i > 0; i--) {
    if (t->held[i - 1].lock == lock) return;
  }
  if (t->untracked > 0) return; /* held beyond the array, maybe: cannot tell */
  mi_lock_class_t c = lock->lock_class;
  mi_msg_t m;
  if (!mi_report_begin(&m, MI_REPORT_ROW_NOT_HELD, c)) return;
  mi_msg_str(&m, "");
  mi_msg_class(&m, c);
  mi_msg_str(&m, " must be held at ");
  mi_msg_site(&m, file, line);
  mi_msg_str(&m, ", and this thread does not hold it");
  mi_msg_flush(&m);
  mi_report_held_lines(&m);
  mi_report_end(&m);
}

void _mi_lockorder_assert_none_held(const char* callback, const char* file, int line) {
  if (mi_lockorder_mode() == MI_LOCKORDER_OFF) return;
  const mi_lockorder_thread_t* t = &mi_lo_thread;
  if (t->count == 0) return; /* (untracked ones come only beyond a full array) */
  mi_lock_class_t c = t->held[t->count - 1].lock->lock_class;
  mi_msg_t m;
  if (!mi_report_begin(&m, MI_REPORT_ROW_CALLBACK, c)) return;
  mi_msg_str(&m, "calling ");
  mi_msg_str(&m, callback);
  mi_msg_str(&m, " at ");
  mi_msg_site(&m, file, line);
  mi_msg_str(&m, " with a lock of the allocator held (it may call the allocator, or block)");
  mi_msg_flush(&m);
  mi_report_held_lines(&m);
  mi_report_end(&m);
}
