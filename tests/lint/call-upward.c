/* Positive control of ci/layer-check.py --calls (ci/lint.sh): compiled alone,
   its undefined symbols counted as src/page/page.c's, a page-layer file
   calling the pprof wing's record of an allocation, which no allow-call line
   of ci/layers.txt names. The check must report it. Never linked. */
#include <stddef.h>

void _mi_prof_record_alloc(void* p, size_t size);

void mi_call_upward(void* p) {
  _mi_prof_record_alloc(p, 16);
}
