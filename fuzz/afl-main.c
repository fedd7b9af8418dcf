/* The AFL++ driver of the harnesses: persistent mode with the test case in
   shared memory, around the same LLVMFuzzerTestOneInput that libFuzzer
   calls. Given files as arguments (or built without afl-clang-fast), it runs
   each file once instead: the reproducer mode. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h> /* read(), in the AFL++ test case macros */

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static int fz_run_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    return 1;
  }
  static uint8_t buf[1 << 20];
  size_t n = fread(buf, 1, sizeof(buf), f);
  fclose(f);
  fprintf(stderr, "running %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(buf, n);
  return 0;
}

#ifdef __AFL_FUZZ_TESTCASE_LEN
__AFL_FUZZ_INIT();
#endif

int main(int argc, char** argv) {
  if (argc > 1) {
    int status = 0;
    for (int i = 1; i < argc; i++) status |= fz_run_file(argv[i]);
    return status;
  }
#ifdef __AFL_FUZZ_TESTCASE_LEN
  __AFL_INIT();
  const uint8_t* buf = __AFL_FUZZ_TESTCASE_BUF; /* after __AFL_INIT: the shared memory is mapped then */
  while (__AFL_LOOP(10000)) {
    LLVMFuzzerTestOneInput(buf, (size_t)__AFL_FUZZ_TESTCASE_LEN);
  }
  return 0;
#else
  fprintf(stderr, "usage: %s FILE... (built without afl-clang-fast: reproducer mode only)\n", argv[0]);
  return 2;
#endif
}
