/* ETW allocation events (MI_TRACK_ETW, docs/windows.md), checked in a
   build whose three ETW calls are the library's recording stub
   (MI_TRACK_ETW_STUB, src/events/etw-stub.h): Wine has no ETW session to
   read them from. Each event's descriptor is mimalloc's (id 100 or 101,
   version 1, level 4, nothing else) and its payload two UInt64, the
   program's pointer and the block's usable bytes, the same at the free as
   at the allocation and equal to what the memory events count; a
   reallocation is 101 for the old block then 100 for the new one; an
   aligned block's events carry the aligned pointer. The provider's GUID is
   mimalloc's, registered when the allocator is set up and unregistered at
   its exit; with the session off, or for a failure, nothing is written.
   Its positive control (ci/windows.sh): the allocation event planted with
   id 102 (MI_TRACK_ETW_PLANT_ID) must fail
   test_etw_alloc_event_100_descriptor_and_payload_exact. */
#include "../testutil.h"

#include <mimalloc/memory-events.h>

#include "events/etw-stub.h"

static size_t mark;

static int setup(void** state) {
  (void)state;
  mi_etw_stub_session(true);
  mark = mi_etw_stub_count();
  return 0;
}

static mi_etw_stub_record_t record(size_t i) {
  mi_etw_stub_record_t r;
  if (!mi_etw_stub_get(mark + i, &r)) fail_msg("no event %zu (written: %zu)", i, mi_etw_stub_count() - mark);
  return r;
}

static uint64_t payload_u64(const mi_etw_stub_record_t* r, size_t at) {
  uint64_t v;
  memcpy(&v, r->payload + at, sizeof(v));
  return v;
}

/* One event of mimalloc's: `id`, version 1, level 4, no channel, opcode,
   task or keyword; Address and Size, UInt64 each. */
static void expect_event(size_t i, uint16_t id, const void* p, uint64_t size) {
  mi_etw_stub_record_t r = record(i);
  assert_int_equal(r.id, id);
  assert_int_equal(r.version, 1);
  assert_int_equal(r.level, 4);
  assert_int_equal(r.channel, 0);
  assert_int_equal(r.opcode, 0);
  assert_int_equal(r.task, 0);
  assert_int_equal(r.keyword, 0);
  assert_int_equal(r.data_count, 2);
  assert_int_equal(r.data_size[0], 8);
  assert_int_equal(r.data_size[1], 8);
  assert_int_equal(payload_u64(&r, 0), (uint64_t)(uintptr_t)p);
  assert_int_equal(payload_u64(&r, 8), size);
}

static size_t written(void) {
  return mi_etw_stub_count() - mark;
}

/* the live bytes the memory events count: the ETW size must be their delta */
static uint64_t live_bytes(void) {
  mi_memory_snapshot_t_decl(s);
  assert_true(mi_memory_snapshot(&s));
  return s.live_bytes;
}

static void test_etw_provider_registered_guid_mimalloc(void** state) {
  (void)state;
  static const uint8_t want[16] = {0xbb, 0x4d, 0x8f, 0x13, 0x04, 0xee, 0x99, 0x48,
                                   0xaa, 0x0a, 0x57, 0x2a, 0xd4, 0x47, 0x57, 0x79};
  uint8_t guid[16];
  assert_true(mi_etw_stub_provider(guid));
  assert_memory_equal(guid, want, 16);
}

static void test_etw_alloc_event_100_descriptor_and_payload_exact(void** state) {
  (void)state;
  uint64_t before = live_bytes();
  void* p = mi_malloc(100);
  assert_non_null(p);
  uint64_t usable = live_bytes() - before;
  assert_true(usable >= mi_usable_size(p));
  assert_int_equal(written(), 1);
  expect_event(0, 100, p, usable);
  mi_free(p);
}

static void test_etw_free_event_101_same_address_and_size(void** state) {
  (void)state;
  void* p = mi_malloc(3000);
  mi_free(p);
  assert_int_equal(written(), 2);
  mi_etw_stub_record_t r0 = record(0);
  expect_event(1, 101, p, payload_u64(&r0, 8));
}

static void test_etw_realloc_free_then_alloc_pair(void** state) {
  (void)state;
  void* p = mi_malloc(100);
  mi_etw_stub_record_t r0 = record(0);
  uint64_t u1 = payload_u64(&r0, 8);
  void* q = mi_realloc(p, 50000); /* moves */
  assert_ptr_not_equal(q, p);
  mi_etw_stub_record_t r = record(2);
  uint64_t u2 = payload_u64(&r, 8);
  assert_true(u2 >= 50000);
  assert_int_equal(written(), 3);
  expect_event(1, 101, p, u1);
  expect_event(2, 100, q, u2);
  void* s = mi_realloc(q, 40000); /* stays */
  assert_ptr_equal(s, q);
  assert_int_equal(written(), 5);
  expect_event(3, 101, q, u2);
  expect_event(4, 100, q, u2);
  mi_free(s);
  expect_event(5, 101, q, u2);
}

static void test_etw_aligned_events_carry_aligned_pointer(void** state) {
  (void)state;
  void* p = mi_malloc_aligned(100, 4096);
  assert_true(tu_is_aligned(p, 4096));
  assert_int_equal(written(), 1);
  mi_etw_stub_record_t r0 = record(0);
  uint64_t size = payload_u64(&r0, 8);
  assert_true(size >= mi_usable_size(p));
  expect_event(0, 100, p, size);
  mi_free(p);
  expect_event(1, 101, p, size);
}

static void test_etw_session_off_or_failure_nothing_written(void** state) {
  (void)state;
  assert_null(mi_malloc(tu_opaque(PTRDIFF_MAX)));
  assert_null(mi_malloc_aligned(100, tu_opaque(3)));
  assert_int_equal(written(), 0);
  assert_true(mi_memory_tracking_set_enabled(false)); /* counting off too: the events' word disarmed */
  mi_etw_stub_session(false);
  void* p = mi_malloc(100);
  mi_free(p);
  assert_int_equal(written(), 0);
  mi_etw_stub_session(true);
  p = mi_malloc(100);
  mi_free(p);
  assert_int_equal(written(), 2);
  assert_true(mi_memory_tracking_set_enabled(true));
}

/* (last: the allocator's exit, which mi_process_done runs once) */
static void test_etw_provider_unregistered_at_exit(void** state) {
  (void)state;
  uint8_t guid[16];
  assert_true(mi_etw_stub_provider(guid));
  mi_process_done();
  assert_false(mi_etw_stub_provider(guid));
}

int main(void) {
  mi_option_set(mi_option_guarded_sample_rate, 0); /* (secure builds: no sample moves a test's block) */
  if (!mi_memory_tracking_set_enabled(true)) {
    printf("test-etw: the memory events are not built in\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_etw_provider_registered_guid_mimalloc, setup, NULL),
      cmocka_unit_test_setup_teardown(test_etw_alloc_event_100_descriptor_and_payload_exact, setup, NULL),
      cmocka_unit_test_setup_teardown(test_etw_free_event_101_same_address_and_size, setup, NULL),
      cmocka_unit_test_setup_teardown(test_etw_realloc_free_then_alloc_pair, setup, NULL),
      cmocka_unit_test_setup_teardown(test_etw_aligned_events_carry_aligned_pointer, setup, NULL),
      cmocka_unit_test_setup_teardown(test_etw_session_off_or_failure_nothing_written, setup, NULL),
      cmocka_unit_test_setup_teardown(test_etw_provider_unregistered_at_exit, setup, NULL),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
