/* Positive control of ci/layer-check.py (ci/lint.sh): checked as if it were
   src/os/layer-upcall.c, an OS-layer file reaching up into the page layer.
   The check must report it. Never compiled. */
#include "../page/page.h"

int mi_layer_upcall(void) {
  return 0;
}
