/* The shadow model (model.h). */
#include "model.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"

#ifndef FZ_SECURE
#define FZ_SECURE 0 /* 1: linked against libmimalloc-secure, whose usable size is the request */
#endif

/* bytes at the end of a block written and zero-checked densely, whatever its size */
#define FZ_TAIL ((size_t)64)

static uint64_t fz_fnv(uint64_t h, char c) {
  return (h ^ (uint8_t)c) * 1099511628211ULL;
}

/* A mismatch's dedup key, as the sanitizers and the secure report print
   theirs (fuzz/triage.sh groups crashes by it; libFuzzer's -minimize_crash
   keeps it): the message without its addresses and numbers, which differ
   between inputs that find the same mismatch, but for a corruption case's
   number, which names the misuse. */
static uint64_t fz_dedup_key(const char* msg) {
  uint64_t h = 14695981039346656037ULL;
  const char* c = msg;
  while (*c != 0) {
    if (c[0] == '0' && c[1] == 'x') { /* an address, a byte's value */
      c += 2;
      while (isxdigit((unsigned char)*c)) c++;
      continue;
    }
    if (isdigit((unsigned char)*c)) { /* a size, an offset, an id */
      bool is_case = (c - msg >= 5 && strncmp(c - 5, "case ", 5) == 0);
      const char* from = c;
      while (isdigit((unsigned char)*c)) c++;
      for (const char* d = from; is_case && d < c; d++) h = fz_fnv(h, *d);
      continue;
    }
    h = fz_fnv(h, *c++);
  }
  return h;
}

void fz_fail(const char* fmt, ...) {
  char msg[8192];
  va_list args;
  va_start(args, fmt);
  (void)vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  /* the key first: a corruption case's message quotes its child's report,
     which has a DEDUP_TOKEN line of its own, and the first one counts */
  fprintf(stderr, "fuzz: DEDUP_TOKEN: model-%016llx\n", (unsigned long long)fz_dedup_key(msg));
  fprintf(stderr, "fuzz: model mismatch: %s\n", msg);
  /* AFL++ drops its target's stderr: FZ_FAIL_LOG keeps the message of a
     crash that does not reproduce alone (it needed the state of earlier
     inputs, or a thread interleaving) */
  const char* log = getenv("FZ_FAIL_LOG");
  FILE* f = (log != NULL ? fopen(log, "a") : NULL);
  if (f != NULL) {
    fprintf(f, "fuzz: model mismatch: %s\n", msg);
    fclose(f);
  }
  abort();
}

mi_heap_t* fz_owner_heap(const fz_model_t* m, int owner) {
  return (owner >= 0 ? m->heaps[owner] : mi_heap_get_default());
}

bool fz_budget_allows(const fz_model_t* m, size_t extra) {
  return extra <= FZ_LIVE_MAX && m->live_bytes <= FZ_LIVE_MAX - extra;
}

/* The pattern on [from, to), and densely on the last FZ_TAIL bytes of it:
   an allocation too short at its end shows at once in a neighbour. */
static void fz_fill(uint8_t* p, uint32_t id, size_t from, size_t to) {
  fz_pattern_fill(p, id, from, to);
  size_t tail = (to - from > FZ_TAIL ? to - FZ_TAIL : from);
  for (size_t i = tail; i < to; i++) p[i] = fz_pattern_byte(id, i);
}

static void fz_expect_zero(const uint8_t* p, size_t from, size_t to, const char* what) {
  size_t bad = fz_zero_check(p, from, to);
  size_t tail = (to - from > FZ_TAIL ? to - FZ_TAIL : from);
  for (size_t i = tail; i < to && bad == to; i++) {
    if (p[i] != 0) bad = i;
  }
  if (bad != to)
    fz_fail("%s: block %p: byte %zu is 0x%02x, not zero (zeroed range %zu..%zu)", what, (void*)p, bad, p[bad], from,
            to);
}

static void fz_expect_aligned(const uint8_t* p, size_t align, size_t offset, const char* what) {
  if ((((uintptr_t)p + offset) & (align - 1)) != 0) {
    fz_fail("%s: block %p + offset %zu is not aligned to %zu", what, (void*)p, offset, align);
  }
}

