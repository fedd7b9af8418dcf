/* w2 xthread: server-like cross-thread free (larson / xmalloc-test-like).
 *
 * T threads form a ring. Each round a thread allocates a batch of small
 * objects (16..1024 B, skewed small), fills them (a "request"), hands the
 * batch to the next thread's mailbox, then takes a batch from its own
 * mailbox and frees every object in it. So (for T > 1) nearly every block
 * is freed by a thread other than the one that allocated it, the pattern
 * of producer/consumer servers. With T = 1 the thread frees its own batch
 * one round later (same-thread baseline).
 * Total work is fixed; it is divided among the threads (strong scaling).
 *
 * usage: w2_xthread [threads] [scale]  */
#include "common.h"

#define BATCH 256

typedef struct batch_s {
  struct batch_s* next;
  void* obj[BATCH];
} batch_t;

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  batch_t* head;
  batch_t* tail;
  char pad[64];
} mailbox_t;

static mailbox_t* boxes;
static int nthreads;
static long rounds_per_thread;

static void mb_push(mailbox_t* m, batch_t* b) {
  b->next = NULL;
  pthread_mutex_lock(&m->lock);
  if (m->tail) m->tail->next = b;
  else m->head = b;
  m->tail = b;
  pthread_cond_signal(&m->cond);
  pthread_mutex_unlock(&m->lock);
}
static batch_t* mb_pop(mailbox_t* m) {
  pthread_mutex_lock(&m->lock);
  while (m->head == NULL) pthread_cond_wait(&m->cond, &m->lock);
  batch_t* b = m->head;
  m->head = b->next;
  if (m->head == NULL) m->tail = NULL;
  pthread_mutex_unlock(&m->lock);
  return b;
}

typedef struct {
  int id;
  uint64_t acc;
  char pad[64];
} targ_t;

static void* worker(void* arg) {
  targ_t* ta = (targ_t*)arg;
  rng_t r;
  rng_seed(&r, 1000 + (uint64_t)ta->id);
  mailbox_t* mine = &boxes[ta->id];
  mailbox_t* next = &boxes[(ta->id + 1) % nthreads];
  uint64_t acc = 0;
  for (long k = 0; k < rounds_per_thread; k++) {
    batch_t* b = (batch_t*)xmalloc(sizeof(batch_t));
    for (int i = 0; i < BATCH; i++) {
      size_t n = rng_log_uniform(&r, 16, 1024);
      uint8_t* p = (uint8_t*)xmalloc(n);
      memset(p, (int)(k + i), n < 64 ? n : 64);
      p[n - 1] = (uint8_t)i;
      b->obj[i] = p;
    }
    mb_push(next, b);
    batch_t* in = mb_pop(mine);
    for (int i = 0; i < BATCH; i++) {
      acc += ((uint8_t*)in->obj[i])[0];
      free(in->obj[i]);
    }
    free(in);
  }
  ta->acc = acc;
  return NULL;
}

int main(int argc, char** argv) {
  args_t a = parse_args(argc, argv, 2);
  nthreads = a.threads;
  long total_rounds = scaled(36000, a.scale, nthreads * 4);
  rounds_per_thread = total_rounds / nthreads;
  boxes = (mailbox_t*)calloc((size_t)nthreads, sizeof(mailbox_t));
  targ_t* ta = (targ_t*)calloc((size_t)nthreads, sizeof(targ_t));
  for (int i = 0; i < nthreads; i++) {
    pthread_mutex_init(&boxes[i].lock, NULL);
    pthread_cond_init(&boxes[i].cond, NULL);
    ta[i].id = i;
  }
  run_threads(nthreads, worker, ta, sizeof(targ_t));
  uint64_t acc = 0;
  for (int i = 0; i < nthreads; i++) acc += ta[i].acc;
  sink(acc);
  printf("xthread threads=%d rounds/thread=%ld objs=%ld acc=%llu\n", nthreads, rounds_per_thread,
         rounds_per_thread * nthreads * BATCH, (unsigned long long)acc);
  free(ta);
  free(boxes);
  return 0;
}
