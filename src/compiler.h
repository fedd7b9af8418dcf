/* Compiler-specific declarations, in one place: every GCC/Clang construct
   the allocator uses has its MSVC spelling here, and its MinGW one where
   GCC on Windows differs (PE objects have no symbol visibility). */
#ifndef MI_COMPILER_H
#define MI_COMPILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#define mi_likely(x) (x)
#define mi_unlikely(x) (x)
#define mi_noinline __declspec(noinline)
#define mi_forceinline __forceinline
#define mi_decl_hidden
#define mi_decl_thread __declspec(thread)
#define mi_decl_noreturn __declspec(noreturn)
#define mi_attr_printf(fmt, args)
#define mi_attr_unused
#else
#define mi_likely(x) __builtin_expect(!!(x), 1)
#define mi_unlikely(x) __builtin_expect(!!(x), 0)
#define mi_noinline __attribute__((noinline))
#define mi_forceinline inline __attribute__((always_inline))
#define mi_decl_noreturn __attribute__((noreturn))
#if defined(_WIN32)
/* MinGW: the build uses the C99 printf (__USE_MINGW_ANSI_STDIO), not msvcrt's */
#define mi_attr_printf(fmt, args) __attribute__((format(gnu_printf, fmt, args)))
#else
#define mi_attr_printf(fmt, args) __attribute__((format(printf, fmt, args)))
#endif
#define mi_attr_unused __attribute__((unused))
#if defined(_WIN32)
/* PE has no visibility; GCC warns on the attribute. MinGW's __thread is
   emulated TLS (libgcc's emutls): the initial-exec model does not apply. */
#define mi_decl_hidden
#define mi_decl_thread __thread
#else
#define mi_decl_hidden __attribute__((visibility("hidden")))
#define mi_decl_thread __thread __attribute__((tls_model("initial-exec")))
#endif
#endif

/* A function run before main (and when a shared library is loaded). MSVC
   has no attribute: a pointer in the C initialiser section does it. */
#if defined(_MSC_VER) && !defined(__clang__)
#pragma section(".CRT$XCU", read)
#define mi_decl_constructor(fn) \
  static void fn(void); \
  __declspec(allocate(".CRT$XCU")) void (*fn##_entry)(void) = fn; \
  __pragma(comment(linker, "/include:" #fn "_entry")) static void fn(void)
#else
#define mi_decl_constructor(fn) __attribute__((constructor)) static void fn(void)
#endif

/* A pointer the linker gathers with its likes into one table, so that the
   file reading the table (base/listeners.c) names none of the files that
   fill it. ELF linkers name the bounds of a section whose name is a C
   identifier (__start_ and __stop_ it); PE linkers merge a grouped
   section's parts (".mi_lsn$a" < "$m" < "$z") in the order of the part
   after '$', and MSVC's may pad between them with zeros. Kept by the
   linker's garbage collection (retain, or MSVC's /include) though nothing
   refers to it by name. */
#if defined(_MSC_VER) && !defined(__clang__)
#pragma section(".mi_lsn$a", read)
#pragma section(".mi_lsn$m", read)
#pragma section(".mi_lsn$z", read)
#define mi_decl_listed(part, var) __declspec(allocate(".mi_lsn$" #part)) __pragma(comment(linker, "/include:" #var))
#elif defined(_WIN32)
#define mi_decl_listed(part, var) __attribute__((section(".mi_lsn$" #part), used))
#elif defined(__has_attribute)
#if __has_attribute(retain)
#define mi_decl_listed(part, var) __attribute__((section("mi_listeners"), used, retain))
#endif
#endif
#ifndef mi_decl_listed
#define mi_decl_listed(part, var) __attribute__((section("mi_listeners"), used))
#endif

static inline bool mi_mul_overflow(size_t count, size_t size, size_t* total) {
#if defined(_MSC_VER) && !defined(__clang__)
  *total = count * size;
  return (size != 0 && count > SIZE_MAX / size);
#else
  return __builtin_mul_overflow(count, size, total);
#endif
}

/* Index of the highest set bit; x != 0. */
static inline size_t mi_bsr64(unsigned long long x) {
#if defined(_MSC_VER) && !defined(__clang__)
  unsigned long idx;
  _BitScanReverse64(&idx, x);
  return (size_t)idx;
#else
  return (size_t)(63 - __builtin_clzll(x));
#endif
}

/* Index of the lowest set bit; x != 0. */
static inline size_t mi_bsf64(unsigned long long x) {
#if defined(_MSC_VER) && !defined(__clang__)
  unsigned long idx;
  _BitScanForward64(&idx, x);
  return (size_t)idx;
#else
  return (size_t)__builtin_ctzll(x);
#endif
}

#endif
