/* The process's statistics as a table (mi_stats_print_out, mi_stats_print,
   MIMALLOC_SHOW_STATS at exit), laid out as mimalloc 2.4.1's own table so
   that what reads upstream's reads ours: the same header, row labels, row
   order, column widths and units. Figures come from the versioned struct
   (stats-api.c), so the table and the JSON tell the same numbers. A row we
   keep no figure for prints 0, as upstream's unused rows do; ours that
   upstream lacks follow its last row. Row by row: docs/statistics.md. */
#include "heap.h"

#include <stdarg.h>
#include <stdio.h>

#define MI_TABLE_COLUMN 12 /* every figure is right-aligned in 12 characters */

/* One line of the table, handed to the output function whole. */
typedef struct mi_table_s {
  mi_output_fun* out;
  void* arg;
  char line[256];
  size_t len;
} mi_table_t;

static void mi_table_add(mi_table_t* t, const char* fmt, ...) mi_attr_printf(2, 3);
static void mi_table_add(mi_table_t* t, const char* fmt, ...) {
  if (t->len >= sizeof(t->line) - 1) return;
  va_list args;
  va_start(args, fmt);
  /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above; clang 14 misreads it */
  int n = vsnprintf(t->line + t->len, sizeof(t->line) - t->len, fmt, args);
  va_end(args);
  if (n > 0) t->len = (t->len + (size_t)n < sizeof(t->line) ? t->len + (size_t)n : sizeof(t->line) - 1);
}

static void mi_table_end_line(mi_table_t* t) {
  mi_table_add(t, "\n");
  _mi_fputs(t->out, t->arg, NULL, t->line);
  t->len = 0;
  t->line[0] = 0;
}

/* How a figure is written: bytes (KiB, MiB, GiB), a count in thousands
   (K, M, G), or a count in binary thousands (Ki, Mi, Gi). */
typedef enum mi_amount_e { MI_AMOUNT_BYTES, MI_AMOUNT_COUNT, MI_AMOUNT_COUNT_BINARY } mi_amount_t;

/* Below the first thousand the number, three spaces and the unit padded to
   three; above it one decimal and the scaled unit. The digits before the
   point then stand where a small number's do, in a right-aligned column. */
static void mi_amount_text(int64_t n, mi_amount_t kind, char* buf, size_t size) {
  const uint64_t base = (kind == MI_AMOUNT_COUNT ? 1000 : 1024);
  const char* suffix = (kind == MI_AMOUNT_BYTES ? "B" : " ");
  const uint64_t abs = (n < 0 ? (uint64_t)0 - (uint64_t)n : (uint64_t)n);
  if (abs < base) {
    (void)snprintf(buf, size, "%lld   %-3s", (long long)n, (n == 0 ? "" : suffix));
    return;
  }
  uint64_t divider = base;
  const char* magnitude = "K";
  if (abs >= divider * base) divider *= base, magnitude = "M";
  if (abs >= divider * base) divider *= base, magnitude = "G";
  const uint64_t tenths = abs / (divider / 10);
  char unit[8];
  (void)snprintf(unit, sizeof(unit), "%s%s%s", magnitude, (base == 1024 ? "i" : ""), suffix);
  (void)snprintf(buf, size, "%s%llu.%llu %-3s", (n < 0 ? "-" : ""), (unsigned long long)(tenths / 10),
                 (unsigned long long)(tenths % 10), unit);
}

static void mi_table_amount(mi_table_t* t, int64_t n, mi_amount_t kind) {
  char buf[32];
  mi_amount_text(n, kind, buf, sizeof(buf));
  mi_table_add(t, "%*s", MI_TABLE_COLUMN, buf);
}

static void mi_table_blank(mi_table_t* t, int columns) {
  mi_table_add(t, "%*s", MI_TABLE_COLUMN * columns, "");
}

static void mi_table_label(mi_table_t* t, const char* label) {
  mi_table_add(t, "%10s:", label);
}

static void mi_table_header(mi_table_t* t) {
  mi_table_add(t, "%10s: %11s %11s %11s %11s %11s", "heap stats", "peak   ", "total   ", "current   ", "block   ",
               "total#   ");
  mi_table_end_line(t);
}

/* After a row whose current figure we keep: "ok" when it is back to 0,
   else `not_ok` ("not all freed" for blocks; nothing for memory the
   process holds anyway). Where we do not keep it, no word. */
static void mi_table_status(mi_table_t* t, bool current_kept, int64_t current, const char* not_ok) {
  if (current_kept) mi_table_add(t, "  %s", (current == 0 ? "ok" : not_ok));
  mi_table_end_line(t);
}

/* peak, total and current in bytes, the block and count columns empty */
/* a count's peak, total and current, in that order (upstream's columns) */
static void mi_table_three(mi_table_t* t, const mi_stat_count_t* c, mi_amount_t kind) {
  mi_table_amount(t, c->peak, kind);
  mi_table_amount(t, c->total, kind);
  mi_table_amount(t, c->current, kind);
}

