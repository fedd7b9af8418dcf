/* Event Tracing for Windows (MI_TRACK_ETW, docs/windows.md): the events
   mimalloc's MI_TRACK_ETW writes, so that a WPR profile made for it
   (etw-mimalloc.wprp) records ours unchanged and Windows Performance
   Analyzer shows them as a custom heap's allocations.

   Provider "microsoft-windows-mimalloc", GUID
   138f4dbb-ee04-4899-aa0a-572ad4475779; event 100 an allocation, 101 a
   free, each version 1, level 4 (informational), no channel, opcode, task or
   keyword; payload Address (UInt64) then Size (UInt64): the pointer the
   program holds and the block's usable bytes, the same at the free as at
   the allocation. A reallocation writes 101 for the old block then 100 for
   the new one, as a trace pairs them by address.

   They are written where the memory events are told (events.c), which the
   observers' word arms only while a session has the provider enabled: the
   enable callback ETW calls sets it. Registered when the allocator is set
   up, unregistered at exit.

   With MI_TRACK_ETW_STUB (tests) the three calls are this file's own,
   recording what they were given (etw-stub.h). */
#include "events.h"

#if MI_TRACK_ETW
#include <windows.h>
#include <evntprov.h>
#include <evntrace.h> /* EVENT_CONTROL_CODE_* */

#if MI_TRACK_ETW_STUB
#include "etw-stub.h"
#endif

static const GUID mi_etw_provider = {0x138f4dbb, 0xee04, 0x4899, {0xaa, 0x0a, 0x57, 0x2a, 0xd4, 0x47, 0x57, 0x79}};

#if MI_TRACK_ETW_PLANT_ID
#define MI_ETW_ALLOC_ID 102 /* planted: the wrong id (tests/win/test-etw must fail) */
#else
#define MI_ETW_ALLOC_ID MI_ETW_EVENT_ALLOC
#endif
/* {Id, Version, Channel, Level, Opcode, Task, Keyword} */
static const EVENT_DESCRIPTOR mi_etw_alloc_desc = {MI_ETW_ALLOC_ID, 1, 0, 4, 0, 0, 0};
static const EVENT_DESCRIPTOR mi_etw_free_desc = {MI_ETW_EVENT_FREE, 1, 0, 4, 0, 0, 0};

_Atomic(bool) _mi_etw_listening;
static REGHANDLE mi_etw_handle;
static bool mi_etw_registered;

/* ---- The stub (tests) ------------------------------------------------------------- */
#if MI_TRACK_ETW_STUB
#define MI_ETW_STUB_MAX 4096
static mi_etw_stub_record_t mi_etw_stub_records[MI_ETW_STUB_MAX];
static _Atomic(size_t) mi_etw_stub_n;
static PENABLECALLBACK mi_etw_stub_callback;
static void* mi_etw_stub_context;
static GUID mi_etw_stub_guid;
static bool mi_etw_stub_registered;

static ULONG mi_etw_stub_register(LPCGUID guid, PENABLECALLBACK callback, PVOID context, PREGHANDLE handle) {
  mi_etw_stub_guid = *guid;
  mi_etw_stub_callback = callback;
  mi_etw_stub_context = context;
  mi_etw_stub_registered = true;
  *handle = (REGHANDLE)1;
  if (callback != NULL) callback(guid, EVENT_CONTROL_CODE_ENABLE_PROVIDER, 4, 0, 0, NULL, context);
  return ERROR_SUCCESS;
}

static ULONG mi_etw_stub_write(REGHANDLE handle, PCEVENT_DESCRIPTOR desc, ULONG count, PEVENT_DATA_DESCRIPTOR data) {
  (void)handle;
  size_t i = atomic_fetch_add_explicit(&mi_etw_stub_n, 1, memory_order_relaxed);
  if (i >= MI_ETW_STUB_MAX) return ERROR_SUCCESS; /* counted, not kept */
  mi_etw_stub_record_t* r = &mi_etw_stub_records[i];
  memset(r, 0, sizeof(*r));
  r->id = desc->Id;
  r->version = desc->Version;
  r->channel = desc->Channel;
  r->level = desc->Level;
  r->opcode = desc->Opcode;
  r->task = desc->Task;
  r->keyword = desc->Keyword;
  r->data_count = count;
  size_t at = 0;
  for (ULONG k = 0; k < count; k++) {
    if (k < 4) r->data_size[k] = data[k].Size;
    if (at + data[k].Size <= MI_ETW_STUB_PAYLOAD_MAX) {
      memcpy(r->payload + at, (const void*)(uintptr_t)data[k].Ptr, data[k].Size);
    }
    at += data[k].Size;
  }
  return ERROR_SUCCESS;
}

