/* The control of the alloc harness (docs/fuzzing.md, "The control
   harness"): the `mi_*` calls the fuzz programs make, answered by the C
   library's allocator (ASan's, in the harness build) instead of this one.
   Linked in place of libmimalloc, it runs the same programs with the same
   model checks, so that a campaign's memory and time can be split into the
   engine's and ASan's share and the allocator's: what the control harness
   costs, the allocator under test did not.

   Heaps are bookkeeping here: a table from each live block to its heap, the
   raw block and its end. Every reallocation moves (as ASan's own does);
   aligned blocks are carved from a larger raw block; ASan's usable size is
   the size asked for, which the model accepts. Sizes past FZ_CONTROL_MAX
   fail with ENOMEM before they reach the C library (ASan aborts on them). */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <mimalloc.h>

#define FZ_CONTROL_MAX ((size_t)1 << 36)
#define FZ_CONTROL_BUCKETS 4096

struct mi_heap_s {
  int unused;
};

typedef struct fz_entry_s {
  struct fz_entry_s* next;
  uint8_t* p;  /* the program's pointer */
  void* raw;   /* what the C library returned */
  size_t size; /* usable from p */
  mi_heap_t* heap;
} fz_entry_t;

static fz_entry_t* fz_buckets[FZ_CONTROL_BUCKETS];
static pthread_mutex_t fz_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local mi_heap_t fz_default_heap;

static size_t fz_live; /* blocks in the table */

/* The floor (FZ_CONTROL_BUMP): blocks carved one after the other from one
   region, which starts over when no block is live (each program's end);
   its pages stay resident from program to program. What the harness then
   costs is its own work: the engine, the model, the patterns, the zeroing
   calloc asks for; no allocator's. */
#ifndef FZ_CONTROL_BUMP
#define FZ_CONTROL_BUMP 0
#endif
#define FZ_BUMP_SIZE ((size_t)2 << 30)
static uint8_t* fz_bump_start;
static uint8_t* fz_bump_next;

static uint8_t* fz_bump(size_t size, size_t align, size_t offset) {
  if (!FZ_CONTROL_BUMP) return NULL;
  pthread_mutex_lock(&fz_lock);
  if (fz_bump_start == NULL) {
    void* r = mmap(NULL, FZ_BUMP_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    fz_bump_start = fz_bump_next = (r == MAP_FAILED ? NULL : (uint8_t*)r);
  }
  uint8_t* p = NULL;
  if (fz_bump_start != NULL) {
    size_t a = (align < 16 ? 16 : align);
    uintptr_t at = (((uintptr_t)fz_bump_next + offset + a - 1) & ~(uintptr_t)(a - 1)) - offset;
    if (at + size <= (uintptr_t)fz_bump_start + FZ_BUMP_SIZE) {
      p = (uint8_t*)at;
      fz_bump_next = p + (size == 0 ? 1 : size); /* two blocks never share an address */
    }
  }
  pthread_mutex_unlock(&fz_lock);
  return p;
}

static size_t fz_bucket(const void* p) {
  return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ULL >> 52) % FZ_CONTROL_BUCKETS;
}

/* The entry of p (under the lock), or NULL. */
static fz_entry_t* fz_find(const void* p) {
  for (fz_entry_t* e = fz_buckets[fz_bucket(p)]; e != NULL; e = e->next) {
    if (e->p == (const uint8_t*)p) return e;
  }
  return NULL;
}

static bool fz_power_of_two(size_t a) {
  return a != 0 && (a & (a - 1)) == 0;
}

