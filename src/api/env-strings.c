/* The Windows C run-time's environment and string duplicates, as mimalloc
   offers them everywhere: the copy is a block of ours, freed with mi_free. */
#include "api.h"

#include <stdlib.h>
#include <wchar.h>

wchar_t* mi_wcsdup(const wchar_t* s) {
  if (s == NULL) return NULL;
  size_t bytes = (wcslen(s) + 1) * sizeof(wchar_t); /* the string exists: its bytes fit */
  wchar_t* t = (wchar_t*)mi_malloc(bytes);
  if (t != NULL) memcpy(t, s, bytes);
  return t;
}

unsigned char* mi_mbsdup(const unsigned char* s) {
  /* a multibyte string ends at its first zero byte, as any C string */
  return (unsigned char*)mi_strdup((const char*)s);
}

int mi_dupenv_s(char** buf, size_t* size, const char* name) {
  if (size != NULL) *size = 0;
  if (buf == NULL || name == NULL) return EINVAL;
  *buf = NULL;
  const char* value = getenv(name);
  if (value == NULL) return 0; /* unset is no error: the caller sees NULL */
  *buf = mi_strdup(value);
  if (*buf == NULL) return ENOMEM;
  if (size != NULL) *size = strlen(value) + 1;
  return 0;
}

#if defined(_WIN32)
static int mi_wgetenv_dup(const wchar_t* name, wchar_t** buf, size_t* len) {
  const wchar_t* value = _wgetenv(name);
  if (value == NULL) return 0;
  *buf = mi_wcsdup(value);
  if (*buf == NULL) return ENOMEM;
  *len = wcslen(value) + 1;
  return 0;
}
#else
/* The environment is multibyte here: the name is converted to it and the
   value back, in the locale's encoding (LC_CTYPE). What does not convert is
   EILSEQ, as the conversions report it; mimalloc gives EINVAL for the whole
   call on these systems. */
static int mi_wgetenv_dup(const wchar_t* name, wchar_t** buf, size_t* len) {
  size_t nlen = wcstombs(NULL, name, 0);
  if (nlen == (size_t)-1) return EILSEQ;
  char* mbname = (char*)mi_malloc(nlen + 1);
  if (mbname == NULL) return ENOMEM;
  (void)wcstombs(mbname, name, nlen + 1);
  const char* value = getenv(mbname);
  mi_free(mbname);
  if (value == NULL) return 0;
  size_t wlen = mbstowcs(NULL, value, 0);
  if (wlen == (size_t)-1) return EILSEQ;
  wchar_t* w = (wchar_t*)mi_mallocn(wlen + 1, sizeof(wchar_t));
  if (w == NULL) return ENOMEM;
  (void)mbstowcs(w, value, wlen + 1);
  *buf = w;
  *len = wlen + 1;
  return 0;
}
#endif

int mi_wdupenv_s(wchar_t** buf, size_t* size, const wchar_t* name) {
  if (size != NULL) *size = 0;
  if (buf == NULL || name == NULL) return EINVAL;
  *buf = NULL;
  size_t len = 0;
  int err = mi_wgetenv_dup(name, buf, &len);
  if (err == 0 && size != NULL) *size = len;
  return err;
}
