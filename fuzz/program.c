/* The interpreter of fuzz programs (program.h), shared by both harnesses. */
#include "program.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "profile.h"
#include "worker.h"

#ifndef MI_FUZZ_PLANT_UAF
#define MI_FUZZ_PLANT_UAF 0
#endif
#ifndef MI_FUZZ_PLANT_DOUBLE_FREE
#define MI_FUZZ_PLANT_DOUBLE_FREE 0
#endif
#ifndef MI_FUZZ_PLANT_LEAK
#define MI_FUZZ_PLANT_LEAK 0
#endif

/* ---- Operands ---------------------------------------------------------------- */

uint8_t fz_u8(fz_input_t* in) {
  if (in->n == 0) return 0;
  in->n--;
  return *in->p++;
}

size_t fz_size(fz_input_t* in) {
  size_t v = (size_t)fz_u8(in) << 8;
  v |= fz_u8(in);
  size_t low = v & 0x3fff;
  switch (v >> 14) {
    case 0: return low & 0x1ff;
    case 1: return low;
    case 2: return low << 4;
    default: return low << 8;
  }
}

static size_t fz_align_of(uint8_t v) {
  unsigned shift = v % 24u;
  if (shift == 22) return 3;
  if (shift == 23) return (size_t)4 << 20;
  return (size_t)1 << shift;
}

size_t fz_align(fz_input_t* in) {
  return fz_align_of(fz_u8(in));
}

static int fz_slot(fz_input_t* in) {
  return fz_u8(in) & (FZ_SLOTS - 1);
}

static int fz_heap_slot(fz_input_t* in) {
  return fz_u8(in) & (FZ_HEAPS - 1);
}

static size_t fz_count(fz_input_t* in) {
  return (size_t)(fz_u8(in) & 15) + 1;
}

static bool fz_align_valid(size_t align) {
  return (align & (align - 1)) == 0 && align <= ((size_t)1 << 30);
}

/* ---- Allocation helpers ----------------------------------------------------- */

void fz_release(fz_model_t* m, int slot) {
  fz_block_t* b = &m->slots[slot];
  if (b->p == NULL) return;
  fz_block_verify(b, "free");
  mi_free(b->p);
  fz_block_forget(m, slot);
}

/* An allocation call that must fail: NULL, and errno set to `err`. */
static void fz_expect_failure(void* p, int err, const char* what) {
  if (p != NULL) fz_fail("%s succeeded (%p) where it must fail", what, p);
  if (errno != err) fz_fail("%s: errno %d, expected %d", what, errno, err);
}

/* Take the result of an aligned allocation call into `slot`. */
static void fz_take_aligned(fz_model_t* m, int slot, void* p, size_t size, size_t align, size_t offset, bool zero,
                            int owner, const char* what) {
  if (!fz_align_valid(align)) {
    fz_expect_failure(p, (align & (align - 1)) != 0 ? EINVAL : ENOMEM, what);
    return;
  }
  fz_block_add(m, slot, (uint8_t*)p, size, align, offset, zero, owner);
}

/* Room for `size` bytes plus what an alignment costs the allocator. */
static bool fz_room(fz_model_t* m, size_t size, size_t align) {
  /* past 2 MiB the alignment costs address space, not memory (a sparse segment) */
  size_t over = (!fz_align_valid(align) ? 0 : align <= ((size_t)2 << 20) ? 2 * align : 4096);
  return fz_budget_allows(m, size + over);
}

/* ---- Operations --------------------------------------------------------------- */

