/* White-box test of the profile.proto writer (src/prof/proto.c), its gzip
   container (gzip.c) and the module list (modules.c), read back by the real
   clients: a snapshot made by hand, with frames in this program's own
   functions, is written plain and gzipped, then
   - protoc --decode accepts it against pprof's profile.proto;
   - Go pprof -raw shows each sample's four values unsampled as Go's
     scaleHeapSample does (checked with libm here, independently of the
     library's exp), the `bytes` label, and the mapping of this program with
     its build id and function/file/line flags;
   - pprof -top names this program's functions from the written Function
     table alone (also with -symbolize=none: nothing read from the binary);
   - the .gz file decompresses to the plain file, byte for byte;
   - negative controls: hand-made files with string_table[0] != "" or a
     duplicate location id must be rejected by pprof (and a well-formed
     hand-made one accepted, so the rejection is about the planted fault).
   Clients found from $PPROF (a pprof binary), `pprof` in PATH or `go tool
   pprof`, and $PROTOC_PROFILE_PROTO; a missing client is reported and its
   checks skipped, unless MI_PPROF_REQUIRE_CLIENTS=1.

   Usage: test-proto-unit [DIR]   (files are written to DIR, default a new
   directory under /tmp) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mimalloc.h>
#include <mimalloc/fault.h>

#include "../../src/prof/prof.h"

static int failures;
static int skipped;

#define CHECK(cond, ...) \
  do { \
    if (!(cond)) { \
      failures++; \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__); \
      fprintf(stderr, "\n"); \
    } \
  } while (0)

/* ---- The program's "allocation sites": frames point into these --------------------
   Not named mi_*: the profile's drop_frames would drop them. Each is big
   enough that +8 lies inside it, and noinline keeps its symbol. */
static volatile int sink;
#define SITE __attribute__((noinline, used)) void
SITE proto_site_alpha(int n) {
  for (int i = 0; i < n; i++) sink += i;
}
SITE proto_site_beta(int n) {
  for (int i = 0; i < n; i++) sink ^= i;
}
SITE proto_site_gamma(int n) {
  for (int i = 0; i < n; i++) sink -= i;
}
SITE proto_caller(int n) {
  for (int i = 0; i < n; i++) sink += 2 * i;
}

#define RET(fn) ((uintptr_t)(void*)&fn + 8) /* a "return address" inside fn */

int main(int argc, char** argv);

/* ---- Files and commands ----------------------------------------------------------- */

static char dir[512];

static void path_of(char* buf, size_t size, const char* name) {
  snprintf(buf, size, "%s/%s", dir, name);
}

static void write_file(const char* name, const void* data, size_t len) {
  char path[1024];
  path_of(path, sizeof(path), name);
  FILE* f = fopen(path, "wb");
  CHECK(f != NULL, "cannot create %s", path);
  if (f == NULL) return;
  CHECK(len == 0 || fwrite(data, 1, len, f) == len, "short write %s", path);
  fclose(f);
}

/* Runs `cmd` (stderr folded in), its output into a malloc'ed string;
   `*status` receives the exit status. */
static char* run(const char* cmd, int* status) {
  char full[4096];
  snprintf(full, sizeof(full), "%s 2>&1", cmd);
  FILE* p = popen(full, "r");
  if (p == NULL) {
    *status = -1;
    return strdup("");
  }
  size_t cap = 4096, len = 0;
  char* out = (char*)malloc(cap);
  size_t n;
  while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (cap - len < 2) out = (char*)realloc(out, cap *= 2);
  }
  out[len] = 0;
  int st = pclose(p);
  *status = (WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return out;
}

static bool have(const char* cmd) {
  int st;
  char buf[512];
  snprintf(buf, sizeof(buf), "command -v %s >/dev/null", cmd);
  free(run(buf, &st));
  return st == 0;
}

static void missing(const char* what) {
  const char* req = getenv("MI_PPROF_REQUIRE_CLIENTS");
  if (req != NULL && strcmp(req, "1") == 0) {
    failures++;
    fprintf(stderr, "FAIL: %s not found (MI_PPROF_REQUIRE_CLIENTS=1)\n", what);
  } else {
    skipped++;
    fprintf(stderr, "SKIP: %s not found: its checks are skipped\n", what);
  }
}

