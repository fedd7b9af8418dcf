/* Corruption cases of the secure harness (corrupt.h). */
#include "corrupt.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker.h"

#ifndef MI_FUZZ_PLANT_UNDETECTED
#define MI_FUZZ_PLANT_UNDETECTED 0
#endif

enum { FZ_TRIGGER_FREE, FZ_TRIGGER_REALLOC, FZ_TRIGGER_USABLE };

typedef struct fz_case_s {
  int kind;
  int trigger;
  uint8_t* p;  /* the block, or the foreign pointer of kind 6 */
  size_t size; /* its size */
  mi_heap_t* heap;
  uint8_t arg1, arg2;
} fz_case_t;

static char fz_global_buffer[256];
static void* volatile fz_sink;

static void* fz_free_in_thread(void* p) {
  mi_free(p);
  return NULL;
}

static void fz_free_elsewhere(void* p) {
  pthread_t t;
  if (pthread_create(&t, NULL, &fz_free_in_thread, p) != 0) _exit(3);
  pthread_join(t, NULL);
}

static void fz_trigger(int trigger, void* p) {
  switch (trigger) {
    case FZ_TRIGGER_FREE: mi_free(p); break;
    case FZ_TRIGGER_REALLOC: fz_sink = mi_realloc(p, 100); break;
    default: fz_sink = (void*)(uintptr_t)mi_usable_size(p); break;
  }
}

/* Case 5's child ends with one of these when the allocator never handed the
   written byte out again, so there was nothing to detect: its page emptied
   and its memory was purged (the byte reads zero again), or it was not
   reached within the bound. */
#define FZ_EXIT_WRITE_ERASED 42
#define FZ_EXIT_WRITE_NOT_REACHED 43

/* The check of a write after free is made when the block is handed out
   again, and when that happens depends on the page queues: a block freed
   into a page behind one that never fills (the reuse loop frees all it
   takes) is not reached by alloc/free pairs, however many. So blocks of
   the size are taken and kept, and every page of the size class is
   searched before a fresh one, until one covers the written byte: handed
   out with the byte still written and no report is the miss. */
static void fz_hand_out_written(mi_heap_t* heap, size_t size, const uint8_t* w) {
  size_t bound = ((size_t)64 << 20) / size + 4096; /* the slot heap's free blocks are far fewer */
  for (size_t i = 0; i < bound; i++) {
    const uint8_t* p = (const uint8_t*)mi_heap_malloc(heap, size);
    if (p == NULL) break;
    if (w < p || w >= p + size) continue;
    /* the link word is cleared at hand-out: a byte there cannot be told */
    if (w < p + 8 || *w == 0) _exit(FZ_EXIT_WRITE_ERASED);
    return; /* handed out, still written: the parent reports the miss */
  }
  _exit(FZ_EXIT_WRITE_NOT_REACHED);
}

/* In the child: the misuse, then what should detect it. */
static void fz_commit(const fz_case_t* c) {
  switch (c->kind) {
    case 0:
      mi_free(c->p);
      mi_free(c->p);
      break;
    case 1:
      mi_free(c->p);
      fz_free_elsewhere(c->p);
      break;
    case 2:
      fz_free_elsewhere(c->p);
      mi_free(c->p);
      break;
    case 3: {
      size_t n = (size_t)(c->arg1 % 8) + 1;
      for (size_t i = 0; i < n; i++) c->p[c->size + i] ^= (uint8_t)((c->arg2 + i * 0x3b) | 1);
      fz_trigger(c->trigger, c->p);
      break;
    }
    case 4: {
      size_t k = 1 + ((size_t)c->arg1 | (size_t)c->arg2 << 8) % (c->size - 1);
      fz_trigger(c->trigger, c->p + k);
      break;
    }
    case 5: {
      uint8_t* q = (uint8_t*)mi_heap_malloc(c->heap, c->size);
      mi_free(q);
      uint8_t* w = q + 8 + c->arg1 % (c->size - 8);
      *w = (uint8_t)(c->arg2 | 1);
      /* out of the quarantine (a random slot is taken at each free: it
         stays there 100000 frees with probability (63/64)^100000) */
      for (int i = 0; i < 100000; i++) mi_free(mi_heap_malloc(c->heap, c->size));
      fz_hand_out_written(c->heap, c->size, w);
      break;
    }
    case 6: fz_trigger(c->trigger, c->p); break;
    case 7:
      mi_free(c->p);
      fz_sink = mi_realloc(c->p, c->size + 1);
      break;
    case 8:
      mi_free(c->p);
      fz_sink = (void*)(uintptr_t)mi_usable_size(c->p);
      break;
#if MI_FUZZ_PLANT_UNDETECTED
    case 15: /* a read after free: secure mode does not promise to see it */
      mi_free(c->p);
      fz_sink = (void*)(uintptr_t)((volatile uint8_t*)c->p)[0];
      break;
#endif
    default: break;
  }
}

