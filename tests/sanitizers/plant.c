/* Positive controls of the memory-checker jobs (ci/asan.sh, ci/valgrind.sh):
   each mode plants one bug on a block from mi_malloc, which the checker
   (AddressSanitizer, or Valgrind's memcheck) must report through the
   allocator's annotations (src/base/track.h). The control mode does the same
   accesses within bounds and must run clean. The planted access goes
   through a volatile pointer so the compiler cannot drop or fold it. */
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

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "");
  if (strcmp(mode, "use-after-free") == 0) return plant_use_after_free();
  if (strcmp(mode, "heap-overflow") == 0) return plant_heap_overflow();
  if (strcmp(mode, "never-allocated") == 0) return plant_never_allocated();
  if (strcmp(mode, "leak") == 0) return plant_leak();
  if (strcmp(mode, "control") == 0) return control();
  fprintf(stderr, "usage: plant use-after-free|heap-overflow|never-allocated|leak|control\n");
  return 2;
}
