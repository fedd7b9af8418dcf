/* The fuzz input as a program of allocator operations.

   An input is a sequence of operations; each is one opcode byte (the low 5
   bits select the operation, the high bits are ignored) followed by its
   operand bytes. An input that ends in the middle of an operation reads
   zeros for the missing bytes. Operands:
     slot    1 byte, low 6 bits: one of FZ_SLOTS block slots
     heap    1 byte, low 2 bits: one of FZ_HEAPS first-class heap slots
     size    2 bytes, big-endian: the top 2 bits pick a range (0..511,
             0..16383, 0..262128 in steps of 16, 0..4 MiB in steps of 256),
             the low 14 bits the value in it (fz_size)
     count   1 byte, low 4 bits + 1: an element count
     align   1 byte, modulo 24: 0..21 give 1 << n, 22 gives 3 (not a power
             of two), 23 gives 4 MiB (a sparse segment of its own) (fz_align)
     offset  1 byte: 0..255
     kind    1 byte: a variant of the operation
   An allocation into a slot that holds a block frees that block first; an
   operation on an empty slot or heap slot does nothing (but reallocation,
   which allocates). docs/fuzzing.md has the table with each operation's
   checks; fuzz/make-corpus.py writes programs in this encoding. */
#ifndef FZ_PROGRAM_H
#define FZ_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

enum fz_op_e {
  FZ_OP_MALLOC = 0,            /* slot size */
  FZ_OP_ZALLOC = 1,            /* slot size */
  FZ_OP_CALLOC = 2,            /* slot count size */
  FZ_OP_MALLOC_SMALL = 3,      /* slot size (modulo MI_SMALL_SIZE_MAX + 1); kind: zalloc_small if odd */
  FZ_OP_MALLOC_ALIGNED = 4,    /* slot size align */
  FZ_OP_MALLOC_ALIGNED_AT = 5, /* slot size align offset */
  FZ_OP_ZALLOC_ALIGNED = 6,    /* slot size align */
  FZ_OP_CALLOC_ALIGNED = 7,    /* slot count size align */
  FZ_OP_POSIX_MEMALIGN = 8,    /* slot size align */
  FZ_OP_ALIGNED_ALLOC = 9,     /* slot size align */
  FZ_OP_FREE = 10,             /* slot */
  FZ_OP_REALLOC = 11,          /* slot size */
  FZ_OP_REZALLOC = 12,         /* slot size */
  FZ_OP_RECALLOC = 13,         /* slot count size */
  FZ_OP_REALLOC_ALIGNED = 14,  /* slot size align */
  FZ_OP_USABLE = 15,           /* slot: check mi_usable_size, then use all of it */
  FZ_OP_EXPAND = 16,           /* slot size */
  FZ_OP_HEAP_NEW = 17,         /* heap */
  FZ_OP_HEAP_ALLOC = 18,   /* heap slot size kind (0 malloc, 1 zalloc, 2 calloc, 3 aligned to 1 << (kind >> 2) % 22) */
  FZ_OP_HEAP_REALLOC = 19, /* heap slot size kind (bit 0: rezalloc; bit 1: aligned to 1 << (kind >> 2) % 22) */
  FZ_OP_HEAP_DELETE = 20,  /* heap */
  FZ_OP_HEAP_DESTROY = 21, /* heap */
  FZ_OP_HEAP_VISIT = 22,   /* kind: heap slot kind % 5, or 4: the default heap */
  FZ_OP_HANDOFF = 23,      /* slot: the second thread frees the block */
  FZ_OP_WORKER_ALLOC = 24, /* slot size kind (0 malloc, 1 zalloc, 2 calloc, 3 aligned to 1 << (kind >> 2) % 22) */
  FZ_OP_WORKER_REALLOC = 25, /* slot size */
  FZ_OP_WORKER_RESTART = 26, /* the second thread exits (a new one starts on next use) */
  FZ_OP_COLLECT = 27,        /* kind: bit 0 force; bit 1: mi_heap_collect of heap slot kind >> 2 */
  FZ_OP_HUGE = 28,           /* slot count: a block above 32 MiB */
  FZ_OP_OVERFLOW = 29,       /* slot kind: calls whose size overflows must fail with ENOMEM */
  FZ_OP_CORRUPT = 30,        /* secure harness: slot kind arg arg (fuzz/corrupt.h); elsewhere nothing */
  FZ_OP_RESERVED = 31,       /* nothing (the planted use-after-free in MI_FUZZ_PLANT_UAF builds) */
  FZ_OP_COUNT = 32
};

typedef struct fz_input_s {
  const uint8_t* p;
  size_t n;
} fz_input_t;

uint8_t fz_u8(fz_input_t* in);
size_t fz_size(fz_input_t* in);
size_t fz_align(fz_input_t* in);

/* The secure harness's corruption operation: reads its operands from `in`. */
typedef void (*fz_corrupt_fn)(fz_model_t* m, fz_input_t* in);

/* Run one input against a fresh model; every block and heap it made is
   released at the end. */
void fz_run(const uint8_t* data, size_t size, fz_corrupt_fn corrupt);

/* Free the block in a slot (checked first), if any. */
void fz_release(fz_model_t* m, int slot);

#endif
