/* The programs of hardened_malloc's test suite (its test/ folder), written
   anew as cases: `case_NAME(misuse)` commits the misuse its program commits
   when `misuse` is true, and is the same program without it otherwise (the
   clean twin). A case whose program is correct ignores `misuse`; a case
   that finds a wrong result exits 1. The expected outcomes are the including
   file's: test-hardened.c (ours, cmocka) and peer-run.cc (any allocator,
   through the C library's names).

   The cases call the allocator through the h_ names below: our API by
   default, the C library's with H_LIBC (so the same cases run preloaded
   under another allocator). Pointers and sizes go through h_launder so the
   compiler neither drops the accesses to freed memory nor refuses the
   planted misuse (hardened_malloc compiles its programs without
   optimisation instead; ours are also built -O2/-O3). */
#ifndef MI_HARDENED_CASES_H
#define MI_HARDENED_CASES_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(H_LIBC)
#include <malloc.h>
#define h_malloc malloc
#define h_calloc calloc
#define h_realloc realloc
#define h_free free
#define h_usable_size malloc_usable_size
#define h_posix_memalign posix_memalign
/* C23's: not every C library or allocator has them yet */
#ifdef __cplusplus
extern "C" {
#endif
void free_sized(void* p, size_t size) __attribute__((weak));
void free_aligned_sized(void* p, size_t alignment, size_t size) __attribute__((weak));
#ifdef __cplusplus
}
#endif
enum { H_EXIT_MISSING = 77 }; /* the case needs a function the allocator lacks */
static inline void h_free_size(void* p, size_t size) {
  if (free_sized == NULL) _exit(H_EXIT_MISSING);
  free_sized(p, size);
}
static inline void h_free_size_aligned(void* p, size_t size, size_t alignment) {
  if (free_aligned_sized == NULL) _exit(H_EXIT_MISSING);
  free_aligned_sized(p, alignment, size);
}
#else
#include <mimalloc.h>
#define h_malloc mi_malloc
#define h_calloc mi_calloc
#define h_realloc mi_realloc
#define h_free mi_free
#define h_usable_size mi_usable_size
#define h_posix_memalign mi_posix_memalign
#define h_free_size mi_free_size
#define h_free_size_aligned mi_free_size_aligned
#endif

/* Sized and aligned-sized free: only where the allocator has them (ours
   since mi_free_size; tests/CMakeLists.txt turns them on). */
#ifndef H_HAVE_SIZED_FREE
#define H_HAVE_SIZED_FREE 0
#endif

enum { H_KIB = 1024 };

/* A file may run only some of the cases (the C++ test runs none of these). */
#define H_CASE __attribute__((unused)) static void

static void* volatile h_sink;
static volatile size_t h_size_sink;

static inline void* h_launder(void* p) {
  h_sink = p;
  return h_sink;
}
static inline size_t h_launder_size(size_t n) {
  h_size_sink = n;
  return h_size_sink;
}
static inline void h_check(bool ok) {
  if (!ok) _exit(1);
}

/* ---- Double free -------------------------------------------------------------- */

static void h_double_free(size_t size, bool delayed, bool misuse) {
  char* p = (char*)h_malloc(size);
  h_check(p != NULL);
  char* q = NULL;
  if (delayed) {
    q = (char*)h_malloc(size);
    h_check(q != NULL);
  }
  h_free(h_launder(p));
  if (q != NULL) h_free(q);
  if (misuse) h_free(h_launder(p));
}
H_CASE case_double_free_small(bool misuse) {
  h_double_free(16, false, misuse);
}
H_CASE case_double_free_small_delayed(bool misuse) {
  h_double_free(16, true, misuse);
}
H_CASE case_double_free_large(bool misuse) {
  h_double_free(256 * H_KIB, false, misuse);
}
H_CASE case_double_free_large_delayed(bool misuse) {
  h_double_free(256 * H_KIB, true, misuse);
}

/* ---- Invalid and unaligned free ------------------------------------------------ */

