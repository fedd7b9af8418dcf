/* The second thread of the fuzz harnesses. The main thread hands it blocks
   to free (asynchronously: they are freed while the main thread goes on
   allocating, which is what exercises the cross-thread free lists), and asks
   it to allocate or reallocate a block (synchronously: the main thread waits
   for the answer, so the model stays deterministic). Commands are executed
   in the order given. The thread starts on first use, after a fork server
   has forked, and exits on fz_worker_stop. */
#ifndef FZ_WORKER_H
#define FZ_WORKER_H

#include <stddef.h>
#include <stdint.h>

/* Verify the block's pattern and free it, in the second thread. */
void fz_worker_free(uint8_t* p, uint32_t id, size_t size);

/* Allocate `size` bytes in the second thread (kind: 0 malloc, 1 zalloc,
   2 calloc, 3 aligned to `align`) and return what the allocator returned;
   the caller checks it and fills it in. */
uint8_t* fz_worker_alloc(int kind, size_t size, size_t align);

/* Reallocate a block in the second thread; returns what realloc returned. */
uint8_t* fz_worker_realloc(uint8_t* p, size_t newsize);

/* Wait until every command given so far has been executed. */
void fz_worker_sync(void);

/* Let the thread finish (its heap's pages are abandoned with their live blocks). */
void fz_worker_stop(void);

#endif
