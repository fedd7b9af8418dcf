/* Whether the process's C++ operator new and delete are this library's.

   A program may replace some of the operators (C++ allows each to be
   replaced on its own): a new of its own that calls malloc, paired with our
   delete, or our new with a delete of its own that calls free. Kinds then
   cannot be told apart, and a mismatch is not reported. Asked only when one
   is found (the kind check's rare path); the answer is kept.

   The operator the process resolves must lie in this library's object (the
   address of our own exported function would itself resolve to the
   program's: it is the one interposed); a name the dynamic symbol table does
   not have (a static executable) is taken for ours: nothing else could have
   been linked in under it. A static link without our operators (their
   object not taken from the archive) resolves the names elsewhere: not ours,
   and no block has a kind then anyway.

   Kept here, not beside the operators (api/new-delete.c): a reference from
   the check to that file would pull it, and with it operator new, out of
   the static library into every program linked with it, which then
   allocates its C++ objects from the default heap without asking. */
#include "base.h"
#include "../secure/secure.h"

#if defined(_WIN32)
bool _mi_cxx_operators_ours(void) {
  return true; /* no operator new of the library's (MI_OVERRIDE is off): no block of new's kind */
}
#else
#include <dlfcn.h>

#if SIZE_MAX == UINT64_MAX
#define MI_SZ "m" /* size_t is unsigned long */
#else
#define MI_SZ "j" /* size_t is unsigned int */
#endif
#define MI_ALIGN "St11align_val_t"

static _Atomic(int) mi_cxx_ours; /* 0: not asked yet, 1: ours, 2: not */

static bool mi_cxx_symbol_ours(const char* name, const void* our_base) {
  void* found = dlsym(RTLD_DEFAULT, name);
  Dl_info info;
  if (found == NULL) return true;
  return (dladdr(found, &info) != 0 && info.dli_fbase == our_base);
}

bool _mi_cxx_operators_ours(void) {
  int known = atomic_load_explicit(&mi_cxx_ours, memory_order_relaxed);
  if (known != 0) return known == 1;
  Dl_info self; /* this function is hidden: its address is our object's own */
  const void* base = (dladdr((const void*)&_mi_cxx_operators_ours, &self) != 0 ? self.dli_fbase : NULL);
  bool ours = base == NULL ||
              (mi_cxx_symbol_ours("_Znw" MI_SZ, base) && mi_cxx_symbol_ours("_Zna" MI_SZ, base) &&
               mi_cxx_symbol_ours("_Znw" MI_SZ MI_ALIGN, base) && mi_cxx_symbol_ours("_Zna" MI_SZ MI_ALIGN, base) &&
               mi_cxx_symbol_ours("_ZdlPv", base) && mi_cxx_symbol_ours("_ZdaPv", base) &&
               mi_cxx_symbol_ours("_ZdlPv" MI_SZ, base) && mi_cxx_symbol_ours("_ZdaPv" MI_SZ, base) &&
               mi_cxx_symbol_ours("_ZdlPv" MI_ALIGN, base) && mi_cxx_symbol_ours("_ZdaPv" MI_ALIGN, base));
  atomic_store_explicit(&mi_cxx_ours, ours ? 1 : 2, memory_order_relaxed);
  return ours;
}
#endif
