/* The program of the shlib_names.py test: four allocation sites, two in the
   shared library shlib-site.c and two here, each named in DWARF one of the
   two ways that file describes (main_site_named: its own DW_AT_name;
   main_site_origin: static, inlined into main_site_inliner and kept out of
   line, named only through DW_AT_abstract_origin). Linked against the
   allocator's shared library, so malloc in both objects is the allocator's.

   Every allocation is sampled (interval 1), so each site's in-use bytes in
   the dumps are exact: COUNT blocks of the site's size, all live at the
   dumps. Both dumps are of the same state.

     site              size  count  bytes
     shlib_site_named  4000    300  1200000
     shlib_site_origin 5000    500  2500000
     main_site_named   3000    700  2100000
     main_site_origin  6000    400  2400000

   usage: pprof-shlib-main TEXT PROTO
   Prints one "site NAME bytes N module M" line per site (M: in the library
   or in the program). Exit 0; 2 on bad arguments, a failed start or an
   allocation not the allocator's; 3 on a failed dump. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <mimalloc.h>
#include <mimalloc/profile.h>

void* shlib_site_named(size_t n);
void* shlib_site_inliner(size_t n);
extern void* (*volatile shlib_site_origin_ptr)(size_t n);

__attribute__((noinline)) void* main_site_named(size_t n);
void* main_site_inliner(size_t n);

__attribute__((noinline)) void* main_site_named(size_t n) {
  char* p = (char*)malloc(n);
  if (p != NULL) p[0] = 3;
  return p;
}

static void* main_site_origin(size_t n) {
  char* p = (char*)malloc(n);
  if (p != NULL) p[0] = 4;
  return p;
}

void* main_site_inliner(size_t n) {
  return main_site_origin(n);
}

static void* (*volatile main_site_origin_ptr)(size_t n) = main_site_origin;

typedef struct site_s {
  const char* name;
  const char* module;
  size_t size, count;
} site_t;

static const site_t sites[4] = {
    {"shlib_site_named", "library", 4000, 300},
    {"shlib_site_origin", "library", 5000, 500},
    {"main_site_named", "program", 3000, 700},
    {"main_site_origin", "program", 6000, 400},
};

static void* site_alloc(int site, size_t n) {
  switch (site) {
    case 0: return shlib_site_named(n);
    case 1: return shlib_site_origin_ptr(n);
    case 2: return main_site_named(n);
    default: return main_site_origin_ptr(n);
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: pprof-shlib-main TEXT PROTO\n");
    return 2;
  }
  static void* kept[300 + 500 + 700 + 400];
  size_t k = 0;
  if (!mi_prof_start_seeded(1, 1)) return 2;
  for (int s = 0; s < 4; s++) {
    for (size_t i = 0; i < sites[s].count; i++) {
      void* p = site_alloc(s, sites[s].size);
      if (p == NULL || !mi_is_in_heap_region(p)) return 2; /* malloc not ours: the test would test nothing */
      kept[k++] = p;
    }
  }
  bool ok = mi_prof_dump(argv[1]) && mi_prof_dump_proto(argv[2]);
  mi_prof_stop();
  for (int s = 0; s < 4; s++) {
    printf("site %s bytes %zu module %s\n", sites[s].name, sites[s].size * sites[s].count, sites[s].module);
  }
  for (size_t i = 0; i < k; i++) free(kept[i]);
  return ok ? 0 : 3;
}
