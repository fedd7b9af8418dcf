/* Transparent huge pages for large blocks, where the program uses them in
   whole.

   With huge pages a fault maps 2 MiB instead of 4 KiB. A block of megabytes
   written in whole takes a fault every 4 KiB otherwise, each 2 to 3 µs in a
   virtual machine (`malloc-large`: 2.8 M faults, 1,400 with them; 2.7 s
   against 1.0 s). But a block the program touches a byte a page faults in
   2 MiB at every touch: bench/ `large` took 2.7 s and 272 MiB against 1.0 s
   and 30 MiB. Which kind of program this is cannot be told when a block is
   allocated; its large blocks tell by the time they are freed.

   So some large blocks are probes: their segment does not ask for huge pages,
   and the OS pages resident in it are counted (mincore, in up to
   MI_THP_WINDOWS windows of MI_THP_WINDOW spread over the block) when the
   block is handed out and again when it is freed. Of the pages that were not
   resident at first, the share resident at the end is how densely the
   program used the block; a running mean of it is kept for the process.
   While that mean is at least MI_THP_DENSE, the segments of large blocks ask
   for huge pages when they are handed out (one that asked takes it back when
   it falls), and only every MI_THP_PROBE_EVERY-th block handed out on memory
   that is not resident (fresh from the OS, or purged) is a probe; below it,
   every MI_THP_PROBE_SPARSE-th block is, and until something was measured,
   every block. A segment that asked cannot measure: one touch makes 2 MiB
   resident. Nor can memory that was resident already (a segment reused from
   the cache still committed): a probe with less than a quarter of its pages
   to measure tells nothing. The counting costs a system call a window, a
   microsecond or two against the milliseconds a block of megabytes takes to
   write (bench/ `large`: 1,900 calls in a run of 0.9 s).

   Small and medium segments never ask: their pages are purged in parts,
   which splits a huge page, and a huge page faulted in for a few small
   blocks is resident in whole. Secure builds ask as the default build does,
   and gain more: a freed large block past 4 MiB is given back at once there
   (secure-large.c), so each reuse faults it in again (`malloc-large`, secure:
   9.6x mimalloc 2.4.1 with 4 KiB faults, 1.6x with huge pages). */
#include "os.h"

#define MI_THP_WINDOWS 4
#define MI_THP_WINDOW ((size_t)256 << 10)
#define MI_THP_DENSE 128 /* of 256: half the pages measured were touched */
#define MI_THP_PROBE_EVERY 16
#define MI_THP_PROBE_SPARSE 4

/* in 256ths; -1: nothing measured yet. Updates race benignly: one may lose
   another's sample. */
static _Atomic(int) mi_thp_density = -1;
static _Atomic(size_t) mi_thp_handouts;

/* allow_thp=0: none for the process, not even where the system's setting
   is "always", as mimalloc does. */
void _mi_os_thp_init(void) {
  if (!mi_option_is_enabled(mi_option_allow_thp)) mi_prim_thp_disable();
}

static bool mi_thp_enabled(void) {
  return (_mi_option_get_fast(mi_option_allow_thp) != 0 && _mi_os_large_page_size() != 0);
}

/* The OS pages resident in the windows of a block; SIZE_MAX if the OS does
   not say. `*measured`: the pages the windows cover. */
size_t _mi_os_thp_resident(const void* start, size_t size, size_t* measured) {
  *measured = 0;
  size_t psize = _mi_os_page_size();
  uintptr_t first = _mi_align_up((uintptr_t)start, psize);
  uintptr_t end = ((uintptr_t)start + size) & ~(uintptr_t)(psize - 1);
  if (end <= first) return SIZE_MAX;
  size_t len = (size_t)(end - first);
  size_t windows = (len <= MI_THP_WINDOWS * MI_THP_WINDOW ? 1 : MI_THP_WINDOWS);
  size_t window = (windows == 1 ? len : MI_THP_WINDOW);
  size_t resident = 0;
  for (size_t i = 0; i < windows; i++) {
    size_t offset = (windows == 1 ? 0 : ((len - window) / (windows - 1) * i) & ~(psize - 1));
    size_t r;
    if (mi_prim_resident((const void*)(first + offset), window, &r) != 0) {
      return SIZE_MAX; /* fault path: not known */
    }
    resident += r;
  }
  *measured = windows * (window / psize);
  return resident;
}

/* A probe freed: `before` of its `measured` pages were resident when it was
   handed out, `after` now. */
void _mi_os_thp_note(size_t before, size_t after, size_t measured) {
  if (after == SIZE_MAX || after < before || measured - before < measured / 4) return;
  int sample = (int)((after - before) * 256 / (measured - before));
  int old = atomic_load_explicit(&mi_thp_density, memory_order_relaxed);
  atomic_store_explicit(&mi_thp_density, (old < 0 ? sample : (3 * old + sample) / 4), memory_order_relaxed);
}

/* A large block handed out, on memory that reads as zero (`clean`) or not:
   does its segment ask for huge pages, or measure, or neither? */
mi_thp_use_t _mi_os_thp_decide(bool clean) {
  if (!mi_thp_enabled()) return MI_THP_NONE;
  int density = atomic_load_explicit(&mi_thp_density, memory_order_relaxed);
  if (density < 0) return MI_THP_PROBE;
  if (density >= MI_THP_DENSE && !clean) return MI_THP_ASK;
  size_t turn = atomic_fetch_add_explicit(&mi_thp_handouts, 1, memory_order_relaxed);
  if (density >= MI_THP_DENSE) return (turn % MI_THP_PROBE_EVERY != 0 ? MI_THP_ASK : MI_THP_PROBE);
  return (turn % MI_THP_PROBE_SPARSE == 0 ? MI_THP_PROBE : MI_THP_NONE);
}

int _mi_os_thp_density(void) {
  return atomic_load_explicit(&mi_thp_density, memory_order_relaxed);
}

void _mi_os_hint_huge_pages(void* p, size_t size, bool on) {
  mi_prim_hint_huge_pages(p, size, on);
}
