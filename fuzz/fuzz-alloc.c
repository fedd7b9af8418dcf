/* Fuzz harness of the allocator against the shadow model (program.h): the
   entry point libFuzzer calls, and that fuzz/afl-main.c calls for AFL++. */
#include <stddef.h>
#include <stdint.h>

#include "program.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
const char* __asan_default_options(void);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fz_run(data, size, NULL);
  return 0;
}

/* ASan's defaults for this harness (ASAN_OPTIONS still overrides them).
   Its quarantine holds only the C library's blocks (the engine's copy of
   each input, a thread's buffers): the allocator under test poisons its own
   (MI_TRACK_ASAN) and never goes through it. At the default 256 MB it was
   the one thing that grew in a campaign: ASan's heap 236 MB of 455 MB RSS
   after 4 minutes (docs/fuzzing.md); at 16 MB, 32 MB, and 14% more
   executions a second. LeakSanitizer does not scan the allocator's
   segments (plain mappings): every block would read as leaked. */
const char* __asan_default_options(void) {
  return "quarantine_size_mb=16:detect_leaks=0:allow_user_poisoning=1";
}
