/* Rust's symbol manglings read back, for the profiles' function names
   (docs/pprof.md): Go pprof's demangler (Debian's) reads Rust's legacy
   names as C++, leaving `$LT$` and the like in, and does not know v0.
   - legacy: `_ZN` + length-prefixed path segments + `E`, the last segment
     `h` and 16 hex digits (a hash, dropped), and in the segments `$LT$` for
     `<`, `$u20$` for a space, `..` for `::` and so on;
   - v0 (`_R...`, RFC 2603, the standard library's): below. */
#include "dhat.h"

#include <string.h>

static bool mi_rust_put(char* out, size_t size, size_t* len, const char* s, size_t n) {
  if (*len + n >= size) return false;
  memcpy(out + *len, s, n);
  *len += n;
  out[*len] = 0;
  return true;
}

/* One `$...$` escape at `s` (length `n` available): its text and length. */
static const char* mi_rust_escape(const char* s, size_t n, size_t* used) {
  static const struct {
    const char* code;
    const char* text;
  } escapes[] = {{"$SP$", "@"},  {"$BP$", "*"},  {"$RF$", "&"},  {"$LT$", "<"},  {"$GT$", ">"},  {"$LP$", "("},
                 {"$RP$", ")"},  {"$C$", ","},   {"$u7e$", "~"}, {"$u20$", " "}, {"$u27$", "'"}, {"$u5b$", "["},
                 {"$u5d$", "]"}, {"$u7b$", "{"}, {"$u7d$", "}"}, {"$u3b$", ";"}, {"$u2b$", "+"}, {"$u22$", "\""}};
  for (size_t i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++) {
    size_t k = strlen(escapes[i].code);
    if (k <= n && memcmp(s, escapes[i].code, k) == 0) {
      *used = k;
      return escapes[i].text;
    }
  }
  return NULL;
}

