/* Test only (MI_TRACK_ETW_STUB, Windows): what the library's ETW calls
   would have passed to Windows, recorded in memory, so that a test can
   check each event's descriptor and payload without an ETW session (Wine
   has none). The stub's provider has a session listening from its
   registration on; mi_etw_stub_session switches it, through the enable
   callback the library registered. Used by tests/win/test-etw.c; plain C
   types only. */
#ifndef MI_ETW_STUB_H
#define MI_ETW_STUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../include/mimalloc.h"

#define MI_ETW_STUB_PAYLOAD_MAX 64

typedef struct mi_etw_stub_record_s {
  /* EVENT_DESCRIPTOR's fields */
  uint16_t id;
  uint8_t version;
  uint8_t channel;
  uint8_t level;
  uint8_t opcode;
  uint16_t task;
  uint64_t keyword;
  /* the EVENT_DATA_DESCRIPTORs: how many, each one's size, their bytes in a row */
  uint32_t data_count;
  uint32_t data_size[4];
  uint8_t payload[MI_ETW_STUB_PAYLOAD_MAX];
} mi_etw_stub_record_t;

/* The events written so far (`*out`: the i-th, if there is one). */
mi_decl_export size_t mi_etw_stub_count(void) mi_attr_noexcept;
mi_decl_export bool mi_etw_stub_get(size_t i, mi_etw_stub_record_t* out) mi_attr_noexcept;
/* The provider's registration: its GUID's 16 bytes (as GUID lays them out)
   and whether it is registered now. */
mi_decl_export bool mi_etw_stub_provider(uint8_t guid[16]) mi_attr_noexcept;
/* A session enables (or disables) the provider, as ETW would call back. */
mi_decl_export void mi_etw_stub_session(bool on) mi_attr_noexcept;

#endif
