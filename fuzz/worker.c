/* The second thread (worker.h): a ring of commands under one mutex. */
#include "worker.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include <mimalloc.h>

#include "model.h"
#include "pattern.h"

typedef enum { FZ_CMD_FREE, FZ_CMD_ALLOC, FZ_CMD_REALLOC, FZ_CMD_EXIT } fz_cmd_kind_t;

typedef struct fz_cmd_s {
  fz_cmd_kind_t kind;
  int alloc_kind;
  uint8_t* p;
  size_t size;
  size_t align;
  uint32_t id;
  uint8_t* result;
} fz_cmd_t;

#define FZ_RING 256

static pthread_mutex_t fz_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fz_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t fz_done = PTHREAD_COND_INITIALIZER;
static fz_cmd_t fz_ring[FZ_RING];
static uint64_t fz_submitted, fz_completed; /* under fz_lock */
static pthread_t fz_thread;
static bool fz_running; /* main thread only */

static void fz_execute(fz_cmd_t* c) {
  switch (c->kind) {
    case FZ_CMD_FREE: {
      size_t bad = fz_pattern_check(c->p, c->id, 0, c->size);
      if (bad != c->size) {
        fz_fail("second thread: block %p (id %u, size %zu) before free: byte %zu is 0x%02x, expected 0x%02x",
                (void*)c->p, c->id, c->size, bad, c->p[bad], fz_pattern_byte(c->id, bad));
      }
      mi_free(c->p);
      break;
    }
    case FZ_CMD_ALLOC: {
      uint8_t* p;
      switch (c->alloc_kind) {
        case 0: p = (uint8_t*)mi_malloc(c->size); break;
        case 1: p = (uint8_t*)mi_zalloc(c->size); break;
        case 2: p = (uint8_t*)mi_calloc(1, c->size); break;
        default: p = (uint8_t*)mi_malloc_aligned(c->size, c->align); break;
      }
      c->result = p; /* the main thread checks it and fills it in */
      break;
    }
    case FZ_CMD_REALLOC: c->result = (uint8_t*)mi_realloc(c->p, c->size); break;
    case FZ_CMD_EXIT: break;
  }
}

static void* fz_worker_main(void* arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&fz_lock);
    while (fz_completed == fz_submitted) pthread_cond_wait(&fz_work, &fz_lock);
    fz_cmd_t* c = &fz_ring[fz_completed % FZ_RING];
    pthread_mutex_unlock(&fz_lock);
    fz_execute(c);
    bool exit = (c->kind == FZ_CMD_EXIT);
    pthread_mutex_lock(&fz_lock);
    fz_completed++;
    pthread_cond_broadcast(&fz_done);
    pthread_mutex_unlock(&fz_lock);
    if (exit) return NULL;
  }
}

/* Queue a command; returns its sequence number. */
static uint64_t fz_submit(const fz_cmd_t* c) {
  if (!fz_running) {
    if (pthread_create(&fz_thread, NULL, &fz_worker_main, NULL) != 0) fz_fail("cannot start the second thread");
    fz_running = true;
  }
  pthread_mutex_lock(&fz_lock);
  while (fz_submitted - fz_completed == FZ_RING) pthread_cond_wait(&fz_done, &fz_lock);
  uint64_t seq = fz_submitted++;
  fz_ring[seq % FZ_RING] = *c;
  pthread_cond_signal(&fz_work);
  pthread_mutex_unlock(&fz_lock);
  return seq;
}

/* Wait for command `seq`; the main thread is the only one to submit, so its
   ring entry is not reused before this returns. */
static fz_cmd_t* fz_wait(uint64_t seq) {
  pthread_mutex_lock(&fz_lock);
  while (fz_completed <= seq) pthread_cond_wait(&fz_done, &fz_lock);
  pthread_mutex_unlock(&fz_lock);
  return &fz_ring[seq % FZ_RING];
}

void fz_worker_free(uint8_t* p, uint32_t id, size_t size) {
  fz_cmd_t c = {.kind = FZ_CMD_FREE, .p = p, .id = id, .size = size};
  fz_submit(&c);
}

uint8_t* fz_worker_alloc(int kind, size_t size, size_t align) {
  fz_cmd_t c = {.kind = FZ_CMD_ALLOC, .alloc_kind = kind, .size = size, .align = align};
  return fz_wait(fz_submit(&c))->result;
}

uint8_t* fz_worker_realloc(uint8_t* p, size_t newsize) {
  fz_cmd_t c = {.kind = FZ_CMD_REALLOC, .p = p, .size = newsize};
  return fz_wait(fz_submit(&c))->result;
}

void fz_worker_sync(void) {
  if (!fz_running) return;
  pthread_mutex_lock(&fz_lock);
  while (fz_completed != fz_submitted) pthread_cond_wait(&fz_done, &fz_lock);
  pthread_mutex_unlock(&fz_lock);
}

void fz_worker_stop(void) {
  if (!fz_running) return;
  fz_cmd_t c = {.kind = FZ_CMD_EXIT};
  fz_submit(&c);
  pthread_join(fz_thread, NULL);
  fz_running = false;
}
