/* A gzip container (RFC 1952) around deflate *stored* blocks (RFC 1951
   §3.2.4): what pprof's reader (Go's compress/gzip) and gunzip accept,
   written without zlib, which the library does not link. Nothing is
   compressed: a profile is small next to the heap it describes, and the
   point of ".gz" is that clients recognise the file. */
#include "prof.h"

#if MI_PPROF

#define MI_GZIP_STORED_MAX 65535 /* LEN is 16 bits */

/* The CRC-32 table (reflected polynomial 0xEDB88320), made on the caller's
   stack for each call: 1 KiB and 2048 steps, no shared state to race on. */
static void mi_gzip_crc_table(uint32_t table[256]) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
    table[n] = c;
  }
}

static uint32_t mi_gzip_crc(const uint32_t table[256], uint32_t crc, const uint8_t* p, size_t len) {
  crc = ~crc;
  for (size_t i = 0; i < len; i++) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

static void mi_gzip_le32(mi_prof_buf_t* out, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  _mi_prof_buf_put(out, b, 4);
}

bool _mi_prof_gzip(const mi_prof_buf_t* in, mi_prof_buf_t* out) {
  if (in->failed) {
    out->failed = true;
    return false;
  }
  /* magic, method 8 (deflate), no flags, no mtime (the same profile gives
     the same bytes), no extra flags, OS 255 (unknown) */
  static const uint8_t header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255};
  _mi_prof_buf_put(out, header, sizeof(header));
  uint32_t table[256];
  mi_gzip_crc_table(table);
  const uint8_t* p = (const uint8_t*)in->data;
  size_t left = in->len;
  uint32_t crc = 0;
  do { /* at least one block: an empty input is one empty final block */
    size_t n = (left > MI_GZIP_STORED_MAX ? MI_GZIP_STORED_MAX : left);
    bool last = (n == left);
    /* BFINAL, BTYPE 00 (stored); the rest of the byte is padding to the
       byte boundary the stored data starts at */
    uint8_t hdr[5] = {(uint8_t)(last ? 1 : 0), (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)~n, (uint8_t)(~n >> 8)};
    _mi_prof_buf_put(out, hdr, sizeof(hdr));
    _mi_prof_buf_put(out, p, n); /* nothing for the empty block */
    crc = mi_gzip_crc(table, crc, p, n);
    left -= n;
    if (left > 0) p += n; /* never an offset on the NULL of an empty buffer */
  } while (left > 0);
  mi_gzip_le32(out, crc);
  mi_gzip_le32(out, (uint32_t)in->len); /* ISIZE: the length modulo 2^32 */
  return !out->failed;
}

#endif
