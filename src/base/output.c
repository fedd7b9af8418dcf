/* Messages, warnings and errors. Nothing here allocates: messages are
   formatted into stack buffers and written through the registered output
   function or straight to stderr. */
#include "base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mi_output_fun* _Atomic mi_out_fun;
static void* _Atomic mi_out_arg;
static mi_error_fun* _Atomic mi_error_fun_ptr;
static void* _Atomic mi_error_arg;
static _Atomic(long) mi_error_count;
static _Atomic(long) mi_warning_count;

void mi_register_output(mi_output_fun* out, void* arg) {
  atomic_store(&mi_out_arg, arg);
  atomic_store(&mi_out_fun, out);
}

void mi_register_error(mi_error_fun* fun, void* arg) {
  atomic_store(&mi_error_arg, arg);
  atomic_store(&mi_error_fun_ptr, fun);
}

void _mi_fputs(mi_output_fun* out, void* arg, const char* prefix, const char* msg) {
  if (out == NULL) {
    out = atomic_load(&mi_out_fun);
    arg = atomic_load(&mi_out_arg);
  }
  char buf[512];
  (void)snprintf(buf, sizeof(buf), "%s%s", (prefix != NULL ? prefix : ""), msg); /* cut to the buffer */
  if (out != NULL) {
    mi_lock_assert_none_held("the output function");
    out(buf, arg);
  } else {
    mi_prim_out_stderr(buf);
  }
}

static void mi_vfprintf(const char* prefix, const char* fmt, va_list args) {
  char buf[512];
  /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): clang 14 loses the va_start of the caller */
  (void)vsnprintf(buf, sizeof(buf), fmt, args);
  _mi_fputs(NULL, NULL, prefix, buf);
}

void _mi_message(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  mi_vfprintf("mimalloc: ", fmt, args);
  va_end(args);
}

void _mi_verbose_message(const char* fmt, ...) {
  if (!mi_option_is_enabled(mi_option_verbose)) return;
  va_list args;
  va_start(args, fmt);
  mi_vfprintf("mimalloc: ", fmt, args);
  va_end(args);
}

void _mi_warning_message(const char* fmt, ...) {
  if (!mi_option_is_enabled(mi_option_verbose) && !mi_option_is_enabled(mi_option_show_errors)) return;
  if (atomic_fetch_add(&mi_warning_count, 1) >= mi_option_get(mi_option_max_warnings)) return;
  va_list args;
  va_start(args, fmt);
  mi_vfprintf("mimalloc: warning: ", fmt, args);
  va_end(args);
}

/* An error: shown when show_errors or verbose is on, then passed to the
   registered error function. Out-of-memory is reported, not fatal. */
void _mi_error_message(int err, const char* fmt, ...) {
  if (mi_option_is_enabled(mi_option_verbose) || mi_option_is_enabled(mi_option_show_errors)) {
    if (atomic_fetch_add(&mi_error_count, 1) < mi_option_get(mi_option_max_errors)) {
      va_list args;
      va_start(args, fmt);
      mi_vfprintf("mimalloc: error: ", fmt, args);
      va_end(args);
    }
  }
  _mi_error_callback(err);
}

/* Let the registered error function see an error before the caller acts on it. */
void _mi_error_callback(int err) {
  mi_error_fun* fun = atomic_load(&mi_error_fun_ptr);
  if (fun == NULL) return;
  mi_lock_assert_none_held("the error function");
  fun(err, atomic_load(&mi_error_arg));
}

#if MI_DEBUG > 0
void _mi_assert_fail(const char* assertion, const char* fname, unsigned line, const char* func) {
  char buf[512];
  (void)snprintf(buf, sizeof(buf), "mimalloc: assertion failed: %s:%u, %s: %s\n", fname, line, func, assertion);
  mi_prim_out_stderr(buf);
  abort();
}
#endif

/* `path` with each "%p" replaced by the process id (the profilers' and the
   snapshot's file names); false, and `buf` cut short, when it does not fit. */
bool _mi_path_with_pid(const char* path, char* buf, size_t size) {
  size_t n = 0;
  bool fits = true;
  for (const char* s = path; *s != 0 && fits; s++) {
    if (s[0] == '%' && s[1] == 'p') {
      char digits[24];
      size_t k = 0;
      unsigned long pid = (unsigned long)mi_prim_getpid();
      do {
        digits[k++] = (char)('0' + pid % 10);
        pid /= 10;
      } while (pid != 0);
      while (k > 0 && (fits = (n + 1 < size))) buf[n++] = digits[--k];
      s++;
    } else if ((fits = (n + 1 < size))) {
      buf[n++] = *s;
    }
  }
  if (size > 0) buf[n] = 0;
  return fits;
}

void _mi_str_copy(char* dst, size_t size, const char* src) {
  size_t n = strlen(src);
  if (n >= size) n = size - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

const char* _mi_path_base(const char* path) {
  const char* base = path;
  for (const char* s = path; *s != 0; s++) {
    if (*s == '/' || *s == '\\') base = s + 1;
  }
  return base;
}
