/* The harness's own profile (docs/fuzzing.md, "Where an input's time
   goes"): with FZ_PROFILE set, the time and count of every operation kind
   and of each program's teardown, printed as a table when the process
   exits. Off, it costs one branch per operation. */
#ifndef FZ_PROFILE_H
#define FZ_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#define FZ_PROFILE_END 32 /* the row of the teardown that ends each program */
#define FZ_PROFILE_ROWS 33

/* Whether FZ_PROFILE is set (read once). */
bool fz_profile_on(void);

/* A monotonic clock in nanoseconds. */
uint64_t fz_profile_now(void);

/* Add `ns` to the row of operation `op` (or FZ_PROFILE_END). */
void fz_profile_add(int op, uint64_t ns);

#endif
