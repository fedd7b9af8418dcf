/* The memory gate of the fuzz harnesses (docs/fuzzing.md): one process runs
   a fixed input set PASSES times through LLVMFuzzerTestOneInput and reports
   each pass's peak RSS and the RSS it leaves. Every input ends by freeing
   all it made, so once the allocator's caches are warm a pass must not need
   more memory than the ones before it: passes that peak higher and higher
   are state retained from input to input, which is what ends a campaign of
   hours on the engine's memory limit.
     replay [-a] [-p PASSES] [-m MARGIN_MB] [-l LIMIT_MB] [-g COUNT] [FILE|DIR...]
   The inputs are read once, before the first pass, so the driver's own
   allocations do not change between passes. Exit status 1 if the last
   third of the passes peaks, or leaves the RSS, more than MARGIN_MB
   (default 16) above the first third (main() says why thirds).
     -p PASSES at least 6 (default 6)
     -a        age the process first: move the allocator's address hints to
               where hours of campaign leave them (fz_age)
     -g COUNT  also COUNT generated programs (fz_generate)
     -l LIMIT  fail at once when the RSS passes LIMIT_MB (default 4096): a
               growth of gigabytes a pass must not take the machine down */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mimalloc.h>

#ifndef FZ_CONTROL
#define FZ_CONTROL 0 /* 1: linked against fuzz/control.c, not the library */
#endif
#if !FZ_CONTROL
#include "../src/prim/prim.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

typedef struct fz_unit_s {
  uint8_t* data;
  size_t size;
} fz_unit_t;

static fz_unit_t* fz_units;
static size_t fz_unit_count, fz_unit_cap;

static void fz_unit_add(uint8_t* data, size_t size) {
  if (fz_unit_count == fz_unit_cap) {
    fz_unit_cap = (fz_unit_cap == 0 ? 256 : 2 * fz_unit_cap);
    fz_unit_t* more = realloc(fz_units, fz_unit_cap * sizeof(*fz_units));
    if (more == NULL) abort();
    fz_units = more;
  }
  fz_units[fz_unit_count++] = (fz_unit_t){data, size};
}

static int fz_read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    return 1;
  }
  size_t cap = 4096, n = 0;
  uint8_t* buf = malloc(cap);
  for (;;) {
    if (buf == NULL) abort();
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    cap *= 2;
    uint8_t* bigger = realloc(buf, cap);
    if (bigger == NULL) abort();
    buf = bigger;
  }
  fclose(f);
  fz_unit_add(buf, n);
  return 0;
}

static int fz_name_cmp(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* A directory's regular files, in name order: the same order every run. */
static int fz_read_dir(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) {
    perror(dir);
    return 1;
  }
  char** names = NULL;
  size_t count = 0, cap = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    if (count == cap) {
      cap = (cap == 0 ? 256 : 2 * cap);
      char** more = realloc(names, cap * sizeof(*names));
      if (more == NULL) abort();
      names = more;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[count] = malloc(len);
    if (names[count] == NULL) abort();
    snprintf(names[count], len, "%s/%s", dir, e->d_name);
    count++;
  }
  closedir(d);
  if (count > 1) qsort(names, count, sizeof(*names), &fz_name_cmp);
  int status = 0;
  for (size_t i = 0; i < count; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) status |= fz_read_file(names[i]);
    free(names[i]);
  }
  free(names);
  return status;
}

/* -g: programs of 64..1087 bytes from a fixed-seed generator (xorshift),
   uniform over the encoding: every opcode and operand value. With no corpus
   at hand it still drives every operation, the same ones every run. */
static void fz_generate(size_t count) {
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (size_t i = 0; i < count; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = 64 + (size_t)(x % 1024);
    uint8_t* buf = malloc(n);
    if (buf == NULL) abort();
    for (size_t k = 0; k < n; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      buf[k] = (uint8_t)(x >> 32);
    }
    fz_unit_add(buf, n);
  }
}

/* Aligned mappings are placed at hints that walk up from 2 TiB by the size
   of each request, mapped or not (src/prim/unix/prim.c): a campaign maps and
   gives back tens of TiB in hours, and runs from then on with the hints far
   up (a 4-minute campaign's corpus moved them by 53 MiB an input).
   Reserving and giving back 15 TiB through the same call moves them as far
   in a moment, to 17 TiB: above ASan's shadow (which ends at 16 TiB on
   x86-64), where the hints are taken and each mapping lands at addresses no
   earlier one had. Nothing is touched, nothing stays mapped. */
static int fz_age(void) {
#if FZ_CONTROL
  return 0; /* the control harness (fuzz/control.c) maps nothing of its own */
#else
  size_t tib = (size_t)1 << 40;
  for (int i = 0; i < 15; i++) {
    bool large = false;
    void* p = NULL;
    int err = mi_prim_alloc(tib, (size_t)4 << 20, false, false, &large, &p);
    if (err == 0) err = mi_prim_free(p, tib);
    if (err != 0) return err;
  }
  return 0;
#endif
}

/* kB of a line of /proc/self/status ("VmRSS:", "VmHWM:"), or -1 */
static long fz_status_kb(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  long kb = -1;
  size_t len = strlen(key);
  while (kb < 0 && fgets(line, sizeof(line), f) != NULL) {
    if (strncmp(line, key, len) == 0) kb = strtol(line + len, NULL, 10);
  }
  fclose(f);
  return kb;
}

