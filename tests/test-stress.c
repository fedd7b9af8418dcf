/* Multi-threaded stress: random alloc/realloc/free of random sizes with
   cross-thread frees through shared atomic slots. Every block carries a
   pattern derived from its address and size that is verified before it is
   freed or reallocated. Deterministic per-thread seeds; assertions don't
   depend on the interleaving. */
#define _GNU_SOURCE
#include "testutil.h"

#include <pthread.h>

#define N_THREADS 4
#define N_ROUNDS 3
#define ITERS_PER_ROUND 25000
#define LOCAL_SLOTS 1000
#define SHARED_SLOTS 512
#define HDR 16 /* header: size, cookie */
#define COOKIE 0x5eedf00dcafebabeULL

static _Atomic(uintptr_t) shared_slots[SHARED_SLOTS];
static atomic_long n_allocs, n_frees, n_xfrees, n_reallocs;

static inline uint8_t pat_byte(uintptr_t base, size_t size, size_t i) {
  return (uint8_t)((base >> 4) + size * 7 + i + (i >> 9));
}

/* positions that carry the pattern: all bytes of small blocks; for bigger ones
   the first and last 4 KiB and 8 bytes in every 4 KiB */
#define FULL_FILL_MAX (64 * 1024)

static void block_fill(uint8_t* p, size_t size) {
  uintptr_t base = (uintptr_t)p;
  uint64_t hdr[2] = {(uint64_t)size, (uint64_t)base ^ (uint64_t)size ^ COOKIE};
  memcpy(p, hdr, sizeof(hdr));
  if (size <= FULL_FILL_MAX) {
    for (size_t i = HDR; i < size; i++) p[i] = pat_byte(base, size, i);
  } else {
    for (size_t i = HDR; i < 4096; i++) p[i] = pat_byte(base, size, i);
    for (size_t i = size - 4096; i < size; i++) p[i] = pat_byte(base, size, i);
    for (size_t i = 4096; i + 8 <= size - 4096; i += 4096)
      for (size_t j = i; j < i + 8; j++) p[j] = pat_byte(base, size, j);
  }
}

/* verify the pattern of a block that was filled at address `base` with `size`
   but may now live at p (after realloc); checks only the first `limit` bytes */
static bool block_verify_at(const uint8_t* p, uintptr_t base, size_t size, size_t limit) {
  size_t lim = (limit < size ? limit : size);
#define VB(i) \
  if (p[i] != pat_byte(base, size, i)) { \
    fprintf(stderr, "stress: corrupt block %p (filled at %p, size %zu) at offset %zu: 0x%02x != 0x%02x\n", (void*)p, \
            (void*)base, size, (size_t)(i), p[i], pat_byte(base, size, i)); \
    return false; \
  }
  if (size <= FULL_FILL_MAX) {
    for (size_t i = HDR; i < lim; i++) {
      VB(i)
    }
  } else {
    for (size_t i = HDR; i < 4096 && i < lim; i++) {
      VB(i)
    }
    for (size_t i = size - 4096; i < lim; i++) {
      VB(i)
    }
    for (size_t i = 4096; i + 8 <= size - 4096 && i + 8 <= lim; i += 4096)
      for (size_t j = i; j < i + 8; j++) {
        VB(j)
      }
  }
#undef VB
  return true;
}

static bool block_verify(uint8_t* p, size_t* size_out) {
  uint64_t hdr[2];
  memcpy(hdr, p, sizeof(hdr));
  size_t size = (size_t)hdr[0];
  if ((hdr[1] ^ COOKIE ^ (uint64_t)size) != (uint64_t)(uintptr_t)p) {
    fprintf(stderr, "stress: corrupt header of block %p (size field %zu)\n", (void*)p, size);
    return false;
  }
  if (mi_usable_size(p) < size) {
    fprintf(stderr, "stress: block %p of size %zu has usable size %zu\n", (void*)p, size, mi_usable_size(p));
    return false;
  }
  if (size_out) *size_out = size;
  return block_verify_at(p, (uintptr_t)p, size, size);
}

static void block_free(uint8_t* p) {
  TU_CHECK(block_verify(p, NULL));
  mi_free(p);
  atomic_fetch_add_explicit(&n_frees, 1, memory_order_relaxed);
}

static size_t random_size(uint64_t* rng) {
  uint64_t r = tu_rand(rng) % 10000;
  uint64_t x = tu_rand(rng);
  if (r < 8000) return HDR + (size_t)(x % 1024);                 /* small */
  if (r < 9600) return 1024 + (size_t)(x % (31 * 1024));         /* medium */
  if (r < 9950) return 32 * 1024 + (size_t)(x % (480 * 1024));   /* large */
  if (r < 9995) return 512 * 1024 + (size_t)(x % (3584 * 1024)); /* large/huge */
  return 4 * MiB + (size_t)(x % (12 * MiB));                     /* huge */
}

static uint8_t* block_alloc(uint64_t* rng) {
  size_t size = random_size(rng);
  uint64_t kind = tu_rand(rng) % 16;
  uint8_t* p;
  if (kind == 0) {
    p = (uint8_t*)mi_zalloc(size);
    TU_CHECK(p != NULL);
    if (p == NULL) return NULL;
    /* spot check zeroing */
    TU_CHECK(p[0] == 0 && p[size - 1] == 0 && p[size / 2] == 0);
  } else if (kind == 1) {
    size_t align = (size_t)1 << (4 + tu_rand(rng) % 9); /* 16 .. 4096 */
    p = (uint8_t*)mi_malloc_aligned(size, align);
    TU_CHECK(p != NULL && tu_is_aligned(p, align));
    if (p == NULL || !tu_is_aligned(p, align))
      fprintf(stderr, "  mi_malloc_aligned(%zu, %zu) = %p\n", size, align, (void*)p);
    if (p == NULL) return NULL;
  } else if (kind == 2) {
    p = (uint8_t*)mi_calloc(1, size);
    TU_CHECK(p != NULL);
    if (p != NULL) TU_CHECK(p[size - 1] == 0);
  } else {
    p = (uint8_t*)mi_malloc(size);
    TU_CHECK(p != NULL);
  }
  if (p == NULL) return NULL;
  TU_CHECK(tu_is_aligned(p, 16));
  block_fill(p, size);
  atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
  return p;
}

