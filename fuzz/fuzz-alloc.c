/* Fuzz harness of the allocator against the shadow model (program.h): the
   entry point libFuzzer calls, and that fuzz/afl-main.c calls for AFL++. */
#include <stddef.h>
#include <stdint.h>

#include "program.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fz_run(data, size, NULL);
  return 0;
}