/* Start a new peak: "5" to clear_refs resets VmHWM to the current RSS. */
static int fz_reset_peak(void) {
  FILE* f = fopen("/proc/self/clear_refs", "w");
  if (f == NULL) return -1;
  int ok = (fputs("5", f) >= 0);
  return (fclose(f) == 0 && ok ? 0 : -1);
}

/* The input running when a check fails (fz_fail and the sanitizers abort):
   written to the file FZ_REPLAY_SAVE names, so that a mismatch seen once
   in a gate can be run again (fuzz/run-reproducer.sh). It may need the
   inputs that ran before it, in the same process, to fail again. */
static const fz_unit_t* volatile fz_running_unit;
static char fz_save_path[PATH_MAX];

static void fz_save_on_abort(int sig) {
  const fz_unit_t* u = fz_running_unit;
  if (u != NULL) {
    int fd = open(fz_save_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (size_t off = 0; fd >= 0 && off < u->size;) {
      ssize_t n = write(fd, u->data + off, u->size - off);
      if (n <= 0) break;
      off += (size_t)n;
    }
    if (fd >= 0) close(fd);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(int argc, char** argv) {
  int passes = 6;
  long margin_mb = 16;
  size_t generate = 0;
  long limit_mb = 4096;
  bool age = false;
  int status = 0, i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "-p") == 0 && i + 1 < argc) passes = atoi(argv[++i]);
    else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc) margin_mb = atol(argv[++i]);
    else if (strcmp(argv[i], "-g") == 0 && i + 1 < argc) generate = (size_t)atol(argv[++i]);
    else if (strcmp(argv[i], "-l") == 0 && i + 1 < argc) limit_mb = atol(argv[++i]);
    else if (strcmp(argv[i], "-a") == 0) age = true;
    else {
      fprintf(stderr, "usage: %s [-a] [-p PASSES] [-m MARGIN_MB] [-l LIMIT_MB] [-g COUNT] [FILE|DIR...]\n", argv[0]);
      return 2;
    }
  }
  for (; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) status |= fz_read_dir(argv[i]);
    else status |= fz_read_file(argv[i]);
  }
  if (generate > 0) fz_generate(generate);
  const char* save = getenv("FZ_REPLAY_SAVE");
  if (save != NULL && save[0] != 0 && strlen(save) < sizeof(fz_save_path)) {
    strcpy(fz_save_path, save);
    signal(SIGABRT, &fz_save_on_abort);
  }
  if (status != 0 || fz_unit_count == 0 || passes < 6) {
    fprintf(stderr, "replay: %s\n", status != 0 ? "unreadable input" : "need inputs and at least 6 passes");
    return 2;
  }
  /* Freed memory goes back to the OS after the purge delay, a clock: what a
     pass leaves and peaks at would depend on the machine's speed. Purged
     at once, both depend on the inputs only. */
#if !FZ_CONTROL
  mi_option_set(mi_option_purge_delay, 0);
#endif
  if (age && fz_age() != 0) {
    perror("replay: ageing the address hints");
    return 2;
  }
  /* The first third of the passes against the last: a retention of R per
     pass puts the last third at least R x (passes - 2 x third + 1) above
     the first, while what settles once (the caches filling; ASan's shadow
     growing until the kernel has placed the largest footprint the inputs
     reach, which a thread's timing decides) moves both the same, or the
     last only once. The lowest of the last third against the highest of
     the first: a pass that peaks higher once does not fail it. */
  long ref_peak = 0, ref_rss = 0, low_peak = LONG_MAX, low_rss = LONG_MAX;
  int third = passes / 3;
  for (int pass = 1; pass <= passes; pass++) {
    if (fz_reset_peak() != 0) {
      perror("replay: /proc/self/clear_refs");
      return 2;
    }
    for (size_t k = 0; k < fz_unit_count; k++) {
      fz_running_unit = &fz_units[k];
      LLVMFuzzerTestOneInput(fz_units[k].data, fz_units[k].size);
      fz_running_unit = NULL;
      long now = (k % 8 == 7 ? fz_status_kb("VmRSS:") : 0);
      if (now > limit_mb * 1024) {
        printf("replay: FAILED: pass %d, input %zu: rss %ld kB, above the limit of %ld MB\n", pass, k, now, limit_mb);
        return 1;
      }
    }
    long peak = fz_status_kb("VmHWM:"), rss = fz_status_kb("VmRSS:");
    printf("replay: pass %d of %zu inputs: peak %ld kB, rss after %ld kB\n", pass, fz_unit_count, peak, rss);
    fflush(stdout);
    if (pass <= third) {
      if (peak > ref_peak) ref_peak = peak;
      if (rss > ref_rss) ref_rss = rss;
    } else if (pass > passes - third) {
      if (peak < low_peak) low_peak = peak;
      if (rss < low_rss) low_rss = rss;
    }
  }
  long grown = (low_peak - ref_peak > low_rss - ref_rss ? low_peak - ref_peak : low_rss - ref_rss);
  const char* what = (low_peak - ref_peak > low_rss - ref_rss ? "peak" : "rss after");
  if (grown > margin_mb * 1024) {
    printf(
        "replay: FAILED: passes %d..%d: %s at least %ld kB above passes 1..%d (margin %ld MB): memory retained "
        "across inputs\n",
        passes - third + 1, passes, what, grown, third, margin_mb);
    return 1;
  }
  printf("replay: ok: passes %d..%d within %ld MB of passes 1..%d (%s %+ld kB)\n", passes - third + 1, passes,
         margin_mb, third, what, grown);
  return 0;
}