static char pprof_cmd[600];

static bool find_pprof(void) {
  const char* env = getenv("PPROF");
  if (env != NULL && env[0] != 0) snprintf(pprof_cmd, sizeof(pprof_cmd), "%s", env);
  else if (have("pprof")) snprintf(pprof_cmd, sizeof(pprof_cmd), "pprof");
  else if (have("go")) snprintf(pprof_cmd, sizeof(pprof_cmd), "go tool pprof");
  else return false;
  return true;
}

/* ---- The snapshot ----------------------------------------------------------------- */

#define PERIOD 4096
static uintptr_t st_alpha[3], st_beta[2], st_gamma[2], st_libc[2];

typedef struct expect_s {
  const char* leaf;
  int64_t v[4];   /* as Go scales them */
  uint64_t label; /* bytes/objects before scaling */
} expect_t;

/* Go's scaleHeapSample (runtime/pprof protomem.go, legacy_profile.go), in
   libm's double precision. */
static void go_scale(uint64_t count, uint64_t size, uint64_t rate, int64_t* c, int64_t* s) {
  if (count == 0 || size == 0) {
    *c = *s = 0;
    return;
  }
  if (rate <= 1) {
    *c = (int64_t)count;
    *s = (int64_t)size;
    return;
  }
  double avg = (double)size / (double)count;
  double scale = 1 / (1 - exp(-avg / (double)rate));
  *c = (int64_t)((double)count * scale);
  *s = (int64_t)((double)size * scale);
}

/* Code in the C library: qsort as the C library has it (under ASan, &qsort
   is the sanitizer's interceptor, in this program). */
static uintptr_t libc_code(void) {
  void* f = dlsym(RTLD_NEXT, "qsort");
  return (f != NULL ? (uintptr_t)f : (uintptr_t)(void*)&qsort);
}

static void make_snapshot(mi_prof_snapshot_t* snap, mi_prof_entry_t* e, size_t period) {
  st_alpha[0] = RET(proto_site_alpha);
  st_alpha[1] = RET(proto_caller);
  st_alpha[2] = RET(main);
  st_beta[0] = RET(proto_site_beta);
  st_beta[1] = RET(main);
  st_gamma[0] = RET(proto_site_gamma);
  st_gamma[1] = RET(proto_caller);    /* shared with alpha: one location */
  st_libc[0] = RET(proto_site_alpha); /* a second stack with the same leaf */
  st_libc[1] = libc_code() + 8;       /* a frame in the C library's mapping */
  memset(e, 0, 5 * sizeof(*e));
  /* alpha: 64-byte objects, some freed (ACCUM on) */
  e[0] = (mi_prof_entry_t){st_alpha, 3, 10, 640, 25, 1600};
  /* beta: 4096-byte objects (= R) */
  e[1] = (mi_prof_entry_t){st_beta, 2, 7, 7 * 4096, 7, 7 * 4096};
  /* gamma: everything freed: the label comes from the cumulative pair */
  e[2] = (mi_prof_entry_t){st_gamma, 2, 0, 0, 3, 3000};
  /* all zero: not written */
  e[3] = (mi_prof_entry_t){st_beta, 1, 0, 0, 0, 0};
  /* a 1 MiB object, certainly sampled: scale 1 */
  e[4] = (mi_prof_entry_t){st_libc, 2, 1, 1 << 20, 1, 1 << 20};
  memset(snap, 0, sizeof(*snap));
  snap->count = 5;
  snap->entries = e;
  snap->period = period;
  snap->accum = true;
  snap->dropped_samples = 3;
  snap->stack_table_overflows = 1;
  snap->start_nanos = 1700000000000000000ULL;
  snap->taken_nanos = snap->start_nanos + 2500000000ULL;
}

/* The sample line of pprof -raw: "v0 v1 v2 v3: locs" whose leaf location
   is `leaf_loc`; true if one has values v. */
