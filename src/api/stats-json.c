/* The statistics as JSON: upstream mimalloc's layout (its keys, order and
   line breaks, so that tools written for it read ours), then what only
   this allocator has: its MI_STAT level, the secure build's figures and
   the fault-injection build's counters.

   The text is written from one copy of the struct, twice if need be: once
   to measure, once into the buffer; so a result is never cut short, and
   the allocation of the result is not in the figures it shows. */
#include "api.h"

#include <stdarg.h>
#include <stdio.h>

/* Everything the text shows, read once: the second writing of a result
   (measured, then written) shows the same figures. */
typedef struct mi_json_input_s {
  const mi_stats_t* stats;
  bool process;   /* the process's figures (a heap's share has none) */
  size_t info[8]; /* mi_process_info's, in its order */
  mi_secure_stats_t secure;
  mi_fault_counters_t fault;
} mi_json_input_t;

/* Writes what fits and counts everything: `len` is the whole text's length. */
typedef struct mi_json_s {
  char* buf;
  size_t size;
  size_t len;
} mi_json_t;

static void mi_json_add(mi_json_t* j, const char* fmt, ...) mi_attr_printf(2, 3);
static void mi_json_add(mi_json_t* j, const char* fmt, ...) {
  char line[256];
  va_list args;
  va_start(args, fmt);
  /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above; clang 14 misreads it */
  int n = vsnprintf(line, sizeof(line), fmt, args);
  va_end(args);
  if (n <= 0) return;
  size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1; /* lines are short: never cut */
  if (j->buf != NULL && j->len + len < j->size) memcpy(j->buf + j->len, line, len + 1);
  j->len += len;
}

static void mi_json_count(mi_json_t* j, const char* name, const mi_stat_count_t* c) {
  mi_json_add(j, "  \"%s\": { \"total\": %lld, \"peak\": %lld, \"current\": %lld },\n", name, (long long)c->total,
              (long long)c->peak, (long long)c->current);
}

static void mi_json_counter(mi_json_t* j, const char* name, const mi_stat_counter_t* c) {
  mi_json_add(j, "  \"%s\": %lld,\n", name, (long long)c->total);
}

/* the page size upstream gives a bin's blocks, and ours: small up to 8 KiB,
   medium up to MI_MEDIUM_BLOCK_MAX, none (a segment of its own) above */
static size_t mi_json_page_size(size_t block_size) {
  if (block_size <= MI_SMALL_BLOCK_MAX) return MI_SMALL_PAGE_SIZE;
  if (block_size <= MI_MEDIUM_BLOCK_MAX) return MI_MEDIUM_PAGE_SIZE;
  return 0;
}

static void mi_json_bins(mi_json_t* j, const char* name, const mi_stat_count_t* bins) {
  mi_json_add(j, "  \"%s\": [\n", name);
  for (size_t bin = 0; bin <= MI_BIN_HUGE; bin++) {
    size_t bsize = mi_stats_get_bin_size(bin);
    mi_json_add(
        j, "    { \"total\": %lld, \"peak\": %lld, \"current\": %lld, \"block_size\": %zu, \"page_size\": %zu }%s\n",
        (long long)bins[bin].total, (long long)bins[bin].peak, (long long)bins[bin].current, bsize,
        bin == MI_BIN_HUGE ? (size_t)0 : mi_json_page_size(bsize), bin == MI_BIN_HUGE ? "" : ",");
  }
  mi_json_add(j, "  ],\n");
}

static void mi_json_chunk_bins(mi_json_t* j, const mi_stat_count_t* bins) {
  static const char* const names[MI_CBIN_COUNT] = {"S", "X", "M", "L", "H", " "};
  mi_json_add(j, "  \"chunk_bins\": [\n");
  for (size_t bin = 0; bin < MI_CBIN_COUNT; bin++) {
    mi_json_add(j, "    { \"total\": %lld, \"peak\": %lld, \"current\": %lld, \"bin\": \"%s\" }%s\n",
                (long long)bins[bin].total, (long long)bins[bin].peak, (long long)bins[bin].current, names[bin],
                bin + 1 == MI_CBIN_COUNT ? "" : ",");
  }
  mi_json_add(j, "  ],\n");
}

static void mi_json_secure(mi_json_t* j, const mi_secure_stats_t* secure) {
  const mi_secure_stats_t s = *secure;
  mi_json_add(j, "  \"secure\": {\n");
  mi_json_add(j, "    \"reports\": %lld,\n", (long long)s.reports);
  mi_json_add(j, "    \"quarantine_blocks\": %lld,\n", (long long)s.quarantine_blocks);
  mi_json_add(j, "    \"quarantine_capacity\": %lld,\n", (long long)s.quarantine_capacity);
  mi_json_add(j, "    \"large_quarantine_blocks\": %lld,\n", (long long)s.large_quarantine_blocks);
  mi_json_add(j, "    \"guarded_quarantine_blocks\": %lld,\n", (long long)s.guarded_quarantine_blocks);
  mi_json_add(j, "    \"guarded_live\": %lld,\n", (long long)s.guarded_live);
  mi_json_add(j, "    \"guarded_total\": %lld,\n", (long long)s.guarded_total);
  mi_json_add(j, "    \"guard_pages_set\": %lld,\n", (long long)s.guard_pages_set);
  mi_json_add(j, "    \"held_pages\": %lld\n", (long long)s.held_pages);
  mi_json_add(j, "  },\n");
}

