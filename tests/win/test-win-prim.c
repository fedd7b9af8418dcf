/* The Windows primitives directly: the error mapping, injected failures
   with Windows error codes taking the real failure path, release of an
   interior pointer, the aligned paths, and large and huge pages as far as
   the system grants them. Prints the path counters at the end: what this
   system (under CI: Wine) exercised. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include <cmocka.h>

#include <mimalloc.h>
#include <mimalloc/fault.h>

#include "../../src/internal.h"
#include "../../src/prim/fault.h" /* mi_fault_reserved */
#include "../../src/prim/windows/win.h"

#define MiB ((size_t)1 << 20)

static void test_win_error_codes_map_oom_to_enomem_others_not(void** state) {
  (void)state;
  /* out of memory or commit charge: ENOMEM, which os.c retries */
  assert_int_equal(_mi_win_errno_of(ERROR_NOT_ENOUGH_MEMORY), ENOMEM);
  assert_int_equal(_mi_win_errno_of(ERROR_OUTOFMEMORY), ENOMEM);
  assert_int_equal(_mi_win_errno_of(ERROR_COMMITMENT_LIMIT), ENOMEM);
  assert_int_equal(_mi_win_errno_of(ERROR_COMMITMENT_MINIMUM), ENOMEM);
  assert_int_equal(_mi_win_errno_of(ERROR_PAGEFILE_QUOTA), ENOMEM);
  assert_int_equal(_mi_win_errno_of(ERROR_NO_SYSTEM_RESOURCES), ENOMEM);
  assert_int_equal(_mi_win_errno_of(0), ENOMEM);
  /* the rest: never retried */
  assert_int_equal(_mi_win_errno_of(ERROR_INVALID_ADDRESS), EINVAL);
  assert_int_equal(_mi_win_errno_of(ERROR_INVALID_PARAMETER), EINVAL);
  assert_int_equal(_mi_win_errno_of(ERROR_PRIVILEGE_NOT_HELD), EPERM);
  assert_int_equal(_mi_win_errno_of(ERROR_NOT_SUPPORTED), ENOTSUP);
  assert_int_equal(_mi_win_errno_of(ERROR_FILE_NOT_FOUND), ENOENT);
  assert_int_equal(_mi_win_errno_of(ERROR_GEN_FAILURE), EFAULT);
}

/* Each kind of call, failed once by injection with each error kind: the
   Windows code is set and the mapped code comes back. */
static void test_injected_windows_codes_set_and_mapped_back(void** state) {
  (void)state;
  mi_process_init();
  size_t page = _mi_os_page_size();
  static const struct {
    mi_fault_error_t error;
    DWORD code;
    int expect;
  } kinds[] = {{mi_fault_error_oom, ERROR_NOT_ENOUGH_MEMORY, ENOMEM},
               {mi_fault_error_again, ERROR_COMMITMENT_LIMIT, ENOMEM},
               {mi_fault_error_other, ERROR_INVALID_ADDRESS, EINVAL}};
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
    bool is_large, is_zero;
    void* base = NULL;
    assert_int_equal(mi_prim_alloc(4 * MiB, 0, false, false, &is_large, &base), 0);
    for (int kind = mi_fault_reserve; kind <= mi_fault_large; kind++) {
      mi_fault_policy_t policy = {(mi_fault_kind_t)kind, 1, 1, 0.0, 0, kinds[i].error, false};
      mi_fault_set_policy(&policy);
      SetLastError(0);
      void* p = NULL;
      int err;
      switch (kind) {
        case mi_fault_reserve: err = mi_prim_alloc(MiB, 0, true, false, &is_large, &p); break;
        case mi_fault_commit: err = mi_prim_commit(base, page, &is_zero); break;
        case mi_fault_decommit: err = mi_prim_decommit(base, page); break;
        case mi_fault_purge: err = mi_prim_purge(base, page, false, &is_zero); break;
        case mi_fault_protect: err = mi_prim_protect(base, page, true); break;
        case mi_fault_release: err = mi_prim_free(base, 4 * MiB); break;
        case mi_fault_huge: err = mi_prim_alloc_huge_os_pages((size_t)1 << 30, &p); break;
        default: err = mi_prim_alloc_large_os_pages(2 * MiB, 2 * MiB, &p); break;
      }
      mi_fault_set_policy(NULL);
      if (err != kinds[i].expect || GetLastError() != kinds[i].code) {
        fail_msg("kind %s, error kind %d: got %d (Windows error %lu), expected %d (Windows error %lu)",
                 mi_fault_kind_name((mi_fault_kind_t)kind), (int)kinds[i].error, err, GetLastError(), kinds[i].expect,
                 kinds[i].code);
      }
      assert_null(p);
    }
    assert_int_equal(mi_prim_free(base, 4 * MiB), 0);
  }
}

