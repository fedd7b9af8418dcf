/* The profiler's output buffer: grown in OS memory (doubling), so building a
   dump allocates nothing from the heap being profiled. */
#include "prof.h"

static bool mi_prof_buf_reserve(mi_prof_buf_t* buf, size_t more) {
  if (buf->failed) return false;
  if (buf->len + more <= buf->cap) return true;
  size_t cap = (buf->cap == 0 ? (size_t)64 * 1024 : buf->cap);
  while (cap < buf->len + more) cap *= 2;
  char* data = (char*)_mi_os_alloc_meta(cap);
  if (data == NULL) {
    buf->failed = true;
    return false;
  }
  if (buf->len > 0) memcpy(data, buf->data, buf->len);
  if (buf->data != NULL) _mi_os_free_meta(buf->data, buf->cap);
  buf->data = data;
  buf->cap = cap;
  return true;
}

void _mi_prof_buf_put(mi_prof_buf_t* buf, const void* data, size_t len) {
  if (len == 0 || !mi_prof_buf_reserve(buf, len)) return;
  memcpy(buf->data + buf->len, data, len);
  buf->len += len;
}

void _mi_prof_buf_str(mi_prof_buf_t* buf, const char* s) {
  _mi_prof_buf_put(buf, s, strlen(s));
}

void _mi_prof_buf_u64(mi_prof_buf_t* buf, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  _mi_prof_buf_put(buf, tmp + sizeof(tmp) - n, n);
}

void _mi_prof_buf_hex(mi_prof_buf_t* buf, uint64_t v) {
  static const char digits[] = "0123456789abcdef"; /* Go's address regex stops at an uppercase digit */
  char tmp[20];
  size_t n = 0;
  do {
    tmp[sizeof(tmp) - 1 - n++] = digits[v & 15];
    v >>= 4;
  } while (v != 0);
  tmp[sizeof(tmp) - 1 - n++] = 'x';
  tmp[sizeof(tmp) - 1 - n++] = '0';
  _mi_prof_buf_put(buf, tmp + sizeof(tmp) - n, n);
}

void _mi_prof_buf_free(mi_prof_buf_t* buf) {
  if (buf->data != NULL) _mi_os_free_meta(buf->data, buf->cap);
  buf->data = NULL;
  buf->len = buf->cap = 0;
  buf->failed = false;
}
