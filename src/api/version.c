/* What the library is: its version, and whether mimalloc's Windows
   redirection DLL is in use (never: this library overrides by symbol and
   ships no such DLL). */
#include "api.h"

int mi_version(void) {
  return MI_MALLOC_VERSION;
}

bool mi_is_redirected(void) {
  return false;
}
