/* The same four heap bugs for every allocator's report, side by side
   (bench/reports/compare.sh): `bugs KIND`, KIND one of double-free,
   overflow (3 bytes past a 48-byte block, then its free), stale-write (a
   byte written into a freed block, then blocks of its size allocated until
   it comes back), freed-read (a byte read from a freed block). Built -g -O0
   -fno-omit-frame-pointer; each step in a function of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile char sink;

__attribute__((noinline)) char* make_block(size_t n) {
  return malloc(n);
}
__attribute__((noinline)) void drop_block(char* p) {
  free(p);
}
__attribute__((noinline)) void write_past_end(char* p, size_t n) {
  memset(p, 'x', n + 3);
}
__attribute__((noinline)) void write_after_free(char* p) {
  p[20] = 1;
}
__attribute__((noinline)) void read_after_free(char* p) {
  sink = p[5];
}
__attribute__((noinline)) void churn_size(size_t n) {
  for (int i = 0; i < 1000000; i++) free(malloc(n));
}

int main(int argc, char** argv) {
  const char* kind = (argc > 1 ? argv[1] : "");
  char* p = make_block(48);
  if (strcmp(kind, "double-free") == 0) {
    drop_block(p);
    drop_block(p);
  } else if (strcmp(kind, "overflow") == 0) {
    write_past_end(p, 48);
    drop_block(p);
  } else if (strcmp(kind, "stale-write") == 0) {
    drop_block(p);
    write_after_free(p);
    churn_size(48);
  } else if (strcmp(kind, "freed-read") == 0) {
    drop_block(p);
    read_after_free(p);
  } else {
    fprintf(stderr, "usage: bugs double-free|overflow|stale-write|freed-read\n");
    return 2;
  }
  puts("(no report: the program ran on)");
  return 0;
}
