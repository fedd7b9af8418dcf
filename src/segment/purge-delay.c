/* How long freed memory waits before it goes back to the OS.

   The purge delay (option purge_delay, 10 ms) is what an idle program waits:
   its freed memory is back with the OS soon after it stops. A busy program
   that frees memory and takes it back a little later would pay for that on
   every reuse (a page fault a page, and the OS zeroing it: `malloc-large`
   spent 3.9 s in the kernel against 0.16 s for mimalloc 3). So the delay
   grows while purged memory keeps coming back soon after its purge, and
   shrinks once it stops:

   - regret: clean memory taken into use less than the current delay after
     it was purged would have been kept by twice that delay. The delay then
     doubles, up to MI_PURGE_DELAY_MAX_SHIFT doublings;
   - calm: a whole MI_PURGE_CALM_MS with no regret halves it again;
   - idle: once nothing has taken memory for one plain delay, a pass purges
     everything that has waited the plain delay, whatever the doubling, so an
     idle program's memory goes back within about two delays.

   The hooks sit on slow paths only (a page or segment set up, a purge pass);
   the malloc and free fast paths never see them. */
#include "segment.h"

#define MI_PURGE_DELAY_MAX_SHIFT 6 /* the delay grows to 64 times the option's */
#define MI_PURGE_CALM_MS 1000

static _Atomic(int) mi_purge_shift;
static _Atomic(int64_t) mi_purge_calm_since; /* the last regret, or the last halving */
static _Atomic(int) mi_purge_taken;          /* memory taken since the last pass looked */
static _Atomic(int64_t) mi_purge_taken_at;   /* when a pass last saw memory taken */

void _mi_purge_note_taken(void) {
  if (atomic_load_explicit(&mi_purge_taken, memory_order_relaxed) == 0) {
    atomic_store_explicit(&mi_purge_taken, 1, memory_order_relaxed);
  }
}

void _mi_purge_note_reused(int64_t purged_at, int64_t now, long base) {
  if (purged_at <= 0 || base <= 0) return; /* never purged (fresh from the OS), or no delay to grow */
  if (_mi_option_get_fast(mi_option_purge_extend_delay) <= 0) return; /* the delay kept as set */
  int shift = atomic_load_explicit(&mi_purge_shift, memory_order_relaxed);
  if (now - purged_at >= ((int64_t)base << shift)) return; /* a longer wait than the delay: not its fault */
  atomic_store_explicit(&mi_purge_calm_since, now, memory_order_relaxed);
  if (shift < MI_PURGE_DELAY_MAX_SHIFT) {
    (void)atomic_compare_exchange_strong_explicit(&mi_purge_shift, &shift, shift + 1, memory_order_relaxed,
                                                  memory_order_relaxed);
  }
}

void _mi_purge_pass_begin(mi_purge_pass_t* pass, int64_t now, long delay) {
  pass->now = now;
  pass->base = (delay < 0 ? 0 : delay);
  int shift = atomic_load_explicit(&mi_purge_shift, memory_order_relaxed);
  if (shift > 0 && now - atomic_load_explicit(&mi_purge_calm_since, memory_order_relaxed) >= MI_PURGE_CALM_MS) {
    if (atomic_compare_exchange_strong_explicit(&mi_purge_shift, &shift, shift - 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
      shift--;
      atomic_store_explicit(&mi_purge_calm_since, now, memory_order_relaxed);
    }
  }
  pass->extra = (pass->base << shift) - pass->base;
  if (atomic_exchange_explicit(&mi_purge_taken, 0, memory_order_relaxed) != 0) {
    atomic_store_explicit(&mi_purge_taken_at, now, memory_order_relaxed);
  }
  pass->idle = (now - atomic_load_explicit(&mi_purge_taken_at, memory_order_relaxed) >= pass->base);
}

bool _mi_purge_pass_due(const mi_purge_pass_t* pass, int64_t due, int64_t* next_due) {
  if (due == INT64_MAX) return false; /* never (a delay below 0 when it was freed) */
  if (due + pass->extra <= pass->now || (pass->idle && due <= pass->now)) return true;
  /* not yet: look again at its plain time, then every plain delay (has the
     program gone idle?) until its grown time */
  int64_t next = due + pass->extra;
  if (due > pass->now) next = due;
  else if (pass->now + pass->base < next) next = pass->now + pass->base;
  if (next < *next_due) *next_due = next;
  return false;
}

/* What the grown delay keeps of free pages inside segments is bounded, as
   the segment cache's is (segment-cache.c): past a quarter of the memory in
   use and past MI_PURGE_DIRTY_MIN, the pages that have waited the plain
   delay go, oldest first, until what stays fits. (`larson`, where free
   pages come and go as threads do, held 15 to 19 MiB of dirty free pages
   beside about 20 MiB in use with the delay grown to 64 times.) */
#define MI_PURGE_DIRTY_MIN ((int64_t)4 << 20)

void _mi_purge_budget_add(mi_purge_budget_t* budget, const mi_purge_pass_t* pass, int64_t due, int64_t bytes) {
  budget->dirty += bytes;
  if (due > pass->now || due == INT64_MAX || pass->base <= 0) return; /* not past the plain delay */
  int64_t steps = (pass->now - due) / pass->base;
  budget->waited[steps < MI_PURGE_AGE_STEPS ? steps : MI_PURGE_AGE_STEPS - 1] += bytes;
}

/* The one rule of both budgets: a quarter of the memory in use, and at least `min`. */
int64_t _mi_purge_dirty_allowed(int64_t in_use, int64_t min) {
  return (in_use / 4 > min ? in_use / 4 : min);
}

int64_t _mi_purge_budget_cutoff(const mi_purge_budget_t* budget, const mi_purge_pass_t* pass, int64_t in_use) {
  int64_t excess = budget->dirty - _mi_purge_dirty_allowed(in_use, MI_PURGE_DIRTY_MIN);
  if (excess <= 0 || pass->base <= 0) return INT64_MIN;
  for (int steps = MI_PURGE_AGE_STEPS - 1; steps >= 0; steps--) {
    excess -= budget->waited[steps];
    if (excess <= 0) return pass->now - (int64_t)steps * pass->base;
  }
  return pass->now; /* all that waited the plain delay, and still over */
}

long _mi_purge_delay_shift(void) {
  return atomic_load_explicit(&mi_purge_shift, memory_order_relaxed);
}
