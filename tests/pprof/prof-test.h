/* Helpers the pprof sampler's tests share: its statistics now, a start
   with every allocation sampled, and the phases a test steps its threads
   through. */
#ifndef MI_PROF_TEST_H
#define MI_PROF_TEST_H
#include "testutil.h"

#include <pthread.h>

static inline mi_prof_stats_t stats_now(void) {
  mi_prof_stats_t_decl(st);
  assert_true(mi_prof_stats_get(&st));
  return st;
}

/* Every allocation sampled (interval 1), seeded, with a budget for the
   profiler's own memory (0: none). */
static inline void start_exact_with_budget(size_t budget) {
  mi_prof_stop();
  mi_prof_config_t_decl(cfg);
  cfg.mode = MI_PROF_CONFIG_OVERRIDE;
  cfg.sample_interval = 1;
  cfg.seed = 7;
  cfg.max_profiler_bytes = budget;
  assert_true(mi_prof_start_ex(&cfg));
}

/* The phase the test's threads have reached, and how many arrived. */
static pthread_mutex_t phase_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t phase_cond = PTHREAD_COND_INITIALIZER;
static int phase;
static int arrived;

static inline void wait_phase(int want) {
  pthread_mutex_lock(&phase_lock);
  while (phase < want) pthread_cond_wait(&phase_cond, &phase_lock);
  pthread_mutex_unlock(&phase_lock);
}

static inline void set_phase(int p) {
  pthread_mutex_lock(&phase_lock);
  phase = p;
  pthread_cond_broadcast(&phase_cond);
  pthread_mutex_unlock(&phase_lock);
}

static inline void arrive(void) {
  pthread_mutex_lock(&phase_lock);
  arrived++;
  pthread_cond_broadcast(&phase_cond);
  pthread_mutex_unlock(&phase_lock);
}

static inline void wait_arrived(int n) {
  pthread_mutex_lock(&phase_lock);
  while (arrived < n) pthread_cond_wait(&phase_cond, &phase_lock);
  pthread_mutex_unlock(&phase_lock);
}

#endif
