/* Counts the profiler must get right beyond what Valgrind can check: blocks
   of a destroyed heap are freed when it is destroyed (small, aligned and
   large ones), and mi_expand counts as a reallocation in place. Each site is
   a function of its own, so counts-test.sh finds it by name in the file
   written to argv[1]. */
#include <mimalloc.h>
#include <mimalloc/dhat.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK_PROG "test-dhat-counts"
#include "check.h"

static void* volatile sink[6];

/* Sites: the store after the call keeps it from being a tail call (the
   site's frame stays on the stack), a sink of its own keeps two sites from
   being folded into one, noclone keeps its name. Built with frame pointers
   (tests/CMakeLists.txt), so its stacks do not depend on the unwinder. */
#if defined(__clang__)
#define SITE __attribute__((noinline)) static
#else
#define SITE __attribute__((noinline, noclone)) static
#endif
SITE void* small_in_heap(mi_heap_t* heap, size_t n) {
  void* p = mi_heap_malloc(heap, n);
  sink[0] = p;
  return p;
}

SITE void* aligned_in_heap(mi_heap_t* heap, size_t n) {
  void* p = mi_heap_malloc_aligned(heap, n, 256);
  sink[1] = p;
  return p;
}

SITE void* large_in_heap(mi_heap_t* heap, size_t n) {
  void* p = mi_heap_malloc(heap, n);
  sink[2] = p;
  return p;
}

SITE void* to_expand(size_t n) {
  void* p = mi_malloc(n);
  sink[3] = p;
  return p;
}

SITE void* kept(size_t n) {
  void* p = mi_malloc(n);
  sink[4] = p;
  return p;
}

#if defined(__x86_64__) && defined(__ELF__)
/* call_zero_fp(fn, n) calls fn(n) with the frame-pointer register 0, as code
   built without frame pointers may (the register is then free for any
   value). The walk must not take the 0 for the end of the stack: the site's
   stack goes on through zero_fp_site to main. Written in assembly, with its
   unwind information, so that the register is 0 at the call for sure. */
void* call_zero_fp(void* (*fn)(size_t), size_t n);
__asm__(
    ".text\n"
    ".type call_zero_fp, @function\n"
    "call_zero_fp:\n"
    ".cfi_startproc\n"
    "pushq %rbp\n"
    ".cfi_adjust_cfa_offset 8\n"
    ".cfi_rel_offset %rbp, 0\n"
    "xorl %ebp, %ebp\n"
    "movq %rdi, %rax\n"
    "movq %rsi, %rdi\n"
    "call *%rax\n"
    "popq %rbp\n"
    ".cfi_adjust_cfa_offset -8\n"
    ".cfi_restore %rbp\n"
    "ret\n"
    ".cfi_endproc\n"
    ".size call_zero_fp, .-call_zero_fp\n");
#define MI_HAVE_ZERO_FP 1

SITE void* zero_fp_site(size_t n) {
  void* p = call_zero_fp(&mi_malloc, n);
  sink[5] = p;
  return p;
}
#endif

int main(int argc, char** argv) {
  CHECK(argc == 2);
  CHECK(mi_dhat_start());
  mi_heap_t* heap = mi_heap_new();
  CHECK(heap != NULL);
  void* first = NULL;
  for (int i = 0; i < 10; i++) {
    void* p = small_in_heap(heap, 100);
    CHECK(p != NULL);
    if (i == 0) first = p;
  }
  mi_free(first); /* freed before the destroy: counted once */
  CHECK(aligned_in_heap(heap, 300) != NULL);
  CHECK(large_in_heap(heap, (size_t)3 << 20) != NULL);
  void* k = kept(64); /* in the default heap: survives */
  mi_heap_destroy(heap);
  void* q = to_expand(1000);
  CHECK(mi_expand(q, 500) == q);
  CHECK(mi_expand(q, (size_t)1 << 30) == NULL); /* fails: counts nothing */
#ifdef MI_HAVE_ZERO_FP
  mi_free(zero_fp_site(48));
#endif
  CHECK(mi_dhat_dump(argv[1]));
  mi_dhat_stop();
  mi_free(q);
  mi_free(k);
  return 0;
}