static void fz_op_alloc(fz_model_t* m, int op, fz_input_t* in) {
  int slot = fz_slot(in);
  size_t count = (op == FZ_OP_CALLOC || op == FZ_OP_CALLOC_ALIGNED ? fz_count(in) : 1);
  size_t size = fz_size(in);
  size_t align = 16, offset = 0;
  uint8_t kind = 0;
  if (op == FZ_OP_MALLOC_SMALL) {
    size %= MI_SMALL_SIZE_MAX + 1;
    kind = fz_u8(in);
  }
  if (op >= FZ_OP_MALLOC_ALIGNED && op <= FZ_OP_ALIGNED_ALLOC) align = fz_align(in);
  if (op == FZ_OP_MALLOC_ALIGNED_AT) offset = fz_u8(in);
  if (!fz_room(m, count * size, align)) return;
  fz_release(m, slot);
  errno = 0;
  void* p = NULL;
  bool zero = false;
  switch (op) {
    case FZ_OP_MALLOC: p = mi_malloc(size); break;
    case FZ_OP_ZALLOC: p = mi_zalloc(size), zero = true; break;
    case FZ_OP_CALLOC: p = mi_calloc(count, size), zero = true; break;
    case FZ_OP_MALLOC_SMALL:
      zero = (kind & 1);
      p = (zero ? mi_zalloc_small(size) : mi_malloc_small(size));
      break;
    case FZ_OP_MALLOC_ALIGNED: p = mi_malloc_aligned(size, align); break;
    case FZ_OP_MALLOC_ALIGNED_AT: p = mi_malloc_aligned_at(size, align, offset); break;
    case FZ_OP_ZALLOC_ALIGNED: p = mi_zalloc_aligned(size, align), zero = true; break;
    case FZ_OP_CALLOC_ALIGNED: p = mi_calloc_aligned(count, size, align), zero = true; break;
    case FZ_OP_POSIX_MEMALIGN: {
      void* q = (void*)&q; /* must stay untouched on failure */
      int err = mi_posix_memalign(&q, align, size);
      bool valid = fz_align_valid(align) && align >= sizeof(void*);
      if (!valid) {
        int want = (align % sizeof(void*) != 0 || (align & (align - 1)) != 0 ? EINVAL : ENOMEM);
        if (err != want || q != (void*)&q) fz_fail("posix_memalign(%zu, %zu): %d, expected %d", align, size, err, want);
        return;
      }
      if (err != 0) fz_fail("posix_memalign(%zu, %zu) failed: %d", align, size, err);
      fz_block_add(m, slot, (uint8_t*)q, size, align, 0, false, FZ_OWNER_DEFAULT);
      return;
    }
    case FZ_OP_ALIGNED_ALLOC: p = mi_aligned_alloc(align, size); break;
    default: return;
  }
  fz_take_aligned(m, slot, p, count * size, align, offset, zero, FZ_OWNER_DEFAULT, "aligned allocation");
}

static void fz_op_realloc(fz_model_t* m, int op, fz_input_t* in) {
  int slot = fz_slot(in);
  size_t count = (op == FZ_OP_RECALLOC ? fz_count(in) : 1);
  size_t size = fz_size(in);
  size_t align = (op == FZ_OP_REALLOC_ALIGNED ? fz_align(in) : 0); /* 0: a plain call */
  /* mi_realloc_aligned has no failure rule for a bad alignment: not asked */
  if (op == FZ_OP_REALLOC_ALIGNED && !fz_align_valid(align)) align = 16;
  fz_block_t* b = &m->slots[slot];
  if (!fz_room(m, count * size, align)) return;
  bool zero = (op == FZ_OP_REZALLOC || op == FZ_OP_RECALLOC);
  if (b->p != NULL) fz_block_verify(b, "reallocation");
  if (zero) fz_block_note_usable(b);
  void* p = b->p;
  void* q;
  switch (op) {
    case FZ_OP_REALLOC: q = mi_realloc(p, size); break;
    case FZ_OP_REZALLOC: q = mi_rezalloc(p, size); break;
    case FZ_OP_RECALLOC: q = mi_recalloc(p, count, size); break;
    default: q = mi_realloc_aligned(p, size, align); break;
  }
  if (q == NULL) fz_fail("reallocation of %p to %zu bytes returned NULL", p, count * size);
  if (p == NULL) {
    fz_block_add(m, slot, (uint8_t*)q, count * size, (align != 0 ? align : 16), 0, zero, FZ_OWNER_DEFAULT);
  } else {
    fz_block_resized(m, slot, (uint8_t*)q, count * size, align, 0, zero, FZ_OWNER_DEFAULT);
  }
}

static void fz_op_usable(fz_model_t* m, fz_input_t* in) {
  fz_block_t* b = &m->slots[fz_slot(in)];
  if (b->p == NULL) return;
  size_t usable = mi_usable_size(b->p);
  fz_check_usable(b, usable);
  if (!mi_is_in_heap_region(b->p)) fz_fail("live block %p is not in the heap region", (void*)b->p);
  if (usable > FZ_LIVE_MAX || !fz_budget_allows(m, usable - b->size)) return;
  /* the program may use every usable byte: it does */
  fz_pattern_fill(b->p, b->id, b->size, usable);
  m->live_bytes += usable - b->size;
  b->size = usable;
  if (b->written < usable) b->written = usable;
}

