/* The process's globals that every floor reads: the empty page and heap,
   the thread's default heap and the process key. They are defined here, on
   the floor below every reader, so that no floor reaches up for them; the
   floors that write them are heap/ (the default heap: set-up, thread exit)
   and heap/init.c (the key, at process start). */
#include "base.h"

const mi_page_t _mi_page_empty = {0};

#define MI_QUEUE_EMPTY \
  { (mi_page_t*)&_mi_page_empty, NULL }
#define MI_QUEUES_10 \
  MI_QUEUE_EMPTY, MI_QUEUE_EMPTY, MI_QUEUE_EMPTY, MI_QUEUE_EMPTY, MI_QUEUE_EMPTY, MI_QUEUE_EMPTY, MI_QUEUE_EMPTY, \
      MI_QUEUE_EMPTY, MI_QUEUE_EMPTY, MI_QUEUE_EMPTY
#if MI_SECURE
#define MI_QUEUES_LAST MI_QUEUES_10, MI_QUEUE_EMPTY /* the 91st: secure builds' bin for 128 KiB + trailer */
#else
#define MI_QUEUES_LAST MI_QUEUES_10
#endif
_Static_assert(MI_BIN_COUNT == 90 + MI_SECURE, "update the empty heap's queue initialiser");
#define MI_EMPTY_PAGE ((mi_page_t*)&_mi_page_empty)
#define MI_DIRECT_8 \
  MI_EMPTY_PAGE, MI_EMPTY_PAGE, MI_EMPTY_PAGE, MI_EMPTY_PAGE, MI_EMPTY_PAGE, MI_EMPTY_PAGE, MI_EMPTY_PAGE, MI_EMPTY_PAGE
#define MI_DIRECT_64 \
  MI_DIRECT_8, MI_DIRECT_8, MI_DIRECT_8, MI_DIRECT_8, MI_DIRECT_8, MI_DIRECT_8, MI_DIRECT_8, MI_DIRECT_8
_Static_assert(MI_BIN_WSIZE_MAX + 1 == 129, "update the empty heap's direct table initialiser");

/* The heap of a thread that has not allocated yet: every queue and every
   entry of the direct table points at the empty page, so the fast path
   falls through to the slow path, which sets the thread up. */
const mi_heap_t _mi_heap_empty = {
    .tld = NULL,
    .pages_direct = {MI_DIRECT_64, MI_DIRECT_64, MI_EMPTY_PAGE},
    .pages = {MI_QUEUES_10, MI_QUEUES_10, MI_QUEUES_10, MI_QUEUES_10, MI_QUEUES_10, MI_QUEUES_10, MI_QUEUES_10,
              MI_QUEUES_10, MI_QUEUES_LAST},
};

mi_decl_thread mi_heap_t* _mi_heap_default = (mi_heap_t*)&_mi_heap_empty;

/* Keys the segments' cookies and the threads' random state (base.h); set
   once, at process start (heap/init.c), before any segment exists. */
uintptr_t _mi_process_key = 0;