static void mi_json_fault(mi_json_t* j, const mi_fault_counters_t* fault) {
  const mi_fault_counters_t c = *fault;
  mi_json_add(j, "  \"fault\": {\n    \"calls\": {");
  for (int k = 0; k < (int)mi_fault_kind_count; k++) {
    mi_json_add(j, "%s \"%s\": %llu", k == 0 ? "" : ",", mi_fault_kind_name((mi_fault_kind_t)k), c.calls[k]);
  }
  mi_json_add(j, " },\n    \"injected\": {");
  for (int k = 0; k < (int)mi_fault_kind_count; k++) {
    mi_json_add(j, "%s \"%s\": %llu", k == 0 ? "" : ",", mi_fault_kind_name((mi_fault_kind_t)k), c.injected[k]);
  }
  mi_json_add(j, " },\n    \"events\": {");
  for (int e = 0; e < (int)mi_fault_event_count; e++) {
    mi_json_add(j, "%s \"%s\": %llu", e == 0 ? "" : ",", mi_fault_event_name((mi_fault_event_t)e), c.events[e]);
  }
  mi_json_add(j, " },\n    \"os_reserved\": %lld\n  },\n", c.os_reserved);
}

static void mi_json_write(mi_json_t* j, const mi_json_input_t* in) {
  const mi_stats_t* stats = in->stats;
  mi_json_add(j, "{\n");
  mi_json_add(j, "  \"stat_version\": %d,\n", MI_STAT_VERSION);
  mi_json_add(j, "  \"mimalloc_version\": %d,\n", mi_version());
  const size_t* info = in->info;
  mi_json_add(j, "  \"process\": {\n");
  mi_json_add(j, "    \"elapsed_msecs\": %zu,\n    \"user_msecs\": %zu,\n    \"system_msecs\": %zu,\n", info[0],
              info[1], info[2]);
  mi_json_add(j, "    \"page_faults\": %zu,\n    \"rss_current\": %zu,\n    \"rss_peak\": %zu,\n", info[7], info[3],
              info[4]);
  mi_json_add(j, "    \"commit_current\": %zu,\n    \"commit_peak\": %zu\n  },\n", info[5], info[6]);
#define MI_STAT_COUNT(name) mi_json_count(j, #name, &stats->name);
#define MI_STAT_COUNTER(name) mi_json_counter(j, #name, &stats->name);
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  mi_json_bins(j, "malloc_bins", stats->malloc_bins);
  mi_json_bins(j, "page_bins", stats->page_bins);
  mi_json_chunk_bins(j, stats->chunk_bins);
  mi_json_add(j, "  \"stat_level\": %d,\n", MI_STAT);
  if (MI_SECURE && in->process) mi_json_secure(j, &in->secure);
  if (mi_fault_available() && in->process) mi_json_fault(j, &in->fault);
  mi_json_add(j, "  \"allocator\": \"mimalloc-pprof\"\n}\n");
}

/* Into `buf` (zeroed first; NULL when the text does not fit), or into
   memory from mi_malloc when `buf` is NULL. */
static char* mi_json_emit(const mi_stats_t* stats, bool process, size_t buf_size, char* buf) {
  mi_json_input_t in;
  memset(&in, 0, sizeof(in));
  in.stats = stats;
  in.process = process;
  if (process) {
    mi_process_info(&in.info[0], &in.info[1], &in.info[2], &in.info[3], &in.info[4], &in.info[5], &in.info[6],
                    &in.info[7]);
    if (MI_SECURE) _mi_secure_stats_get(&in.secure);
    mi_fault_get_counters(&in.fault);
  }
  mi_json_t j = {buf, buf_size, 0};
  if (buf != NULL) {
    if (buf_size == 0) return NULL;
    memset(buf, 0, buf_size);
    mi_json_write(&j, &in);
    if (j.len >= buf_size) {
      memset(buf, 0, buf_size);
      return NULL;
    }
    return buf;
  }
  mi_json_write(&j, &in); /* measure */
  size_t size = j.len + 1;
  char* out = (char*)mi_malloc(size);
  if (out == NULL) return NULL;
  j = (mi_json_t){out, size, 0};
  mi_json_write(&j, &in);
  return out;
}

char* mi_stats_as_json(mi_stats_t* stats, size_t buf_size, char* buf) {
  if (!_mi_stats_valid(stats)) return NULL;
  return mi_json_emit(stats, false, buf_size, buf);
}

char* mi_stats_get_json(size_t buf_size, char* buf) {
  mi_stats_t stats;
  _mi_stats_fill(&stats);
  return mi_json_emit(&stats, true, buf_size, buf);
}

char* mi_heap_stats_get_json(mi_heap_t* heap, size_t buf_size, char* buf) {
  mi_stats_t stats;
  mi_stats_init(&stats);
  if (!mi_heap_stats_get(heap, &stats)) return NULL;
  return mi_json_emit(&stats, false, buf_size, buf);
}

/* cppcheck-suppress constParameter */
char* mi_subproc_stats_get_json(mi_subproc_id_t subproc, size_t buf_size, char* buf) {
  if (subproc != mi_subproc_main()) return NULL;
  return mi_stats_get_json(buf_size, buf);
}

void mi_heap_stats_print_out(mi_heap_t* heap, mi_output_fun* out, void* arg) {
  char* text = mi_heap_stats_get_json(heap, 0, NULL);
  if (text == NULL) return;
  _mi_fputs(out, arg, NULL, text);
  mi_free(text);
}
