/* A sampled block grown or shrunk in place, again and again (a string
   builder appending to its buffer): its record must follow each new size,
   and taking the profiler's lock and finding the record each time would
   make such a program pay for every append, not for each sample.

   So each thread keeps its last resizes of sampled blocks in a small
   direct-mapped table of its own, (pointer, size) per slot. A resize whose
   pointer is in its slot stores the new size there, without a lock; the
   record takes it when anything reads the records (a dump, a snapshot, the
   statistics, a visit: record.c flushes every thread's table under the
   lock first), when the slot is wanted for another block, and when the
   thread ends. Only the owner writes a slot's pointer, and only under the
   lock, so a reader holding the lock sees each pointer with a size that was
   its own. A block whose record goes (freed by any thread, reallocated
   away, its heap destroyed, the profiler stopped) leaves every table under
   the lock in the same step: a pending size is never applied to a later
   block at the same address. Without a free table for the thread (more
   than MI_PROF_RESIZE_THREADS at once) the record is updated under the
   lock as before. */
#include "prof.h"

#if MI_PPROF

#define MI_PROF_RESIZE_THREADS 64
#define MI_PROF_RESIZE_BITS 4
#define MI_PROF_RESIZE_SLOTS (1 << MI_PROF_RESIZE_BITS)

typedef struct mi_prof_resize_table_s {
  _Atomic(uintptr_t) key[MI_PROF_RESIZE_SLOTS]; /* 0: empty */
  _Atomic(uint64_t) size[MI_PROF_RESIZE_SLOTS];
  bool claimed; /* under the lock */
} mi_prof_resize_table_t;

static mi_prof_resize_table_t mi_prof_resize_tables[MI_PROF_RESIZE_THREADS];
static size_t mi_prof_resize_claimed_max; /* tables [0, max) were ever claimed (under the lock) */
static mi_decl_thread mi_prof_resize_table_t* mi_prof_resize_mine;

static inline size_t mi_prof_resize_slot(uintptr_t key) {
  return mi_prof_key_hash(key, MI_PROF_RESIZE_BITS);
}

/* A sampled block reallocated in place, while the sampler alone runs
   (src/api/alloc.c): its record takes the new size, through the thread's
   table once the block is there. (A move is a free, which the page's flag
   tells, and an allocation of its own.) */
void _mi_prof_realloc_in_place(void* p, size_t newsize) {
  uint64_t size = (newsize == 0 ? 1 : (uint64_t)newsize);
  mi_prof_resize_table_t* t = mi_prof_resize_mine;
  if (t != NULL) {
    size_t i = mi_prof_resize_slot((uintptr_t)p);
    if (atomic_load_explicit(&t->key[i], memory_order_relaxed) == (uintptr_t)p) {
      atomic_store_explicit(&t->size[i], size, memory_order_relaxed);
      return;
    }
  }
  _mi_prof_resize_slow(p, size);
}

static void mi_prof_resize_flush_table(mi_prof_resize_table_t* t, bool empty) {
  for (size_t i = 0; i < MI_PROF_RESIZE_SLOTS; i++) {
    uintptr_t key = atomic_load_explicit(&t->key[i], memory_order_relaxed);
    if (key == 0) continue;
    _mi_prof_rec_resize_locked(key, atomic_load_explicit(&t->size[i], memory_order_relaxed));
    if (empty) atomic_store_explicit(&t->key[i], 0, memory_order_relaxed);
  }
}

/* A free table for the calling thread; false: every table taken. */
static bool mi_prof_resize_claim(void) {
  for (size_t k = 0; k < MI_PROF_RESIZE_THREADS; k++) {
    if (mi_prof_resize_tables[k].claimed) continue;
    mi_prof_resize_tables[k].claimed = true;
    if (k + 1 > mi_prof_resize_claimed_max) mi_prof_resize_claimed_max = k + 1;
    mi_prof_resize_mine = &mi_prof_resize_tables[k];
    return true;
  }
  return false;
}

/* The record of `key` has just taken `size` (record.c, under the lock):
   later resizes by this thread go to its table. */
void _mi_prof_resize_track_locked(uintptr_t key, uint64_t size) {
  if (mi_prof_resize_mine == NULL && !mi_prof_resize_claim()) return; /* this thread's resizes take the lock */
  mi_prof_resize_table_t* t = mi_prof_resize_mine;
  size_t i = mi_prof_resize_slot(key);
  uintptr_t old = atomic_load_explicit(&t->key[i], memory_order_relaxed);
  if (old != 0 && old != key) _mi_prof_rec_resize_locked(old, atomic_load_explicit(&t->size[i], memory_order_relaxed));
  atomic_store_explicit(&t->size[i], size, memory_order_relaxed);
  atomic_store_explicit(&t->key[i], key, memory_order_relaxed);
}

/* Before the records are read: every pending size into its record. */
void _mi_prof_resize_flush_locked(void) {
  for (size_t k = 0; k < mi_prof_resize_claimed_max; k++) {
    if (mi_prof_resize_tables[k].claimed) mi_prof_resize_flush_table(&mi_prof_resize_tables[k], false);
  }
}

/* The record of `key` is gone: no table may apply a size to it later. */
void _mi_prof_resize_forget_locked(uintptr_t key) {
  size_t i = mi_prof_resize_slot(key);
  for (size_t k = 0; k < mi_prof_resize_claimed_max; k++) {
    mi_prof_resize_table_t* t = &mi_prof_resize_tables[k];
    if (atomic_load_explicit(&t->key[i], memory_order_relaxed) == key)
      atomic_store_explicit(&t->key[i], 0, memory_order_relaxed);
  }
}

/* Every record gone at once (a stop): the tables emptied, kept by their threads. */
void _mi_prof_resize_clear_locked(void) {
  for (size_t k = 0; k < mi_prof_resize_claimed_max; k++) {
    for (size_t i = 0; i < MI_PROF_RESIZE_SLOTS; i++) {
      atomic_store_explicit(&mi_prof_resize_tables[k].key[i], 0, memory_order_relaxed);
    }
  }
}

/* The calling thread ends: its pending sizes into the records, its table free. */
void _mi_prof_resize_thread_done_locked(void) {
  mi_prof_resize_table_t* t = mi_prof_resize_mine;
  if (t == NULL) return;
  mi_prof_resize_flush_table(t, true);
  t->claimed = false;
  mi_prof_resize_mine = NULL;
}

bool _mi_prof_resize_thread_has_table(void) {
  return (mi_prof_resize_mine != NULL);
}

/* fork(): the child's only thread is the caller; the others' tables are
   applied and freed. */
void _mi_prof_resize_after_fork_child_locked(void) {
  for (size_t k = 0; k < mi_prof_resize_claimed_max; k++) {
    mi_prof_resize_table_t* t = &mi_prof_resize_tables[k];
    if (!t->claimed || t == mi_prof_resize_mine) continue;
    mi_prof_resize_flush_table(t, true);
    t->claimed = false;
  }
}

#endif
