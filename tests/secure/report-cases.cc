// The secure build's reports, one misuse a run (tests/secure/check-reports.py
// runs each in a child and reads its report): `report-cases KIND` misuses a
// block and is aborted; `report-cases KIND clean` does the same calls
// without the misuse and exits 0, silent. Each kind's block is allocated,
// freed and misused by functions of its own (alloc_for_*, free_for_*,
// misuse_*), so the report's stack sections can be checked by name. Built
// -g -O0 -fno-omit-frame-pointer; the functions are extern "C" and never
// inlined, so their names read as written.
#include <mimalloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#define CASE extern "C" __attribute__((noinline))

static volatile size_t sink;

CASE char* alloc_for_double_free(void) {
  return static_cast<char*>(malloc(48));
}
CASE void free_for_double_free(char* p) {
  free(p);
}
CASE void misuse_double_free(char* p, bool misuse) {
  if (misuse) free(p);
}

CASE char* alloc_for_overflow(void) {
  return static_cast<char*>(malloc(48));
}
CASE void misuse_overflow(char* p, bool misuse) {
  memset(p, 'x', misuse ? 51 : 48); /* 3 bytes past the 48 asked for */
}
CASE void free_for_overflow(char* p) {
  free(p);
}

CASE char* alloc_for_interior_free(void) {
  return static_cast<char*>(malloc(100));
}
CASE void misuse_interior_free(char* p, bool misuse) {
  free(misuse ? p + 16 : p);
}

CASE char* alloc_for_stale_write(void) {
  return static_cast<char*>(malloc(48));
}
CASE void free_for_stale_write(char* p) {
  free(p);
}
CASE void misuse_stale_write(char* p, bool misuse) {
  if (misuse) p[20] = 1;
}
/* the freed block is checked when it is handed out again: allocate its
   size until it is (the quarantine lets it go at a random later free) */
CASE void reuse_for_stale_write(void) {
  for (int i = 0; i < 1000000; i++) free(malloc(48));
}

CASE char* alloc_for_freed_use(void) {
  return static_cast<char*>(malloc(48));
}
CASE void free_for_freed_use(char* p) {
  free(p);
}
CASE void misuse_freed_use(char* p, bool misuse) {
  if (misuse) sink = mi_usable_size(p);
}

CASE char* alloc_for_kind_mismatch(void) {
  return new char[40];
}
CASE void misuse_kind_mismatch(char* p, bool misuse) {
  if (misuse) {
    ::operator delete(static_cast<void*>(p)); /* new[] freed by delete */
  } else {
    delete[] p;
  }
}

CASE char* alloc_for_sized_delete(void) {
  return static_cast<char*>(::operator new(40));
}
CASE void misuse_sized_delete(char* p, bool misuse) {
  ::operator delete(static_cast<void*>(p), misuse ? 32 : 40);
}

CASE char* alloc_for_aligned_delete(void) {
  return static_cast<char*>(::operator new(40, std::align_val_t(64)));
}
CASE void misuse_aligned_delete(char* p, bool misuse) {
  /* 48: no alignment (not a power of two) the block can have been made with */
  ::operator delete(static_cast<void*>(p), std::align_val_t(misuse ? 48 : 64));
}

CASE mi_heap_t* alloc_for_invalid_heap(void) {
  return mi_heap_new();
}
CASE void free_for_invalid_heap(mi_heap_t* heap) {
  mi_heap_delete(heap);
}
CASE void misuse_invalid_heap(mi_heap_t* heap, bool misuse) {
  if (misuse) sink = reinterpret_cast<size_t>(mi_heap_malloc(heap, 32));
}

/* faults (the fault handler's reports): run with
   MIMALLOC_GUARDED_SAMPLE_RATE=1 for the guarded one */
CASE char* alloc_for_guarded_overflow(void) {
  return static_cast<char*>(malloc(48));
}
CASE void misuse_guarded_overflow(char* p, bool misuse) {
  p[misuse ? 48 + 20 : 47] = 'x'; /* 20 past the end: on the guard page */
}

CASE char* alloc_for_guarded_freed_use(void) {
  return static_cast<char*>(malloc(48));
}
CASE void free_for_guarded_freed_use(char* p) {
  free(p);
}
CASE void misuse_guarded_freed_use(char* p, bool misuse) {
  if (misuse) sink = static_cast<size_t>(p[5]);
}

CASE char* alloc_for_large_freed_use(void) {
  return static_cast<char*>(malloc(1 << 20));
}
CASE void free_for_large_freed_use(char* p) {
  free(p);
}
CASE void misuse_large_freed_use(char* p, bool misuse) {
  if (misuse) sink = static_cast<size_t>(p[5]);
}

CASE char* alloc_for_zero_size_use(void) {
  return static_cast<char*>(malloc(0));
}
CASE void misuse_zero_size_use(char* p, bool misuse) {
  if (misuse) sink = static_cast<size_t>(p[0]);
}

CASE char* alloc_for_destroyed_heap_use(mi_heap_t* heap) {
  return static_cast<char*>(mi_heap_malloc(heap, 48));
}
CASE void free_for_destroyed_heap_use(mi_heap_t* heap) {
  mi_heap_destroy(heap);
}
CASE void misuse_destroyed_heap_use(char* p, bool misuse) {
  if (misuse) sink = static_cast<size_t>(p[3]);
}

