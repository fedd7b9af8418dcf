/* hardened_malloc's C++ test programs as cases (see hardened-cases.h): sized
   and aligned delete, with the size or alignment right (the clean twin) or
   wrong (the misuse). Nothing here names an allocator: operator new and
   delete are whichever the program is linked or preloaded with. Needs
   sized deallocation (-fsized-deallocation before C++ compilers turned it
   on by default). */
#ifndef MI_HARDENED_CASES_CXX_H
#define MI_HARDENED_CASES_CXX_H

#include <cstdint>
#include <new>

#include "hardened-cases.h"

/* Deleted through a pointer to a larger type: sized delete is told 32 bytes
   of a 1-byte block. */
struct h_four_words {
  uint64_t a, b, c, d;
};
H_CASE case_delete_type_size_mismatch(bool misuse) {
  char* p = static_cast<char*>(h_launder(new char));
  if (misuse) {
    delete reinterpret_cast<h_four_words*>(p);
  } else {
    delete p;
  }
}

/* Over-aligned types, small and large, deleted with their size off by
   `size_error` bytes (0 in the clean twin). */
struct alignas(64) h_small_aligned {
  char x[24];
};
struct alignas(8192) h_large_aligned {
  char x[9000];
};
template <typename T>
static void h_aligned_sized_delete(std::ptrdiff_t size_error) {
  T* p = static_cast<T*>(h_launder(new T));
  ::operator delete(p, static_cast<std::size_t>(static_cast<std::ptrdiff_t>(sizeof(T)) + size_error),
                    std::align_val_t(alignof(T)));
}
H_CASE case_aligned_sized_delete_small(bool misuse) {
  (void)misuse;
  h_aligned_sized_delete<h_small_aligned>(0);
}
H_CASE case_aligned_sized_delete_large(bool misuse) {
  (void)misuse;
  h_aligned_sized_delete<h_large_aligned>(0);
}
H_CASE case_invalid_aligned_sized_delete_small(bool misuse) {
  h_aligned_sized_delete<h_small_aligned>(misuse ? 64 : 0);
}
H_CASE case_invalid_aligned_sized_delete_large(bool misuse) {
  h_aligned_sized_delete<h_large_aligned>(misuse ? -10 : 0);
}

#endif
