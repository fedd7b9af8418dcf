/* The sampling decision, per thread and without a lock. pprof unsamples a
   record of n objects of average size s by 1 / (1 - exp(-s/R)), which is
   right only if each allocation of s bytes was sampled independently with
   probability 1 - exp(-s/R): sample points forming a Poisson process over
   the stream of allocated bytes, with mean gap R. So each thread counts
   down the bytes to its next sample point; the gaps are drawn from the
   exponential distribution of mean R, and a gap is drawn afresh after each
   sample (the distribution has no memory, so restarting the count at the
   end of the sampled allocation keeps the probability exact). This is how
   tcmalloc and Go sample; a gap drawn uniformly in [1, 2R) (the seed
   system's) or a fixed one (Bun's) makes pprof's figures wrong for objects
   near R in size, whatever the number of samples.

   Each thread's stream is a function of the start's seed and the thread's
   ordinal (the order in which threads first allocated under the profiler),
   never of an address: the same seed, thread order and allocations give the
   same samples in every process. */
#include "prof.h"

#if MI_PPROF

mi_decl_thread mi_prof_sampler_t _mi_prof_sampler;
static _Atomic(uint64_t) mi_prof_thread_count;

_Atomic(uint64_t) _mi_prof_generation; /* bumped by each start; read first */
size_t _mi_prof_period;                /* R; written before the generation */
uint64_t _mi_prof_seed;

static uint64_t mi_prof_splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

static uint64_t mi_prof_next(mi_prof_sampler_t* s) {
  uint64_t x = s->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  s->rng = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* The next gap in bytes: -ln(U) * R with U uniform on (0, 1] at 2^-30
   resolution (tcmalloc and Go use 26 bits); at least 1. */
static int64_t mi_prof_gap(mi_prof_sampler_t* s, size_t period) {
#if MI_PROF_PLANT_UNIFORM
  /* the planted bug: uniform in [1, 2R), the seed system's sampler */
  return 1 + (int64_t)(mi_prof_next(s) % (2 * (uint64_t)period - 1));
#else
  uint64_t q = (mi_prof_next(s) >> 34) + 1; /* 1 .. 2^30 */
  double u = (double)q / (double)((uint64_t)1 << 30);
  double gap = -_mi_prof_ln(u) * (double)period;
  if (gap > 4.0e18) gap = 4.0e18;
  return (int64_t)gap + 1;
#endif
}

static void mi_prof_sampler_reseed(mi_prof_sampler_t* s, uint64_t generation) {
  /* numbered in the order threads first allocate under this start */
  s->ordinal = 1 + atomic_fetch_add_explicit(&mi_prof_thread_count, 1, memory_order_relaxed);
  s->generation = generation;
  s->rng = mi_prof_splitmix(_mi_prof_seed ^ mi_prof_splitmix(s->ordinal)) | 1;
  s->until = (_mi_prof_period <= 1 ? 0 : mi_prof_gap(s, _mi_prof_period));
  s->gap = (uint64_t)s->until;
}

/* The allocation mi_prof_countdown could not decide: a thread whose state
   is of an earlier start draws anew (and decides again), else this
   allocation reached the sample point: it is a sample, and a fresh gap
   starts after it. */
bool _mi_prof_sample_decide(size_t size) {
  mi_prof_sampler_t* s = &_mi_prof_sampler;
  uint64_t generation = atomic_load_explicit(&_mi_prof_generation, memory_order_acquire);
  if (s->generation != generation) {
    mi_prof_sampler_reseed(s, generation);
    if (!mi_prof_countdown(size)) return false;
  }
  size_t period = _mi_prof_period;
  /* the bytes allocated since the last sample point: the gap drawn then */
  _mi_prof_note_allocated(period <= 1 ? (uint64_t)(size == 0 ? 1 : size) : s->gap);
  s->until = (period <= 1 ? 0 : mi_prof_gap(s, period)); /* every allocation at interval 1 */
  s->gap = (uint64_t)s->until;
  return true;
}

/* A gap for a heap's countdown (api/observe.h, mi_observe_fast), from the
   calling thread's stream for the current start: 0 at interval 1 (every
   allocation a sample). Each heap counts its own allocations, so each
   allocation is still sampled with probability 1 - e^(-s/R). */
int64_t _mi_prof_heap_gap(void) {
  mi_prof_sampler_t* s = &_mi_prof_sampler;
  uint64_t generation = atomic_load_explicit(&_mi_prof_generation, memory_order_acquire);
  if (s->generation != generation) mi_prof_sampler_reseed(s, generation);
  size_t period = _mi_prof_period;
  return (period <= 1 ? 0 : mi_prof_gap(s, period));
}

/* A heap's countdown reached its sample point: the bytes allocated since
   the last one are the gap it started from. */
void _mi_prof_heap_sample_point(size_t size, uint64_t gap) {
  _mi_prof_note_allocated(_mi_prof_period <= 1 ? (uint64_t)(size == 0 ? 1 : size) : gap);
}

/* A new start: threads are numbered again from the first that allocates. */
void _mi_prof_sampler_restart(size_t period, uint64_t seed) {
  _mi_prof_period = period;
  _mi_prof_seed = seed;
  atomic_store_explicit(&mi_prof_thread_count, 0, memory_order_relaxed);
  atomic_fetch_add_explicit(&_mi_prof_generation, 1, memory_order_release);
}

#endif