static void fz_op_expand(fz_model_t* m, fz_input_t* in) {
  fz_block_t* b = &m->slots[fz_slot(in)];
  size_t size = fz_size(in);
  if (b->p == NULL) return;
  uint8_t* q = (uint8_t*)mi_expand(b->p, size);
  if (q == NULL) {
    if (size <= b->size) fz_fail("mi_expand(%p, %zu) failed within the block's %zu bytes", (void*)b->p, size, b->size);
    return;
  }
  if (q != b->p) fz_fail("mi_expand(%p, %zu) moved the block to %p", (void*)b->p, size, (void*)q);
  if (size > b->size && fz_budget_allows(m, size - b->size)) {
    fz_pattern_fill(b->p, b->id, b->size, size);
    m->live_bytes += size - b->size;
    b->size = size;
    if (b->written < size) b->written = size;
  }
}

static void fz_op_heap_alloc(fz_model_t* m, fz_input_t* in) {
  int h = fz_heap_slot(in);
  int slot = fz_slot(in);
  size_t size = fz_size(in);
  uint8_t kind = fz_u8(in);
  size_t align = (kind & 3) == 3 ? fz_align_of((uint8_t)((kind >> 2) % 22)) : 16;
  mi_heap_t* heap = m->heaps[h];
  if (heap == NULL || !fz_room(m, size, align)) return;
  fz_release(m, slot);
  void* p;
  switch (kind & 3) {
    case 0: p = mi_heap_malloc(heap, size); break;
    case 1: p = mi_heap_zalloc(heap, size); break;
    case 2: p = mi_heap_calloc(heap, 1, size); break;
    default: p = mi_heap_malloc_aligned(heap, size, align); break;
  }
  fz_block_add(m, slot, (uint8_t*)p, size, align, 0, (kind & 3) == 1 || (kind & 3) == 2, h);
  if (!mi_heap_contains_block(heap, p)) fz_fail("heap %d does not contain its new block %p", h, p);
}

static void fz_op_heap_realloc(fz_model_t* m, fz_input_t* in) {
  int h = fz_heap_slot(in);
  int slot = fz_slot(in);
  size_t size = fz_size(in);
  uint8_t kind = fz_u8(in);
  bool zero = (kind & 1);
  size_t align = (kind & 2) ? fz_align_of((uint8_t)((kind >> 2) % 22)) : 0; /* 0: a plain call */
  mi_heap_t* heap = m->heaps[h];
  fz_block_t* b = &m->slots[slot];
  if (heap == NULL || !fz_room(m, size, align)) return;
  if (b->p != NULL) fz_block_verify(b, "heap reallocation");
  if (zero) fz_block_note_usable(b);
  void* q;
  if (kind & 2) {
    q = mi_heap_realloc_aligned(heap, b->p, size, align);
    zero = false; /* bit 0 has no meaning here: the API has no zeroing aligned heap reallocation */
  } else {
    q = (zero ? mi_heap_rezalloc(heap, b->p, size) : mi_heap_realloc(heap, b->p, size));
  }
  if (q == NULL) fz_fail("heap reallocation of %p to %zu bytes returned NULL", (void*)b->p, size);
  if (b->p == NULL) {
    fz_block_add(m, slot, (uint8_t*)q, size, (align != 0 ? align : 16), 0, zero, h);
  } else {
    fz_block_resized(m, slot, (uint8_t*)q, size, align, 0, zero, h);
  }
  if (b->owner == h && !mi_heap_contains_block(heap, q)) fz_fail("heap %d does not contain its block %p", h, q);
}

static void fz_op_heap_new(fz_model_t* m, fz_input_t* in) {
  int h = fz_heap_slot(in);
  if (m->heaps[h] != NULL) return;
  m->heaps[h] = mi_heap_new();
  if (m->heaps[h] == NULL) fz_fail("mi_heap_new returned NULL");
}

/* mi_heap_delete: the heap's blocks live on in the default heap. */
static void fz_heap_delete(fz_model_t* m, int h) {
  for (int i = 0; i < FZ_SLOTS; i++) {
    if (m->slots[i].p != NULL && m->slots[i].owner == h) m->slots[i].owner = FZ_OWNER_DEFAULT;
  }
  mi_heap_delete(m->heaps[h]);
  m->heaps[h] = NULL;
}

/* mi_heap_destroy: the heap's blocks go with it (checked one last time). The
   second thread may be about to free a block of it: it finishes first. */
static void fz_heap_destroy(fz_model_t* m, int h) {
  fz_worker_sync();
  for (int i = 0; i < FZ_SLOTS; i++) {
    fz_block_t* b = &m->slots[i];
    if (b->p == NULL || b->owner != h) continue;
    fz_block_verify(b, "heap destroy");
    fz_block_forget(m, i);
  }
  mi_heap_destroy(m->heaps[h]);
  m->heaps[h] = NULL;
}

