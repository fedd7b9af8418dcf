/* Every public name of mimalloc 2.4.1's mimalloc.h, as a program built
   against it uses them: each function's address taken (the program links
   only if the library defines it), each option enumerator and each macro
   referenced (it compiles only if the header declares them). The tables
   come from mimalloc-2.4.1-names.txt (gen-link-names.cmake). Built against
   the static library and, with MI_TEST_SHARED, against the shared one,
   where each address must lie in the shared library itself. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#ifndef MI_TEST_SHARED
#define MI_TEST_SHARED 0
#endif
#include <mimalloc.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef void (*mi_link_fun_t)(void);
typedef struct {
  const char* name;
  mi_link_fun_t fun;
} mi_link_fun_entry_t;
typedef struct {
  const char* name;
  int value;
} mi_link_option_entry_t;
typedef struct {
  const char* name;
  const char* owner;
} mi_link_pending_entry_t;

#include "link-names.inc"

#define MI_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The object that defines `fun`: the shared library when linked to it (a
   definition in the program would mean it did not come from us), the
   program itself when linked statically. */
static int mi_check_home(const mi_link_fun_entry_t* e) {
  Dl_info info;
  if (dladdr((const void*)(uintptr_t)e->fun, &info) == 0 || info.dli_fname == NULL) {
    printf("FAIL %s: no object holds its address\n", e->name);
    return 1;
  }
  const char* base = strrchr(info.dli_fname, '/');
  base = (base != NULL ? base + 1 : info.dli_fname);
  bool in_lib = (strncmp(base, "libmimalloc", 11) == 0);
#if MI_TEST_SHARED
  if (!in_lib) {
    printf("FAIL %s: resolved in %s, not the shared library\n", e->name, info.dli_fname);
    return 1;
  }
#else
  if (in_lib) {
    printf("FAIL %s: resolved in %s, not linked statically\n", e->name, info.dli_fname);
    return 1;
  }
#endif
  return 0;
}

int main(void) {
  int failed = 0;
  for (size_t i = 0; i < MI_COUNT(mi_link_funs); i++) {
    if (mi_link_funs[i].fun == NULL) {
      printf("FAIL %s: null address\n", mi_link_funs[i].name);
      failed++;
      continue;
    }
    failed += mi_check_home(&mi_link_funs[i]);
  }
  /* every option, legacy aliases included, names a slot the library reads */
  long read = 0;
  for (size_t i = 0; i < MI_COUNT(mi_link_options); i++) {
    int v = mi_link_options[i].value;
    if (v < 0 || v >= (int)_mi_option_last) {
      printf("FAIL %s: value %d out of range\n", mi_link_options[i].name, v);
      failed++;
      continue;
    }
    read += (mi_option_get((mi_option_t)v) != 0 ? 1 : 0);
  }
  size_t pending = 0;
  for (const mi_link_pending_entry_t* p = mi_link_pending; p->name != NULL; p++) {
    printf("pending (%s): %s\n", p->owner, p->name);
    pending++;
  }
  printf("%zu functions, %zu options (%ld set), %zu macros of mimalloc 2.4.1 linked%s; %zu pending\n",
         MI_COUNT(mi_link_funs), MI_COUNT(mi_link_options), read, MI_COUNT(mi_link_macros),
         MI_TEST_SHARED ? " (shared)" : " (static)", pending);
  return failed == 0 ? 0 : 1;
}