static bool raw_has_sample(const char* raw, const int64_t v[4]) {
  char want[128];
  snprintf(want, sizeof(want), " %lld %lld %lld %lld:", (long long)v[0], (long long)v[1], (long long)v[2],
           (long long)v[3]);
  /* pprof right-aligns the columns: squeeze runs of spaces first */
  static char squeezed[1 << 16];
  size_t k = 0;
  for (const char* p = raw; *p != 0 && k + 1 < sizeof(squeezed); p++) {
    if (*p == ' ' && k > 0 && squeezed[k - 1] == ' ') continue;
    squeezed[k++] = *p;
  }
  squeezed[k] = 0;
  return strstr(squeezed, want) != NULL;
}

static void check_raw(const char* file, const mi_prof_snapshot_t* snap) {
  char cmd[2048];
  int st;
  snprintf(cmd, sizeof(cmd), "%s -raw %s/%s", pprof_cmd, dir, file);
  char* raw = run(cmd, &st);
  CHECK(st == 0, "pprof -raw %s failed:\n%s", file, raw);
  printf("---- pprof -raw %s (excerpt)\n", file);
  fwrite(raw, 1, strlen(raw) < 3000 ? strlen(raw) : 3000, stdout);
  printf("\n");
  CHECK(strstr(raw, "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]") != NULL,
        "%s: sample types not in Go's order, or inuse_space not the default", file);
  char per[64];
  snprintf(per, sizeof(per), "Period: %zu", snap->period);
  CHECK(strstr(raw, per) != NULL, "%s: no '%s'", file, per);
  CHECK(strstr(raw, "PeriodType: space bytes") != NULL, "%s: period type", file);
  CHECK(strstr(raw, "Duration: 2.50") != NULL || strstr(raw, "Duration: 2.5s") != NULL, "%s: duration", file);
  for (size_t i = 0; i < snap->count; i++) {
    const mi_prof_entry_t* e = &snap->entries[i];
    int64_t lib[4], go[4];
    _mi_prof_unsample(e->accum_objs, e->accum_bytes, snap->period, &lib[0], &lib[1]);
    _mi_prof_unsample(e->live_objs, e->live_bytes, snap->period, &lib[2], &lib[3]);
    go_scale(e->accum_objs, e->accum_bytes, snap->period, &go[0], &go[1]);
    go_scale(e->live_objs, e->live_bytes, snap->period, &go[2], &go[3]);
    for (int k = 0; k < 4; k++) {
      CHECK(llabs(lib[k] - go[k]) <= 1, "entry %zu value %d: library %lld, Go's formula %lld", i, k, (long long)lib[k],
            (long long)go[k]);
    }
    bool empty = (e->live_objs == 0 && e->accum_objs == 0);
    if (empty) continue;
    CHECK(raw_has_sample(raw, lib), "%s: no sample with values %lld %lld %lld %lld", file, (long long)lib[0],
          (long long)lib[1], (long long)lib[2], (long long)lib[3]);
    uint64_t objs = (e->live_objs != 0 ? e->live_objs : e->accum_objs);
    uint64_t bytes = (e->live_objs != 0 ? e->live_bytes : e->accum_bytes);
    char label[64];
    snprintf(label, sizeof(label), "bytes:[%llu]", (unsigned long long)(bytes / objs));
    CHECK(strstr(raw, label) != NULL, "%s: no label %s", file, label);
  }
  /* 4 written samples: the all-zero entry is left out */
  size_t samples = 0;
  for (const char* p = strstr(raw, "Samples:"); p != NULL && (p = strstr(p, "\n")) != NULL; p++) {
    const char* q = p + 1;
    while (*q == ' ') q++;
    if (*q >= '0' && *q <= '9' && strchr(q, ':') != NULL && strchr(q, ':') < strchr(q, '\n')) {
      const char* colon = strchr(q, ':');
      bool digits = true;
      for (const char* r = q; r < colon; r++) digits = digits && ((*r >= '0' && *r <= '9') || *r == ' ');
      if (digits && colon[1] == ' ') samples++;
    }
    if (strncmp(p + 1, "Locations", 9) == 0) break;
  }
  CHECK(samples == 4, "%s: %zu samples, expected 4", file, samples);
  CHECK(strstr(raw, "proto_site_alpha test-proto-unit.c:") != NULL, "%s: location of proto_site_alpha", file);
  /* the program's mapping: functions, files and lines all written */
  char exe[512];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[n > 0 ? n : 0] = 0;
  const char* m = strstr(raw, "Mappings");
  CHECK(m != NULL && strstr(m, exe) != NULL, "%s: no mapping of %s", file, exe);
  if (m != NULL) {
    const char* line = strstr(m, "\n1: ");
    CHECK(line != NULL && strstr(line, exe) != NULL && strstr(line, exe) < strchr(line + 1, '\n'),
          "%s: mapping 1 is not the main program", file);
    CHECK(line != NULL && strstr(line, "[FN][FL][LN]") != NULL, "%s: mapping 1 lacks [FN][FL][LN]", file);
  }
  free(raw);
}