/* ---- Visiting: the heap's own account of its blocks against the model ------- */

#define FZ_VISIT_MAX 256

typedef struct fz_visit_s {
  uint8_t* start[FZ_VISIT_MAX];
  size_t size[FZ_VISIT_MAX];
  size_t count;
} fz_visit_t;

static bool fz_visitor(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap;
  (void)area;
  fz_visit_t* v = (fz_visit_t*)arg;
  if (block == NULL) return true;
  if (v->count == FZ_VISIT_MAX)
    fz_fail("heap visit: more than %d blocks, the model has at most %d", FZ_VISIT_MAX, FZ_SLOTS);
  v->start[v->count] = (uint8_t*)block;
  v->size[v->count] = size;
  v->count++;
  return true;
}

/* The visited block that holds `p`, or -1: the block that starts at p
   first (a neighbour's end may touch it), else one that p lies inside (an
   aligned allocation's pointer; in secure builds the visited size ends at
   the data, so a 0-byte aligned block's pointer is at its end). */
static long fz_visited_index(const fz_visit_t* v, const uint8_t* p) {
  for (size_t i = 0; i < v->count; i++) {
    if (v->start[i] == p) return (long)i;
  }
  for (size_t i = 0; i < v->count; i++) {
    if (v->start[i] < p && p <= v->start[i] + v->size[i]) return (long)i;
  }
  return -1;
}

static void fz_op_heap_visit(fz_model_t* m, fz_input_t* in) {
  int h = fz_u8(in) % (FZ_HEAPS + 1);
  int owner = (h == FZ_HEAPS ? FZ_OWNER_DEFAULT : h);
  mi_heap_t* heap = (owner == FZ_OWNER_DEFAULT ? mi_heap_get_default() : m->heaps[h]);
  if (heap == NULL) return;
  fz_worker_sync(); /* blocks in flight to the second thread are still live */
  static fz_visit_t v;
  v.count = 0;
  if (!mi_heap_visit_blocks(heap, true, &fz_visitor, &v)) fz_fail("mi_heap_visit_blocks of heap %d failed", owner);
  bool seen[FZ_VISIT_MAX] = {false};
  for (int i = 0; i < FZ_SLOTS; i++) {
    const fz_block_t* b = &m->slots[i];
    if (b->p == NULL) continue;
    long k = fz_visited_index(&v, b->p);
    if (b->owner == owner && k < 0) fz_fail("heap visit of heap %d: its block %p is not visited", owner, (void*)b->p);
    if (k >= 0) seen[k] = true;
  }
  /* every visited block is a live block of the program; the default heap
     may also hold blocks of an exited second thread (reclaimed pages) */
  for (size_t k = 0; k < v.count; k++) {
    if (!seen[k])
      fz_fail("heap visit of heap %d: block %p (size %zu) is not live", owner, (void*)v.start[k], v.size[k]);
  }
}

/* ---- The second thread ---------------------------------------------------------- */

static void fz_op_handoff(fz_model_t* m, fz_input_t* in) {
  int slot = fz_slot(in);
  fz_block_t* b = &m->slots[slot];
  if (b->p == NULL) return;
  fz_worker_free(b->p, b->id, b->size); /* checked there */
  fz_block_forget(m, slot);
}

static void fz_op_worker_alloc(fz_model_t* m, fz_input_t* in) {
  int slot = fz_slot(in);
  size_t size = fz_size(in);
  uint8_t kind = fz_u8(in);
  size_t align = (kind & 3) == 3 ? fz_align_of((uint8_t)((kind >> 2) % 22)) : 16;
  if (!fz_room(m, size, align)) return;
  fz_release(m, slot);
  uint8_t* p = fz_worker_alloc(kind & 3, size, align);
  fz_block_add(m, slot, p, size, align, 0, (kind & 3) == 1 || (kind & 3) == 2, FZ_OWNER_WORKER);
}

static void fz_op_worker_realloc(fz_model_t* m, fz_input_t* in) {
  int slot = fz_slot(in);
  size_t size = fz_size(in);
  fz_block_t* b = &m->slots[slot];
  if (b->p == NULL || !fz_room(m, size, 16)) return;
  fz_block_verify(b, "reallocation by the second thread");
  uint8_t* q = fz_worker_realloc(b->p, size);
  if (q == NULL) fz_fail("second thread: reallocation of %p to %zu bytes returned NULL", (void*)b->p, size);
  fz_block_resized(m, slot, q, size, 0, 0, false, FZ_OWNER_WORKER);
}

