/* The profiles' Rust names (src/dhat/demangle-rust.c): legacy and v0
   symbols read back as Rust writes them; anything else (C, C++, cut short,
   malformed) is refused, so the dump keeps the symbol as it is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "../../src/dhat/dhat.h"

static void expect_name(const char* sym, const char* want) {
  char out[512];
  bool ok = _mi_dhat_demangle_rust(sym, out, sizeof(out));
  if (!ok || strcmp(out, want) != 0) print_error("%s:\n  got  %s\n  want %s\n", sym, ok ? out : "(refused)", want);
  assert_true(ok);
  assert_string_equal(out, want);
}

static void expect_refused(const char* sym) {
  char out[512];
  assert_false(_mi_dhat_demangle_rust(sym, out, sizeof(out)));
}

static void test_demangle_rust_legacy_read_back(void** state) {
  (void)state;
  expect_name("_ZN4core3ptr13drop_in_place17h0123456789abcdefE", "core::ptr::drop_in_place");
  expect_name("_ZN5alloc3vec16Vec$LT$T$C$A$GT$4push17h0123456789abcdefE", "alloc::vec::Vec<T,A>::push");
  expect_name(
      "_ZN77_$LT$mimalloc_pprof..MiMalloc$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17haec9ebe652"
      "120fa9E",
      "<mimalloc_pprof::MiMalloc as core::alloc::global::GlobalAlloc>::alloc");
  expect_name("_ZN8pprof_go20rust_alloc_site_keep17h1111111111111111E", "pprof_go::rust_alloc_site_keep");
}

static void test_demangle_rust_v0_read_back(void** state) {
  (void)state;
  expect_name("_RNvMs4_NtCslNYArtu3iFV_5alloc7raw_vecNtB5_11RawVecInner15try_allocate_inCsduwmD7cSIQq_5gimli",
              "<alloc::raw_vec::RawVecInner>::try_allocate_in");
  expect_name("_RNCNvCs3mSbOeLENLV_4test8run_test0B3_", "test::run_test::{closure}");
  expect_name("_RNvCsfLfy6EI15iL_7___rustc12___rust_alloc", "__rustc::__rust_alloc");
  expect_name(
      "_RINvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace28___rust_begin_short_backtraceNCNvCs3mSbOeLENLV_4test8run_"
      "tests_0uEB1b_",
      "std::sys::backtrace::__rust_begin_short_backtrace::<test::run_test::{closure}, ()>");
  expect_name(
      "_RNSNvYNCINvNtNtCsjrHSEGnQ3l9_3std6thread9lifecycle15spawn_uncheckedNCNvCs3mSbOeLENLV_4test8run_tests_"
      "0uEs_0INtNtNtCsgEmfK2I1SDS_4core3ops8function6FnOnceuE9call_once6vtableB17_",
      "<std::thread::lifecycle::spawn_unchecked<test::run_test::{closure}, ()>::{closure} as "
      "core::ops::function::FnOnce<()>>::call_once::{shim:vtable}");
  /* types: a reference, a slice, an array with its length, a tuple */
  expect_name("_RINvCs1_3foo3barRShEB2_", "foo::bar::<&[u8]>");
  expect_name("_RINvCs1_3foo3barAhj4_EB2_", "foo::bar::<[u8; 4]>");
  expect_name("_RINvCs1_3foo3barThjEEB2_", "foo::bar::<(u8, usize)>");
}

static void test_demangle_rust_others_refused(void** state) {
  (void)state;
  expect_refused("malloc");
  expect_refused("main");
  expect_refused("_ZN3foo3barE");                      /* C++: no hash segment */
  expect_refused("_ZNSt6vectorIiSaIiEE9push_backEOi"); /* C++ */
  expect_refused("_ZN4core3ptr13drop_in");             /* cut short */
  expect_refused("_RNvCs1_3foo");                      /* cut short */
  expect_refused("_RB0_");                             /* a back-reference to itself */
  expect_refused("_RNvB1_3foo");                       /* a back-reference forward */
  expect_refused("_RZ");                               /* no such path */
  char small[8];
  assert_false(_mi_dhat_demangle_rust("_ZN4core3ptr13drop_in_place17h0123456789abcdefE", small, sizeof(small)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_demangle_rust_legacy_read_back),
      cmocka_unit_test(test_demangle_rust_v0_read_back),
      cmocka_unit_test(test_demangle_rust_others_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
