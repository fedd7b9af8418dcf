/* Replacements of C++'s global operator new and delete (every form of
   C++17: plain, array, nothrow, sized, aligned and their combinations) that
   allocate with mimalloc-pprof. Include it in exactly one source file of a
   program that links the library statically and wants new and delete on it
   without relying on the linker picking the library's own definitions; a
   program preloading or linking the shared library needs nothing (the
   library exports these forms itself).

   new fails as the standard says: the new_handler is called while there is
   one, then std::bad_alloc is thrown (mi_new); the nothrow forms return
   NULL. The sized and aligned deletes pass what they know on, so that a
   secure build checks it (mi_free_size, mi_free_aligned). */
#ifndef MIMALLOC_NEW_DELETE_H
#define MIMALLOC_NEW_DELETE_H

#ifdef __cplusplus
#include <cstddef>
#include <new>

#include "mimalloc.h"

void* operator new(std::size_t size) {
  return mi_new(size);
}
void* operator new[](std::size_t size) {
  return mi_new(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return mi_new_nothrow(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return mi_new_nothrow(size);
}

void operator delete(void* p) noexcept {
  mi_free(p);
}
void operator delete[](void* p) noexcept {
  mi_free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  mi_free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  mi_free(p);
}
void operator delete(void* p, std::size_t size) noexcept {
  mi_free_size(p, size);
}
void operator delete[](void* p, std::size_t size) noexcept {
  mi_free_size(p, size);
}

#if defined(__cpp_aligned_new)
void* operator new(std::size_t size, std::align_val_t alignment) {
  return mi_new_aligned(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return mi_new_aligned(size, static_cast<std::size_t>(alignment));
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return mi_new_aligned_nothrow(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return mi_new_aligned_nothrow(size, static_cast<std::size_t>(alignment));
}

void operator delete(void* p, std::align_val_t alignment) noexcept {
  mi_free_aligned(p, static_cast<std::size_t>(alignment));
}
void operator delete[](void* p, std::align_val_t alignment) noexcept {
  mi_free_aligned(p, static_cast<std::size_t>(alignment));
}
void operator delete(void* p, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  mi_free_aligned(p, static_cast<std::size_t>(alignment));
}
void operator delete[](void* p, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  mi_free_aligned(p, static_cast<std::size_t>(alignment));
}
void operator delete(void* p, std::size_t size, std::align_val_t alignment) noexcept {
  mi_free_size_aligned(p, size, static_cast<std::size_t>(alignment));
}
void operator delete[](void* p, std::size_t size, std::align_val_t alignment) noexcept {
  mi_free_size_aligned(p, size, static_cast<std::size_t>(alignment));
}
#endif

#endif /* __cplusplus */
#endif