static uint8_t* block_realloc(uint8_t* p, uint64_t* rng) {
  size_t oldsize;
  if (!block_verify(p, &oldsize)) {
    TU_CHECK(!"block corrupt before realloc");
    return p;
  }
  uintptr_t oldbase = (uintptr_t)p;
  size_t newsize = random_size(rng);
  uint8_t* q = (uint8_t*)mi_realloc(p, newsize);
  TU_CHECK(q != NULL);
  if (q == NULL) return p;
  /* contents up to min(old,new) were copied: verify against the old pattern */
  TU_CHECK(block_verify_at(q, oldbase, oldsize, newsize));
  block_fill(q, newsize);
  atomic_fetch_add_explicit(&n_reallocs, 1, memory_order_relaxed);
  return q;
}

typedef struct thread_arg_s {
  int id;
  int round;
} thread_arg_t;

static void* stress_thread(void* argp) {
  thread_arg_t* arg = (thread_arg_t*)argp;
  uint64_t rng = 0x1000u + (uint64_t)arg->id * 7919u + (uint64_t)arg->round * 104729u;
  uint8_t** local = (uint8_t**)calloc(LOCAL_SLOTS, sizeof(uint8_t*));
  TU_CHECK(local != NULL);
  if (local == NULL) return NULL;
  for (int it = 0; it < ITERS_PER_ROUND; it++) {
    uint64_t op = tu_rand(&rng) % 100;
    size_t i = (size_t)(tu_rand(&rng) % LOCAL_SLOTS);
    if (op < 45) { /* allocate (replacing) */
      if (local[i] != NULL) block_free(local[i]);
      local[i] = block_alloc(&rng);
    } else if (op < 65) { /* free */
      if (local[i] != NULL) {
        block_free(local[i]);
        local[i] = NULL;
      }
    } else if (op < 75) { /* realloc */
      if (local[i] != NULL) local[i] = block_realloc(local[i], &rng);
    } else if (op < 95) { /* hand over to another thread via a shared slot */
      if (local[i] == NULL) local[i] = block_alloc(&rng);
      size_t j = (size_t)(tu_rand(&rng) % SHARED_SLOTS);
      uintptr_t got = atomic_exchange_explicit(&shared_slots[j], (uintptr_t)local[i], memory_order_acq_rel);
      local[i] = NULL;
      if (got != 0) {
        if (tu_rand(&rng) % 2 == 0) {
          block_free((uint8_t*)got); /* most likely a cross-thread free */
          atomic_fetch_add_explicit(&n_xfrees, 1, memory_order_relaxed);
        } else {
          local[i] = (uint8_t*)got; /* adopt it: freed or reallocated later */
          TU_CHECK(block_verify(local[i], NULL));
        }
      }
    } else { /* short lived */
      uint8_t* p = block_alloc(&rng);
      if (p != NULL) block_free(p);
    }
    if (atomic_load_explicit(&tu_failures, memory_order_relaxed) > 10) break;
  }
  /* leave half of our blocks in shared slots when possible (freed by later
     rounds after this thread exited), free the rest */
  for (size_t i = 0; i < LOCAL_SLOTS; i++) {
    if (local[i] == NULL) continue;
    if (i % 2 == 0) {
      size_t j = (size_t)(tu_rand(&rng) % SHARED_SLOTS);
      uintptr_t expected = 0;
      if (atomic_compare_exchange_strong(&shared_slots[j], &expected, (uintptr_t)local[i])) {
        local[i] = NULL;
        continue;
      }
    }
    block_free(local[i]);
    local[i] = NULL;
  }
  free(local);
  return NULL;
}

static void test_stress_blocks_stay_intact_and_all_freed(void** state) {
  (void)state;
  for (int round = 0; round < N_ROUNDS; round++) {
    pthread_t threads[N_THREADS];
    thread_arg_t args[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
      args[t].id = t;
      args[t].round = round;
      assert_int_equal(pthread_create(&threads[t], NULL, stress_thread, &args[t]), 0);
    }
    for (int t = 0; t < N_THREADS; t++) assert_int_equal(pthread_join(threads[t], NULL), 0);
    if (atomic_load(&tu_failures) != 0) fail_msg("round %d: %ld checks failed", round, atomic_load(&tu_failures));
    if (round == 0) mi_collect(false);
  }
  /* the main thread frees what is left in the shared slots (owners exited) */
  size_t left = 0;
  for (size_t j = 0; j < SHARED_SLOTS; j++) {
    uintptr_t p = atomic_exchange(&shared_slots[j], 0);
    if (p != 0) {
      block_free((uint8_t*)p);
      left++;
    }
  }
  assert_int_equal(atomic_load(&tu_failures), 0);
  mi_collect(true);
  print_message("allocs %ld, reallocs %ld, frees %ld (cross-thread hand-over frees %ld), left in slots %zu\n",
                atomic_load(&n_allocs), atomic_load(&n_reallocs), atomic_load(&n_frees), atomic_load(&n_xfrees), left);
  assert_int_equal(atomic_load(&n_allocs), atomic_load(&n_frees));
}

int main(void) {
  mi_process_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stress_blocks_stay_intact_and_all_freed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
