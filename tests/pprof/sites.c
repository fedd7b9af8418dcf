/* The accuracy program of the sampled heap profiler (the spec's 1.10(a)):
   five allocation sites with known true figures, one noinline function
   each, interleaved in chunks as the spec's Appendix A does, every live
   block kept until after the dump. Single-threaded and deterministic: the
   same seed gives the same allocation sequence and so the same samples.

     site    size     live      freed
     site_a  64       100000    0
     site_b  4096     2000      0
     site_c  1 MiB    16        0
     site_d  256      0         50000  (each chunk freed once allocated)
     site_e  1000     10000     0

   usage: sites [--text PATH] [--proto PATH] [--interval N] [--exact]
                [--seed N] [--accum] [--start seeded|ex|env] [--empty]
     --interval N  mean bytes between samples (default 4096); --exact: 1
     --seed N      the sampler's seed (default 1)
     --accum       keep cumulative counts (mi_prof_start_ex, accum on)
     --start       seeded: mi_prof_start_seeded (the default without --accum)
                   ex: mi_prof_start_ex, OVERRIDE (the default with --accum)
                   env: started by MIMALLOC_PROF=1 from the environment
                   (its interval, seed and accum: MIMALLOC_PROF_*)
     --empty       dump with nothing allocated
   Both dumps are of the same state (text first). After them it prints the
   truth and the profiler's counters, one "key value..." line each:
     site NAME size S live N freed M
     prof live_samples N accum_samples N dropped_samples N sample_rate N accum 0|1
     requested before N at_dump N detailed 0|1
   ("requested": the allocator's malloc_requested just before the start and
   just before the dump; kept only with detailed statistics). Nothing is
   printed, and nothing else allocated, between the start and the dumps.
   Exit 0; 2 on a bad argument or a failed start; 3 on a failed dump. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mimalloc.h>
#include <mimalloc/profile.h>

#define NOINLINE __attribute__((noinline))

/* One function per site: frame 0 of every sample is the return address
   into one of these (the caller of mi_malloc). The result is stored after
   the call, so the call is never a tail call. */
NOINLINE void site_a(void** slot);
NOINLINE void site_b(void** slot);
NOINLINE void site_c(void** slot);
NOINLINE void site_d(void** slot);
NOINLINE void site_e(void** slot);

NOINLINE void site_a(void** slot) {
  *slot = mi_malloc(64);
}
NOINLINE void site_b(void** slot) {
  *slot = mi_malloc(4096);
}
NOINLINE void site_c(void** slot) {
  *slot = mi_malloc((size_t)1 << 20);
}
NOINLINE void site_d(void** slot) {
  *slot = mi_malloc(256);
}
NOINLINE void site_e(void** slot) {
  *slot = mi_malloc(1000);
}

typedef struct site_s {
  const char* name;
  void (*fn)(void**);
  size_t size;
  long n_live, n_freed;
} site_t;

static const site_t sites[] = {
    {"site_a", site_a, 64, 100000, 0}, {"site_b", site_b, 4096, 2000, 0},  {"site_c", site_c, (size_t)1 << 20, 16, 0},
    {"site_d", site_d, 256, 0, 50000}, {"site_e", site_e, 1000, 10000, 0},
};
#define NSITES ((int)(sizeof(sites) / sizeof(sites[0])))

/* Static, so the program's own bookkeeping allocates nothing. */
static void* live_a[100000];
static void* live_b[2000];
static void* live_c[16];
static void* live_e[10000];
static void** const live[NSITES] = {live_a, live_b, live_c, NULL, live_e};
static void* chunk[50000 / 64 + 1]; /* the freed site's blocks of one chunk */

/* Appendix A's interleaving: round-robin over the sites, each turn a chunk
   of (remaining / 64 + 1) allocations of one site. */
static void run_sites(void) {
  long left[NSITES];
  long total = 0;
  for (int s = 0; s < NSITES; s++) {
    left[s] = sites[s].n_live + sites[s].n_freed;
    total += left[s];
  }
  long done = 0;
  int s = 0;
  while (done < total) {
    s = (s + 1) % NSITES;
    if (left[s] == 0) continue;
    long k = left[s] / 64 + 1;
    if (k > left[s]) k = left[s];
    long nfree = 0;
    for (long j = 0; j < k; j++) {
      long idx = sites[s].n_live + sites[s].n_freed - left[s];
      void* p = NULL;
      sites[s].fn(&p);
      if (p == NULL) {
        fprintf(stderr, "sites: %s: out of memory\n", sites[s].name);
        exit(2);
      }
      if (idx < sites[s].n_live) {
        live[s][idx] = p;
      } else {
        chunk[nfree++] = p;
      }
      left[s]--;
      done++;
    }
    for (long j = 0; j < nfree; j++) mi_free(chunk[j]);
  }
}

