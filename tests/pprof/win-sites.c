/* The Windows check of the sampled heap profiler's stacks and modules
   (tests/pprof/win_check.py, run under Wine): a few allocation sites, one
   noinline function each with a name of its own, reached through different
   entry points (malloc, calloc, aligned, zalloc, realloc from NULL, a large
   block) from win_sites_run on the main thread, and one from a thread of
   its own (win_sites_thread). Started by the environment (MIMALLOC_PROF=1,
   MIMALLOC_PROF_SAMPLE_INTERVAL=1: every allocation sampled) and dumped at
   exit (MIMALLOC_PROF_DUMP_AT_EXIT), so frame 0 of every sample must be a
   site function, frame 1 win_sites_run or win_sites_thread, and on the main
   thread frame 2 main.

   Built three ways (tests/win/windows-tests.cmake):
   - win-sites.exe: all of it, with the static library (the allocator's
     frames told by the program's symbol table);
   - win-sites-lib.dll (WIN_SITES_LIB): the sites and win_sites_run, with
     the allocator's DLL (its frames told by its image), linked to prefer
     the load address the program itself has, so that the loader must
     relocate it: a frame's address then differs from its address in the
     file, and only the right arithmetic finds the function;
   - win-sites-dll.exe (WIN_SITES_USE_LIB): main alone, calling the DLL.

   It prints what the checker compares the profile with, one line each:
     module BASE            the program's load address (GetModuleHandle)
     prof enabled 0|1       whether the environment started the profiler
     site NAME COUNT        the blocks each site allocated, all live at exit
   Exit 0; 2 if a block could not be allocated or the thread not run. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <windows.h>

#include <mimalloc.h>

#define NOINLINE __attribute__((noinline))
#if defined(WIN_SITES_LIB)
#define WIN_SITES_API __declspec(dllexport)
#elif defined(WIN_SITES_USE_LIB)
#define WIN_SITES_API __declspec(dllimport)
#else
#define WIN_SITES_API
#endif

/* Allocates at every site; 0, or 2 on a failure. Prints the site lines. */
WIN_SITES_API int win_sites_run(void);

#if !defined(WIN_SITES_USE_LIB)

/* The result is stored after the call, so the call is never a tail call. */
NOINLINE void win_site_malloc(void** slot);
NOINLINE void win_site_calloc(void** slot);
NOINLINE void win_site_aligned(void** slot);
NOINLINE void win_site_zalloc(void** slot);
NOINLINE void win_site_realloc(void** slot);
NOINLINE void win_site_large(void** slot);
NOINLINE void win_site_thread(void** slot);

NOINLINE void win_site_malloc(void** slot) {
  *slot = mi_malloc(48);
}
NOINLINE void win_site_calloc(void** slot) {
  *slot = mi_calloc(10, 100);
}
NOINLINE void win_site_aligned(void** slot) {
  *slot = mi_malloc_aligned(200, 4096);
}
NOINLINE void win_site_zalloc(void** slot) {
  *slot = mi_zalloc(3000);
}
NOINLINE void win_site_realloc(void** slot) {
  *slot = mi_realloc(NULL, 70000);
}
NOINLINE void win_site_large(void** slot) {
  *slot = mi_malloc((size_t)5 << 20);
}
NOINLINE void win_site_thread(void** slot) {
  *slot = mi_malloc(640);
}

#define ROUNDS 40
#define LARGE_ROUNDS 4
#define THREAD_BLOCKS 25

static void* blocks[6][ROUNDS];
static void* thread_blocks[THREAD_BLOCKS];

NOINLINE static DWORD WINAPI win_sites_thread(LPVOID arg) {
  (void)arg;
  for (int i = 0; i < THREAD_BLOCKS; i++) win_site_thread(&thread_blocks[i]);
  return 0;
}

NOINLINE int win_sites_run(void) {
  for (int r = 0; r < ROUNDS; r++) {
    win_site_malloc(&blocks[0][r]);
    win_site_calloc(&blocks[1][r]);
    win_site_aligned(&blocks[2][r]);
    win_site_zalloc(&blocks[3][r]);
    win_site_realloc(&blocks[4][r]);
    if (r < LARGE_ROUNDS) win_site_large(&blocks[5][r]);
  }
  HANDLE t = CreateThread(NULL, 0, &win_sites_thread, NULL, 0, NULL);
  if (t == NULL || WaitForSingleObject(t, INFINITE) != WAIT_OBJECT_0) return 2;
  CloseHandle(t);
  static const char* const names[] = {"win_site_malloc", "win_site_calloc",  "win_site_aligned",
                                      "win_site_zalloc", "win_site_realloc", "win_site_large"};
  for (int s = 0; s < 6; s++) {
    int n = (s == 5 ? LARGE_ROUNDS : ROUNDS);
    for (int r = 0; r < n; r++) {
      if (blocks[s][r] == NULL) return 2;
    }
    printf("site %s %d\n", names[s], n);
  }
  for (int i = 0; i < THREAD_BLOCKS; i++) {
    if (thread_blocks[i] == NULL) return 2;
  }
  printf("site win_site_thread %d\n", THREAD_BLOCKS);
  fflush(stdout);
  return 0; /* every block live: the exit dump has them all */
}

#endif

#if !defined(WIN_SITES_LIB)
int main(void) {
  printf("module %#llx\n", (unsigned long long)(uintptr_t)GetModuleHandleW(NULL));
  printf("prof enabled %d\n", mi_prof_is_enabled() ? 1 : 0);
  fflush(stdout);
  int rc = win_sites_run();
  fflush(stdout);
  return rc;
}
#endif
