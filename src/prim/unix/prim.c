/* POSIX implementation of the OS contract in prim.h (Linux first, other
   POSIX systems where the calls exist): memory. The rest of the contract is
   in sys.c (clock, random, process, output, files, stacks) and thread.c
   (locks, threads, signals, fork). */
#include "unix.h"

mi_prim_config_t _mi_unix_config;
int64_t _mi_unix_start_ms;

void mi_prim_init(mi_prim_config_t* config) {
  long ps = sysconf(_SC_PAGESIZE);
  config->page_size = (ps > 0 ? (size_t)ps : 4096);
  config->alloc_granularity = config->page_size;
  config->large_page_size = (size_t)2 * 1024 * 1024;
  config->has_overcommit = true;
  config->has_partial_free = true;
#if defined(MADV_FREE)
  config->has_madv_free = true;
#else
  config->has_madv_free = false;
#endif
  _mi_unix_config = *config;
  _mi_unix_start_ms = mi_prim_clock_now();
}

static void* mi_prim_mmap(mi_fault_kind_t kind, void* hint, size_t size, int prot, int flags) {
  if (mi_prim_fault(kind)) return MAP_FAILED;
  void* p = mmap(hint, size, prot, flags, -1, 0);
  if (p != MAP_FAILED && (flags & MAP_FIXED) == 0) mi_fault_reserved((long long)size);
  return p;
}

/* Aligned requests are placed at hint addresses that walk upward from 2 TiB
   in steps of the alignment, so the kernel usually returns them aligned and
   the caller need not over-reserve and trim.
   Not under AddressSanitizer (MI_TRACK_ASAN): the shadow of a range that was
   poisoned stays resident after the range is unmapped, and is reused only if
   the address is. The walk never reuses one until it wraps: from 16 TiB (the
   end of ASan's shadow, where the hints start to be taken) each mapping gets
   fresh addresses, and the process grew by an eighth of all it ever mapped
   (1 GB per 200 fuzz inputs, docs/fuzzing.md). The kernel's placement reuses
   what was given back. */
#if INTPTR_MAX > INT32_MAX && !MI_TRACK_ASAN
#define MI_HINT_BASE ((uintptr_t)2 << 40)
#define MI_HINT_MAX ((uintptr_t)30 << 40)
static _Atomic(uintptr_t) prim_aligned_hint;

static void* mi_prim_aligned_hint(size_t size, size_t try_alignment) {
  if (try_alignment < ((size_t)1 << 20) || (try_alignment & (try_alignment - 1)) != 0) return NULL;
  size = (size + try_alignment - 1) & ~(try_alignment - 1);
  uintptr_t hint = atomic_fetch_add_explicit(&prim_aligned_hint, size, memory_order_relaxed);
  if (hint == 0 || hint > MI_HINT_MAX) {
    uintptr_t expected = hint + size;
    atomic_compare_exchange_strong_explicit(&prim_aligned_hint, &expected, MI_HINT_BASE + size, memory_order_relaxed,
                                            memory_order_relaxed);
    hint = MI_HINT_BASE;
  }
  return (void*)((hint + try_alignment - 1) & ~(try_alignment - 1));
}
#else
static void* mi_prim_aligned_hint(size_t size, size_t try_alignment) {
  (void)size;
  (void)try_alignment;
  return NULL;
}
#endif