/* a write into a freed block's first word (where its free-list link goes):
   seen when the block leaves the thread's quarantine */
CASE char* alloc_for_link_write(void) {
  return static_cast<char*>(malloc(48));
}
CASE void free_for_link_write(char* p) {
  free(p);
}
CASE void misuse_link_write(char* p, bool misuse) {
  if (misuse) memset(p, 0x41, 8);
}
CASE void reuse_for_link_write(void) {
  for (int i = 0; i < 1000000; i++) free(malloc(48));
}

/* a write into a freed block's link once it is back on its page's free
   list (out of the quarantine): seen when the list hands it out again. A
   second block of the size is kept, so that the page stays in use. */
static char* keep_for_free_list;
CASE char* alloc_for_free_list(void) {
  keep_for_free_list = static_cast<char*>(malloc(48));
  return static_cast<char*>(malloc(48));
}
CASE void free_for_free_list(char* p) {
  free(p);
  mi_collect(true); /* the quarantine let go: the block is on its page's list */
}
CASE void misuse_free_list(char* p, bool misuse) {
  if (misuse) memset(p, 0x41, 8);
}
CASE void reuse_for_free_list(void) {
  for (int i = 0; i < 1000; i++) sink += reinterpret_cast<size_t>(malloc(48));
}

/* a write into the segment header of a live block: seen at its free */
CASE char* alloc_for_corrupted_header(void) {
  return static_cast<char*>(malloc(48));
}
CASE void misuse_corrupted_header(char* p, bool misuse) {
  uintptr_t* segment = reinterpret_cast<uintptr_t*>(reinterpret_cast<uintptr_t>(p) & ~((uintptr_t(4) << 20) - 1));
  if (misuse) segment[2] ^= 1; /* its cookie */
}
CASE void free_for_corrupted_header(char* p) {
  free(p);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: report-cases KIND [clean]\n");
    return 2;
  }
  const char* kind = argv[1];
  bool misuse = !(argc > 2 && strcmp(argv[2], "clean") == 0);
  if (strcmp(kind, "double-free") == 0) {
    char* p = alloc_for_double_free();
    free_for_double_free(p);
    misuse_double_free(p, misuse);
  } else if (strcmp(kind, "heap-buffer-overflow") == 0) {
    char* p = alloc_for_overflow();
    misuse_overflow(p, misuse);
    free_for_overflow(p);
  } else if (strcmp(kind, "interior-free") == 0) {
    misuse_interior_free(alloc_for_interior_free(), misuse);
  } else if (strcmp(kind, "use-after-free-write") == 0) {
    char* p = alloc_for_stale_write();
    free_for_stale_write(p);
    misuse_stale_write(p, misuse);
    reuse_for_stale_write();
  } else if (strcmp(kind, "freed-block-use") == 0) {
    char* p = alloc_for_freed_use();
    free_for_freed_use(p);
    misuse_freed_use(p, misuse);
  } else if (strcmp(kind, "kind-mismatch") == 0) {
    misuse_kind_mismatch(alloc_for_kind_mismatch(), misuse);
  } else if (strcmp(kind, "sized-delete-mismatch") == 0) {
    misuse_sized_delete(alloc_for_sized_delete(), misuse);
  } else if (strcmp(kind, "aligned-delete-mismatch") == 0) {
    misuse_aligned_delete(alloc_for_aligned_delete(), misuse);
  } else if (strcmp(kind, "invalid-heap") == 0) {
    mi_heap_t* heap = alloc_for_invalid_heap();
    free_for_invalid_heap(heap);
    misuse_invalid_heap(heap, misuse);
  } else if (strcmp(kind, "guarded-heap-buffer-overflow") == 0) {
    char* p = alloc_for_guarded_overflow();
    misuse_guarded_overflow(p, misuse);
    free(p);
  } else if (strcmp(kind, "guarded-use-after-free") == 0) {
    char* p = alloc_for_guarded_freed_use();
    free_for_guarded_freed_use(p);
    misuse_guarded_freed_use(p, misuse);
  } else if (strcmp(kind, "destroyed-heap-block-use") == 0) {
    mi_heap_t* heap = mi_heap_new();
    char* p = alloc_for_destroyed_heap_use(heap);
    free_for_destroyed_heap_use(heap);
    misuse_destroyed_heap_use(p, misuse);
  } else if (strcmp(kind, "use-after-free-link-write") == 0) {
    char* p = alloc_for_link_write();
    free_for_link_write(p);
    misuse_link_write(p, misuse);
    reuse_for_link_write();
  } else if (strcmp(kind, "corrupted-free-list") == 0) {
    char* p = alloc_for_free_list();
    free_for_free_list(p);
    misuse_free_list(p, misuse);
    reuse_for_free_list();
  } else if (strcmp(kind, "corrupted-header") == 0) {
    char* p = alloc_for_corrupted_header();
    misuse_corrupted_header(p, misuse);
    free_for_corrupted_header(p);
  } else if (strcmp(kind, "large-use-after-free") == 0) {
    char* p = alloc_for_large_freed_use();
    free_for_large_freed_use(p);
    misuse_large_freed_use(p, misuse);
  } else if (strcmp(kind, "zero-size-block-use") == 0) {
    char* p = alloc_for_zero_size_use();
    misuse_zero_size_use(p, misuse);
    free(p);
  } else {
    fprintf(stderr, "report-cases: no kind %s\n", kind);
    return 2;
  }
  return 0;
}
