/* Fuzz harness of the secure build: the programs of fuzz-alloc.c (a correct
   program must never be reported), with the corruption operation of
   corrupt.h (every misuse must be). Linked against libmimalloc-secure. */
#include <stddef.h>
#include <stdint.h>

#include "corrupt.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int started;
  if (!started) {
    /* A sampled guard-page block has no canary (its end is the guard page,
       to 16 bytes): the overflow cases would depend on the sampling. The
       fuzzer keeps the canary on every block. */
    mi_option_set(mi_option_guarded_sample_rate, 0);
    started = 1;
  }
  fz_run(data, size, &fz_corrupt);
  return 0;
}
