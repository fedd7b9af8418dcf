/* which_alloc: verify which library actually serves malloc in this process.
 *
 * usage: LD_PRELOAD=/path/lib.so which_alloc /path/lib.so
 *        which_alloc glibc            (no LD_PRELOAD: expect libc.so.6)
 *
 * For each of malloc, free, calloc, realloc, looks up the address that
 * dlsym(RTLD_DEFAULT, name) resolves to (what every dynamically linked
 * program, such as the workloads, binds to), finds the /proc/self/maps
 * mapping containing it, and checks that the mapping's file is the
 * expected library (compared after realpath(), so symlinks such as
 * libjemalloc.so.2 -> libjemalloc.so.2.x match). For "glibc" the mapping
 * must be libc.so.6 (or libc-*.so). Also does a real malloc/free round trip.
 * Prints one line per symbol and exits 0 if all match, 1 otherwise.
 * Build as PIE so the executable never becomes the canonical address of
 * malloc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int find_mapping(uintptr_t addr, char* path, size_t pathsz) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  char line[PATH_MAX + 256];
  int found = 0;
  while (fgets(line, sizeof(line), f)) {
    unsigned long lo, hi;
    int off = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) < 2) continue;
    if (addr >= lo && addr < hi) {
      char* p = line + off;
      p[strcspn(p, "\n")] = 0;
      snprintf(path, pathsz, "%s", p[0] ? p : "[anonymous]");
      found = 1;
      break;
    }
  }
  fclose(f);
  return found;
}

static int is_glibc(const char* path) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strcmp(base, "libc.so.6") == 0 || (strncmp(base, "libc-", 5) == 0 && strstr(base, ".so") != NULL);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <expected-library-path | glibc>\n", argv[0]);
    return 2;
  }
  const char* expected = argv[1];
  int want_glibc = strcmp(expected, "glibc") == 0;
  char want[PATH_MAX];
  if (!want_glibc) {
    if (!realpath(expected, want)) {
      printf("FAIL expected library %s does not exist\n", expected);
      return 1;
    }
  }
  const char* pre = getenv("LD_PRELOAD");
  printf("LD_PRELOAD=%s\n", pre ? pre : "(unset)");

  static const char* const syms[] = {"malloc", "free", "calloc", "realloc"};
  int ok = 1;
  for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
    void* a = dlsym(RTLD_DEFAULT, syms[i]);
    char path[PATH_MAX + 64] = "";
    if (!a || !find_mapping((uintptr_t)a, path, sizeof(path))) {
      printf("FAIL %s: cannot resolve/locate (%p)\n", syms[i], a);
      ok = 0;
      continue;
    }
    char real[PATH_MAX];
    const char* shown = path;
    if (path[0] == '/' && realpath(path, real)) shown = real;
    int match = want_glibc ? is_glibc(shown) : strcmp(shown, want) == 0;
    printf("%s %s -> %p in %s\n", match ? "OK  " : "FAIL", syms[i], a, shown);
    if (!match) ok = 0;
  }
  /* a real allocation round trip through whatever is bound */
  void* p = malloc(100);
  void* q = realloc(p, 100000);
  if (!q) {
    printf("FAIL malloc/realloc returned NULL\n");
    ok = 0;
  }
  free(q);
  printf("%s\n", ok ? "VERIFIED" : "NOT VERIFIED");
  return ok ? 0 : 1;
}
