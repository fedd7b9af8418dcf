/* Runs one of the hardened cases in this process, through the C library's
   names, so that the cases run under any allocator preloaded with
   LD_PRELOAD: `peer-run NAME misuse|control` (`peer-run --list` names them). How the process ends (its
   exit status, its signal, what the allocator printed) is the outcome;
   peer-score.sh runs every case this way and tabulates (docs/hardened-
   suite.md). Not part of the build: peer-score.sh compiles it. */
#include <cstdio>
#include <cstring>

#define H_LIBC 1
#define H_HAVE_SIZED_FREE 1
#include "hardened-cases-cxx.h"

struct h_named_case {
  const char* name;
  void (*fn)(bool misuse);
};
#define H(name) \
  { #name, &case_##name }
static const h_named_case h_cases[] = {
    H(double_free_small),
    H(double_free_small_delayed),
    H(double_free_large),
    H(double_free_large_delayed),
    H(invalid_free_protected),
    H(invalid_free_unprotected),
    H(invalid_free_small_region),
    H(invalid_free_small_region_far),
    H(unaligned_free_small),
    H(unaligned_free_large),
    H(uninitialized_free),
    H(uninitialized_realloc),
    H(invalid_malloc_usable_size_small),
    H(unaligned_malloc_usable_size_small),
    H(invalid_malloc_usable_size_small_quarantine),
    H(uninitialized_malloc_usable_size),
    H(overflow_small_1_byte),
    H(overflow_small_8_byte),
    H(overflow_large_1_byte),
    H(overflow_large_8_byte),
    H(write_after_free_small),
    H(write_after_free_small_reuse),
    H(read_after_free_large),
    H(write_after_free_large),
    H(write_after_free_large_reuse),
    H(read_zero_size),
    H(write_zero_size),
    H(read_after_free_small),
    H(uninitialized_read_small),
    H(uninitialized_read_large),
    H(calloc_zeroed),
    H(calloc_overflow),
    H(realloc_init),
    H(large_array_growth),
    H(malloc_zero_different),
    H(malloc_noreuse),
    H(impossibly_large_malloc),
    H(string_overflow),
    H(free_sized_small),
    H(free_sized_large),
    H(aligned_sized_delete_small_min_align),
    H(delete_type_size_mismatch),
    H(aligned_sized_delete_small),
    H(aligned_sized_delete_large),
    H(invalid_aligned_sized_delete_small),
    H(invalid_aligned_sized_delete_large),
};

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (const h_named_case& c : h_cases) printf("%s\n", c.name);
    return 0;
  }
  if (argc != 3 || (strcmp(argv[2], "misuse") != 0 && strcmp(argv[2], "control") != 0)) {
    fprintf(stderr, "usage: %s NAME misuse|control\n", argv[0]);
    return 2;
  }
  for (const h_named_case& c : h_cases) {
    if (strcmp(c.name, argv[1]) != 0) continue;
    c.fn(strcmp(argv[2], "misuse") == 0);
    if (c.fn == &case_string_overflow) printf("overflow by %zu bytes\n", h_string_overread);
    return 0;
  }
  fprintf(stderr, "%s: no case %s\n", argv[0], argv[1]);
  return 2;
}