static void mi_table_bytes_row(mi_table_t* t, const char* label, const mi_stat_count_t* c, bool current_kept,
                               const char* not_ok) {
  mi_table_label(t, label);
  mi_table_three(t, c, MI_AMOUNT_BYTES);
  mi_table_blank(t, 2);
  mi_table_status(t, current_kept, c->current, not_ok);
}

static void mi_table_count_row(mi_table_t* t, const char* label, const mi_stat_count_t* c) {
  mi_table_label(t, label);
  mi_table_three(t, c, MI_AMOUNT_COUNT);
  mi_table_end_line(t);
}

static void mi_table_counter_row(mi_table_t* t, const char* label, int64_t n, mi_amount_t kind) {
  mi_table_label(t, label);
  mi_table_amount(t, n, kind);
  mi_table_end_line(t);
}

#if MI_STAT
/* An allocation row: in bytes when blocks were counted, else in binary
   counts (then all three are 0), as upstream writes its unused ones. */
static void mi_table_alloc_row(mi_table_t* t, const char* label, const mi_stat_count_t* c, int64_t count,
                               bool current_kept, const char* not_ok) {
  if (count != 0) {
    mi_table_bytes_row(t, label, c, current_kept, not_ok);
    return;
  }
  mi_table_label(t, label);
  mi_table_three(t, c, MI_AMOUNT_COUNT_BINARY);
  mi_table_blank(t, 2);
  mi_table_status(t, current_kept, c->current, not_ok);
}

/* Bytes handed out per upstream bin: our size classes are finer, each
   falls into the one bin that holds its block size, so a bin's bytes are
   its classes' counts times their own block sizes. */
static void mi_table_bin_bytes(int64_t bytes[MI_BIN_HUGE + 1]) {
  for (size_t bin = 0; bin <= MI_BIN_HUGE; bin++) bytes[bin] = 0;
  for (size_t cls = 1; cls <= MI_BIN_MEDIUM_MAX; cls++) {
    int64_t n = atomic_load_explicit(&_mi_stats.malloc_bins[cls], memory_order_relaxed);
    size_t block = _mi_bin_size(cls);
    bytes[_mi_stat_bin_of(block)] += n * (int64_t)block;
  }
}

/* Per bin: the bytes handed out, the bin's block size and the count (we
   keep totals only: peak and current print 0, with no status word); then
   the small and medium blocks ("binned"), the large and huge ("huge"), and
   both; with detailed statistics the bytes asked for. */
static void mi_table_allocations(mi_table_t* t, const mi_stats_t* st) {
  int64_t bytes[MI_BIN_HUGE + 1];
  mi_table_bin_bytes(bytes);
  mi_stat_count_t binned = {0, 0, 0};
  bool any = false;
  for (size_t bin = 0; bin <= MI_BIN_HUGE; bin++) {
    if (st->malloc_bins[bin].total <= 0) continue;
    any = true;
    binned.total += bytes[bin];
    char label[16];
    (void)snprintf(label, sizeof(label), "bin %3zu", bin);
    mi_table_label(t, label);
    mi_table_amount(t, 0, MI_AMOUNT_BYTES);
    mi_table_amount(t, bytes[bin], MI_AMOUNT_BYTES);
    mi_table_amount(t, 0, MI_AMOUNT_BYTES);
    mi_table_amount(t, (int64_t)_mi_stat_bin_size(bin), MI_AMOUNT_BYTES);
    mi_table_amount(t, st->malloc_bins[bin].total, MI_AMOUNT_COUNT);
    mi_table_status(t, false, 0, NULL);
  }
  if (any) {
    mi_table_end_line(t);
    mi_table_header(t);
  }
  mi_table_alloc_row(t, "binned", &binned, st->malloc_normal_count.total, false, NULL);
  mi_table_alloc_row(t, "huge", &st->malloc_huge, st->malloc_huge_count.total, true, "not all freed");
  mi_stat_count_t total = {binned.total + st->malloc_huge.total, 0, 0};
  mi_table_bytes_row(t, "total", &total, false, NULL);
#if MI_STAT >= 2
  mi_table_label(t, "malloc req");
  mi_table_blank(t, 1);
  mi_table_amount(t, st->malloc_requested.total, MI_AMOUNT_BYTES);
  mi_table_end_line(t);
  mi_table_end_line(t);
#endif
}
#endif

