/* No profile counts the allocator's own allocations as the program's. The
   first page or segment to purge starts the allocator's background thread
   inside the program's free, and the C library allocates that thread's TLS with
   malloc (ours, through the shared library): neither profiler may record it
   at the free's stack. Linked against the shared library; exits 0 when the
   thread was started while profiling (it is, in the program's free, where
   the start's own frees did not wake it first) and nothing of it was
   sampled (every allocation sampled: interval 1), 1 when something was, 2
   when no thread was started (the test would test nothing). */
#include <mimalloc.h>
#include <stdio.h>
#include <stdlib.h>

static int thread_count(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  }
  if (f != NULL) fclose(f);
  return n;
}

int main(void) {
  int t0 = thread_count();
  if (!mi_prof_start_seeded(1, 1)) return 3;
  int t1 = thread_count(); /* the start itself may free enough to wake the thread */
  /* a large block and a page's worth of small ones freed: one of them
     schedules the first purge (which, depends on the build) */
  static void* blocks[2000];
  void* p = malloc(1 << 20);
  free(p);
  for (int i = 0; i < 2000; i++) blocks[i] = malloc(64);
  for (int i = 0; i < 2000; i++) free(blocks[i]);
  int t2 = thread_count();
  mi_prof_stats_t_decl(st);
  if (!mi_prof_stats_get(&st)) return 4;
  printf("prof-internal-thread: threads started %d (during the start %d, the frees %d), live samples %zu (%zu bytes)\n",
         t2 - t0, t1 - t0, t2 - t1, st.live_samples, st.live_bytes);
  if (t2 - t0 != 1) return 2;
  return (st.live_samples == 0 ? 0 : 1);
}