/* A block of `size` bytes whose p + offset is aligned to `align`, in `heap`. */
static void* fz_alloc(mi_heap_t* heap, size_t size, size_t align, size_t offset, bool zero) {
  if (size > FZ_CONTROL_MAX || align > FZ_CONTROL_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  if (!fz_power_of_two(align)) {
    errno = EINVAL;
    return NULL;
  }
  void* raw;
  uint8_t* p = fz_bump(size, align, offset);
  if (p != NULL) {
    raw = NULL; /* nothing to free */
    if (zero) memset(p, 0, size);
  } else if (align <= 16 && offset % 16 == 0) {
    raw = (zero ? calloc(1, size) : malloc(size));
    p = (uint8_t*)raw;
  } else if (offset == 0) {
    raw = (posix_memalign(&raw, align, size == 0 ? 1 : size) == 0 ? raw : NULL);
    if (raw != NULL && zero) memset(raw, 0, size);
    p = (uint8_t*)raw;
  } else {
    raw = (zero ? calloc(1, size + align + offset) : malloc(size + align + offset));
    p = (raw == NULL ? NULL : (uint8_t*)((((uintptr_t)raw + offset + align - 1) & ~(uintptr_t)(align - 1)) - offset));
  }
  if (p == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  fz_entry_t* e = (fz_entry_t*)malloc(sizeof(fz_entry_t));
  if (e == NULL) abort();
  *e = (fz_entry_t){NULL, p, raw, size, (heap != NULL ? heap : &fz_default_heap)};
  pthread_mutex_lock(&fz_lock);
  size_t b = fz_bucket(p);
  e->next = fz_buckets[b];
  fz_buckets[b] = e;
  fz_live++;
  pthread_mutex_unlock(&fz_lock);
  return p;
}

/* The entry of p taken out of the table (its size in *size), the raw block returned. */
static void* fz_take(void* p, size_t* size) {
  pthread_mutex_lock(&fz_lock);
  fz_entry_t** at = &fz_buckets[fz_bucket(p)];
  while (*at != NULL && (*at)->p != (uint8_t*)p) at = &(*at)->next;
  fz_entry_t* e = *at;
  if (e == NULL) abort(); /* not a block of ours: the model's bug, or the program's */
  *at = e->next;
  if (--fz_live == 0) fz_bump_next = fz_bump_start; /* the program ended: every block free */
  pthread_mutex_unlock(&fz_lock);
  void* raw = e->raw;
  *size = e->size;
  free(e);
  return raw;
}

static size_t fz_size_of(const void* p) {
  pthread_mutex_lock(&fz_lock);
  fz_entry_t* e = fz_find(p);
  size_t size = (e != NULL ? e->size : 0);
  pthread_mutex_unlock(&fz_lock);
  return size;
}

/* Every reallocation moves: the new block in `heap`, the kept prefix copied,
   zeroes past the old size for the zeroing calls, the old block freed. */
static void* fz_realloc(mi_heap_t* heap, void* p, size_t newsize, size_t align, bool zero) {
  if (p == NULL) return fz_alloc(heap, newsize, align, 0, zero);
  if (newsize > FZ_CONTROL_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  size_t size = fz_size_of(p);
  uint8_t* q = (uint8_t*)fz_alloc(heap, newsize, align, 0, zero);
  if (q == NULL) return NULL;
  memcpy(q, p, size < newsize ? size : newsize);
  mi_free(p);
  return q;
}

static bool fz_total(size_t count, size_t size, size_t* total) {
  if (__builtin_mul_overflow(count, size, total)) {
    errno = ENOMEM;
    return false;
  }
  return true;
}

void mi_free(void* p) {
  if (p == NULL) return;
  size_t size;
  free(fz_take(p, &size));
}

void* mi_malloc(size_t size) {
  return fz_alloc(NULL, size, 16, 0, false);
}
void* mi_zalloc(size_t size) {
  return fz_alloc(NULL, size, 16, 0, true);
}
void* mi_calloc(size_t count, size_t size) {
  size_t total;
  return fz_total(count, size, &total) ? fz_alloc(NULL, total, 16, 0, true) : NULL;
}
void* mi_mallocn(size_t count, size_t size) {
  size_t total;
  return fz_total(count, size, &total) ? fz_alloc(NULL, total, 16, 0, false) : NULL;
}
void* mi_malloc_small(size_t size) {
  return mi_malloc(size);
}
void* mi_zalloc_small(size_t size) {
  return mi_zalloc(size);
}
void* mi_malloc_aligned(size_t size, size_t align) {
  return fz_alloc(NULL, size, align, 0, false);
}
void* mi_malloc_aligned_at(size_t size, size_t align, size_t offset) {
  return fz_alloc(NULL, size, align, offset, false);
}
void* mi_zalloc_aligned(size_t size, size_t align) {
  return fz_alloc(NULL, size, align, 0, true);
}
void* mi_calloc_aligned(size_t count, size_t size, size_t align) {
  size_t total;
  return fz_total(count, size, &total) ? fz_alloc(NULL, total, align, 0, true) : NULL;
}
int mi_posix_memalign(void** out, size_t align, size_t size) {
  if (align % sizeof(void*) != 0 || !fz_power_of_two(align)) return EINVAL;
  void* p = fz_alloc(NULL, size, align, 0, false);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}
void* mi_aligned_alloc(size_t align, size_t size) {
  return fz_alloc(NULL, size, align, 0, false);
}

void* mi_realloc(void* p, size_t newsize) {
  return fz_realloc(NULL, p, newsize, 16, false);
}
void* mi_reallocn(void* p, size_t count, size_t size) {
  size_t total;
  return fz_total(count, size, &total) ? fz_realloc(NULL, p, total, 16, false) : NULL;
}
void* mi_rezalloc(void* p, size_t newsize) {
  return fz_realloc(NULL, p, newsize, 16, true);
}
void* mi_recalloc(void* p, size_t count, size_t size) {
  size_t total;
  return fz_total(count, size, &total) ? fz_realloc(NULL, p, total, 16, true) : NULL;
}
void* mi_realloc_aligned(void* p, size_t newsize, size_t align) {
  return fz_realloc(NULL, p, newsize, align, false);
}

size_t mi_usable_size(const void* p) {
  return (p == NULL ? 0 : fz_size_of(p));
}
void* mi_expand(void* p, size_t newsize) {
  return (p != NULL && newsize <= fz_size_of(p) ? p : NULL);
}
bool mi_is_in_heap_region(const void* p) {
  pthread_mutex_lock(&fz_lock);
  bool found = (fz_find(p) != NULL);
  pthread_mutex_unlock(&fz_lock);
  return found;
}
void mi_collect(bool force) {
  (void)force;
}

mi_heap_t* mi_heap_get_default(void) {
  return &fz_default_heap;
}
mi_heap_t* mi_heap_new(void) {
  return (mi_heap_t*)calloc(1, sizeof(mi_heap_t));
}
void* mi_heap_malloc(mi_heap_t* heap, size_t size) {
  return fz_alloc(heap, size, 16, 0, false);
}
void* mi_heap_zalloc(mi_heap_t* heap, size_t size) {
  return fz_alloc(heap, size, 16, 0, true);
}
void* mi_heap_calloc(mi_heap_t* heap, size_t count, size_t size) {
  size_t total;
  return fz_total(count, size, &total) ? fz_alloc(heap, total, 16, 0, true) : NULL;
}
void* mi_heap_malloc_aligned(mi_heap_t* heap, size_t size, size_t align) {
  return fz_alloc(heap, size, align, 0, false);
}
void* mi_heap_realloc(mi_heap_t* heap, void* p, size_t newsize) {
  return fz_realloc(heap, p, newsize, 16, false);
}
void* mi_heap_rezalloc(mi_heap_t* heap, void* p, size_t newsize) {
  return fz_realloc(heap, p, newsize, 16, true);
}
void* mi_heap_realloc_aligned(mi_heap_t* heap, void* p, size_t newsize, size_t align) {
  return fz_realloc(heap, p, newsize, align, false);
}
bool mi_heap_contains_block(mi_heap_t* heap, const void* p) {
  pthread_mutex_lock(&fz_lock);
  fz_entry_t* e = fz_find(p);
  bool in = (e != NULL && e->heap == heap);
  pthread_mutex_unlock(&fz_lock);
  return in;
}
void mi_heap_collect(mi_heap_t* heap, bool force) {
  (void)heap;
  (void)force;
}

/* The heap's blocks move to the calling thread's default heap. */
void mi_heap_delete(mi_heap_t* heap) {
  pthread_mutex_lock(&fz_lock);
  for (size_t b = 0; b < FZ_CONTROL_BUCKETS; b++) {
    for (fz_entry_t* e = fz_buckets[b]; e != NULL; e = e->next) {
      if (e->heap == heap) e->heap = &fz_default_heap;
    }
  }
  pthread_mutex_unlock(&fz_lock);
  free(heap);
}

/* The heap's blocks are freed with it. */
void mi_heap_destroy(mi_heap_t* heap) {
  for (;;) {
    void* p = NULL;
    pthread_mutex_lock(&fz_lock);
    for (size_t b = 0; b < FZ_CONTROL_BUCKETS && p == NULL; b++) {
      for (fz_entry_t* e = fz_buckets[b]; e != NULL && p == NULL; e = e->next) {
        if (e->heap == heap) p = e->p;
      }
    }
    pthread_mutex_unlock(&fz_lock);
    if (p == NULL) break;
    mi_free(p);
  }
  free(heap);
}

/* The heap's blocks as the model visits them: the program's pointer and its
   size (no areas: the visitor is called once with none first). */
bool mi_heap_visit_blocks(const mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  mi_heap_area_t area = {0};
  if (!visitor(heap, &area, NULL, 0, arg)) return false;
  if (!visit_blocks) return true;
  pthread_mutex_lock(&fz_lock);
  bool ok = true;
  for (size_t b = 0; b < FZ_CONTROL_BUCKETS && ok; b++) {
    for (fz_entry_t* e = fz_buckets[b]; e != NULL && ok; e = e->next) {
      if (e->heap == heap) ok = visitor(heap, &area, e->p, e->size, arg);
    }
  }
  pthread_mutex_unlock(&fz_lock);
  return ok;
}