static void test_release_interior_pointer_frees_whole_reservation(void** state) {
  (void)state;
  bool is_large;
  void* p = NULL;
  assert_int_equal(mi_prim_alloc(8 * MiB, 0, false, false, &is_large, &p), 0);
  mi_fault_counters_t before, after;
  mi_fault_get_counters(&before);
  unsigned long long by_query = _mi_win_path_count(MI_WIN_RELEASE_BY_QUERY);
  /* the release finds the base with VirtualQuery and gives back the whole reservation */
  assert_int_equal(mi_prim_free((uint8_t*)p + 4 * MiB, 4 * MiB), 0);
  mi_fault_get_counters(&after);
  assert_int_equal(_mi_win_path_count(MI_WIN_RELEASE_BY_QUERY), by_query + 1);
  assert_int_equal(before.os_reserved - after.os_reserved, 8 * MiB); /* the balance says what really went */
  mi_fault_reserved(4 * MiB); /* the caller's accounting said 4 MiB: level the balance for later tests */
  MEMORY_BASIC_INFORMATION info;
  assert_int_equal(VirtualQuery(p, &info, sizeof(info)), sizeof(info));
  assert_int_equal(info.State, MEM_FREE);
}

static void test_aligned_reservations_land_where_asked(void** state) {
  (void)state;
  bool is_large;
  /* with VirtualAlloc2 (where the system has it), then as on a system without */
  for (int use_va2 = 1; use_va2 >= 0; use_va2--) {
    bool has = _mi_win_use_virtual_alloc2(use_va2 != 0);
    print_message("VirtualAlloc2 %s\n", has ? "in use" : (use_va2 ? "not on this system" : "not used"));
    unsigned long long placed = _mi_win_path_count(MI_WIN_ALIGNED_PLACED);
    for (size_t align = 128 * 1024; align <= 64 * MiB; align *= 4) {
      void* p = NULL;
      assert_int_equal(mi_prim_alloc(4 * MiB, align, true, false, &is_large, &p), 0);
      if (((uintptr_t)p & (align - 1)) != 0) fail_msg("alignment %zu: %p", align, p);
      memset(p, 1, 4 * MiB);
      assert_int_equal(mi_prim_free(p, 4 * MiB), 0);
    }
    if (!has) assert_true(_mi_win_path_count(MI_WIN_ALIGNED_PLACED) > placed);
  }
  _mi_win_use_virtual_alloc2(true);
  /* exactly at an address: taken once, refused the second time */
  void* hole = NULL;
  assert_int_equal(mi_prim_alloc(4 * MiB, 4 * MiB, false, false, &is_large, &hole), 0);
  assert_int_equal(mi_prim_free(hole, 4 * MiB), 0);
  assert_int_equal(mi_prim_alloc_at(hole, 4 * MiB, true), 0);
  assert_int_not_equal(mi_prim_alloc_at(hole, 4 * MiB, true), 0);
  assert_int_equal(mi_prim_free(hole, 4 * MiB), 0);
  /* the misalign knob lands one granule past the aligned address */
  mi_fault_policy_t policy = {mi_fault_any, 0, 1, 0.0, 0, mi_fault_error_oom, true};
  mi_fault_set_policy(&policy);
  void* p = NULL;
  assert_int_equal(mi_prim_alloc(4 * MiB, 4 * MiB, true, false, &is_large, &p), 0);
  mi_fault_set_policy(NULL);
  assert_int_equal((uintptr_t)p & (4 * MiB - 1), _mi_os_config.alloc_granularity);
  assert_int_equal(mi_prim_free(p, 4 * MiB), 0);
}

