/* MIMALLOC_SECURE_STACKS: the capture of the calling thread's stack, inline
   for the secure front's malloc and free (alloc.c, free.c), which take it
   on every call while the option is on; the table it numbers stacks by,
   the rare paths and the records are stacks.c's. */
#ifndef MI_SECURE_STACKS_CAPTURE_H
#define MI_SECURE_STACKS_CAPTURE_H

#include "secure.h"
#if MI_SECURE_STACKS
#include "../dhat/dhat.h"
#if !defined(_WIN32)
#include "../dhat/stack-walk.h"
#endif

/* A stack as a block's record holds it: its number in the table (1 and up)
   in the low bits, the slot of the thread that took it above. The stacks
   are shared by the threads (a program that starts thread after thread
   adds no stacks for each), the threads' numbers kept once each. */
#define MI_STACKS_NUMBER_BITS 18
#define MI_STACKS_NUMBER_MASK (((uint32_t)1 << MI_STACKS_NUMBER_BITS) - 1)
#define MI_STACKS_THREADS ((size_t)1 << (32 - MI_STACKS_NUMBER_BITS)) /* slots; 0: not kept */
/* A capture that kept no stack (none walked, the table full): not 0, which
   the paths that take none pass, so that the record is written and a block
   shows none rather than its slot's last one */
#define MI_STACKS_NONE (~(uint32_t)0 << MI_STACKS_NUMBER_BITS)

/* Per thread: the numbers of the stacks it saw last, by hash (OS memory,
   made at its first capture, gone with it). The table's index and entries
   are shared and large: a lookup there misses the cache twice, where a
   program allocates from the same few places over and over. A hit trusts
   the 64-bit hash of the frames (a false hit, a wrong stack named in a
   report, has a chance of about 2^-64 a lookup). */
typedef struct mi_stacks_cached_s {
  uint64_t hash;
  uint32_t number;
} mi_stacks_cached_t;
#define MI_STACKS_CACHE 1024
#define MI_STACKS_CACHE_SIZE (MI_STACKS_CACHE * sizeof(mi_stacks_cached_t))

/* What a thread's captures need, together (one thread-local base to find):
   `ready` once all of it is known and the frame-pointer walk alone runs,
   so that every capture but a thread's first tests one flag. */
typedef struct mi_stacks_tls_s {
  bool ready;
  bool busy;                 /* a capture under way: the first on a thread may allocate */
  bool gone;                 /* its data given back (thread_done): not made again */
  long thread;               /* its number as the OS shows it (0: not asked yet) */
  uint32_t thread_bits;      /* its slot in the table of threads, in a record's place (stacks.c) */
  uintptr_t lo, hi;          /* its stack, less a frame (dhat/stack-walk.h) */
  mi_stacks_cached_t* cache; /* MI_STACKS_CACHE entries */
} mi_stacks_tls_t;
extern mi_decl_thread mi_stacks_tls_t _mi_stacks_tls mi_decl_hidden;

#define MI_STACKS_SEED 0x243F6A8885A308D3ULL

static mi_forceinline uint64_t mi_stacks_hash_step(uint64_t h, uintptr_t frame) {
  h = (h ^ (uint64_t)frame) * 0xBF58476D1CE4E5B9ULL;
  return h ^ (h >> 29);
}

static inline uint64_t mi_stacks_hash_end(uint64_t h, uint32_t n) {
  return (h ^ n) * 0x94D049BB133111EBULL;
}

/* A thread's first capture, and every one in the unwinder's mode or where
   its stack is not known (the profilers' capture); and a stack the
   thread's cache does not know. */
uint32_t _mi_stacks_capture_slow(const void* frame) mi_decl_hidden;
uint32_t _mi_stacks_capture_miss(const void* frame, mi_stacks_cached_t* c) mi_decl_hidden;

#if !defined(_WIN32)
/* The walk of dhat/stack-walk.h (the same frames, `frames` NULL: not kept)
   with the hash taken on the way: the frames it trusts, from `frame`. */
static mi_forceinline uint32_t mi_stacks_walk(const mi_stacks_tls_t* tls, const void* frame, uintptr_t* frames,
                                              uint64_t* hash) {
  const uintptr_t lo = tls->lo;
  const uintptr_t hi = tls->hi;
  const uintptr_t code_lo = _mi_walk_code_lo;
  const uintptr_t code_hi = _mi_walk_code_hi;
  uintptr_t fp = (uintptr_t)frame;
  while (fp >= lo && fp <= hi) { /* the allocator's frames */
    const uintptr_t* f = (const uintptr_t*)fp;
    if (f[1] < code_lo || f[1] >= code_hi) break;
    if (f[0] <= fp) { /* (cannot happen) */
      *hash = 0;
      return 0;
    }
    fp = f[0];
  }
  uint64_t h = MI_STACKS_SEED;
  uint32_t n = 0;
  while (n < MI_SECURE_STACK_FRAMES) {
    if (fp < lo || fp > hi || (fp & (sizeof(uintptr_t) - 1)) != 0) break;
    const uintptr_t* f = (const uintptr_t*)fp;
    uintptr_t next = f[0];
    uintptr_t ret = f[1];
    if (n > 0 && !mi_walk_in_code(ret)) break;
    if (frames != NULL) frames[n] = ret;
    n++;
    h = mi_stacks_hash_step(h, ret);
    if (mi_walk_is_main(ret) || next <= fp) break; /* (zero included: code without frame pointers keeps anything) */
    fp = next;
  }
  *hash = mi_stacks_hash_end(h, n);
  return n;
}

#endif

/* The calling thread's stack from `frame` (a frame of the allocator's entry
   path: the walk skips the allocator's frames from there), by its number
   (0: none) with the thread's slot. Past a thread's first, the walk keeps
   no frames and makes no call: a stack the thread's cache knows needs only
   its hash. */
static mi_forceinline uint32_t mi_stacks_capture(const void* frame) {
#if defined(_WIN32)
  return _mi_stacks_capture_slow(frame);
#else
  const mi_stacks_tls_t* tls = &_mi_stacks_tls;
  if (mi_unlikely(!tls->ready)) return _mi_stacks_capture_slow(frame);
  uint64_t h;
  if (mi_stacks_walk(tls, frame, NULL, &h) == 0) return MI_STACKS_NONE;
  mi_stacks_cached_t* c = &tls->cache[(h >> 11) & (MI_STACKS_CACHE - 1)];
  if (mi_likely(c->hash == h && c->number != 0)) return (c->number | tls->thread_bits);
  return _mi_stacks_capture_miss(frame, c);
#endif
}

#endif /* MI_SECURE_STACKS */
#endif