/* The report lines a case may end with (the second, if any, for states in
   which the block's page or segment is gone already). */
static void fz_expected(const fz_case_t* c, const char* want[2]) {
  static const char* const invalid[3] = {"invalid free detected of pointer", "invalid realloc detected of pointer",
                                         "invalid usable_size detected of pointer"};
  want[1] = NULL;
  switch (c->kind) {
    case 0:
    case 1:
    case 2: want[0] = "double free detected of block"; break;
    case 3:
      want[0] = "heap buffer overflow detected in block";
      /* a zero-size allocation is a slot no access reaches: the write faults
         (an aligned one whose offset no slot meets is an ordinary block) */
      if (c->size == 0) want[1] = "access to a zero-size allocation detected at";
      break;
    case 4:
      want[0] = (c->trigger == FZ_TRIGGER_FREE ? "invalid free detected of interior pointer" : invalid[c->trigger]);
      break;
    case 5: want[0] = "use-after-free write detected in block"; break;
    case 6:
      want[0] = invalid[c->trigger];
      /* "inside the segment header of a live block" (fz_foreign): a block
         aligned to 4 MiB or more starts at the boundary, its segment header
         in the chunk below, so the address lies inside that block */
      if (c->arg1 % 5 == 4 && c->trigger == FZ_TRIGGER_FREE) want[1] = "invalid free detected of interior pointer";
      break;
    case 7:
      want[0] = "use of a freed block detected at";
      want[1] = invalid[FZ_TRIGGER_REALLOC];
      break;
    case 8:
      want[0] = "use of a freed block detected at";
      want[1] = invalid[FZ_TRIGGER_USABLE];
      break;
    default: want[0] = "(no report: a planted misuse secure mode does not catch)"; break;
  }
}

static bool fz_has_line(const char* err, const char* what) {
  char line[160];
  snprintf(line, sizeof(line), "mimalloc: error: %s 0x", what);
  return strstr(err, line) != NULL;
}

