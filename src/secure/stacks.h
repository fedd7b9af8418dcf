/* MIMALLOC_SECURE_STACKS (secure/stacks.c): every block's allocation and
   free stacks, kept by the secure front (alloc.c, free.c) and the
   observers' paths (api/), read by the reports (report-detail.c). Here:
   what a stack and a block's record are, the records' writes, and the
   capture of the calling thread's stack, inline for malloc and free, which
   take it on every call while the option is on; the table it numbers
   stacks by, the rare paths and the records' memory are stacks.c's. */
#ifndef MI_SECURE_STACKS_H
#define MI_SECURE_STACKS_H

#include "secure.h"

/* A stack as a report gets it: its thread and its return addresses,
   innermost first. */
/* (8: the allocating function and 7 callers. Deeper stacks of recursive
   code are distinct by the hundred thousand: espresso, built with frame
   pointers, keeps 9.6 times its memory in 16-frame stacks, 1.7 times in
   8-frame ones) */
#define MI_SECURE_STACK_FRAMES 8
typedef struct mi_secure_stack_s {
  long thread;
  uint32_t count; /* 0: none recorded */
  const uintptr_t* frames;
} mi_secure_stack_t;
/* the calling thread's stack by its number (0: none), walked from `frame`,
   a frame of the allocator's entry path (__builtin_frame_address(0) of the
   caller: the allocator's frames from there are skipped) */
uint32_t _mi_secure_stack_here(const void* frame) mi_decl_hidden;
/* the observers' hook of an allocation the program made (api/observe.c) */
void _mi_secure_stacks_allocated(void* p, const void* frame) mi_decl_hidden;
/* A free while the blocks' stacks are kept (secure/stacks.c): its stack recorded once the block passed the checks. */
void _mi_secure_free_recorded(void* p, mi_alloc_kind_t kind, uint32_t stack) mi_decl_hidden;
/* A block's record: the stacks of its allocation and of its last free
   (0: none; the free's cleared by the allocation). */
typedef struct mi_stacks_slot_s {
  uint32_t allocated;
  uint32_t freed;
} mi_stacks_slot_t;
/* the slow paths of the two below: the page's records not at hand (a
   single-block page's, or made since the page was set up) */
void _mi_secure_stacks_put(mi_page_t* page, size_t idx, uint32_t stack) mi_decl_hidden;
void _mi_secure_stacks_freed(mi_page_t* page, size_t idx, uint32_t stack) mi_decl_hidden;
#if MI_SECURE_STACKS
/* a block just laid out (alloc.c): its record, `stack` its allocation's.
   A page set up while the option is on has its records at hand (set by
   its owner before any block is handed out: any thread that frees one
   sees them) */
static inline void mi_secure_stacks_put(mi_page_t* page, size_t idx, uint32_t stack) {
  mi_stacks_slot_t* slots = atomic_load_explicit(&page->stacks, memory_order_relaxed);
  if (mi_likely(slots != NULL)) {
    slots[idx] = (mi_stacks_slot_t){stack, 0};
    return;
  }
  _mi_secure_stacks_put(page, idx, stack);
}
/* a free, the block validated (free.c): `idx` its index in `page`, `stack`
   the free's (taken before the checks by the entry point) */
static inline void mi_secure_stacks_freed(mi_page_t* page, size_t idx, uint32_t stack) {
  mi_stacks_slot_t* slots = atomic_load_explicit(&page->stacks, memory_order_relaxed);
  if (mi_likely(slots != NULL)) {
    slots[idx].freed = stack;
    return;
  }
  _mi_secure_stacks_freed(page, idx, stack);
}
#endif
/* malloc and new, and free and delete, while the stacks are the only
   observer (api/): the stack taken, the block's record kept */
void* _mi_secure_new_stacked(mi_heap_t* heap, size_t size, mi_alloc_kind_t kind) mi_decl_hidden;
void _mi_secure_free_stacked(void* p, mi_alloc_kind_t kind) mi_decl_hidden;
/* the stacks recorded for `block` (its start): false if none */
bool _mi_secure_stacks_of(const void* block, mi_secure_stack_t* allocated, mi_secure_stack_t* freed) mi_decl_hidden;

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

/* A thread's first capture, and every one in the unwinder's mode or where
   its stack is not known (the profilers' capture); and a stack the
   thread's cache does not know. */
uint32_t _mi_stacks_capture_slow(const void* frame) mi_decl_hidden;
uint32_t _mi_stacks_capture_miss(const void* frame, mi_stacks_cached_t* c) mi_decl_hidden;

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
  bool main;
  if (mi_walk_frames((uintptr_t)frame, tls->lo, tls->hi, MI_SECURE_STACK_FRAMES, NULL, NULL, &h, &main) <= 0) {
    return MI_STACKS_NONE;
  }
  mi_stacks_cached_t* c = &tls->cache[(h >> 11) & (MI_STACKS_CACHE - 1)];
  if (mi_likely(c->hash == h && c->number != 0)) return (c->number | tls->thread_bits);
  return _mi_stacks_capture_miss(frame, c);
#endif
}

#endif /* MI_SECURE_STACKS */
#endif
