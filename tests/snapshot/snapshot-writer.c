/* A program that writes heap snapshots for tests/snapshot/writer-test.sh:
   `write OUT` lays out 12 size classes x 200 blocks (a third kept, the rest
   freed) and an 8 MiB block, then writes OUT.bin (mi_heap_snapshot with
   free maps), OUT.live (the live blocks mi_heap_visit_blocks sees, one hex
   address and size per line) and OUT.stats.json (mi_stats_get_json);
   `exit` lays out the same and returns, for MIMALLOC_SNAPSHOT_ON_EXIT. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mimalloc-stats.h>

enum { CLASSES = 12, PER_CLASS = 200 };
static void* blocks[CLASSES][PER_CLASS];
static void* big;

static void lay_out(void) {
  static const size_t sizes[CLASSES] = {16, 32, 48, 64, 100, 128, 256, 500, 1000, 3000, 8000, 20000};
  for (int c = 0; c < CLASSES; c++) {
    for (int i = 0; i < PER_CLASS; i++) {
      blocks[c][i] = mi_malloc(sizes[c]);
      memset(blocks[c][i], 0x5A, sizes[c]);
    }
    for (int i = 0; i < PER_CLASS; i++) {
      if (i % 3 != 0) {
        mi_free(blocks[c][i]);
        blocks[c][i] = NULL;
      }
    }
  }
  big = mi_malloc((size_t)8 << 20);
}

static bool print_live(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap, (void)area;
  if (block != NULL) fprintf((FILE*)arg, "%zx %zu\n", (size_t)block, size);
  return true;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  lay_out();
  if (strcmp(argv[1], "exit") == 0) return 0;
  if (argc < 3 || strcmp(argv[1], "write") != 0) return 2;
  if (mi_heap_snapshot(-1, 0) != -1) return 3;
  char path[4096];
  snprintf(path, sizeof(path), "%s.live", argv[2]);
  FILE* live = fopen(path, "w");
  if (live == NULL) return 4;
  snprintf(path, sizeof(path), "%s.bin", argv[2]);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 4;
  /* the snapshot first: its free-map walk collects the pages as a visit does */
  if (mi_heap_snapshot(fd, MI_SNAPSHOT_BLOCKS) != 0) return 5;
  close(fd);
  if (!mi_heap_visit_blocks(mi_heap_get_default(), true, &print_live, live)) return 6;
  fclose(live);
  snprintf(path, sizeof(path), "%s.stats.json", argv[2]);
  FILE* stats = fopen(path, "w");
  char* text = mi_stats_get_json(0, NULL);
  if (stats == NULL || text == NULL) return 7;
  fputs(text, stats);
  mi_free(text);
  fclose(stats);
  return 0;
}
