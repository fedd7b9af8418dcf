/* The secure front's part in the rare events (base/listeners.h): its keys
   and zero-size segments made before any lock, its fault handler installed
   once the allocator is set up, the changed options it follows, and the
   unmapped segments it remembers. */
#include "secure.h"
#include "../base/listeners.h"

#if MI_SECURE
static void mi_secure_process_init(void) {
  _mi_secure_keys_init();
  _mi_zero_init();
}

static void mi_secure_process_ready(void) {
  /* a fault on one of our guard pages says what it hit before the process dies */
  mi_prim_fault_handler_install(&_mi_guard_fault_report);
}

static void mi_secure_option_changed(mi_option_t option, long value) {
#if MI_GUARDED
  if (option == mi_option_guarded_sample_rate || option == mi_option_guarded_sample_seed ||
      option == mi_option_guarded_min || option == mi_option_guarded_max) {
    _mi_guard_options_changed();
  }
#endif
  if (option == mi_option_zero_on_free && value != 0) _mi_secure_zero_on_free_enabled();
}

static void mi_secure_heap_flush(mi_heap_t* heap) {
  _mi_secure_quarantine_flush(heap->tld, heap);
}

const mi_listener_t _mi_secure_listener = {
    .name = "secure",
    .process_init = &mi_secure_process_init,
    .process_ready = &mi_secure_process_ready,
    .option_changed = &mi_secure_option_changed,
    .segment_unmapped = &_mi_secure_segment_unmapped, /* a later free into it is a double free */
    .heap_flush = &mi_secure_heap_flush,              /* its quarantined blocks back to their pages */
    .thread_collect = &_mi_secure_thread_collect,     /* quarantines, held pages, fenced large blocks */
};
#endif