static void test_purge_reads_zero(void** state) {
  (void)state;
  bool is_large, is_zero = false;
  uint8_t* p = NULL;
  assert_int_equal(mi_prim_alloc(MiB, 0, true, false, &is_large, (void**)&p), 0);
  memset(p, 0x5a, MiB);
  assert_int_equal(mi_prim_purge(p, MiB, false, &is_zero), 0);
  assert_true(is_zero);
  for (size_t i = 0; i < MiB; i += 4096) assert_int_equal(p[i], 0);
  p[0] = 1;                                                   /* still usable */
  assert_int_equal(mi_prim_purge(p, MiB, true, &is_zero), 0); /* lazy: MEM_RESET */
  assert_int_equal(mi_prim_decommit(p, MiB), 0);
  assert_int_equal(mi_prim_commit(p, MiB, &is_zero), 0);
  assert_int_equal(p[0], 0);
  assert_int_equal(mi_prim_protect(p, MiB, true), 0);
  assert_int_equal(mi_prim_protect(p, MiB, false), 0);
  assert_int_equal(mi_prim_free(p, MiB), 0);
}

/* Large and huge pages need SeLockMemoryPrivilege: where the account lacks
   it (Wine, and most Windows accounts) the calls fail with EPERM and the
   allocator falls back; where granted, the memory must work. */
static void test_large_and_huge_pages_work_or_fall_back(void** state) {
  (void)state;
  void* p = NULL;
  int err = mi_prim_alloc_large_os_pages(2 * MiB, 2 * MiB, &p);
  print_message("large pages (minimum %zu): %s (error %d)\n", (size_t)GetLargePageMinimum(),
                err == 0 ? "granted" : "refused", err);
  if (err == 0) {
    memset(p, 1, 2 * MiB);
    assert_int_equal(mi_prim_free(p, 2 * MiB), 0);
  } else {
    assert_true(err == EPERM || err == ENOMEM || err == ENOTSUP);
  }
  err = mi_prim_alloc_huge_os_pages((size_t)1 << 30, &p);
  print_message("huge pages: %s (error %d)\n", err == 0 ? "granted" : "refused", err);
  if (err == 0) assert_int_equal(mi_prim_free(p, (size_t)1 << 30), 0);
  else assert_true(err == EPERM || err == ENOMEM || err == ENOTSUP);
  /* through the allocator: the fallback serves the request */
  mi_option_set(mi_option_allow_large_os_pages, 1);
  void* b = mi_malloc(5 * MiB);
  assert_non_null(b);
  mi_free(b);
}

static void test_report_paths_common_paths_taken(void** state) {
  (void)state;
  for (int i = 0; i < MI_WIN_PATH_COUNT; i++) {
    print_message("win-path: %-20s %llu\n", _mi_win_path_name((mi_win_path_t)i), _mi_win_path_count((mi_win_path_t)i));
  }
  /* the paths every Windows system takes */
  assert_true(_mi_win_path_count(MI_WIN_PLAIN) > 0);
  assert_true(_mi_win_path_count(MI_WIN_RELEASE) > 0);
  assert_true(_mi_win_path_count(MI_WIN_AT) > 0);
  assert_true(_mi_win_path_count(MI_WIN_PURGE_RECOMMIT) > 0);
  assert_true(_mi_win_path_count(MI_WIN_INJECTED) > 0);
  assert_true(_mi_win_path_count(MI_WIN_ALIGNED_VA2) + _mi_win_path_count(MI_WIN_ALIGNED_PLACED) > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_win_error_codes_map_oom_to_enomem_others_not),
      cmocka_unit_test(test_injected_windows_codes_set_and_mapped_back),
      cmocka_unit_test(test_release_interior_pointer_frees_whole_reservation),
      cmocka_unit_test(test_aligned_reservations_land_where_asked),
      cmocka_unit_test(test_purge_reads_zero),
      cmocka_unit_test(test_large_and_huge_pages_work_or_fall_back),
      cmocka_unit_test(test_report_paths_common_paths_taken),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