/* A pointer into a mapping that is not the allocator's, in its middle. */
static void h_free_foreign_mapping(int prot, bool misuse) {
  h_free(h_malloc(16)); /* the allocator is set up before the bad pointer */
  char* map = (char*)mmap(NULL, 16 * 4096, prot, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  h_check(map != MAP_FAILED);
  if (misuse) h_free(h_launder(map + 8 * 4096));
  munmap(map, 16 * 4096);
}
H_CASE case_invalid_free_protected(bool misuse) {
  h_free_foreign_mapping(PROT_NONE, misuse);
}
H_CASE case_invalid_free_unprotected(bool misuse) {
  h_free_foreign_mapping(PROT_READ | PROT_WRITE, misuse);
}

/* A small block's pointer moved by `offset`: into blocks of its page that
   were never handed out (16 KiB), or far past its segment (1 GiB). */
static void h_free_moved(size_t size, size_t offset, bool misuse) {
  char* p = (char*)h_malloc(size);
  h_check(p != NULL);
  if (misuse) h_free(h_launder(p + offset));
  h_free(p);
}
H_CASE case_invalid_free_small_region(bool misuse) {
  h_free_moved(16, 16 * H_KIB, misuse);
}
H_CASE case_invalid_free_small_region_far(bool misuse) {
  h_free_moved(16, (size_t)1 << 30, misuse);
}
H_CASE case_unaligned_free_small(bool misuse) {
  h_free_moved(16, 1, misuse);
}
H_CASE case_unaligned_free_large(bool misuse) {
  h_free_moved(256 * H_KIB, 1, misuse);
}
/* Pointers no allocator handed out, such as an uninitialised variable's. */
H_CASE case_uninitialized_free(bool misuse) {
  if (misuse) h_free(h_launder((void*)1));
}
H_CASE case_uninitialized_realloc(bool misuse) {
  void* p = h_realloc(misuse ? h_launder((void*)1) : NULL, 16);
  h_check(p != NULL);
  h_free(p);
}

/* ---- malloc_usable_size of a bad pointer ---------------------------------------- */

static void h_usable_size_moved(size_t offset, bool misuse) {
  char* p = (char*)h_malloc(16);
  h_check(p != NULL);
  h_size_sink = h_usable_size(misuse ? (char*)h_launder(p + offset) : p);
  h_free(p);
}
H_CASE case_invalid_malloc_usable_size_small(bool misuse) {
  h_usable_size_moved(16 * H_KIB, misuse);
}
H_CASE case_unaligned_malloc_usable_size_small(bool misuse) {
  h_usable_size_moved(1, misuse);
}
H_CASE case_invalid_malloc_usable_size_small_quarantine(bool misuse) {
  char* p = (char*)h_malloc(16);
  h_check(p != NULL);
  h_free(h_launder(p));
  if (misuse) h_size_sink = h_usable_size(h_launder(p));
}
H_CASE case_uninitialized_malloc_usable_size(bool misuse) {
  if (misuse) h_size_sink = h_usable_size(h_launder((void*)1));
}

/* ---- Overflows ----------------------------------------------------------------- */

/* A write `offset` bytes past the usable size. The byte is flipped rather
   than set to a constant: a canary may hold any constant but the one our
   canary never holds (zero, the NUL case), so a set byte would go unseen
   at random in a run in 128 or 256. */
static void h_overflow(size_t size, size_t offset, bool misuse) {
  char* p = (char*)h_malloc(size);
  h_check(p != NULL);
  size_t usable = h_usable_size(p);
  volatile char* v = (volatile char*)h_launder(p);
  if (misuse) v[usable + offset] ^= 1;
  h_free(p);
}
H_CASE case_overflow_small_1_byte(bool misuse) {
  h_overflow(8, 0, misuse);
}
H_CASE case_overflow_small_8_byte(bool misuse) {
  h_overflow(8, 7, misuse);
}
H_CASE case_overflow_large_1_byte(bool misuse) {
  h_overflow(256 * H_KIB, 0, misuse);
}
H_CASE case_overflow_large_8_byte(bool misuse) {
  h_overflow(256 * H_KIB, 7, misuse);
}

/* A string filled to the usable size, unterminated: how far strlen reads
   past it (the bytes it leaks). The control terminates it. */
static size_t h_string_overread;
H_CASE case_string_overflow(bool misuse) {
  char* p = (char*)h_malloc(16);
  h_check(p != NULL);
  size_t usable = h_usable_size(p);
  memset(h_launder(p), 'a', usable);
  if (!misuse) p[usable - 1] = 0;
  size_t len = strlen((const char*)h_launder(p));
  h_string_overread = len > usable ? len - usable : 0;
  h_free(p);
}

/* ---- Use after free ------------------------------------------------------------- */

/* Reads a freed block through: the block's bytes must read zero. */
static void h_read_after_free(size_t size, bool misuse) {
  char* p = (char*)h_malloc(size);
  h_check(p != NULL);
  memset(p, 'a', 16);
  h_free(h_launder(p));
  if (!misuse) return;
  volatile const char* v = (volatile const char*)h_launder(p);
  for (size_t i = 0; i < size; i++) h_check(v[i] == 0);
}
H_CASE case_read_after_free_small(bool misuse) {
  h_read_after_free(16, misuse);
}
H_CASE case_read_after_free_large(bool misuse) {
  h_read_after_free(256 * H_KIB, misuse);
}

/* A write 64 KiB + 1 into a freed large block; with `reuse`, after a block of
   the same size was allocated again. */
static void h_write_after_free_large(bool reuse, bool misuse) {
  char* p = (char*)h_malloc(256 * H_KIB);
  h_check(p != NULL);
  h_free(h_launder(p));
  char* q = reuse ? (char*)h_malloc(256 * H_KIB) : NULL;
  if (reuse) h_check(q != NULL);
  if (misuse) ((volatile char*)h_launder(p))[64 * H_KIB + 1] = 'a';
  if (q != NULL) h_free(q);
}
H_CASE case_write_after_free_large(bool misuse) {
  h_write_after_free_large(false, misuse);
}
H_CASE case_write_after_free_large_reuse(bool misuse) {
  h_write_after_free_large(true, misuse);
}

/* A write into a freed 128-byte block, then enough blocks of its size that
   it is handed out again (and checked on the way). Every other block is
   kept: a churn that only frees what it takes can go on in another page
   for good once the block's page has all its free blocks in the quarantine
   (a page of fewer blocks than the quarantine holds, as a segment's first
   page may be); blocks kept use up every free block, the block's too. */
static void h_write_after_free_small(bool reuse, bool misuse) {
  char* p = (char*)h_malloc(128);
  h_check(p != NULL);
  h_free(h_launder(p));
  char* q = reuse ? (char*)h_malloc(128) : NULL;
  if (misuse) ((volatile char*)h_launder(p))[65] = 'a';
  enum { KEPT = 20000 };
  static char* kept[KEPT];
  for (int i = 0; i < 2 * KEPT; i++) {
    char* b = (char*)h_malloc(128);
    h_check(b != NULL);
    if (i % 2 == 0) kept[i / 2] = b;
    else h_free(h_launder(b));
  }
  for (int i = 0; i < KEPT; i++) h_free(kept[i]);
  if (q != NULL) h_free(q);
}
H_CASE case_write_after_free_small(bool misuse) {
  h_write_after_free_small(false, misuse);
}
H_CASE case_write_after_free_small_reuse(bool misuse) {
  h_write_after_free_small(true, misuse);
}

/* ---- Zero-size allocations -------------------------------------------------------- */

H_CASE case_read_zero_size(bool misuse) {
  char* p = (char*)h_malloc(0);
  h_check(p != NULL);
  if (misuse) h_size_sink = (size_t)((volatile char*)h_launder(p))[0];
  h_free(p);
}
H_CASE case_write_zero_size(bool misuse) {
  char* p = (char*)h_malloc(0);
  h_check(p != NULL);
  if (misuse) ((volatile char*)h_launder(p))[0] = 5;
  h_free(p);
}
H_CASE case_malloc_zero_different(bool misuse) {
  (void)misuse;
  void* p = h_malloc(0);
  void* q = h_malloc(0);
  h_check(p != q);
  h_free(p);
  h_free(q);
}
/* A zero-size allocation is not handed out again for another size. */
H_CASE case_malloc_noreuse(bool misuse) {
  (void)misuse;
  void* p = h_malloc(0);
  for (int i = 0; i < 512; i++) {
    void* q = h_malloc(64);
    h_check(q != p);
    h_free(q);
  }
  h_free(p);
}

/* ---- What correct programs must see ------------------------------------------------ */

static void h_read_fresh(size_t size) {
  volatile const char* p = (volatile const char*)h_launder(h_malloc(size));
  h_check(p != NULL);
  for (size_t i = 0; i < size; i++) h_check(p[i] == 0);
  h_free((void*)(uintptr_t)p);
}
H_CASE case_uninitialized_read_small(bool misuse) {
  (void)misuse;
  h_read_fresh(8);
}
H_CASE case_uninitialized_read_large(bool misuse) {
  (void)misuse;
  h_read_fresh(256 * H_KIB);
}
H_CASE case_calloc_zeroed(bool misuse) {
  (void)misuse;
  volatile const unsigned char* p = (volatile const unsigned char*)h_launder(h_calloc(128, 16));
  h_check(p != NULL);
  for (size_t i = 0; i < 128 * 16; i++) h_check(p[i] == 0);
  h_free((void*)(uintptr_t)p);
}
/* Requests that cannot be had fail quietly, with ENOMEM. */
H_CASE case_calloc_overflow(bool misuse) {
  (void)misuse;
  errno = 0;
  void* p = h_calloc(h_launder_size(SIZE_MAX), 2);
  h_check(p == NULL && errno == ENOMEM);
}
H_CASE case_impossibly_large_malloc(bool misuse) {
  (void)misuse;
  errno = 0;
  void* p = h_malloc(h_launder_size((size_t)-8));
  h_check(p == NULL && errno == ENOMEM);
}
/* A block from the main thread's first allocation, grown in another thread. */
static void* h_grow_in_thread(void* p) {
  p = h_realloc(p, 1024);
  h_check(p != NULL);
  h_free(p);
  return NULL;
}
H_CASE case_realloc_init(bool misuse) {
  (void)misuse;
  void* p = h_realloc(NULL, 12);
  h_check(p != NULL);
  pthread_t t;
  h_check(pthread_create(&t, NULL, &h_grow_in_thread, p) == 0);
  h_check(pthread_join(t, NULL) == 0);
}
/* realloc growing by half each time from 256 KiB, every byte written:
   through the large sizes into the huge ones. hardened_malloc's program
   goes 20 steps (to 568 MiB, about 1.5 GB written); 14 steps reach 50 MiB,
   past 32 MiB where our huge blocks begin, at a 40th of the memory. */
H_CASE case_large_array_growth(bool misuse) {
  (void)misuse;
  void* p = NULL;
  size_t size = 256 * H_KIB;
  for (int i = 0; i < 14; i++) {
    p = h_realloc(p, size);
    h_check(p != NULL);
    memset(h_launder(p), 'a', size);
    size = size * 3 / 2;
  }
  h_free(p);
}

/* ---- Sized and aligned-sized free ----------------------------------------------------- */

#if H_HAVE_SIZED_FREE
static void h_free_sized(size_t size) {
  char* p = (char*)h_malloc(size);
  h_check(p != NULL);
  memset(h_launder(p), 'a', size);
  h_free_size(p, size);
}
H_CASE case_free_sized_small(bool misuse) {
  (void)misuse;
  h_free_sized(100);
}
H_CASE case_free_sized_large(bool misuse) {
  (void)misuse;
  h_free_sized(1 << 20);
}
H_CASE case_aligned_sized_delete_small_min_align(bool misuse) {
  (void)misuse;
  void* p = NULL;
  h_check(h_posix_memalign(&p, 16, 0) == 0);
  h_free_size_aligned(p, 0, 16);
}
#endif

#endif
