/* Positive control of ci/layer-check.py --calls (ci/lint.sh): compiled alone,
   its undefined symbols counted as src/secure/free.c's, the secure front
   calling the entry points' free. Both rank 7, so the link is not upward,
   but api/ calls the secure front, and the two folders would call each
   other: the check must report the cycle. Never linked. */
void mi_free(void* p);

void mi_call_back_up(void* p) {
  mi_free(p);
}
