/* Fuzz harness of the secure build: the programs of fuzz-alloc.c (a correct
   program must never be reported), with the corruption operation of
   corrupt.h (every misuse must be). Linked against libmimalloc-secure. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "corrupt.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* the library's symbolizer (src/dhat/symbolize.c; linked statically) */
bool _mi_dhat_symbol_parts(uintptr_t addr, char* name, size_t nsize, char* file, size_t fsize, int* line);

/* Every corruption case ends in a forked child's report, whose stacks are
   named to the source line: the line tables, read lazily and kept, were
   read again by each child, a fifth of this harness's time (docs/fuzzing.md,
   "Where an input's time goes"). Read once here, each child inherits them. */
static void fz_symbolizer_warm(void) {
  char name[64], file[64];
  int line = 0;
  /* this program, and the C library (every stack ends in it; with its
     debug symbols installed, its line table is the larger); the symbolizer
     takes return addresses: one past a function's first byte is inside it */
  (void)_mi_dhat_symbol_parts((uintptr_t)&LLVMFuzzerTestOneInput + 1, name, sizeof(name), file, sizeof(file), &line);
  (void)_mi_dhat_symbol_parts((uintptr_t)&abort + 1, name, sizeof(name), file, sizeof(file), &line);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int started;
  if (!started) {
    /* A sampled guard-page block has no canary (its end is the guard page,
       to 16 bytes): the overflow cases would depend on the sampling. The
       fuzzer keeps the canary on every block. */
    mi_option_set(mi_option_guarded_sample_rate, 0);
    fz_symbolizer_warm();
    started = 1;
  }
  fz_run(data, size, &fz_corrupt);
  return 0;
}
