/* The table of listeners to the rare events (listeners.h). Filled at
   process start-up by one thread, while every other waits for the set-up to
   finish (heap/init.c), and read only after: the count's release and
   acquire order the entries for threads that raise events later. */
#include "base.h"
#include "listeners.h"

static const mi_listener_t* mi_listeners[MI_LISTENERS_MAX];
static _Atomic(size_t) mi_listener_count;

void _mi_listen(const mi_listener_t* listener) {
  size_t n = atomic_load_explicit(&mi_listener_count, memory_order_relaxed);
  mi_assert(n < MI_LISTENERS_MAX);
  if (n >= MI_LISTENERS_MAX) return;
  mi_listeners[n] = listener;
  atomic_store_explicit(&mi_listener_count, n + 1, memory_order_release);
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
