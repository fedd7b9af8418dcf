/* Prints the statistics' JSON after a small workload, for
   stats-json-test.sh to read with python3 and jq: `process` (the process's
   figures, 8 threads joined first, 1000 blocks of 1 KiB and a 3 MiB block
   live), `heap` (the calling thread's heap's share) or `dump` (its live
   heap as mi_heap_dump_json gives it, with blocks); or `table`, the
   statistics table (mi_stats_print_out) with the same blocks live, for
   stats-table-test.sh. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <mimalloc-stats.h>

static void* worker(void* arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) mi_free(mi_malloc((size_t)(i % 700) + 1));
  return NULL;
}

static void print_to_stdout(const char* msg, void* arg) {
  (void)arg;
  fputs(msg, stdout);
}

int main(int argc, char** argv) {
  const char* what = (argc > 1 ? argv[1] : "process");
  pthread_t t[8];
  for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, &worker, NULL);
  for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
  static void* kept[1000];
  for (int i = 0; i < 1000; i++) kept[i] = mi_malloc(1024);
  void* big = mi_malloc(3 << 20);
  if (strcmp(what, "table") == 0) {
    mi_stats_print_out(&print_to_stdout, NULL);
    mi_free(big);
    for (int i = 0; i < 1000; i++) mi_free(kept[i]);
    return 0;
  }
  char* text = (strcmp(what, "heap") == 0   ? mi_heap_stats_get_json(NULL, 0, NULL)
                : strcmp(what, "dump") == 0 ? mi_heap_dump_json(true, false)
                                            : mi_stats_get_json(0, NULL));
  if (text == NULL) return 1;
  fputs(text, stdout);
  mi_free(text);
  mi_free(big);
  for (int i = 0; i < 1000; i++) mi_free(kept[i]);
  return 0;
}
