/* Fixed-size slots for the allocator's own structures (thread data and
   heaps), carved from OS memory and recycled, so that creating a thread or a
   heap never allocates from a heap. */
#include "os.h"

typedef struct mi_meta_slot_s {
  struct mi_meta_slot_s* next;
} mi_meta_slot_t;

typedef struct mi_thread_data_s {
  mi_heap_t heap;
  mi_tld_t tld;
} mi_thread_data_t;

#define MI_META_SLOT_SIZE _mi_align_up(sizeof(mi_thread_data_t), 64)
#define MI_META_CHUNK_SIZE ((size_t)256 * 1024)

static mi_lock_t mi_meta_lock;
static mi_meta_slot_t* mi_meta_free; /* under mi_meta_lock */

void _mi_meta_init(void) {
  _mi_lock_init(&mi_meta_lock, MI_LOCK_META);
}

/* A zeroed slot big enough for a heap together with its thread data. */
void* _mi_meta_alloc(void) {
  size_t slot = MI_META_SLOT_SIZE;
  _mi_lock_acquire(&mi_meta_lock);
  if (mi_meta_free == NULL) {
    uint8_t* chunk = (uint8_t*)_mi_os_alloc_meta(MI_META_CHUNK_SIZE);
    if (chunk == NULL) {
      _mi_lock_release(&mi_meta_lock);
      return NULL; /* fault path */
    }
    for (size_t off = 0; off + slot <= MI_META_CHUNK_SIZE; off += slot) {
      mi_meta_slot_t* s = (mi_meta_slot_t*)(chunk + off);
      s->next = mi_meta_free;
      mi_meta_free = s;
    }
  }
  mi_meta_slot_t* s = mi_meta_free;
  mi_meta_free = s->next;
  _mi_lock_release(&mi_meta_lock);
  memset(s, 0, slot);
  return s;
}

void _mi_meta_free(void* p) {
  if (p == NULL) return;
  mi_meta_slot_t* s = (mi_meta_slot_t*)p;
  _mi_lock_acquire(&mi_meta_lock);
  s->next = mi_meta_free;
  mi_meta_free = s;
  _mi_lock_release(&mi_meta_lock);
}
