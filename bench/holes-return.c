/* Memory returned from pages still in use (docs/memory-return.md), for any
   allocator preloaded under it: the seed's and Bun's workload (150k blocks
   of 512 B, 100k of 1 KiB, 50k of 2 KiB, interleaved and touched; a
   scattered 1 in 20 kept and filled, the rest freed), then each
   allocator's own call to give memory back:

     ours, ours-off   mi_on_thread_idle()   (ours-off: MIMALLOC_PURGE_HOLES=0)
     mimalloc         mi_collect(true)
     jemalloc         mallctl("arena.4096.purge")   (MALLCTL_ARENAS_ALL)
     tcmalloc         MallocExtension_ReleaseFreeMemory()
     glibc            malloc_trim(0)

   Prints CSV rows `method,phase,ms,rss_bytes`: the RSS before, at the peak,
   after the frees, right after the call, and every 100 ms for 2 s after it
   (an allocator that returns memory in the background shows it there),
   then `method,survivors_bad,0,N`: the kept blocks' bytes that changed.
   The caller turns transparent huge pages off (prctl here as well). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define N_BLOCKS 300000
#define KEEP_EVERY 20

static size_t rss(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  unsigned long size = 0, resident = 0;
  int n = fscanf(f, "%lu %lu", &size, &resident);
  fclose(f);
  return (n == 2 ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static size_t size_of(size_t i) {
  size_t k = i % 6;
  return (k < 3 ? 512 : k < 5 ? 1024 : 2048);
}

static int kept(size_t i) {
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ULL;
  return ((x >> 32) % KEEP_EVERY) == 0;
}

static inline unsigned char pattern(size_t block, size_t byte) {
  return (unsigned char)(block * 131u + byte * 7u + (byte >> 8) + 1u);
}

/* The method's call, looked up in whatever allocator is loaded. */
static int release(const char* method) {
  if (strncmp(method, "ours", 4) == 0) {
    void (*idle)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "mi_on_thread_idle");
    if (idle == NULL) return -1;
    idle();
  } else if (strncmp(method, "mimalloc", 8) == 0) {
    void (*collect)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "mi_collect");
    if (collect == NULL) return -1;
    collect(1);
  } else if (strcmp(method, "jemalloc") == 0) {
    int (*ctl)(const char*, void*, size_t*, void*, size_t) =
        (int (*)(const char*, void*, size_t*, void*, size_t))dlsym(RTLD_DEFAULT, "mallctl");
    if (ctl == NULL) return -1;
    return ctl("arena.4096.purge", NULL, NULL, NULL, 0);
  } else if (strcmp(method, "tcmalloc") == 0) {
    void (*rel)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory");
    if (rel == NULL) return -1;
    rel();
  } else if (strcmp(method, "glibc") == 0) {
    int (*trim)(size_t) = (int (*)(size_t))dlsym(RTLD_DEFAULT, "malloc_trim");
    if (trim == NULL) return -1;
    (void)trim(0);
  } else {
    return -1;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: holes-return METHOD (ours, ours-off, mimalloc*, jemalloc, tcmalloc, glibc)\n");
    return 2;
  }
  const char* method = argv[1];
  prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
  unsigned char** blocks = (unsigned char**)calloc(N_BLOCKS, sizeof(unsigned char*));
  if (blocks == NULL) return 1;
  double t0 = now_ms();
  printf("%s,base,%.0f,%zu\n", method, 0.0, rss());
  for (size_t i = 0; i < N_BLOCKS; i++) {
    blocks[i] = (unsigned char*)malloc(size_of(i));
    if (blocks[i] == NULL) return 1;
    memset(blocks[i], 0x5A, size_of(i));
  }
  printf("%s,peak,%.0f,%zu\n", method, now_ms() - t0, rss());
  for (size_t i = 0; i < N_BLOCKS; i++) {
    if (kept(i)) {
      for (size_t j = 0; j < size_of(i); j++) blocks[i][j] = pattern(i, j);
    } else {
      free(blocks[i]);
      blocks[i] = NULL;
    }
  }
  printf("%s,freed,%.0f,%zu\n", method, now_ms() - t0, rss());
  double t1 = now_ms();
  if (release(method) != 0) {
    fprintf(stderr, "holes-return: %s: its call is not in the loaded allocator\n", method);
    return 3;
  }
  double call_ms = now_ms() - t1;
  printf("%s,released,%.0f,%zu\n", method, now_ms() - t0, rss());
  printf("%s,call_ms,0,%.3f\n", method, call_ms);
  for (int k = 1; k <= 20; k++) {
    usleep(100 * 1000);
    printf("%s,idle,%.0f,%zu\n", method, now_ms() - t0, rss());
  }
  size_t bad = 0;
  for (size_t i = 0; i < N_BLOCKS; i++) {
    if (blocks[i] == NULL) continue;
    for (size_t j = 0; j < size_of(i); j++) bad += (blocks[i][j] != pattern(i, j));
    free(blocks[i]);
  }
  printf("%s,survivors_bad,0,%zu\n", method, bad);
  free(blocks);
  return (bad == 0 ? 0 : 4);
}
