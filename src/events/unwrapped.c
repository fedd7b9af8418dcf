/* mi_unwrapped_malloc, _free and _realloc (include/mimalloc/memory-events.h):
   memory straight from the OS primitives, one mapping per call, for what a
   memory tracker keeps for itself. Outside the heap, its statistics (the
   primitives are called directly, not through the OS layer's counting) and
   its events (no observer is told). Built in every build.

   A mapping starts with a header just below the pointer: a magic number
   keyed by the header's own address, the mapping and the size asked. A
   pointer is taken as one of these only if it is in the table of live
   mappings (a pointer of another origin may lie at the start of a page whose
   predecessor is not mapped: its header is not read); the magic then checks
   the header. The table is OS memory too, under the `unwrapped` lock. */
#include "events.h"
#include "../base/listeners.h"

#define MI_UNWRAPPED_MAGIC ((uint64_t)0x6d692d756e777270ULL) /* "mi-unwrp" */

typedef struct mi_unwrapped_hdr_s {
  uint64_t magic; /* MI_UNWRAPPED_MAGIC ^ the header's address */
  void* base;     /* the mapping */
  size_t mapped;  /* its size */
  size_t size;    /* the size asked */
} mi_unwrapped_hdr_t;

static mi_lock_t mi_unwrapped_lock;
static uintptr_t* mi_unwrapped_table; /* open addressing: 0 empty, 1 a removed entry */
static size_t mi_unwrapped_cap;       /* a power of two, or 0 */
static size_t mi_unwrapped_used;      /* entries and removed entries */
static size_t mi_unwrapped_live;

void _mi_unwrapped_process_init(void) {
  _mi_lock_init_spin(&mi_unwrapped_lock, MI_LOCK_UNWRAPPED);
}