int mi_prim_alloc(size_t size, size_t try_alignment, bool commit, bool allow_large, bool* is_large, void** addr) {
  *is_large = false;
  *addr = NULL;
  int prot = (commit ? PROT_READ | PROT_WRITE : PROT_NONE);
  void* hint = mi_prim_aligned_hint(size, try_alignment);
  if (hint != NULL && mi_fault_misalign()) hint = (uint8_t*)hint + _mi_unix_config.page_size;
  void* p = mi_prim_mmap(mi_fault_reserve, hint, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
  if (p == MAP_FAILED) {
    return mi_prim_errno(); /* fault path */
  }
#if defined(MADV_HUGEPAGE)
  if (allow_large && commit && _mi_unix_config.large_page_size != 0 && size >= _mi_unix_config.large_page_size) {
    /* transparent huge pages: a hint; failure just means normal pages */
    if (madvise(p, size, MADV_HUGEPAGE) == 0) *is_large = true;
  }
#else
  (void)allow_large;
#endif
  *addr = p;
  return 0;
}

int mi_prim_alloc_at(void* addr, size_t size, bool commit) {
  /* munmap gives back any part of a mapping: os.c trims instead */
  (void)addr;
  (void)size;
  (void)commit;
  return ENOTSUP;
}

int mi_prim_free(void* addr, size_t size) {
  if (mi_prim_fault(mi_fault_release) || munmap(addr, size) != 0) {
    return mi_prim_errno(); /* fault path */
  }
  mi_fault_reserved(-(long long)size);
  return 0;
}

int mi_prim_commit(void* addr, size_t size, bool* is_zero) {
  /* decommitted ranges are fresh mappings (see decommit): they read as zero */
  *is_zero = true;
  if (mi_prim_fault(mi_fault_commit) || mprotect(addr, size, PROT_READ | PROT_WRITE) != 0) {
    return mi_prim_errno(); /* fault path */
  }
  return 0;
}

int mi_prim_decommit(void* addr, size_t size) {
  /* replacing the mapping drops its pages and its commit charge at once */
  void* p =
      mi_prim_mmap(mi_fault_decommit, addr, size, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
  if (p == MAP_FAILED) {
    return mi_prim_errno(); /* fault path */
  }
  return 0;
}

int mi_prim_purge(void* addr, size_t size, bool allow_lazy, bool* is_zero) {
  *is_zero = false;
  bool failed = mi_prim_fault(mi_fault_purge);
#if defined(MADV_FREE)
  if (!failed && allow_lazy && madvise(addr, size, MADV_FREE) == 0) return 0;
#else
  (void)allow_lazy;
#endif
  if (failed || madvise(addr, size, MADV_DONTNEED) != 0) {
    return mi_prim_errno(); /* fault path */
  }
  *is_zero = true;
  return 0;
}

int mi_prim_protect(void* addr, size_t size, bool protect) {
  int prot = (protect ? PROT_NONE : PROT_READ | PROT_WRITE);
  if (mi_prim_fault(mi_fault_protect) || mprotect(addr, size, prot) != 0) {
    return mi_prim_errno(); /* fault path */
  }
  return 0;
}

void mi_prim_hint_huge_pages(void* addr, size_t size, bool on) {
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  if (_mi_unix_config.large_page_size != 0 && size >= _mi_unix_config.large_page_size) {
    (void)madvise(addr, size, on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  }
#else
  (void)addr;
  (void)size;
  (void)on;
#endif
}

void mi_prim_thp_disable(void) {
#if defined(__linux__) && defined(PR_SET_THP_DISABLE)
  (void)prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); /* a kernel without it keeps its setting */
#endif
}

int mi_prim_resident(const void* addr, size_t size, size_t* resident) {
  *resident = 0;
#if defined(__linux__) || defined(__APPLE__) || defined(__FreeBSD__)
  /* a vector of 256 pages at a time: bounded stack, whatever the range */
  unsigned char vec[256];
  const uint8_t* p = (const uint8_t*)addr;
  const uint8_t* end = p + size;
  while (p < end) {
    size_t len = (size_t)(end - p);
    if (len > sizeof(vec) * _mi_unix_config.page_size) len = sizeof(vec) * _mi_unix_config.page_size;
    if (mi_prim_fault(mi_fault_resident) || mincore((void*)p, len, (void*)vec) != 0) {
      return mi_prim_errno(); /* fault path */
    }
    size_t pages = (len + _mi_unix_config.page_size - 1) / _mi_unix_config.page_size;
    for (size_t i = 0; i < pages; i++) *resident += (vec[i] & 1);
    p += len;
  }
  return 0;
#else
  (void)addr;
  (void)size;
  return ENOTSUP;
#endif
}

int mi_prim_alloc_huge_os_pages(size_t size, void** addr) {
  *addr = NULL;
#if defined(MAP_HUGETLB) && defined(MAP_HUGE_SHIFT)
  /* no MAP_NORESERVE: without a reservation a later touch of a page the
     pool cannot supply kills the process with SIGBUS; with one, mmap fails */
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (30 << MAP_HUGE_SHIFT);
  void* p = mi_prim_mmap(mi_fault_huge, NULL, size, PROT_READ | PROT_WRITE, flags);
  if (p == MAP_FAILED) {
    return mi_prim_errno(); /* fault path */
  }
  *addr = p;
  return 0;
#else
  (void)size;
  return ENOTSUP;
#endif
}

int mi_prim_alloc_large_os_pages(size_t size, size_t try_alignment, void** addr) {
  *addr = NULL;
#if defined(MAP_HUGETLB) && defined(MAP_HUGE_SHIFT)
  /* explicit 2 MiB pages: pinned, and only there if the administrator set some aside */
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (21 << MAP_HUGE_SHIFT); /* reserved: see above */
  void* p =
      mi_prim_mmap(mi_fault_large, mi_prim_aligned_hint(size, try_alignment), size, PROT_READ | PROT_WRITE, flags);
  if (p == MAP_FAILED) {
    return mi_prim_errno(); /* fault path */
  }
  *addr = p;
  return 0;
#else
  (void)size;
  (void)try_alignment;
  return ENOTSUP;
#endif
}
