/* A sampled block grown or shrunk in place, again and again (a string
   builder appending to its buffer): its record must follow each new size,
   and taking the profiler's lock and finding the record each time would
   make such a program pay for every append, not for each sample.

   So each thread keeps the blocks it last resized, on pages whose bits say
   they may be samples, in a small table of its own: 4-way set-associative,
   (pointer, size) per way, a set per cache line. A resize whose pointer is
   in its set stores the new size there, without a lock; the record takes
   it when anything reads the records (a dump, a snapshot, the statistics,
   a visit: record.c flushes every thread's table under the lock first),
   when the way is wanted for another block, and when the thread ends. Only
   the owner writes a way's pointer, and only under the lock, so a reader
   holding the lock sees each pointer with a size that was its own. An
   address whose record is made or goes (a sample; a free by any thread, a
   reallocation away, a heap destroyed, a stop) leaves every table under
   the lock in the same step: a pending size is never applied to a later
   block at the same address, and a block the table holds as not sampled
   is looked up again once it is. Without a free table for the thread (more
   than MI_PROF_RESIZE_THREADS at once) the record is updated under the
   lock as before. */
#include "prof.h"

#if MI_PPROF

#define MI_PROF_RESIZE_THREADS 64
#define MI_PROF_RESIZE_WAYS 4
#define MI_PROF_RESIZE_SET_BITS 5
#define MI_PROF_RESIZE_SETS (1 << MI_PROF_RESIZE_SET_BITS)

/* A set is one cache line: a lookup reads one line whichever way holds the
   block. */
typedef struct mi_prof_resize_set_s {
  _Atomic(uintptr_t) key[MI_PROF_RESIZE_WAYS]; /* 0: empty */
  _Atomic(uint64_t) size[MI_PROF_RESIZE_WAYS];
} mi_prof_resize_set_t;

typedef struct mi_prof_resize_table_s {
  _Alignas(64) mi_prof_resize_set_t sets[MI_PROF_RESIZE_SETS];
  uint8_t victim; /* the next way to replace in a full set (the owner's, under the lock) */
  bool claimed;   /* under the lock */
} mi_prof_resize_table_t;

static mi_prof_resize_table_t mi_prof_resize_tables[MI_PROF_RESIZE_THREADS];
static size_t mi_prof_resize_claimed_max; /* tables [0, max) were ever claimed (under the lock) */
static mi_decl_thread mi_prof_resize_table_t* mi_prof_resize_mine;
static mi_decl_thread bool mi_prof_resize_refused; /* every table was taken when this thread asked */

static inline mi_prof_resize_set_t* mi_prof_resize_set(mi_prof_resize_table_t* t, uintptr_t key) {
  return &t->sets[mi_prof_key_hash(key, MI_PROF_RESIZE_SET_BITS)];
}

/* A block reallocated in place on a page whose bits say it may be a sample,
   while the sampler alone runs (src/api/alloc.c): a sampled block's record
   takes the new size, through the thread's table once the block is there.
   The table also holds blocks found not to be sampled (the page's bits are
   a hash, and stay set for an address whose sample was freed until the
   page has none left): their sizes go nowhere, and their resizes cost no
   filter read. A record made at such an address later takes the entry out
   (mi_prof_rec_insert). (A move is a free, which the page's flag tells,
   and an allocation of its own.) */
void _mi_prof_realloc_in_place(void* p, size_t newsize) {
  uint64_t size = (newsize == 0 ? 1 : (uint64_t)newsize);
  mi_prof_resize_table_t* t = mi_prof_resize_mine;
  if (t != NULL) {
    mi_prof_resize_set_t* set = mi_prof_resize_set(t, (uintptr_t)p);
    for (size_t w = 0; w < MI_PROF_RESIZE_WAYS; w++) {
      if (atomic_load_explicit(&set->key[w], memory_order_relaxed) == (uintptr_t)p) {
        atomic_store_explicit(&set->size[w], size, memory_order_relaxed);
        return;
      }
    }
  }
  _mi_prof_resize_slow(p, size);
}

