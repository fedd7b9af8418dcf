/* Positive controls of the memory-checker jobs (ci/asan.sh, ci/valgrind.sh):
   each mode plants one bug on a block from mi_malloc, which the checker
   (AddressSanitizer, or Valgrind's memcheck) must report through the
   allocator's annotations (src/base/track.h). The control mode does the same
   accesses within bounds and must run clean. The planted access goes
   through a volatile pointer so the compiler cannot drop or fold it. */
#define _DEFAULT_SOURCE /* mincore */
#include <mimalloc.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static int plant_use_after_free(void) {
  char* volatile p = (char*)mi_malloc(48);
  memset(p, 1, 48);
  mi_free(p);
  return p[8]; /* read of a freed block */
}

__attribute__((noinline)) static int plant_heap_overflow(void) {
  char* volatile p = (char*)mi_malloc(40); /* a 48-byte size class: bytes 40..47 are slack */
  memset(p, 1, 40);
  int r = p[40]; /* one byte past the requested size, still inside the block */
  mi_free(p);
  return r;
}

__attribute__((noinline)) static int plant_never_allocated(void) {
  char* volatile p = (char*)mi_malloc(64);
  memset(p, 1, 64);
  int r = p[64 + 16]; /* inside the page, in a block never handed out */
  mi_free(p);
  return r;
}

/* A leak: the only pointer to a block is dropped. It is the second block
   of its page: the page's metadata points at the first (its start), which
   memcheck's leak check counts as a reference. Memcheck only (ASan's leak
   checker does not scan the allocator's mappings, docs/sanitizers.md). */
__attribute__((noinline)) static void plant_leak_block(void) {
  void* keep = mi_malloc(48);
  char* volatile p = (char*)mi_malloc(48);
  memset(p, 1, 48);
  p = NULL; /* the block is unreachable from here on */
  mi_free(keep);
}

__attribute__((noinline)) static int plant_leak(void) {
  plant_leak_block();
  char* volatile q = (char*)mi_malloc(4000); /* reuses the registers and stack the leak's pointer was in */
  memset(q, 2, 4000);
  mi_free(q);
  return 0; /* the process exits 0: memcheck's leak check must fail it */
}

static int control(void) {
  char* volatile p = (char*)mi_malloc(40);
  memset(p, 1, 40);
  int r = p[39];
  size_t usable = mi_usable_size(p); /* asking opens up the slack */
  p[usable - 1] = 2;
  p = (char*)mi_realloc(p, 4000);
  memset(p, 3, 4000);
  mi_free(p);
  /* an aligned reallocation of NULL allocates: its block must be open (the
     fuzz harness found it poisoned). A first block of the kind, freed, makes
     the second come from a segment that was poisoned when it was freed. */
  mi_free(mi_malloc_aligned(40, 2 * 1024 * 1024));
  p = (char*)mi_realloc_aligned(NULL, 40, 2 * 1024 * 1024);
  memset(p, 4, 40);
  mi_free(p);
  return r - 1;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PLANT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PLANT_ASAN 1
#endif

#if PLANT_ASAN && defined(__linux__)
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* The resident pages of the shadow of [p, p + size), page-aligned inside. */
static size_t shadow_resident(const void* p, size_t size) {
  size_t scale = 0, offset = 0;
  __asan_get_shadow_mapping(&scale, &offset);
  size_t psize = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = (((uintptr_t)p >> scale) + offset + psize - 1) & ~(uintptr_t)(psize - 1);
  uintptr_t hi = ((((uintptr_t)p + size) >> scale) + offset) & ~(uintptr_t)(psize - 1);
  size_t resident = 0;
  unsigned char vec[256];
  for (uintptr_t at = lo; at < hi; at += sizeof(vec) * psize) {
    size_t len = (hi - at < sizeof(vec) * psize ? hi - at : sizeof(vec) * psize);
    if (mincore((void*)at, len, vec) != 0) return (size_t)-1;
    for (size_t i = 0; i < len / psize; i++) resident += (vec[i] & 1);
  }
  return resident;
}

/* A huge block's range goes back to the OS with its shadow (the segment
   floor's unpoisoning gives the shadow's pages back): none of them stays
   resident, and the range reads as unpoisoned. Its twin, a block whose
   segment the cache keeps, stays poisoned: its shadow is resident, which
   shows the count can see it. Exit 0 if both hold. */
static int check_shadow_released(void) {
  size_t huge = (size_t)40 << 20, cached = (size_t)2 << 20;
  char* volatile h = (char*)mi_malloc(huge);
  char* volatile c = (char*)mi_malloc(cached);
  memset(h, 1, huge);
  memset(c, 1, cached);
  mi_free(h);
  mi_free(c);
  size_t h_resident = shadow_resident(h, huge), c_resident = shadow_resident(c, cached);
  int bad = 0;
  if (h_resident != 0) {
    fprintf(stderr, "plant: %zu pages of a freed huge block's shadow still resident\n", h_resident);
    bad = 1;
  }
  if (__asan_region_is_poisoned(h, huge) != NULL) {
    fprintf(stderr, "plant: a freed huge block's range (back with the OS) reads as poisoned\n");
    bad = 1;
  }
  if (c_resident == 0 || __asan_region_is_poisoned(c, cached) == NULL) {
    fprintf(stderr, "plant: the cached block's shadow: %zu pages resident, %s (the count cannot see it)\n", c_resident,
            __asan_region_is_poisoned(c, cached) != NULL ? "poisoned" : "not poisoned");
    bad = 1;
  }
  if (!bad) fprintf(stderr, "plant: shadow released: huge block 0 pages, cached block %zu pages\n", c_resident);
  return bad;
}
#else
static int check_shadow_released(void) {
  fprintf(stderr, "plant: shadow-released: ASan on Linux only\n");
  return 2;
}
#endif

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "");
  if (strcmp(mode, "use-after-free") == 0) return plant_use_after_free();
  if (strcmp(mode, "heap-overflow") == 0) return plant_heap_overflow();
  if (strcmp(mode, "never-allocated") == 0) return plant_never_allocated();
  if (strcmp(mode, "leak") == 0) return plant_leak();
  if (strcmp(mode, "control") == 0) return control();
  if (strcmp(mode, "shadow-released") == 0) return check_shadow_released();
  fprintf(stderr, "usage: plant use-after-free|heap-overflow|never-allocated|leak|control|shadow-released\n");
  return 2;
}
