/* The rare events of the allocator's life, and the table of the optional
   features that listen to them.

   The floors raise each event at the one place where it happens, without
   knowing who listens: each feature compiled in (DHAT, the pprof sampler,
   the memory events, MI_STAT=2's requested bytes, the secure front) puts
   its listener in a table the linker gathers (mi_listener_define), read
   once at process start-up (_mi_listeners_gather, heap/init.c, before the
   first event): no file below the features names them, and a feature whose
   object a static link leaves out is not in the table either. A listener
   leaves NULL what it does not hear. Raised per page gone or segment unmapped at most: never on an
   allocation's or a free's fast path (those are api/observe.h's).

   | event            | raised by                     | listeners                           |
   |------------------|-------------------------------|-------------------------------------|
   | process_init     | heap/init.c, before the locks | secure keys, zero-size segments;    |
   |                  |                               | memory events' locks; unwrapped     |
   | process_ready    | heap/init.c, set-up done      | DHAT, pprof, memory events start    |
   |                  |                               | (environment); secure fault handler |
   | process_done     | heap/init.c, at exit          | pprof, DHAT: profiles written; ETW  |
   | thread_done      | heap/init.c, thread data goes | profilers' stack cache; pprof's     |
   |                  |                               | pending resizes                     |
   | fork_child       | heap/init.c, child's locks out| DHAT, pprof, secure stacks          |
   | option_changed   | base/options.c, mi_option_set | guard sampler; secure zeroing       |
   | segment_unmapped | segment/segment.c             | secure (stale frees); DHAT, memory  |
   |                  |                               | events, secure stacks (records)     |
   | page_gone        | heap/heap.c, segment/single.c | DHAT, pprof, memory events, MI_STAT |
   |                  |                               | =2: the page's live blocks freed    |
   | page_init        | page/page.c, fresh page       | MI_STAT=2: the page's request slots;|
   |                  |                               | secure stacks: its records cleared  |
   | heap_flush       | heap/heap.c, heap destroyed   | secure: the heap's quarantined      |
   |                  | or its thread's at exit       | blocks back to their pages          |
   | thread_collect   | heap/heap.c, mi_collect(true),| secure: quarantines, held pages,    |
   |                  | thread exit                   | fenced large blocks                 |
   | background_poll, | segment/background.c          | pprof: dumps asked by a signal, by  |
   | background_tick  |                               | the bytes allocated, at in-use highs|
   | secure_report    | base/secure-report.c, before  | secure: the stack where the misuse  |
   |                  | the abort                     | was seen, the report's JSON copy    |
*/
#ifndef MI_LISTENERS_H
#define MI_LISTENERS_H

#include "types.h"

struct mi_secure_report_s; /* secure/secure.h */

typedef struct mi_listener_s {
  const char* name;
  int order;                   /* each event is told to lower orders first (mi_listen_order_t) */
  void (*process_init)(void);  /* options read, the process key drawn; no lock made yet */
  void (*process_ready)(void); /* the allocator set up (may allocate) */
  void (*process_done)(void);
  void (*thread_done)(void); /* a thread's heaps gone, its thread data about to go */
  void (*fork_child)(void);  /* the child's one thread released every lock */
  void (*option_changed)(mi_option_t option, long value);
  void (*segment_unmapped)(const void* segment, size_t size); /* out of the segment map */
  void (*page_gone)(const mi_page_t* page);                   /* with the blocks it still holds */
  void (*page_init)(mi_page_t* page);                         /* a fresh page, its geometry set */
  /* before a heap's pages go (destroyed, or its thread's at exit): what a
     feature holds back of its blocks goes first */
  void (*heap_flush)(mi_heap_t* heap);
  /* a thread collects: mi_collect(true) (everything), or its exit */
  void (*thread_collect)(mi_tld_t* tld, bool everything);
  /* the background thread: the longest it may sleep (-1: until woken; a
     signal handler may not wake a thread), and its wake-up */
  int64_t (*background_poll_ms)(void);
  void (*background_tick)(void);
  /* a misuse reported (secure builds), its first lines printed, before the
     abort: what a feature adds to the report (the stacks, the JSON copy) */
  void (*secure_report)(const struct mi_secure_report_s* report);
} mi_listener_t;

#define MI_LISTENERS_MAX 12

/* The order each event is told in: the secure keys before the memory
   events' locks, the stack cache before the profilers it serves, the
   profilers before the memory events (the program's handler last). */
typedef enum mi_listen_order_e {
  MI_LISTEN_SECURE = 10,
  MI_LISTEN_SECURE_STACKS = 15,
  MI_LISTEN_STACK_CACHE = 20,
  MI_LISTEN_PPROF = 30,
  MI_LISTEN_DHAT = 40,
  MI_LISTEN_EVENTS = 50,
  MI_LISTEN_UNWRAPPED = 60,
  MI_LISTEN_REQUESTED = 70,
} mi_listen_order_t;

/* A feature's listener, and its entry in the linker's table:
   `mi_listener_define(mi_x_listener) = {.name = "x", ...};` */
#define mi_listener_define(var) \
  static const mi_listener_t var; \
  mi_decl_listed(m, var##_entry) const mi_listener_t* const var##_entry mi_decl_hidden = &(var); \
  static const mi_listener_t var

/* At start-up, before the first event: the table read, in order. */
void _mi_listeners_gather(void) mi_decl_hidden;
/* Their names in the order they are told ("secure, stack cache, ..."):
   for the start-up's verbose line. */
void _mi_listeners_names(char* buf, size_t size) mi_decl_hidden;

void _mi_raise_process_init(void) mi_decl_hidden;
void _mi_raise_process_ready(void) mi_decl_hidden;
void _mi_raise_process_done(void) mi_decl_hidden;
void _mi_raise_thread_done(void) mi_decl_hidden;
void _mi_raise_fork_child(void) mi_decl_hidden;
void _mi_raise_option_changed(mi_option_t option, long value) mi_decl_hidden;
void _mi_raise_segment_unmapped(const void* segment, size_t size) mi_decl_hidden;
void _mi_raise_page_gone(const mi_page_t* page) mi_decl_hidden;
void _mi_raise_page_init(mi_page_t* page) mi_decl_hidden;
void _mi_raise_heap_flush(mi_heap_t* heap) mi_decl_hidden;
void _mi_raise_thread_collect(mi_tld_t* tld, bool everything) mi_decl_hidden;
int64_t _mi_raise_background_poll_ms(void) mi_decl_hidden; /* the shortest asked, -1 if none */
void _mi_raise_background_tick(void) mi_decl_hidden;
void _mi_raise_secure_report(const struct mi_secure_report_s* report) mi_decl_hidden;

#endif