/* Run the case in a child and judge how it ended. */
static void fz_run_case(const fz_case_t* c) {
  int fds[2];
  if (pipe(fds) != 0) fz_fail("pipe failed");
  fz_worker_sync(); /* the second thread idle, holding no lock, when the process forks */
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) fz_fail("fork failed");
  if (pid == 0) {
    /* the fuzzing engine's handler would turn the abort into its own report */
    signal(SIGABRT, SIG_DFL);
    dup2(fds[1], 2);
    close(fds[0]);
    fz_commit(c);
    mi_collect(true); /* a detection that waits for a collection gets it */
    _exit(0);
  }
  close(fds[1]);
  /* The report comes first; after it may come pages of the fuzzing engine's
     own crash report (a libFuzzer child's SIGSEGV handler prints the input,
     escaped), which once pushed the report out of a 4 KiB window that kept
     the end. Keep the beginning, drain the rest. */
  static char err[1 << 18];
  char drain[4096];
  size_t n = 0;
  ssize_t r;
  for (;;) {
    bool room = (n < sizeof(err) - 1);
    r = read(fds[0], room ? err + n : drain, room ? sizeof(err) - 1 - n : sizeof(drain));
    /* libFuzzer's timeout alarm interrupts the read: that is not the end
       (taken for it, the pipe was closed under the child, which then died
       of SIGPIPE writing its report, and the case was failed) */
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (room) n += (size_t)r;
  }
  err[n] = 0;
  close(fds[0]);
  int status = 0;
  pid_t w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (w != pid) fz_fail("waitpid failed");
  const char* want[2];
  fz_expected(c, want);
  bool reported = fz_has_line(err, want[0]) || (want[1] != NULL && fz_has_line(err, want[1]));
  /* the fault handler reports a fault on a zero-size slot, and the process
     dies of the fault (or, under ASan with abort_on_error, of its abort) */
  bool zero_fault = (c->kind == 3 && c->size == 0 && fz_has_line(err, "access to a zero-size allocation detected at"));
  int sig = (zero_fault ? SIGSEGV : SIGABRT);
  if (WIFSIGNALED(status) && WTERMSIG(status) == sig && reported) return;
  /* the fault's end depends on the harness's handlers (a libFuzzer child
     exits 1, ASan aborts): any end but a clean exit, with the report */
  if (zero_fault && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) return;
  /* the written byte was never handed out again: nothing to detect */
  if (c->kind == 5 && WIFEXITED(status) &&
      (WEXITSTATUS(status) == FZ_EXIT_WRITE_ERASED || WEXITSTATUS(status) == FZ_EXIT_WRITE_NOT_REACHED)) {
    return;
  }
  if (n > 2048) err[2048] = 0; /* the message: the report's part of the output */
  fz_fail(
      "secure build: case %d (trigger %d) on block %p of %zu bytes not detected as \"%s\": child %s %d, "
      "stderr: %s",
      c->kind, c->trigger, (void*)c->p, c->size, want[0], WIFSIGNALED(status) ? "killed by signal" : "exited",
      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), err);
}

/* A pointer the allocator never handed out. */
static uint8_t* fz_foreign(const fz_model_t* m, int slot, uint8_t which, uint8_t* stack, uint8_t* libc,
                           uint8_t* mapped) {
  size_t off = (size_t)(which >> 3) % 64;
  switch (which % 5) {
    case 0: return stack + off;
    case 1: return (uint8_t*)fz_global_buffer + off;
    case 2: return libc + off;
    case 3: return mapped + off;
    default: {
      /* inside the segment header of a live block (segments are 4 MiB aligned) */
      const uint8_t* p = m->slots[slot].p;
      if (p == NULL) return NULL;
      return (uint8_t*)((uintptr_t)p & ~(uintptr_t)((4u << 20) - 1)) + off * 16;
    }
  }
}

void fz_corrupt(fz_model_t* m, fz_input_t* in) {
  int slot = fz_u8(in) & (FZ_SLOTS - 1);
  fz_case_t c = {.kind = fz_u8(in) & 15};
  c.arg1 = fz_u8(in);
  c.arg2 = fz_u8(in);
  c.trigger = c.arg2 % 3;
  if (m->corruptions >= FZ_CORRUPT_MAX) return;
  const fz_block_t* b = &m->slots[slot];
  uint8_t stack[128];
  memset(stack, 0, sizeof(stack));
  uint8_t* libc = NULL;
  uint8_t* mapped = MAP_FAILED;
  if (c.kind == 6) {
    libc = (uint8_t*)malloc(128);
    mapped = (uint8_t*)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (libc == NULL || mapped == MAP_FAILED) fz_fail("cannot set up foreign memory");
    c.p = fz_foreign(m, slot, c.arg1, stack, libc, mapped);
  } else if (b->p != NULL) {
    c.p = b->p;
    c.size = b->size;
    c.heap = (b->owner == FZ_OWNER_WORKER ? NULL : fz_owner_heap(m, b->owner));
  }
  bool applicable = (c.p != NULL);
  if (c.kind == 4) applicable = applicable && c.size >= 2;
  /* a fresh block of the slot's size in the slot's heap, small enough for
     the check on reuse, large enough to have a byte past its link word */
  if (c.kind == 5) applicable = applicable && c.heap != NULL && c.size > 16 && c.size <= 8192 - 8;
  if (c.kind >= 9 && !(MI_FUZZ_PLANT_UNDETECTED && c.kind == 15)) applicable = false;
  if (applicable) {
    m->corruptions++;
    fz_run_case(&c);
  }
  free(libc);
  if (mapped != MAP_FAILED) munmap(mapped, 4096);
}