static void check_top(const char* file) {
  const char* modes[2] = {"", "-symbolize=none "};
  for (int k = 0; k < 2; k++) {
    char cmd[2048];
    int st;
    /* the file alone: no binary on the command line */
    snprintf(cmd, sizeof(cmd), "%s -top %s-sample_index=inuse_space %s/%s", pprof_cmd, modes[k], dir, file);
    char* top = run(cmd, &st);
    CHECK(st == 0, "%s failed:\n%s", cmd, top);
    printf("---- %s\n%s\n", cmd, top);
    CHECK(strstr(top, "proto_site_alpha") != NULL, "%s: -top does not name proto_site_alpha", file);
    CHECK(strstr(top, "proto_site_beta") != NULL, "%s: -top does not name proto_site_beta", file);
    CHECK(strstr(top, " mi_") == NULL && strstr(top, " _mi_") == NULL, "%s: an allocator frame", file);
    free(top);
  }
}

/* ---- Hand-made profiles for the negative controls ---------------------------------- */

typedef struct pb_s {
  uint8_t b[1024];
  size_t n;
} pb_t;

static void pb_varint(pb_t* p, uint64_t v) {
  while (v >= 0x80) {
    p->b[p->n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p->b[p->n++] = (uint8_t)v;
}
static void pb_field(pb_t* p, unsigned f, uint64_t v) {
  pb_varint(p, (uint64_t)f << 3);
  pb_varint(p, v);
}
static void pb_bytes(pb_t* p, unsigned f, const void* d, size_t n) {
  pb_varint(p, ((uint64_t)f << 3) | 2);
  pb_varint(p, n);
  memcpy(p->b + p->n, d, n);
  p->n += n;
}

/* A one-sample profile: sample_type objects/count, one location (twice if
   `dup_loc`), string_table[0] = `first`. */
static void handmade(const char* name, const char* first, bool dup_loc) {
  pb_t prof = {{0}, 0}, m = {{0}, 0};
  pb_field(&m, 1, 1);
  pb_field(&m, 2, 2);
  pb_bytes(&prof, 1, m.b, m.n);
  m.n = 0;
  uint8_t locs[1] = {1}, vals[1] = {5};
  pb_bytes(&m, 1, locs, 1);
  pb_bytes(&m, 2, vals, 1);
  pb_bytes(&prof, 2, m.b, m.n);
  for (int k = 0; k < (dup_loc ? 2 : 1); k++) {
    m.n = 0;
    pb_field(&m, 1, 1);
    pb_field(&m, 3, 0x1000 + 16 * (uint64_t)k);
    pb_bytes(&prof, 4, m.b, m.n);
  }
  pb_bytes(&prof, 6, first, strlen(first));
  pb_bytes(&prof, 6, "objects", 7);
  pb_bytes(&prof, 6, "count", 5);
  write_file(name, prof.b, prof.n);
}

static void check_controls(void) {
  handmade("control-ok.pb", "", false);
  handmade("control-string0.pb", "x", false);
  handmade("control-dupid.pb", "", true);
  const char* files[3] = {"control-ok.pb", "control-string0.pb", "control-dupid.pb"};
  for (int k = 0; k < 3; k++) {
    char cmd[2048];
    int st;
    snprintf(cmd, sizeof(cmd), "%s -raw %s/%s", pprof_cmd, dir, files[k]);
    char* out = run(cmd, &st);
    printf("---- %s: exit %d\n%.400s\n", cmd, st, out);
    if (k == 0) CHECK(st == 0, "the well-formed control was rejected:\n%s", out);
    else CHECK(st != 0, "pprof accepted the broken %s", files[k]);
    free(out);
  }
}

/* ---- Out of memory ------------------------------------------------------------------
   Where fault injection is built in (Debug builds): the k-th OS reservation
   fails, for each k until a build sees none. The writer must then return
   false with `failed` set, or (a failure in the symboliser's own tables,
   which only costs names) true with a whole file; never crash, and give
   back every OS block it took. */
static void check_oom(const mi_prof_snapshot_t* snap) {
  if (!mi_fault_available()) {
    printf("out-of-memory sweep: no fault injection in this build\n");
    return;
  }
  int refused = 0, k = 1;
  for (; k <= 1000; k++) {
    for (int gz = 0; gz < 2; gz++) {
      mi_fault_reset();
      mi_fault_counters_t before;
      mi_fault_get_counters(&before);
      mi_fault_policy_t pol;
      memset(&pol, 0, sizeof(pol));
      pol.kind = mi_fault_reserve;
      pol.nth = k;
      pol.count = 1;
      pol.error = mi_fault_error_other; /* not out-of-memory: no retry */
      mi_fault_set_policy(&pol);
      mi_prof_buf_t out;
      memset(&out, 0, sizeof(out));
      bool ok = _mi_prof_proto_build(snap, gz != 0, &out);
      mi_fault_counters_t c;
      mi_fault_get_counters(&c);
      mi_fault_set_policy(NULL);
      CHECK(ok == !out.failed, "k=%d: result %d but failed=%d", k, ok, out.failed);
      CHECK(!ok || out.len > 0, "k=%d: success without output", k);
      if (!ok) refused++;
      _mi_prof_buf_free(&out);
      /* every OS block of the writer is given back, on the failure paths too */
      mi_fault_counters_t after;
      mi_fault_get_counters(&after);
      CHECK(after.os_reserved == before.os_reserved, "k=%d gzip=%d: %lld bytes of OS memory not released", k, gz,
            after.os_reserved - before.os_reserved);
      if (c.selected_injected == 0) goto done; /* the build made fewer than k reservations */
    }
  }
done:
  mi_fault_reset();
  printf("out-of-memory sweep: %d positions, %d builds refused\n", k - 1, refused);
  CHECK(refused > 0, "no injected failure made the writer return false");
}

/* ---- Main -------------------------------------------------------------------------- */

static void build(const mi_prof_snapshot_t* snap, bool gzip, const char* name, mi_prof_buf_t* out) {
  memset(out, 0, sizeof(*out));
  bool ok = _mi_prof_proto_build(snap, gzip, out);
  CHECK(ok && !out->failed && out->len > 0, "_mi_prof_proto_build(%s) failed", name);
  write_file(name, out->data, out->len);
}

int main(int argc, char** argv) {
  mi_free(mi_malloc(16)); /* the allocator is up */
  proto_site_alpha(1);
  proto_site_beta(1);
  proto_site_gamma(1);
  proto_caller(1);
  if (argc > 1) {
    snprintf(dir, sizeof(dir), "%s", argv[1]);
    mkdir(dir, 0755);
  } else {
    snprintf(dir, sizeof(dir), "/tmp/test-proto-unit-XXXXXX");
    if (mkdtemp(dir) == NULL) return 2;
  }
  printf("files in %s\n", dir);

  /* the sampler's logarithm (no libm in the library) against libm's: over
     the draw's whole domain (q / 2^30, q = 1 .. 2^30) and far beyond */
  double worst = 0.0;
  for (uint64_t q = 1; q <= ((uint64_t)1 << 30); q += (q < 4096 ? 1 : 1021)) {
    double u = (double)q / (double)((uint64_t)1 << 30);
    double err = fabs(_mi_prof_ln(u) - log(u)) / (1.0 + fabs(log(u)));
    if (err > worst) worst = err;
  }
  for (double x = 1e-300; x < 1e300; x *= 1.37) {
    double err = fabs(_mi_prof_ln(x) - log(x)) / (1.0 + fabs(log(x)));
    if (err > worst) worst = err;
  }
  CHECK(worst < 1e-15, "_mi_prof_ln is off libm's log by %g (relative)", worst);
  printf("ln: worst relative error %g\n", worst);

  /* the module list: the program first, with a build id; the C library too */
  mi_prof_mapping_t* maps = NULL;
  size_t count = 0;
  CHECK(_mi_prof_mappings(&maps, &count) && count > 0, "no mappings");
  if (count > 0) {
    uintptr_t code = RET(proto_site_alpha);
    CHECK(code >= maps[0].start && code < maps[0].limit, "mapping 0 does not hold the program's code");
    CHECK(maps[0].build_id_len >= 16, "the program's mapping has no build id");
    CHECK(maps[0].file_offset != 0 || maps[0].start != 0, "mapping 0 offset");
    bool libc = false;
    for (size_t i = 0; i < count; i++) {
      uintptr_t q = libc_code();
      if (q >= maps[i].start && q < maps[i].limit) libc = (maps[i].build_id_len > 0);
    }
    CHECK(libc, "no mapping with a build id holds qsort");
    printf("mapping 1: %lx-%lx offset %llx %s (build id %zu bytes); %zu mappings\n", (unsigned long)maps[0].start,
           (unsigned long)maps[0].limit, (unsigned long long)maps[0].file_offset, maps[0].path, maps[0].build_id_len,
           count);
  }
  _mi_prof_mappings_free(maps, count);
  mi_prof_buf_t mt;
  memset(&mt, 0, sizeof(mt));
  CHECK(_mi_prof_maps_text(&mt) && mt.len > 18 && memcmp(mt.data, "MAPPED_LIBRARIES:\n", 18) == 0,
        "_mi_prof_maps_text");
  CHECK(mt.len > 18 && memchr(mt.data, 'x', mt.len) != NULL, "memory map without an executable line");
  _mi_prof_buf_free(&mt);

  /* the gzip container alone: empty, one block, several blocks */
  static const size_t sizes[4] = {0, 1000, 65535, 200000};
  for (int k = 0; k < 4; k++) {
    mi_prof_buf_t in, gz;
    memset(&in, 0, sizeof(in));
    memset(&gz, 0, sizeof(gz));
    for (size_t i = 0; i < sizes[k]; i++) {
      char c = (char)('a' + (i * 7 + i / 13) % 26);
      _mi_prof_buf_put(&in, &c, 1);
    }
    CHECK(_mi_prof_gzip(&in, &gz), "_mi_prof_gzip(%zu)", sizes[k]);
    char name[64], raw[64];
    snprintf(name, sizeof(name), "gzip-%zu.gz", sizes[k]);
    snprintf(raw, sizeof(raw), "gzip-%zu", sizes[k]);
    write_file(name, gz.data, gz.len);
    write_file(raw, in.data, in.len);
    if (have("gzip")) {
      char cmd[2048];
      int st;
      snprintf(cmd, sizeof(cmd), "gzip -dc %s/%s | cmp - %s/%s", dir, name, dir, raw);
      char* out = run(cmd, &st);
      CHECK(st == 0, "%s:\n%s", cmd, out);
      free(out);
    }
    _mi_prof_buf_free(&in);
    _mi_prof_buf_free(&gz);
  }

  /* the profiles: sampled (R = 4096) and exact (R = 1) */
  mi_prof_entry_t e[5];
  mi_prof_snapshot_t snap;
  mi_prof_buf_t plain, gz;
  make_snapshot(&snap, e, PERIOD);
  /* a first build loads what symbolising loads (zlib, for compressed debug
     sections), which adds mappings: after it, two builds give the same bytes */
  build(&snap, false, "warm-up.pb", &plain);
  _mi_prof_buf_free(&plain);
  build(&snap, false, "heap.pb", &plain);
  build(&snap, true, "heap.pb.gz", &gz);
  CHECK(gz.len > 18 && (uint8_t)gz.data[0] == 0x1f && (uint8_t)gz.data[1] == 0x8b, "no gzip magic");
  CHECK(plain.len > 0 && (uint8_t)plain.data[0] != 0x1f, "the plain file is gzipped");
  mi_prof_snapshot_t exact;
  mi_prof_entry_t e1[5];
  mi_prof_buf_t exact_buf;
  make_snapshot(&exact, e1, 1);
  build(&exact, false, "exact.pb", &exact_buf);
  /* an empty profile is valid too */
  mi_prof_snapshot_t empty;
  memset(&empty, 0, sizeof(empty));
  empty.period = PERIOD;
  mi_prof_buf_t empty_buf;
  build(&empty, false, "empty.pb", &empty_buf);

  char cmd[2048];
  int st;
  if (have("gzip")) {
    snprintf(cmd, sizeof(cmd), "gzip -dc %s/heap.pb.gz | cmp - %s/heap.pb", dir, dir);
    char* out = run(cmd, &st);
    CHECK(st == 0, "the gzip file does not decode to the plain one: %s", out);
    free(out);
  } else {
    missing("gzip");
  }

  const char* proto = getenv("PROTOC_PROFILE_PROTO");
  if (proto == NULL) proto = "/usr/share/gocode/src/github.com/google/pprof/proto/profile.proto";
  if (have("protoc") && access(proto, R_OK) == 0) {
    char pdir[512];
    snprintf(pdir, sizeof(pdir), "%s", proto);
    char* slash = strrchr(pdir, '/');
    *slash = 0;
    const char* files[3] = {"heap.pb", "exact.pb", "empty.pb"};
    for (int k = 0; k < 3; k++) {
      snprintf(cmd, sizeof(cmd), "protoc --proto_path=%s --decode=perftools.profiles.Profile %s < %s/%s", pdir,
               slash + 1, dir, files[k]);
      char* out = run(cmd, &st);
      CHECK(st == 0, "protoc rejects %s:\n%s", files[k], out);
      if (k == 0) {
        printf("---- protoc --decode %s (excerpt)\n%.1200s\n", files[k], out);
        CHECK(strncmp(strstr(out, "string_table:") ? strstr(out, "string_table:") : "", "string_table: \"\"", 16) == 0,
              "string_table[0] is not \"\"");
        CHECK(strstr(out, "drop_frames:") != NULL && strstr(out, "default_sample_type:") != NULL &&
                  strstr(out, "file_offset:") != NULL && strstr(out, "build_id:") != NULL &&
                  strstr(out, "time_nanos: 1700000002500000000") != NULL &&
                  strstr(out, "duration_nanos: 2500000000") != NULL && strstr(out, "period: 4096") != NULL,
              "a field is missing from %s", files[k]);
        CHECK(strstr(out, "\"dropped_samples=3 stack_table_overflows=1\"") != NULL, "no comment string");
      }
      free(out);
    }
  } else {
    missing("protoc or pprof's profile.proto");
  }

  if (find_pprof()) {
    printf("pprof: %s\n", pprof_cmd);
    check_raw("heap.pb", &snap);
    check_raw("heap.pb.gz", &snap);
    check_raw("exact.pb", &exact);
    check_top("heap.pb.gz");
    snprintf(cmd, sizeof(cmd), "%s -raw %s/empty.pb", pprof_cmd, dir);
    char* out = run(cmd, &st);
    CHECK(st == 0, "pprof rejects the empty profile:\n%s", out);
    free(out);
    /* plain and gzip read the same */
    char* a;
    char* b;
    snprintf(cmd, sizeof(cmd), "%s -raw %s/heap.pb | grep -v '^Time:'", pprof_cmd, dir);
    a = run(cmd, &st);
    snprintf(cmd, sizeof(cmd), "%s -raw %s/heap.pb.gz | grep -v '^Time:'", pprof_cmd, dir);
    b = run(cmd, &st);
    CHECK(strcmp(a, b) == 0, "pprof reads heap.pb and heap.pb.gz differently");
    free(a);
    free(b);
    check_controls();
  } else {
    missing("pprof (set PPROF, or install golang-go)");
  }

  check_oom(&snap);

  _mi_prof_buf_free(&plain);
  _mi_prof_buf_free(&gz);
  _mi_prof_buf_free(&exact_buf);
  _mi_prof_buf_free(&empty_buf);
  printf("%s: %d failure(s), %d skipped\n", failures == 0 ? "ok" : "FAILED", failures, skipped);
  return failures == 0 ? 0 : 1;
}