static size_t mi_unwrapped_slot(uintptr_t p, size_t cap) {
  return (size_t)(((uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

/* A table of twice the live entries at least (removed ones dropped). */
static bool mi_unwrapped_grow_locked(void) {
  mi_lock_assert_held(&mi_unwrapped_lock);
  size_t cap = (mi_unwrapped_cap == 0 ? 512 : mi_unwrapped_cap);
  while (cap < 4 * (mi_unwrapped_live + 1)) cap *= 2;
  void* mem = NULL;
  bool is_large = false;
  size_t bytes = _mi_align_up(cap * sizeof(uintptr_t), _mi_os_page_size());
  if (mi_prim_alloc(bytes, 0, true, false, &is_large, &mem) != 0) return false;
  uintptr_t* table = (uintptr_t*)mem; /* zero */
  for (size_t i = 0; i < mi_unwrapped_cap; i++) {
    uintptr_t e = mi_unwrapped_table[i];
    if (e <= 1) continue;
    size_t j = mi_unwrapped_slot(e, cap);
    while (table[j] != 0) j = (j + 1) & (cap - 1);
    table[j] = e;
  }
  if (mi_unwrapped_table != NULL) {
    (void)mi_prim_free(mi_unwrapped_table, _mi_align_up(mi_unwrapped_cap * sizeof(uintptr_t), _mi_os_page_size()));
  }
  mi_unwrapped_table = table;
  mi_unwrapped_cap = cap;
  mi_unwrapped_used = mi_unwrapped_live;
  return true;
}

static bool mi_unwrapped_insert(uintptr_t p) {
  bool ok = true;
  _mi_lock_acquire(&mi_unwrapped_lock);
  if (2 * (mi_unwrapped_used + 1) > mi_unwrapped_cap) ok = mi_unwrapped_grow_locked();
  if (ok) {
    size_t i = mi_unwrapped_slot(p, mi_unwrapped_cap);
    while (mi_unwrapped_table[i] > 1) i = (i + 1) & (mi_unwrapped_cap - 1);
    if (mi_unwrapped_table[i] == 0) mi_unwrapped_used++;
    mi_unwrapped_table[i] = p;
    mi_unwrapped_live++;
  }
  _mi_lock_release(&mi_unwrapped_lock);
  return ok;
}

/* Whether p is a live mapping's pointer; with `remove`, it is no more. */
static bool mi_unwrapped_find(uintptr_t p, bool remove) {
  bool found = false;
  _mi_lock_acquire(&mi_unwrapped_lock);
  if (mi_unwrapped_cap != 0) {
    size_t i = mi_unwrapped_slot(p, mi_unwrapped_cap);
    while (mi_unwrapped_table[i] != 0) {
      if (mi_unwrapped_table[i] == p) {
        found = true;
        if (remove) {
          mi_unwrapped_table[i] = 1;
          mi_unwrapped_live--;
        }
        break;
      }
      i = (i + 1) & (mi_unwrapped_cap - 1);
    }
  }
  _mi_lock_release(&mi_unwrapped_lock);
  return found;
}

static mi_unwrapped_hdr_t* mi_unwrapped_hdr(void* p) {
  return (mi_unwrapped_hdr_t*)p - 1;
}

void* mi_unwrapped_malloc(size_t size, size_t alignment) {
  _mi_process_init_once();
  if (alignment == 0) alignment = sizeof(void*);
  if (!_mi_is_power_of_two(alignment)) {
    errno = EINVAL;
    return NULL;
  }
  if (alignment < MI_MAX_ALIGN_SIZE) alignment = MI_MAX_ALIGN_SIZE; /* the header's: 16 bytes below */
  size_t psize = _mi_os_page_size();
  /* the pointer lies at most alignment - 1 bytes past the header's end */
  size_t slack = (alignment > MI_MAX_ALIGN_SIZE ? alignment : 0);
  if (size > MI_MAX_ALLOC_SIZE - slack - psize - sizeof(mi_unwrapped_hdr_t)) {
    errno = ENOMEM;
    return NULL;
  }
  size_t mapped = _mi_align_up(sizeof(mi_unwrapped_hdr_t) + slack + (size == 0 ? 1 : size), psize);
  void* base = NULL;
  bool is_large = false;
  int err = mi_prim_alloc(mapped, (alignment > psize ? alignment : 0), true, false, &is_large, &base);
  if (err != 0) {
    errno = ENOMEM;
    return NULL;
  }
  uint8_t* p = (uint8_t*)_mi_align_up((uintptr_t)base + sizeof(mi_unwrapped_hdr_t), alignment);
  mi_unwrapped_hdr_t* h = mi_unwrapped_hdr(p);
  h->magic = MI_UNWRAPPED_MAGIC ^ (uint64_t)(uintptr_t)h;
  h->base = base;
  h->mapped = mapped;
  h->size = size;
  if (!mi_unwrapped_insert((uintptr_t)p)) {
    (void)mi_prim_free(base, mapped);
    errno = ENOMEM;
    return NULL;
  }
  return p;
}

/* p's header, if p is a live mapping's pointer (taken out of the table with
   `remove`); else reported (EINVAL) as not ours. */
static mi_unwrapped_hdr_t* mi_unwrapped_checked(void* p, bool remove, const char* call) {
  if (((uintptr_t)p & (MI_MAX_ALIGN_SIZE - 1)) == 0 && mi_unwrapped_find((uintptr_t)p, remove)) {
    mi_unwrapped_hdr_t* h = mi_unwrapped_hdr(p);
    if (h->magic == (MI_UNWRAPPED_MAGIC ^ (uint64_t)(uintptr_t)h)) return h;
    _mi_error_message(EINVAL, "%s: the header of %p is overwritten; the mapping is left alone\n", call, p);
    return NULL;
  }
  _mi_error_message(EINVAL, "%s: %p is not a pointer mi_unwrapped_malloc returned; ignored\n", call, p);
  return NULL;
}

void mi_unwrapped_free(void* p) {
  if (p == NULL) return;
  mi_unwrapped_hdr_t* h = mi_unwrapped_checked(p, true, "mi_unwrapped_free");
  if (h == NULL) return;
  void* base = h->base;
  size_t mapped = h->mapped;
  h->magic = 0; /* a second free finds no entry and no magic */
  (void)mi_prim_free(base, mapped);
}

void* mi_unwrapped_realloc(void* p, size_t new_size, size_t alignment) {
  if (p == NULL) return mi_unwrapped_malloc(new_size, alignment);
  mi_unwrapped_hdr_t* h = mi_unwrapped_checked(p, false, "mi_unwrapped_realloc");
  if (h == NULL) {
    errno = EINVAL;
    return NULL;
  }
  size_t old_size = h->size;
  void* q = mi_unwrapped_malloc(new_size, alignment);
  if (q == NULL) return NULL; /* p stays */
  memcpy(q, p, old_size < new_size ? old_size : new_size);
  mi_unwrapped_free(p);
  return q;
}

/* (mi_unwrapped_*, in every build: its lock) */
mi_listener_define(mi_unwrapped_listener) = {
    .name = "unwrapped",
    .order = MI_LISTEN_UNWRAPPED,
    .process_init = &_mi_unwrapped_process_init,
};
