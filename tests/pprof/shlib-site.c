/* The shared library of the shlib_names.py test: two allocation sites whose
   names reach a client in two ways. Built -O2 -g -fno-omit-frame-pointer,
   as a distribution builds a library such as libpython.

   shlib_site_named: an exported function kept out of line; the DWARF entry
   of its code carries its name (DW_AT_name).

   shlib_site_origin: a static function inlined into shlib_site_inliner and
   also kept out of line, because its address is taken. Its DWARF has an
   abstract entry with the name (DW_AT_inline) and, for the out-of-line
   code, a concrete entry that names it only through DW_AT_abstract_origin:
   CPython's _PyObject_Malloc is such a function. The program calls it
   through shlib_site_origin_ptr, so its samples are in that copy.

   Each site stores a byte after its malloc, so the call is never a tail
   call: frame 0 of every sample is the return address into the site. */
#include <stddef.h>
#include <stdlib.h>

#define SHLIB_API __attribute__((visibility("default")))

SHLIB_API __attribute__((noinline)) void* shlib_site_named(size_t n);
SHLIB_API void* shlib_site_inliner(size_t n);
SHLIB_API extern void* (*volatile shlib_site_origin_ptr)(size_t n);

SHLIB_API __attribute__((noinline)) void* shlib_site_named(size_t n) {
  char* p = (char*)malloc(n);
  if (p != NULL) p[0] = 1;
  return p;
}

static void* shlib_site_origin(size_t n) {
  char* p = (char*)malloc(n);
  if (p != NULL) p[0] = 2;
  return p;
}

SHLIB_API void* shlib_site_inliner(size_t n) {
  return shlib_site_origin(n);
}

SHLIB_API void* (*volatile shlib_site_origin_ptr)(size_t n) = shlib_site_origin;