static ULONG mi_etw_stub_unregister(REGHANDLE handle) {
  (void)handle;
  mi_etw_stub_registered = false;
  return ERROR_SUCCESS;
}

size_t mi_etw_stub_count(void) {
  return atomic_load_explicit(&mi_etw_stub_n, memory_order_relaxed);
}

bool mi_etw_stub_get(size_t i, mi_etw_stub_record_t* out) {
  if (i >= mi_etw_stub_count() || i >= MI_ETW_STUB_MAX) return false;
  *out = mi_etw_stub_records[i];
  return true;
}

bool mi_etw_stub_provider(uint8_t guid[16]) {
  memcpy(guid, &mi_etw_stub_guid, 16);
  return mi_etw_stub_registered;
}

void mi_etw_stub_session(bool on) {
  if (mi_etw_stub_callback == NULL) return;
  mi_etw_stub_callback(&mi_etw_stub_guid, on ? EVENT_CONTROL_CODE_ENABLE_PROVIDER : EVENT_CONTROL_CODE_DISABLE_PROVIDER,
                       4, 0, 0, NULL, mi_etw_stub_context);
}

#define mi_etw_register_call mi_etw_stub_register
#define mi_etw_write_call mi_etw_stub_write
#define mi_etw_unregister_call mi_etw_stub_unregister
#else
#define mi_etw_register_call EventRegister
#define mi_etw_write_call EventWrite
#define mi_etw_unregister_call EventUnregister
#endif

/* ---- The provider ------------------------------------------------------------------ */

/* ETW calls it on its own thread when a session enables the provider, or
   disables it (a capture-state request changes nothing here). */
static void NTAPI mi_etw_enable_callback(LPCGUID source, ULONG control, UCHAR level, ULONGLONG any, ULONGLONG all,
                                         PEVENT_FILTER_DESCRIPTOR filter, PVOID context) {
  (void)source, (void)level, (void)any, (void)all, (void)filter, (void)context;
  if (control == EVENT_CONTROL_CODE_ENABLE_PROVIDER) {
    atomic_store_explicit(&_mi_etw_listening, true, memory_order_relaxed);
  } else if (control == EVENT_CONTROL_CODE_DISABLE_PROVIDER) {
    atomic_store_explicit(&_mi_etw_listening, false, memory_order_relaxed);
  } else {
    return;
  }
  _mi_events_rearm();
}

void _mi_etw_register(void) {
  if (mi_etw_registered) return;
  if (mi_etw_register_call(&mi_etw_provider, &mi_etw_enable_callback, NULL, &mi_etw_handle) == ERROR_SUCCESS) {
    mi_etw_registered = true;
  } else {
    _mi_warning_message("the ETW provider could not be registered: no ETW events\n");
  }
}

void _mi_etw_unregister(void) {
  if (!mi_etw_registered) return;
  mi_etw_registered = false;
  atomic_store_explicit(&_mi_etw_listening, false, memory_order_relaxed);
  _mi_events_rearm();
  (void)mi_etw_unregister_call(mi_etw_handle);
}

void _mi_etw_write(bool alloc, const void* p, uint64_t size) {
  uint64_t address = (uint64_t)(uintptr_t)p;
  EVENT_DATA_DESCRIPTOR data[2];
  EventDataDescCreate(&data[0], &address, sizeof(address));
  EventDataDescCreate(&data[1], &size, sizeof(size));
  (void)mi_etw_write_call(mi_etw_handle, alloc ? &mi_etw_alloc_desc : &mi_etw_free_desc, 2, data);
}

#endif
