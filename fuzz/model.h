/* The shadow model of the fuzz harnesses: what the program believes it
   holds. Every live block is in a slot with its id (the seed of its
   pattern), the size the program may use, and which heap owns it; the
   checks compare the allocator's answers and the blocks' contents with it.
   Any difference is a finding: fz_fail prints it and aborts. */
#ifndef FZ_MODEL_H
#define FZ_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mimalloc.h>

#define FZ_SLOTS 64
#define FZ_HEAPS 4
/* the most the live blocks of one input may hold: keeps a campaign's memory flat */
#define FZ_LIVE_MAX ((size_t)192 * 1024 * 1024)

/* Owners of a block: a first-class heap slot 0..FZ_HEAPS-1, or one of these. */
#define FZ_OWNER_DEFAULT (-1) /* the main thread's default heap */
#define FZ_OWNER_WORKER (-2)  /* allocated by the second thread */

typedef struct fz_block_s {
  uint8_t* p;       /* NULL: the slot is empty */
  size_t size;      /* bytes the program may use */
  size_t written;   /* high-water mark of the program's writes into this block */
  uint32_t id;      /* seed of the pattern */
  int owner;        /* heap slot, FZ_OWNER_DEFAULT or FZ_OWNER_WORKER */
  bool zero_origin; /* made by a zeroing call and resized only by zeroing calls since: zero past `written` */
  size_t usable;    /* mi_usable_size, asked before a zeroing reallocation (fz_block_note_usable) */
} fz_block_t;

typedef struct fz_model_s {
  fz_block_t slots[FZ_SLOTS];
  mi_heap_t* heaps[FZ_HEAPS];
  uint32_t next_id;
  size_t live_bytes;
  uint8_t* last_freed;  /* freed by the last operation if a free (the planted use-after-free's) */
  unsigned corruptions; /* secure harness: cases run so far in this input */
  bool trace;           /* FZ_TRACE set: each operation and block is printed (for reproducing) */
} fz_model_t;

__attribute__((noreturn, format(printf, 1, 2))) void fz_fail(const char* fmt, ...);

/* The heap an owner stands for (the default heap for FZ_OWNER_DEFAULT). */
mi_heap_t* fz_owner_heap(const fz_model_t* m, int owner);

/* A new block of `request` bytes at p from the allocation call just made:
   checks alignment and size, zero contents for zeroing calls, fills the
   pattern, and puts it in slot `slot` (which must be empty). */
void fz_block_add(fz_model_t* m, int slot, uint8_t* p, size_t request, size_t align, size_t offset, bool zero,
                  int owner);

/* Check a block's pattern; `what` names the operation about to use it. */
void fz_block_verify(const fz_block_t* b, const char* what);

/* The block left the program (freed, handed over, destroyed with its heap). */
void fz_block_forget(fz_model_t* m, int slot);

/* After a reallocation of slot `slot` to `newsize` that returned `newp`
   (not NULL): the preserved prefix, the zeroed part for zeroing calls, the
   pattern of the rest, the alignment (`align` 0 for the plain calls), the
   owner. `moved_to` is the owner a moved block now has. */
void fz_block_resized(fz_model_t* m, int slot, uint8_t* newp, size_t newsize, size_t align, size_t offset, bool zero,
                      int moved_to);

/* Before a zeroing reallocation: the block's usable size, which bounds what
   the allocator promises to be zero after a move (model.c). */
void fz_block_note_usable(fz_block_t* b);

/* Would `extra` more live bytes stay within FZ_LIVE_MAX? */
bool fz_budget_allows(const fz_model_t* m, size_t extra);

void fz_check_usable(const fz_block_t* b, size_t usable);

#endif