static void free_sites(void) {
  for (int s = 0; s < NSITES; s++) {
    if (live[s] == NULL) continue;
    for (long i = 0; i < sites[s].n_live; i++) mi_free(live[s][i]);
  }
}

static bool parse_u64(const char* s, uint64_t* out) {
  char* end = NULL;
  if (s == NULL || *s < '0' || *s > '9') return false;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

static int usage(const char* why) {
  fprintf(stderr,
          "sites: %s\nusage: sites [--text PATH] [--proto PATH] [--interval N] [--exact] [--seed N] "
          "[--accum] [--start seeded|ex|env] [--empty]\n",
          why);
  return 2;
}

int main(int argc, char** argv) {
  const char* text = NULL;
  const char* proto = NULL;
  const char* start = NULL;
  uint64_t interval = 4096;
  uint64_t seed = 1;
  bool accum = false;
  bool empty = false;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = (i + 1 < argc) ? argv[i + 1] : NULL;
    if (strcmp(a, "--text") == 0 && v) {
      text = v;
      i++;
    } else if (strcmp(a, "--proto") == 0 && v) {
      proto = v;
      i++;
    } else if (strcmp(a, "--start") == 0 && v) {
      start = v;
      i++;
    } else if (strcmp(a, "--interval") == 0) {
      if (!parse_u64(v, &interval) || interval == 0) return usage("--interval needs a positive number");
      i++;
    } else if (strcmp(a, "--seed") == 0) {
      if (!parse_u64(v, &seed)) return usage("--seed needs a number");
      i++;
    } else if (strcmp(a, "--exact") == 0) {
      interval = 1;
    } else if (strcmp(a, "--accum") == 0) {
      accum = true;
    } else if (strcmp(a, "--empty") == 0) {
      empty = true;
    } else {
      return usage("unknown argument");
    }
  }
  if (start == NULL) start = accum ? "ex" : "seeded";
  if (strcmp(start, "seeded") == 0 && accum) return usage("--accum needs --start ex or env");

  /* the allocator's requested bytes before anything of ours is allocated */
  mi_prof_stats_t_decl(before);
  bool have_before = mi_prof_stats_get(&before);

  bool started;
  if (strcmp(start, "seeded") == 0) {
    started = mi_prof_start_seeded((size_t)interval, seed);
  } else if (strcmp(start, "ex") == 0) {
    mi_prof_config_t_decl(cfg);
    cfg.mode = MI_PROF_CONFIG_OVERRIDE;
    cfg.sample_interval = (size_t)interval;
    cfg.seed = seed;
    cfg.accum = accum;
    started = mi_prof_start_ex(&cfg);
  } else if (strcmp(start, "env") == 0) {
    started = mi_prof_is_enabled(); /* MIMALLOC_PROF=1 started it at process start */
  } else {
    return usage("--start is seeded, ex or env");
  }
  if (!started) {
    fprintf(stderr, "sites: the profiler did not start (--start %s)\n", start);
    return 2;
  }

  if (!empty) run_sites();

  mi_prof_stats_t_decl(at_dump);
  bool have_at_dump = mi_prof_stats_get(&at_dump);
  if (text != NULL && !mi_prof_dump(text)) {
    fprintf(stderr, "sites: mi_prof_dump(%s) failed\n", text);
    return 3;
  }
  if (proto != NULL && !mi_prof_dump_proto(proto)) {
    fprintf(stderr, "sites: mi_prof_dump_proto(%s) failed\n", proto);
    return 3;
  }

  for (int s = 0; s < NSITES; s++) {
    printf("site %s size %zu live %ld freed %ld\n", sites[s].name, sites[s].size, empty ? 0 : sites[s].n_live,
           empty ? 0 : sites[s].n_freed);
  }
  if (have_at_dump) {
    printf("prof live_samples %zu accum_samples %zu dropped_samples %zu sample_rate %zu accum %d\n",
           at_dump.live_samples, at_dump.accum_samples, at_dump.dropped_samples, at_dump.sample_rate,
           at_dump.accum ? 1 : 0);
  }
  if (have_before && have_at_dump) {
    printf("requested before %zu at_dump %zu detailed %d\n", before.heap_malloc_requested,
           at_dump.heap_malloc_requested, (before.heap_stats_detailed && at_dump.heap_stats_detailed) ? 1 : 0);
  }
  fflush(stdout);
  free_sites();
  mi_prof_stop();
  return 0;
}
