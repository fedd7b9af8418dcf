/* The secure harness's corruption operation (FZ_OP_CORRUPT, operands: slot
   kind arg1 arg2). Each case commits one misuse that docs/secure-mode.md
   promises to catch, in a forked child, on a block of the program's current
   heap state; the child must die of SIGABRT with the case's `mimalloc:
   error:` line. Anything else (the child exits, dies of another signal, or
   prints another report) is a finding: the harness aborts. The parent's
   heap is untouched, so the program goes on after the case.

   Kinds (low 4 bits of `kind`); "trigger" is arg2 % 3: free, realloc, or
   usable size, the call that must detect the misuse:
     0  free, then free again
     1  free, then free again from another thread
     2  free from another thread, then free again
     3  xor (arg1 % 8) + 1 bytes right after the block's end, then trigger
     4  trigger on the interior pointer p + 1 + (arg1 | arg2 << 8) % (size - 1)
     5  write after free into a fresh block of the slot's size and heap
        (17..8184 bytes, offset 8 + arg1 % (size - 8)), then blocks of its
        size taken until one covers the byte: detected then, or (its page
        emptied and purged, or not reached) nothing to detect
     6  trigger on a pointer never handed out (arg1 % 5: stack, global, libc
        malloc, mmap, the segment header of the slot's block)
     7  free, then realloc
     8  free, then usable size
     9..15 nothing; 15 in MI_FUZZ_PLANT_UNDETECTED builds: a read after free,
        which secure mode does not promise to catch (the positive control)
*/
#ifndef FZ_CORRUPT_H
#define FZ_CORRUPT_H

#include "program.h"

/* at most this many cases (forks) per input: they cost a fork each */
#define FZ_CORRUPT_MAX 4

void fz_corrupt(fz_model_t* m, fz_input_t* in);

#endif