static bool mi_rust_is_hash(const char* s, size_t n) {
  if (n != 17 || s[0] != 'h') return false;
  for (size_t i = 1; i < n; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

static bool mi_rust_legacy(const char* sym, char* out, size_t size) {
  if (size == 0 || strncmp(sym, "_ZN", 3) != 0) return false;
  const char* p = sym + 3;
  size_t len = 0;
  out[0] = 0;
  bool first = true;
  bool hashed = false;
  while (*p != 'E') {
    if (*p < '0' || *p > '9') return false;
    size_t n = 0;
    while (*p >= '0' && *p <= '9') {
      n = n * 10 + (size_t)(*p - '0');
      if (n > 4096) return false;
      p++;
    }
    if (memchr(p, 0, n) != NULL) return false;  /* shorter than it says */
    if (p[n] == 'E' && mi_rust_is_hash(p, n)) { /* the hash: the last segment */
      hashed = true;
      p += n;
      break;
    }
    if (!first && !mi_rust_put(out, size, &len, "::", 2)) return false;
    first = false;
    const char* seg = p;
    size_t i = 0;
    if (n >= 2 && seg[0] == '_' && seg[1] == '$') i = 1; /* a leading `_` only shields a `$` */
    while (i < n) {
      size_t used = 0;
      const char* text = (seg[i] == '$' ? mi_rust_escape(seg + i, n - i, &used) : NULL);
      if (text != NULL) {
        if (!mi_rust_put(out, size, &len, text, strlen(text))) return false;
        i += used;
      } else if (seg[i] == '.' && i + 1 < n && seg[i + 1] == '.') {
        if (!mi_rust_put(out, size, &len, "::", 2)) return false;
        i += 2;
      } else {
        if (!mi_rust_put(out, size, &len, seg + i, 1)) return false;
        i++;
      }
    }
    p += n;
  }
  /* only Rust's: a C++ name has no hash segment */
  return (hashed && p[0] == 'E' && len > 0);
}

/* ---- Rust's v0 mangling (`_R...`, RFC 2603) ----------------------------------- */
/* A recursive reader: paths, generic arguments, types, constants and
   back-references; a crate's hash and disambiguators are left out of the
   name, a closure is `{closure#N}`. Depth and output are bounded. */

typedef struct mi_v0_s {
  const char* s; /* after "_R" */
  size_t n, pos;
  char* out;
  size_t size, len;
  int depth;
  bool ok;
} mi_v0_t;

static void mi_v0_put(mi_v0_t* d, const char* s, size_t n) {
  if (!d->ok) return;
  if (!mi_rust_put(d->out, d->size, &d->len, s, n)) d->ok = false;
}
static void mi_v0_puts(mi_v0_t* d, const char* s) {
  mi_v0_put(d, s, strlen(s));
}
static char mi_v0_peek(const mi_v0_t* d) {
  if (d->pos >= d->n) return 0;
  return d->s[d->pos];
}
static bool mi_v0_eat(mi_v0_t* d, char c) {
  if (mi_v0_peek(d) != c) return false;
  d->pos++;
  return true;
}

/* base-62-number: "_" is 0, else digits then "_" are value + 1 */
static uint64_t mi_v0_base62(mi_v0_t* d) {
  if (mi_v0_eat(d, '_')) return 0;
  uint64_t v = 0;
  for (;;) {
    char c = mi_v0_peek(d);
    if (c == '_') break;
    uint64_t digit;
    if (c >= '0' && c <= '9') digit = (uint64_t)(c - '0');
    else if (c >= 'a' && c <= 'z') digit = 10 + (uint64_t)(c - 'a');
    else if (c >= 'A' && c <= 'Z') digit = 36 + (uint64_t)(c - 'A');
    else {
      d->ok = false;
      return 0;
    }
    if (v > (UINT64_MAX - digit) / 62) {
      d->ok = false;
      return 0;
    }
    v = v * 62 + digit;
    d->pos++;
  }
  d->pos++; /* "_" */
  return v + 1;
}

static void mi_v0_disambiguator(mi_v0_t* d) {
  if (mi_v0_eat(d, 's')) (void)mi_v0_base62(d);
}

/* undisambiguated-identifier: ["u"] decimal ["_"] bytes; written if `put` */
static void mi_v0_ident(mi_v0_t* d, bool put) {
  bool puny = mi_v0_eat(d, 'u');
  size_t len = 0;
  if (!(mi_v0_peek(d) >= '0' && mi_v0_peek(d) <= '9')) {
    d->ok = false;
    return;
  }
  while (mi_v0_peek(d) >= '0' && mi_v0_peek(d) <= '9') {
    len = len * 10 + (size_t)(mi_v0_peek(d) - '0');
    d->pos++;
    if (len > 4096) {
      d->ok = false;
      return;
    }
  }
  (void)mi_v0_eat(d, '_');
  if (d->pos + len > d->n) {
    d->ok = false;
    return;
  }
  if (put) {
    if (puny) mi_v0_puts(d, "punycode:");
    mi_v0_put(d, d->s + d->pos, len);
  }
  d->pos += len;
}

static void mi_v0_path(mi_v0_t* d, bool in_value);
static void mi_v0_type(mi_v0_t* d);

/* back-reference: the thing at the given offset read again, then back here */
static bool mi_v0_backref(mi_v0_t* d, void (*read)(mi_v0_t*, bool), void (*read_type)(mi_v0_t*), bool arg) {
  if (!mi_v0_eat(d, 'B')) return false;
  size_t at = d->pos - 1;
  uint64_t target = mi_v0_base62(d);
  if (!d->ok || target >= at) {
    d->ok = false;
    return true;
  }
  size_t back = d->pos;
  d->pos = (size_t)target;
  if (read != NULL) read(d, arg);
  else read_type(d);
  d->pos = back;
  return true;
}

static void mi_v0_const(mi_v0_t* d) {
  if (mi_v0_eat(d, 'p')) {
    mi_v0_puts(d, "_");
    return;
  }
  if (mi_v0_peek(d) == 'B') {
    (void)mi_v0_backref(d, NULL, &mi_v0_const, false);
    return;
  }
  char t = mi_v0_peek(d);
  d->pos++; /* the type: an integer, bool or char */
  bool neg = mi_v0_eat(d, 'n');
  uint64_t v = 0;
  size_t digits = 0;
  while (mi_v0_peek(d) != '_' && d->ok) {
    char c = mi_v0_peek(d);
    uint64_t x = (c >= '0' && c <= '9') ? (uint64_t)(c - '0') : (c >= 'a' && c <= 'f') ? (uint64_t)(c - 'a' + 10) : 99;
    if (x == 99 || digits >= 16) {
      d->ok = false;
      return;
    }
    v = v * 16 + x;
    digits++;
    d->pos++;
  }
  (void)mi_v0_eat(d, '_');
  if (t == 'b') {
    mi_v0_puts(d, v != 0 ? "true" : "false");
    return;
  }
  char num[24];
  size_t k = sizeof(num);
  num[--k] = 0;
  do {
    num[--k] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0 && k > 1);
  if (neg) mi_v0_puts(d, "-");
  mi_v0_puts(d, num + k);
}

static void mi_v0_generic_arg(mi_v0_t* d) {
  if (mi_v0_eat(d, 'L')) {
    (void)mi_v0_base62(d);
    mi_v0_puts(d, "'_");
  } else if (mi_v0_eat(d, 'K')) {
    mi_v0_const(d);
  } else {
    mi_v0_type(d);
  }
}

static void mi_v0_type_backref(mi_v0_t* d) {
  mi_v0_type(d);
}

static void mi_v0_type(mi_v0_t* d) {
  static const char* const basic[26] = {"i8",    "bool", "char", "f64", "str",  "f32",  NULL,  "u8", "isize",
                                        "usize", NULL,   "i32",  "u32", "i128", "u128", "_",   NULL, NULL,
                                        "i16",   "u16",  "()",   "...", NULL,   "i64",  "u64", "!"};
  if (!d->ok || ++d->depth > 64) {
    d->ok = false;
    return;
  }
  char c = mi_v0_peek(d);
  if (c >= 'a' && c <= 'z' && basic[c - 'a'] != NULL) {
    d->pos++;
    mi_v0_puts(d, basic[c - 'a']);
  } else if (mi_v0_eat(d, 'R') || mi_v0_eat(d, 'Q')) {
    mi_v0_puts(d, c == 'R' ? "&" : "&mut ");
    if (mi_v0_eat(d, 'L')) (void)mi_v0_base62(d);
    mi_v0_type(d);
  } else if (mi_v0_eat(d, 'P') || mi_v0_eat(d, 'O')) {
    mi_v0_puts(d, c == 'P' ? "*const " : "*mut ");
    mi_v0_type(d);
  } else if (mi_v0_eat(d, 'A')) {
    mi_v0_puts(d, "[");
    mi_v0_type(d);
    mi_v0_puts(d, "; ");
    mi_v0_const(d);
    mi_v0_puts(d, "]");
  } else if (mi_v0_eat(d, 'S')) {
    mi_v0_puts(d, "[");
    mi_v0_type(d);
    mi_v0_puts(d, "]");
  } else if (mi_v0_eat(d, 'T')) {
    mi_v0_puts(d, "(");
    for (int i = 0; d->ok && !mi_v0_eat(d, 'E'); i++) {
      if (i > 0) mi_v0_puts(d, ", ");
      mi_v0_type(d);
    }
    mi_v0_puts(d, ")");
  } else if (mi_v0_eat(d, 'F')) {
    if (mi_v0_eat(d, 'G')) (void)mi_v0_base62(d);
    if (mi_v0_eat(d, 'U')) mi_v0_puts(d, "unsafe ");
    if (mi_v0_eat(d, 'K')) {
      if (!mi_v0_eat(d, 'C')) mi_v0_ident(d, false);
    }
    mi_v0_puts(d, "fn(");
    for (int i = 0; d->ok && !mi_v0_eat(d, 'E'); i++) {
      if (i > 0) mi_v0_puts(d, ", ");
      mi_v0_type(d);
    }
    mi_v0_puts(d, ")");
    if (mi_v0_peek(d) != 'u') {
      mi_v0_puts(d, " -> ");
      mi_v0_type(d);
    } else {
      d->pos++;
    }
  } else if (mi_v0_eat(d, 'D')) {
    mi_v0_puts(d, "dyn ");
    if (mi_v0_eat(d, 'G')) (void)mi_v0_base62(d);
    for (int i = 0; d->ok && !mi_v0_eat(d, 'E'); i++) {
      if (i > 0) mi_v0_puts(d, " + ");
      mi_v0_path(d, false);
      while (d->ok && mi_v0_eat(d, 'p')) {
        mi_v0_ident(d, false);
        mi_v0_type(d);
      }
    }
    if (mi_v0_eat(d, 'L')) (void)mi_v0_base62(d);
  } else if (c == 'B') {
    (void)mi_v0_backref(d, NULL, &mi_v0_type_backref, false);
  } else {
    mi_v0_path(d, false);
  }
  d->depth--;
}

static void mi_v0_path(mi_v0_t* d, bool in_value) {
  if (!d->ok || ++d->depth > 64) {
    d->ok = false;
    return;
  }
  char c = mi_v0_peek(d);
  if (mi_v0_eat(d, 'C')) { /* crate root */
    mi_v0_disambiguator(d);
    mi_v0_ident(d, true);
  } else if (mi_v0_eat(d, 'M')) { /* <T> */
    mi_v0_disambiguator(d);
    size_t save = d->len;
    mi_v0_path(d, false); /* the impl's own path: not shown */
    d->len = save;
    if (d->ok) d->out[d->len] = 0;
    mi_v0_puts(d, "<");
    mi_v0_type(d);
    mi_v0_puts(d, ">");
  } else if (mi_v0_eat(d, 'X') || mi_v0_eat(d, 'Y')) { /* <T as Trait> */
    if (c == 'X') {
      mi_v0_disambiguator(d);
      size_t save = d->len;
      mi_v0_path(d, false);
      d->len = save;
      if (d->ok) d->out[d->len] = 0;
    }
    mi_v0_puts(d, "<");
    mi_v0_type(d);
    mi_v0_puts(d, " as ");
    mi_v0_path(d, false);
    mi_v0_puts(d, ">");
  } else if (mi_v0_eat(d, 'N')) { /* ...::ident */
    char ns = mi_v0_peek(d);
    d->pos++;
    mi_v0_path(d, in_value);
    mi_v0_disambiguator(d);
    if (ns >= 'A' && ns <= 'Z') { /* a special namespace: closure, shim, ... */
      size_t at = d->len;
      mi_v0_puts(d, "::{");
      mi_v0_puts(d, ns == 'C' ? "closure" : ns == 'S' ? "shim" : "?");
      size_t mark = d->len;
      mi_v0_ident(d, true);
      if (d->ok && d->len > mark) {
        /* {closure:name} */
        char name[256];
        size_t k = d->len - mark;
        if (k >= sizeof(name)) k = sizeof(name) - 1;
        memcpy(name, d->out + mark, k);
        name[k] = 0;
        d->len = mark;
        mi_v0_puts(d, ":");
        mi_v0_puts(d, name);
      }
      mi_v0_puts(d, "}");
      (void)at;
    } else {
      mi_v0_puts(d, "::");
      mi_v0_ident(d, true);
    }
  } else if (mi_v0_eat(d, 'I')) { /* generics */
    mi_v0_path(d, in_value);
    mi_v0_puts(d, in_value ? "::<" : "<");
    for (int i = 0; d->ok && !mi_v0_eat(d, 'E'); i++) {
      if (i > 0) mi_v0_puts(d, ", ");
      mi_v0_generic_arg(d);
    }
    mi_v0_puts(d, ">");
  } else if (c == 'B') {
    (void)mi_v0_backref(d, &mi_v0_path, NULL, in_value);
  } else {
    d->ok = false;
  }
  d->depth--;
}

static bool mi_rust_v0(const char* sym, char* out, size_t size) {
  if (size == 0 || strncmp(sym, "_R", 2) != 0) return false;
  mi_v0_t d = {sym + 2, strlen(sym + 2), 0, out, size, 0, 0, true};
  if (d.n > 4096) return false;
  out[0] = 0;
  if (mi_v0_peek(&d) >= '0' && mi_v0_peek(&d) <= '9') { /* an encoding version: not known */
    return false;
  }
  mi_v0_path(&d, true);
  /* an instantiating crate may follow (not shown); nothing else */
  return (d.ok && d.len > 0);
}

bool _mi_dhat_demangle_rust(const char* sym, char* out, size_t size) {
  return (mi_rust_v0(sym, out, size) || mi_rust_legacy(sym, out, size));
}