/* ---- Failure rules ---------------------------------------------------------------- */

static void fz_op_overflow(fz_model_t* m, fz_input_t* in) {
  fz_block_t* b = &m->slots[fz_slot(in)];
  uint8_t kind = fz_u8(in);
  size_t half = ((size_t)1 << (sizeof(size_t) * 8 - 1)) + 1; /* half * 2 overflows */
  errno = 0;
  switch (kind % 7) {
    case 0: fz_expect_failure(mi_calloc(half, 2), ENOMEM, "calloc overflowing"); break;
    case 1: fz_expect_failure(mi_mallocn(2, half), ENOMEM, "mallocn overflowing"); break;
    case 2: fz_expect_failure(mi_malloc((size_t)PTRDIFF_MAX + 1), ENOMEM, "malloc above PTRDIFF_MAX"); break;
    case 3: fz_expect_failure(mi_malloc_aligned(SIZE_MAX - 8, 64), ENOMEM, "aligned malloc near SIZE_MAX"); break;
    case 4: fz_expect_failure(mi_reallocn(b->p, half, 4), ENOMEM, "reallocn overflowing"); break;
    case 5: fz_expect_failure(mi_recalloc(b->p, 4, half), ENOMEM, "recalloc overflowing"); break;
    default: fz_expect_failure(mi_realloc(b->p, (size_t)PTRDIFF_MAX + 1), ENOMEM, "realloc above PTRDIFF_MAX"); break;
  }
  if (b->p != NULL) fz_block_verify(b, "use after a failed reallocation"); /* the block stays valid */
}

static void fz_op_huge(fz_model_t* m, fz_input_t* in) {
  int slot = fz_slot(in);
  size_t size = ((size_t)32 << 20) + 1 + (size_t)fz_u8(in) * 65536;
  if (!fz_room(m, size, 16)) return;
  fz_release(m, slot);
  fz_block_add(m, slot, (uint8_t*)mi_malloc(size), size, 16, 0, false, FZ_OWNER_DEFAULT);
}

static void fz_op_collect(fz_model_t* m, fz_input_t* in) {
  uint8_t kind = fz_u8(in);
  mi_heap_t* heap = m->heaps[(kind >> 2) & (FZ_HEAPS - 1)];
  if ((kind & 2) && heap != NULL) mi_heap_collect(heap, kind & 1);
  else mi_collect(kind & 1);
}

/* The positive control of the fuzz smoke: a read of the block that the
   operation just before freed (FZ_OP_FREE). Built only with
   -DMI_FUZZ_PLANT_UAF; the seed corpus never uses the opcode, so the fuzzer
   has to find it. Only right after a free: with any allocation in between,
   whether the read is a use after free depends on where the allocator put
   the later block, which differs between the campaign's process (state
   left by earlier inputs) and the reproduction of its input, and the
   control must reproduce (a 60 s smoke saved a libFuzzer input whose freed
   zero-size block, reproduced alone, was the address of the next one). */
static void fz_op_reserved(uint8_t* just_freed) {
#if MI_FUZZ_PLANT_UAF
  if (just_freed != NULL) (void)((volatile uint8_t*)just_freed)[0];
#elif MI_FUZZ_PLANT_DOUBLE_FREE
  /* the triage job's plant in the secure harness: a bug secure mode
     reports, with its stacks and dedup key (ci/fuzz.sh) */
  if (just_freed != NULL) mi_free(just_freed);
#else
  (void)just_freed;
#endif
}

/* ---- The program ---------------------------------------------------------------- */