static void mi_prof_resize_flush_table(mi_prof_resize_table_t* t, bool empty) {
  for (size_t i = 0; i < MI_PROF_RESIZE_SETS; i++) {
    mi_prof_resize_set_t* set = &t->sets[i];
    for (size_t w = 0; w < MI_PROF_RESIZE_WAYS; w++) {
      uintptr_t key = atomic_load_explicit(&set->key[w], memory_order_relaxed);
      if (key == 0) continue;
      _mi_prof_rec_resize_locked(key, atomic_load_explicit(&set->size[w], memory_order_relaxed));
      if (empty) atomic_store_explicit(&set->key[w], 0, memory_order_relaxed);
    }
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

/* The block at `key` was just resized to `size` (record.c, under the lock;
   its record, if any, has taken the size): later resizes by this thread
   go to its table. The way it replaces in a full set gives its pending
   size to its record first. */
void _mi_prof_resize_track_locked(uintptr_t key, uint64_t size) {
  mi_prof_assert_locked();
  if (mi_prof_resize_mine == NULL && !mi_prof_resize_claim()) {
    mi_prof_resize_refused = true; /* this thread's resizes of samples take the lock */
    return;
  }
  mi_prof_resize_table_t* t = mi_prof_resize_mine;
  mi_prof_resize_set_t* set = mi_prof_resize_set(t, key);
  size_t w = 0;
  while (w < MI_PROF_RESIZE_WAYS && atomic_load_explicit(&set->key[w], memory_order_relaxed) != 0) w++;
  if (w == MI_PROF_RESIZE_WAYS) {
    w = (t->victim++) % MI_PROF_RESIZE_WAYS;
    uintptr_t old = atomic_load_explicit(&set->key[w], memory_order_relaxed);
    _mi_prof_rec_resize_locked(old, atomic_load_explicit(&set->size[w], memory_order_relaxed));
  }
  atomic_store_explicit(&set->size[w], size, memory_order_relaxed);
  atomic_store_explicit(&set->key[w], key, memory_order_relaxed);
}

/* Before the records are read: every pending size into its record. */
void _mi_prof_resize_flush_locked(void) {
  mi_prof_assert_locked();
  for (size_t k = 0; k < mi_prof_resize_claimed_max; k++) {
    if (mi_prof_resize_tables[k].claimed) mi_prof_resize_flush_table(&mi_prof_resize_tables[k], false);
  }
}

/* A record of `key` is made or gone: no table may keep an entry for the
   address (a pending size would go to a later block there; an entry of a
   block found not sampled would hide the new sample's resizes). */
void _mi_prof_resize_forget_locked(uintptr_t key) {
  mi_prof_assert_locked();
  for (size_t k = 0; k < mi_prof_resize_claimed_max; k++) {
    mi_prof_resize_set_t* set = mi_prof_resize_set(&mi_prof_resize_tables[k], key);
    for (size_t w = 0; w < MI_PROF_RESIZE_WAYS; w++) {
      if (atomic_load_explicit(&set->key[w], memory_order_relaxed) == key)
        atomic_store_explicit(&set->key[w], 0, memory_order_relaxed);
    }
  }
}

/* Every record gone at once (a stop): the tables emptied, kept by their threads. */
void _mi_prof_resize_clear_locked(void) {
  mi_prof_assert_locked();
  for (size_t k = 0; k < mi_prof_resize_claimed_max; k++) {
    for (size_t i = 0; i < MI_PROF_RESIZE_SETS; i++) {
      for (size_t w = 0; w < MI_PROF_RESIZE_WAYS; w++) {
        atomic_store_explicit(&mi_prof_resize_tables[k].sets[i].key[w], 0, memory_order_relaxed);
      }
    }
  }
}

/* The calling thread ends: its pending sizes into the records, its table free. */
void _mi_prof_resize_thread_done_locked(void) {
  mi_prof_assert_locked();
  mi_prof_resize_table_t* t = mi_prof_resize_mine;
  if (t == NULL) return;
  mi_prof_resize_flush_table(t, true);
  t->claimed = false;
  mi_prof_resize_mine = NULL;
}

/* Whether the thread has a table, or may get one. */
bool _mi_prof_resize_may_track(void) {
  return (mi_prof_resize_mine != NULL || !mi_prof_resize_refused);
}

bool _mi_prof_resize_thread_has_table(void) {
  return (mi_prof_resize_mine != NULL);
}

/* fork(): the child's only thread is the caller; the others' tables are
   applied and freed. */
void _mi_prof_resize_after_fork_child_locked(void) {
  mi_prof_assert_locked();
  for (size_t k = 0; k < mi_prof_resize_claimed_max; k++) {
    mi_prof_resize_table_t* t = &mi_prof_resize_tables[k];
    if (!t->claimed || t == mi_prof_resize_mine) continue;
    mi_prof_resize_flush_table(t, true);
    t->claimed = false;
  }
}

#endif