void fz_block_add(fz_model_t* m, int slot, uint8_t* p, size_t request, size_t align, size_t offset, bool zero,
                  int owner) {
  fz_block_t* b = &m->slots[slot];
  if (b->p != NULL) fz_fail("slot %d reused while live (harness bug)", slot);
  if (p == NULL) fz_fail("allocation of %zu bytes (alignment %zu, offset %zu) returned NULL", request, align, offset);
  fz_expect_aligned(p, align, offset, "allocation");
  if (zero) fz_expect_zero(p, 0, request, "zeroing allocation");
  if (m->trace)
    fprintf(stderr, "fuzz:   slot %d: new block %p, %zu bytes, zero %d, owner %d\n", slot, (void*)p, request, zero,
            owner);
  b->p = p;
  b->size = request;
  b->written = request;
  b->id = m->next_id++;
  b->owner = owner;
  b->zero_origin = zero;
  fz_fill(p, b->id, 0, request);
  m->live_bytes += request;
}

void fz_block_verify(const fz_block_t* b, const char* what) {
  size_t bad = fz_pattern_check(b->p, b->id, 0, b->size);
  if (bad != b->size) {
    fz_fail("block %p (id %u, size %zu, owner %d) before %s: byte %zu is 0x%02x, expected 0x%02x", (void*)b->p, b->id,
            b->size, b->owner, what, bad, b->p[bad], fz_pattern_byte(b->id, bad));
  }
}

void fz_block_forget(fz_model_t* m, int slot) {
  fz_block_t* b = &m->slots[slot];
  m->live_bytes -= b->size;
  b->p = NULL;
}

void fz_block_resized(fz_model_t* m, int slot, uint8_t* newp, size_t newsize, size_t align, size_t offset, bool zero,
                      int moved_to) {
  fz_block_t* b = &m->slots[slot];
  if (m->trace) {
    fprintf(stderr, "fuzz:   slot %d: %p (%zu bytes, written %zu, zero origin %d) resized to %p, %zu bytes, zero %d\n",
            slot, (void*)b->p, b->size, b->written, b->zero_origin, (void*)newp, newsize, zero);
  }
  size_t keep = (b->size < newsize ? b->size : newsize);
  size_t bad = fz_pattern_check(newp, b->id, 0, keep);
  if (bad != keep) {
    fz_fail("reallocation %p -> %p (id %u, size %zu -> %zu): preserved byte %zu is 0x%02x, expected 0x%02x",
            (void*)b->p, (void*)newp, b->id, b->size, newsize, bad, newp[bad], fz_pattern_byte(b->id, bad));
  }
  bool moved = (newp != b->p);
  /* a plain reallocation (align 0) that keeps the block keeps its address,
     which need not be 16-byte aligned (an mi_malloc_aligned_at block); an
     aligned one always returns an aligned block */
  if (align != 0 || moved) fz_expect_aligned(newp, (align != 0 ? align : 16), offset, "reallocation");
  /* A zeroing call promises zero past the old block's usable size. A block
     that moves gets the old block's bytes up to the new size (zero past
     `written`, for a zero-origin block), then, past the old usable size,
     zeroes; in between, if the new size is below the old usable size, lies
     what the new block held before: the promise lapses for such a block (as
     in mimalloc, whose mi_rezalloc behaves the same). */
  if (zero && b->zero_origin) {
    size_t from = (b->written > b->size ? b->written : b->size);
    if (from < newsize) fz_expect_zero(newp, from, newsize, "zeroing reallocation");
  }
  b->zero_origin = zero && b->zero_origin && !(moved && newsize < b->usable);
  if (newsize > b->size) fz_fill(newp, b->id, b->size, newsize);
  if (moved) {
    b->owner = moved_to;
    b->written = (b->written < newsize ? newsize : b->written);
  } else if (newsize > b->written) {
    b->written = newsize;
  }
  m->live_bytes = m->live_bytes - b->size + newsize;
  b->p = newp;
  b->size = newsize;
}

void fz_block_note_usable(fz_block_t* b) {
  b->usable = (b->p != NULL ? mi_usable_size(b->p) : 0);
}

void fz_check_usable(const fz_block_t* b, size_t usable) {
#if FZ_SECURE
  if (usable != b->size) fz_fail("secure build: usable size of %p is %zu, requested %zu", (void*)b->p, usable, b->size);
#else
  if (usable < b->size) fz_fail("usable size of %p is %zu, below the %zu requested", (void*)b->p, usable, b->size);
#endif
}