/* elapsed, then user and system time, page faults, peak RSS and peak commit */
static void mi_table_process(mi_table_t* t) {
  size_t elapsed, user, system, rss, peak_rss, commit, peak_commit, faults;
  mi_process_info(&elapsed, &user, &system, &rss, &peak_rss, &commit, &peak_commit, &faults);
  mi_table_label(t, "elapsed");
  mi_table_add(t, " %5zu.%03zu s", elapsed / 1000, elapsed % 1000);
  mi_table_end_line(t);
  char amount[32];
  mi_table_label(t, "process");
  mi_table_add(t, " user: %zu.%03zu s, system: %zu.%03zu s, faults: %zu, peak rss: ", user / 1000, user % 1000,
               system / 1000, system % 1000, faults);
  mi_amount_text((int64_t)peak_rss, MI_AMOUNT_BYTES, amount, sizeof(amount));
  mi_table_add(t, "%s", amount);
  if (peak_commit > 0) {
    mi_amount_text((int64_t)peak_commit, MI_AMOUNT_BYTES, amount, sizeof(amount));
    mi_table_add(t, ", peak commit: %s", amount);
  }
  mi_table_end_line(t);
  /* ours: the RSS now */
  mi_table_counter_row(t, "rss", (int64_t)rss, MI_AMOUNT_BYTES);
}

void mi_stats_print_out(mi_output_fun* out, void* arg) {
  mi_table_t t = {out, arg, {0}, 0};
  mi_stats_merge();
  mi_stats_t st;
  _mi_stats_fill(&st);
  mi_table_header(&t);
#if MI_STAT
  mi_table_allocations(&t, &st);
#endif
  mi_table_bytes_row(&t, "reserved", &st.reserved, true, "");
  mi_table_bytes_row(&t, "committed", &st.committed, true, "");
  mi_table_counter_row(&t, "reset", st.reset.total, MI_AMOUNT_BYTES);
  mi_table_counter_row(&t, "purged", st.purged.total, MI_AMOUNT_BYTES);
  mi_table_bytes_row(&t, "touched", &st.page_committed, false, NULL);
  mi_table_count_row(&t, "segments", &st.segments);
  mi_table_count_row(&t, "-abandoned", &st.segments_abandoned);
  mi_table_count_row(&t, "-cached", &st.segments_cache);
  mi_table_count_row(&t, "pages", &st.pages);
  mi_table_count_row(&t, "-abandoned", &st.pages_abandoned);
  mi_table_counter_row(&t, "-extended", st.pages_extended.total, MI_AMOUNT_COUNT);
  mi_table_counter_row(&t, "-retire", st.pages_retire.total, MI_AMOUNT_COUNT);
  mi_table_counter_row(&t, "arenas", st.arena_count.total, MI_AMOUNT_COUNT);
  mi_table_counter_row(&t, "-rollback", st.arena_rollback_count.total, MI_AMOUNT_COUNT);
  mi_table_counter_row(&t, "mmaps", st.mmap_calls.total, MI_AMOUNT_COUNT);
  mi_table_counter_row(&t, "commits", st.commit_calls.total, MI_AMOUNT_COUNT);
  mi_table_counter_row(&t, "resets", st.reset_calls.total, MI_AMOUNT_COUNT);
  mi_table_counter_row(&t, "purges", st.purge_calls.total, MI_AMOUNT_COUNT);
  mi_table_counter_row(&t, "guarded", st.malloc_guarded_count.total, MI_AMOUNT_COUNT);
  mi_table_count_row(&t, "threads", &st.threads);
  mi_table_label(&t, "searches"); /* page searches per allocation: not kept */
  mi_table_add(&t, " %5d.%d avg", 0, 0);
  mi_table_end_line(&t);
  mi_table_label(&t, "numa nodes"); /* one node here: no NUMA placement */
  mi_table_add(&t, " %5d", 1);
  mi_table_end_line(&t);
  mi_table_process(&t);
  /* ours, after upstream's rows */
  mi_stat_count_t huge_blocks;
  huge_blocks.total = atomic_load_explicit(&_mi_stats.large.total, memory_order_relaxed);
  huge_blocks.peak = atomic_load_explicit(&_mi_stats.large.peak, memory_order_relaxed);
  huge_blocks.current = atomic_load_explicit(&_mi_stats.large.current, memory_order_relaxed);
  mi_table_count_row(&t, "huge#", &huge_blocks);
  mi_table_counter_row(&t, "reclaimed", st.pages_reclaim_on_alloc.total, MI_AMOUNT_COUNT);
  char version[32];
  _mi_version_string(version, sizeof(version));
  /* the pid tells apart the tables of a process tree printing to one stream */
  mi_table_label(&t, "allocator");
  mi_table_add(&t, " mimalloc-pprof %s, secure %d, pid %ld", version, MI_SECURE, (long)mi_prim_getpid());
  mi_table_end_line(&t);
}

/* `out` is an mi_output_fun* (mimalloc's older signature), called with arg NULL. */
void mi_stats_print(void* out) {
  mi_output_fun* fun = NULL;
  memcpy(&fun, &out, sizeof(fun)); /* a function pointer passed as void*: C forbids the cast */
  mi_stats_print_out(fun, NULL);
}

void _mi_stats_print_at_exit(void) {
  mi_stats_print_out(NULL, NULL);
}
