/* The profiler's output: a buffered writer to a file descriptor with the
   JSON string escaping the DHAT format needs. No allocation. */
#include "dhat.h"

#if MI_DHAT

void _mi_dhat_out_flush(mi_dhat_out_t* out) {
  if (out->len > 0 && out->err == 0) out->err = mi_prim_file_write(out->fd, out->buf, out->len);
  out->len = 0;
}

static void mi_dhat_out_char(mi_dhat_out_t* out, char c) {
  if (out->len == sizeof(out->buf)) _mi_dhat_out_flush(out);
  out->buf[out->len++] = c;
}

void _mi_dhat_out_str(mi_dhat_out_t* out, const char* s) {
  for (; *s != 0; s++) mi_dhat_out_char(out, *s);
}

void _mi_dhat_out_quoted(mi_dhat_out_t* out, const char* s) {
  static const char hex[] = "0123456789abcdef";
  mi_dhat_out_char(out, '"');
  for (; *s != 0; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      mi_dhat_out_char(out, '\\');
      mi_dhat_out_char(out, (char)c);
    } else if (c < 0x20) {
      /* control characters as \u00XX; bytes >= 0x80 pass through (UTF-8) */
      _mi_dhat_out_str(out, "\\u00");
      mi_dhat_out_char(out, hex[c >> 4]);
      mi_dhat_out_char(out, hex[c & 15]);
    } else {
      mi_dhat_out_char(out, (char)c);
    }
  }
  mi_dhat_out_char(out, '"');
}

void _mi_dhat_out_u64(mi_dhat_out_t* out, uint64_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + (v % 10));
    v /= 10;
  } while (v != 0);
  while (n > 0) mi_dhat_out_char(out, digits[--n]);
}

#endif