static void fz_step(fz_model_t* m, fz_input_t* in, fz_corrupt_fn corrupt, size_t offset) {
  int op = fz_u8(in) & (FZ_OP_COUNT - 1);
  if (m->trace) fprintf(stderr, "fuzz: offset %zu: op %d\n", offset, op);
  uint8_t* just_freed = m->last_freed; /* by the operation before this one */
  m->last_freed = NULL;
  switch (op) {
    case FZ_OP_MALLOC:
    case FZ_OP_ZALLOC:
    case FZ_OP_CALLOC:
    case FZ_OP_MALLOC_SMALL:
    case FZ_OP_MALLOC_ALIGNED:
    case FZ_OP_MALLOC_ALIGNED_AT:
    case FZ_OP_ZALLOC_ALIGNED:
    case FZ_OP_CALLOC_ALIGNED:
    case FZ_OP_POSIX_MEMALIGN:
    case FZ_OP_ALIGNED_ALLOC: fz_op_alloc(m, op, in); break;
    case FZ_OP_FREE: {
      int slot = fz_slot(in);
      m->last_freed = m->slots[slot].p; /* NULL if the slot is empty */
      fz_release(m, slot);
      break;
    }
    case FZ_OP_REALLOC:
    case FZ_OP_REZALLOC:
    case FZ_OP_RECALLOC:
    case FZ_OP_REALLOC_ALIGNED: fz_op_realloc(m, op, in); break;
    case FZ_OP_USABLE: fz_op_usable(m, in); break;
    case FZ_OP_EXPAND: fz_op_expand(m, in); break;
    case FZ_OP_HEAP_NEW: fz_op_heap_new(m, in); break;
    case FZ_OP_HEAP_ALLOC: fz_op_heap_alloc(m, in); break;
    case FZ_OP_HEAP_REALLOC: fz_op_heap_realloc(m, in); break;
    case FZ_OP_HEAP_DELETE: {
      int h = fz_heap_slot(in);
      if (m->heaps[h] != NULL) fz_heap_delete(m, h);
      break;
    }
    case FZ_OP_HEAP_DESTROY: {
      int h = fz_heap_slot(in);
      if (m->heaps[h] != NULL) fz_heap_destroy(m, h);
      break;
    }
    case FZ_OP_HEAP_VISIT: fz_op_heap_visit(m, in); break;
    case FZ_OP_HANDOFF: fz_op_handoff(m, in); break;
    case FZ_OP_WORKER_ALLOC: fz_op_worker_alloc(m, in); break;
    case FZ_OP_WORKER_REALLOC: fz_op_worker_realloc(m, in); break;
    case FZ_OP_WORKER_RESTART: fz_worker_stop(); break;
    case FZ_OP_COLLECT: fz_op_collect(m, in); break;
    case FZ_OP_HUGE: fz_op_huge(m, in); break;
    case FZ_OP_OVERFLOW: fz_op_overflow(m, in); break;
    case FZ_OP_CORRUPT:
      if (corrupt != NULL) corrupt(m, in);
      break;
    default: fz_op_reserved(just_freed); break;
  }
}

/* The positive control of the memory gate (fuzz/replay.c): every input
   keeps 1 MiB, written, on a list. Built only with -DMI_FUZZ_PLANT_LEAK.
   From a heap of its own, which no program visits: the default heap's
   visit would take the kept blocks for blocks the model does not know. */
static void fz_plant_leak(void) {
#if MI_FUZZ_PLANT_LEAK
  static mi_heap_t* heap;
  static void* kept;
  if (heap == NULL) heap = mi_heap_new();
  void** p = (heap != NULL ? (void**)mi_heap_malloc(heap, (size_t)1 << 20) : NULL);
  if (p == NULL) fz_fail("planted leak: the allocation failed");
  memset(p, 0x5a, (size_t)1 << 20);
  *p = kept;
  kept = p;
#endif
}

void fz_run(const uint8_t* data, size_t size, fz_corrupt_fn corrupt) {
  static fz_model_t model;
  fz_model_t* m = &model;
  memset(m, 0, sizeof(*m));
  m->trace = (getenv("FZ_TRACE") != NULL);
  fz_input_t in = {data, size};
  bool profile = fz_profile_on();
  while (in.n > 0) {
    if (!profile) {
      fz_step(m, &in, corrupt, size - in.n);
      continue;
    }
    int op = (int)(in.p[0] & (FZ_OP_COUNT - 1));
    uint64_t start = fz_profile_now();
    fz_step(m, &in, corrupt, size - in.n);
    fz_profile_add(op, fz_profile_now() - start);
  }
  uint64_t end_start = (profile ? fz_profile_now() : 0);
  /* the end of the program: every block freed (checked), every heap deleted,
     the second thread idle */
  for (int i = 0; i < FZ_SLOTS; i++) fz_release(m, i);
  for (int h = 0; h < FZ_HEAPS; h++) {
    if (m->heaps[h] != NULL) fz_heap_delete(m, h);
  }
  fz_worker_sync();
  if (profile) fz_profile_add(FZ_PROFILE_END, fz_profile_now() - end_start);
  if (m->live_bytes != 0) fz_fail("%zu bytes still counted live at the end (harness bug)", m->live_bytes);
  fz_plant_leak();
}
