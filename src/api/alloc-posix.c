/* The POSIX and platform allocation calls, with their exact error rules. */
#include "api.h"

size_t mi_malloc_size(const void* p) {
  return mi_usable_size(p);
}

size_t mi_malloc_usable_size(const void* p) {
  return mi_usable_size(p);
}

size_t mi_malloc_good_size(size_t size) {
  return mi_good_size(size);
}

int mi_posix_memalign(void** p, size_t alignment, size_t size) {
  /* POSIX: a power of two that is a multiple of sizeof(void*); *p untouched on error */
  if (p == NULL) return EINVAL;
  if (alignment % sizeof(void*) != 0 || !_mi_is_power_of_two(alignment)) return EINVAL;
  void* q = mi_malloc_aligned(size, alignment);
  if (q == NULL) return ENOMEM;
  *p = q;
  return 0;
}

void* mi_memalign(size_t alignment, size_t size) {
  return mi_malloc_aligned(size, alignment);
}

void* mi_valloc(size_t size) {
  return mi_malloc_aligned(size, _mi_os_page_size());
}

void* mi_pvalloc(size_t size) {
  size_t psize = _mi_os_page_size();
  if (size > SIZE_MAX - psize) {
    errno = ENOMEM;
    return NULL;
  }
  size_t asize = _mi_align_up(size == 0 ? 1 : size, psize);
  return mi_malloc_aligned(asize, psize);
}

void* mi_aligned_alloc(size_t alignment, size_t size) {
  /* C11 leaves a bad alignment undefined; glibc and we fail it with EINVAL */
  if (!_mi_is_power_of_two(alignment)) {
    errno = EINVAL;
    return NULL;
  }
  return mi_malloc_aligned(size, alignment);
}

void* mi_reallocarray(void* p, size_t count, size_t size) {
  size_t total;
  if (!_mi_realloc_total(p, count, size, &total)) return NULL;
  return mi_realloc(p, total);
}

int mi_reallocarr(void* p, size_t count, size_t size) {
  /* NetBSD: `p` points to the pointer to reallocate; errno is preserved */
  if (p == NULL) return EINVAL;
  int saved = errno;
  void** op = (void**)p;
  void* newp = mi_reallocarray(*op, count, size);
  if (newp == NULL) {
    int err = errno;
    errno = saved;
    return err;
  }
  *op = newp;
  errno = saved;
  return 0;
}

/* Sized and aligned frees (C++ delete, C23 free_sized): only the secure
   build checks what the caller says of the block; here they cost nothing. */
void mi_free_size(void* p, size_t size) {
  if (MI_SECURE) _mi_secure_check_sized(p, size, MI_KIND_MALLOC);
  mi_free(p);
}

void mi_free_size_aligned(void* p, size_t size, size_t alignment) {
  if (MI_SECURE) _mi_secure_check_aligned(p, size, alignment, true, MI_KIND_MALLOC);
  mi_free(p);
}

void mi_free_aligned(void* p, size_t alignment) {
  if (MI_SECURE) _mi_secure_check_aligned(p, 0, alignment, false, MI_KIND_MALLOC);
  mi_free(p);
}
