/* The lock classes of the allocator and the order in which they nest: the
   one table in the code. docs/lock-order.md documents the same table, and
   tests/lockorder checks that the two agree.

   A thread that holds a lock of rank r may only block on a lock of a higher
   rank. Classes of the same rank have no documented order between them; the
   checker (src/base/lockorder.c) then relies on the order it observes: an edge
   A -> B (B taken while A is held) that closes a cycle is a violation.

   Why this order: `threads` is outermost because the fork child walks the
   thread list and abandons each dead thread's segments (abandoned list,
   single-block list, segment cache, purge list, meta slots) while it holds
   it. `purge-run` is held across a whole purge pass, which takes the segment
   cache and the purge list under it; the fork handler takes it so that no
   page is half-purged (state PURGING) in a child. The others are leaves:
   nothing is taken while one of them is held. `arena` and `dhat` come late:
   a segment may go back to its arena under any of the above (the fork child
   does so under `threads`), and the profiler's lock is taken inside
   allocation calls and takes nothing while held. `memevt` follows `zero`: a
   segment's unmapping (under any of the above) takes it to drop the memory
   events' records of the segment. */
#ifndef MI_LOCKORDER_CLASSES_H
#define MI_LOCKORDER_CLASSES_H

/* X(id, name, rank, what it protects) */
#define MI_LOCK_CLASSES(X) \
  X(THREADS, "threads", 1, "the list of live threads' data (fork child walks it)") \
  X(SEGMENT_ABANDONED, "segment-abandoned", 2, "segments of exited threads") \
  X(SINGLE, "single", 3, "large and huge blocks of every heap") \
  X(PURGE_RUN, "purge-run", 4, "one purge pass: pages claimed and being returned to the OS") \
  X(SEGMENT_CACHE, "segment-cache", 5, "free segments kept for reuse") \
  X(PURGE, "purge", 6, "segments with memory waiting to be purged") \
  X(META, "meta", 7, "slots for thread data and heaps") \
  X(ARENA, "arena", 8, "chunk maps of the reserved arenas") \
  X(PROF, "prof", 9, "the pprof sampler's records and stack table") \
  X(DHAT, "dhat", 10, "the heap profiler's sites and counts") \
  X(ZERO, "zero", 11, "zero-size allocations' slots and segments (secure builds)") \
  X(MEMEVT, "memevt", 12, "the memory events' switch and the map of their records") \
  X(MEMEVT_CB, "memevt-cb", 13, "the memory events' table of handlers") \
  X(UNWRAPPED, "unwrapped", 14, "the mappings mi_unwrapped_malloc handed out")

/* Classes that only the lock-order tests use (tests/lockorder); never part
   of the documented order nor taken by the fork handlers. */
#define MI_LOCK_TEST_CLASSES(X) \
  X(TEST_OUTER, "test-outer", 100, "tests only") \
  X(TEST_INNER, "test-inner", 101, "tests only") \
  X(TEST_X, "test-x", 110, "tests only (same rank)") \
  X(TEST_Y, "test-y", 110, "tests only (same rank)") \
  X(TEST_Z, "test-z", 110, "tests only (same rank)")

#define MI_LOCK_CLASS_ENUM(id, name, rank, what) MI_LOCK_##id,
typedef enum mi_lock_class_e {
  MI_LOCK_CLASSES(MI_LOCK_CLASS_ENUM) MI_LOCK_GLOBAL_COUNT, /* classes above have one global lock each */
  MI_LOCK_TEST_BEFORE_ = MI_LOCK_GLOBAL_COUNT - 1,          /* the test classes follow the global ones */
  MI_LOCK_TEST_CLASSES(MI_LOCK_CLASS_ENUM) MI_LOCK_CLASS_COUNT
} mi_lock_class_t;
#undef MI_LOCK_CLASS_ENUM

/* A class's name and rank, read from the table above ("?" and 0 for a value
   that is no class). The test classes follow the global ones in the enum,
   so one array indexed by class holds both lists. */
#define MI_LOCK_CLASS_NAME(id, name, rank, what) name,
#define MI_LOCK_CLASS_RANK(id, name, rank, what) rank,
static inline const char* _mi_lock_class_name(mi_lock_class_t lock_class) {
  static const char* const names[MI_LOCK_CLASS_COUNT] = {MI_LOCK_CLASSES(MI_LOCK_CLASS_NAME)
                                                             MI_LOCK_TEST_CLASSES(MI_LOCK_CLASS_NAME)};
  return ((unsigned)lock_class < MI_LOCK_CLASS_COUNT ? names[lock_class] : "?");
}
static inline int _mi_lock_class_rank(mi_lock_class_t lock_class) {
  static const int ranks[MI_LOCK_CLASS_COUNT] = {MI_LOCK_CLASSES(MI_LOCK_CLASS_RANK)
                                                     MI_LOCK_TEST_CLASSES(MI_LOCK_CLASS_RANK)};
  return ((unsigned)lock_class < MI_LOCK_CLASS_COUNT ? ranks[lock_class] : 0);
}
#undef MI_LOCK_CLASS_NAME
#undef MI_LOCK_CLASS_RANK

#endif
