/* The table of listeners to the rare events (listeners.h). The linker
   gathers the features' entries; process start-up reads them into the
   ordered table below, on one thread while every other waits for the
   set-up to finish (heap/init.c), and it is read only after: the count's
   release and acquire order the entries for threads that raise events
   later. */
#include <string.h>
#include "base.h"
#include "listeners.h"

static const mi_listener_t* mi_listeners[MI_LISTENERS_MAX];
static _Atomic(size_t) mi_listener_count;

/* The linker's table, between its bounds (compiler.h, mi_decl_listed) */
#if defined(_WIN32)
mi_decl_listed(a, mi_listed_first) const mi_listener_t* const mi_listed_first = NULL;
mi_decl_listed(z, mi_listed_last) const mi_listener_t* const mi_listed_last = NULL;
#define MI_LISTED_BEGIN (&mi_listed_first + 1)
#define MI_LISTED_END (&mi_listed_last)
#else
extern const mi_listener_t* const __start_mi_listeners[] __attribute__((weak, visibility("hidden")));
extern const mi_listener_t* const __stop_mi_listeners[] __attribute__((weak, visibility("hidden")));
#define MI_LISTED_BEGIN (&__start_mi_listeners[0])
#define MI_LISTED_END (&__stop_mi_listeners[0])
#endif

void _mi_listeners_gather(void) {
  /* the bounds are other objects than the entries: read through volatile,
     the compiler may not reason from that about the walk between them */
  const mi_listener_t* const* volatile begin_bound = MI_LISTED_BEGIN;
  const mi_listener_t* const* volatile end_bound = MI_LISTED_END;
  const mi_listener_t* const* entries = begin_bound;
  const size_t count = ((uintptr_t)end_bound - (uintptr_t)entries) / sizeof(void*); /* entries are pointers */
  size_t n = 0;
  for (size_t k = 0; k < count; k++) {
    const mi_listener_t* listener = entries[k];
    if (listener == NULL) continue; /* a PE linker's padding */
    mi_assert(n < MI_LISTENERS_MAX);
    if (n >= MI_LISTENERS_MAX) break;
    /* in order (insertion; a handful of entries), ties by name */
    size_t i = n++;
    while (i > 0 &&
           (mi_listeners[i - 1]->order > listener->order ||
            (mi_listeners[i - 1]->order == listener->order && strcmp(mi_listeners[i - 1]->name, listener->name) > 0))) {
      mi_listeners[i] = mi_listeners[i - 1];
      i--;
    }
    mi_listeners[i] = listener;
  }
  atomic_store_explicit(&mi_listener_count, n, memory_order_release);
}

static size_t mi_listeners_count(void) {
  return atomic_load_explicit(&mi_listener_count, memory_order_acquire);
}

/* each event: every listener that hears it, in the order they came */
#define MI_RAISE(event, args) \
  do { \
    const size_t n = mi_listeners_count(); \
    for (size_t i = 0; i < n; i++) { \
      if (mi_listeners[i]->event != NULL) mi_listeners[i]->event args; \
    } \
  } while (0)

void _mi_raise_process_init(void) {
  MI_RAISE(process_init, ());
}
void _mi_raise_process_ready(void) {
  MI_RAISE(process_ready, ());
}
void _mi_raise_process_done(void) {
  MI_RAISE(process_done, ());
}
void _mi_raise_thread_done(void) {
  MI_RAISE(thread_done, ());
}
void _mi_raise_fork_child(void) {
  MI_RAISE(fork_child, ());
}
void _mi_raise_option_changed(mi_option_t option, long value) {
  MI_RAISE(option_changed, (option, value));
}
void _mi_raise_segment_unmapped(const void* segment, size_t size) {
  MI_RAISE(segment_unmapped, (segment, size));
}
void _mi_raise_page_gone(const mi_page_t* page) {
  MI_RAISE(page_gone, (page));
}
void _mi_raise_page_init(mi_page_t* page) {
  MI_RAISE(page_init, (page));
}
void _mi_raise_heap_flush(mi_heap_t* heap) {
  MI_RAISE(heap_flush, (heap));
}
void _mi_raise_thread_collect(mi_tld_t* tld, bool everything) {
  MI_RAISE(thread_collect, (tld, everything));
}
void _mi_raise_background_tick(void) {
  MI_RAISE(background_tick, ());
}
void _mi_raise_secure_report(const struct mi_secure_report_s* report) {
  MI_RAISE(secure_report, (report));
}

void _mi_listeners_names(char* buf, size_t size) {
  if (size == 0) return;
  buf[0] = 0;
  const size_t n = mi_listeners_count();
  size_t len = 0;
  for (size_t i = 0; i < n && len + 1 < size; i++) {
    const char* name = mi_listeners[i]->name;
    const size_t want = strlen(name) + (i > 0 ? 2 : 0);
    if (len + want >= size) break;
    if (i > 0) {
      memcpy(buf + len, ", ", 2);
      len += 2;
    }
    memcpy(buf + len, name, strlen(name) + 1);
    len += strlen(name);
  }
}

int64_t _mi_raise_background_poll_ms(void) {
  int64_t shortest = -1;
  const size_t n = mi_listeners_count();
  for (size_t i = 0; i < n; i++) {
    if (mi_listeners[i]->background_poll_ms == NULL) continue;
    const int64_t ms = mi_listeners[i]->background_poll_ms();
    if (ms >= 0 && (shortest < 0 || ms < shortest)) shortest = ms;
  }
  return shortest;
}
