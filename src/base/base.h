/* The base layer, under every other but the primitives: the data (types.h),
   locks (lock.h), the teardown protocol's schedule points (sched.h), options,
   messages, statistics counters, the thread id, pointer arithmetic, the
   generator and assertions. Defined in base/. */
#ifndef MI_BASE_H
#define MI_BASE_H

#include "types.h"
#include "lock.h"
#include "observers.h"

/* rotations of a 64-bit word (the secure build's free-list links and
   page-header check word) */
static inline uintptr_t mi_rotl(uintptr_t x, uintptr_t s) {
  s &= 63;
  return (s == 0 ? x : (x << s) | (x >> (64 - s)));
}
static inline uintptr_t mi_rotr(uintptr_t x, uintptr_t s) {
  s &= 63;
  return (s == 0 ? x : (x >> s) | (x << (64 - s)));
}

/* xorshift64*: not for secrets, only for spreading (inline: the secure
   build draws one per block it carves and per free) */
static inline uintptr_t _mi_random_next(uintptr_t* state) {
  uint64_t x = *state;
  if (x == 0) x = 0x9E3779B97F4A7C15ULL;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return (uintptr_t)(x * 0x2545F4914F6CDD1DULL);
}

/* options.c */
void _mi_options_init(void) mi_decl_hidden;
void _mi_version_string(char* buf, size_t size) mi_decl_hidden; /* "2.4.1" */
typedef enum mi_option_init_e { MI_OPTION_UNINIT, MI_OPTION_DEFAULTED, MI_OPTION_INITIALIZED } mi_option_init_t;
typedef struct mi_option_desc_s {
  long value;
  const char* name;
  mi_option_init_t init;
  bool is_size; /* value in KiB; accepts KiB/MiB/GiB suffixes */
} mi_option_desc_t;
extern mi_option_desc_t _mi_options[_mi_option_last] mi_decl_hidden;
long _mi_option_get_slow(mi_option_t option) mi_decl_hidden;

/* An option's value, read on hot paths: a table load once it is initialised. */
static inline long _mi_option_get_fast(mi_option_t option) {
  const mi_option_desc_t* desc = &_mi_options[option];
  if (mi_unlikely(desc->init == MI_OPTION_UNINIT)) return _mi_option_get_slow(option);
  return desc->value;
}
/* Where the process set-up has run (it reads every option before the first
   heap exists): on the paths of a block that was handed out. No test, and
   no call that would make the caller keep a stack frame. */
static inline long _mi_option_get_after_init(mi_option_t option) {
  return _mi_options[option].value;
}

/* output.c */
void _mi_message(const char* fmt, ...) mi_decl_hidden mi_attr_printf(1, 2);
void _mi_verbose_message(const char* fmt, ...) mi_decl_hidden mi_attr_printf(1, 2);
void _mi_warning_message(const char* fmt, ...) mi_decl_hidden mi_attr_printf(1, 2);
void _mi_error_callback(int err) mi_decl_hidden;
void _mi_error_message(int err, const char* fmt, ...) mi_decl_hidden mi_attr_printf(2, 3);
void _mi_fputs(mi_output_fun* out, void* arg, const char* prefix, const char* msg) mi_decl_hidden;
bool _mi_path_with_pid(const char* path, char* buf, size_t size) mi_decl_hidden;
/* `src` into `dst` (`size` bytes, size > 0), cut to fit; a path's last
   part (after its last slash or backslash) */
void _mi_str_copy(char* dst, size_t size, const char* src) mi_decl_hidden;
const char* _mi_path_base(const char* path) mi_decl_hidden;

/* stat-count.c */
void _mi_stat_increase(mi_stat_atomic_t* stat, int64_t amount) mi_decl_hidden;
void _mi_stat_decrease(mi_stat_atomic_t* stat, int64_t amount) mi_decl_hidden;
/* upstream's bin of a block size, and a bin's largest size (0 past the last) */
size_t _mi_stat_bin_of(size_t size) mi_decl_hidden;
size_t _mi_stat_bin_size(size_t bin) mi_decl_hidden;

/* A bitmap one thread writes at a time and any thread reads: relaxed
   atomic words, written by a plain load and store (no atomic
   read-modify-write: the writer is the only one). */
static inline bool mi_bitmap_get(const _Atomic(uint64_t)* map, size_t i) {
  return (atomic_load_explicit(&map[i / 64], memory_order_relaxed) >> (i % 64)) & 1;
}
static inline void mi_bitmap_store(_Atomic(uint64_t)* map, size_t i, bool on) {
  uint64_t w = atomic_load_explicit(&map[i / 64], memory_order_relaxed);
  uint64_t bit = (uint64_t)1 << (i % 64);
  atomic_store_explicit(&map[i / 64], on ? (w | bit) : (w & ~bit), memory_order_relaxed);
}

/* Page flags. Only the page's owner (or the thread abandoning or reclaiming
   it) writes them, but any thread holding a block of the page reads them
   (mi_usable_size, a free from another thread): relaxed atomics, plain
   loads and stores on the machine, and no data race in the C11 sense
   (ThreadSanitizer found the race when the field was a plain byte). */
static inline uint8_t mi_page_flags(const mi_page_t* page) {
  return atomic_load_explicit(&page->flags, memory_order_relaxed);
}
static inline void mi_page_flags_store(mi_page_t* page, uint8_t flags) {
  atomic_store_explicit(&page->flags, flags, memory_order_relaxed);
}
static inline void mi_page_flags_add(mi_page_t* page, uint8_t flag) {
  mi_page_flags_store(page, (uint8_t)(mi_page_flags(page) | flag));
}
static inline void mi_page_flags_clear(mi_page_t* page, uint8_t flag) {
  mi_page_flags_store(page, (uint8_t)(mi_page_flags(page) & ~flag));
}

static inline uintptr_t _mi_thread_id(void) {
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
  /* the thread control block's pointer to itself (glibc and musl both keep
     it at %fs:0): unique among live threads, and free's compare of the
     owner reads it in the compare itself */
#if defined(__has_builtin) && __has_builtin(__builtin_thread_pointer)
  return (uintptr_t)__builtin_thread_pointer(); /* the compiler folds it into the compare */
#else
  uintptr_t tcb;
  __asm__("movq %%fs:0, %0" : "=r"(tcb));
  return tcb;
#endif
#else
  /* the address of a thread-local is unique among live threads and costs one
     instruction with the initial-exec TLS model */
  return (uintptr_t)&_mi_heap_default;
#endif
}

static inline mi_segment_t* _mi_ptr_segment(const void* p) {
  return (mi_segment_t*)((uintptr_t)p & ~(uintptr_t)MI_SEGMENT_MASK);
}

/* The fewest bytes any segment's header takes before its first block: its
   struct and, in secure builds, a guard page, in OS pages of at least
   4 KiB (zero segments' headers are larger still). No block pointer lies
   closer than this to the start of a segment. */
#define MI_SEGMENT_HEADER_MIN ((((size_t)sizeof(mi_segment_t) + 4095) & ~(size_t)4095) + (MI_SECURE ? (size_t)4096 : 0))

/* The segment of a pointer the allocator handed out. A block pointer lies in
   its segment's first chunk past the header, or less than
   MI_SEGMENT_HEADER_MIN past that chunk's end: a block aligned to a segment
   size or more whose pointer falls in the first bytes of a chunk (an offset
   just under the alignment) lies there, its header in the chunk below
   (segment/single.c). The pointer moved down by the header's least size
   lands in the header's chunk either way (one subtraction, as the `- 1`
   that found a pointer at the chunk's very end was). NULL (and the first
   chunk) give 0, other addresses below it wrap to negative: callers that
   take any pointer test (intptr_t)segment <= 0. */
static inline mi_segment_t* _mi_block_segment(const void* p) {
  return (mi_segment_t*)(((uintptr_t)p - MI_SEGMENT_HEADER_MIN) & ~(uintptr_t)MI_SEGMENT_MASK);
}

static inline mi_page_t* _mi_segment_page_of(mi_segment_t* segment, const void* p) {
  size_t idx = ((uintptr_t)p - (uintptr_t)segment) >> segment->page_shift;
  return &segment->pages[idx];
}

static inline mi_segment_t* _mi_page_segment(const mi_page_t* page) {
  return _mi_ptr_segment(page);
}

#if MI_SECURE
extern uint64_t _mi_secure_geometry_keys[2] mi_decl_hidden;
/* What a small or medium page's check word is XORed with while the page is
   flagged MI_PAGE_FLAG_SAMPLED: the secure free, which checks the word
   anyway, finds the pprof sampler's pages by the check failing, on its
   rare path (page/secure-validate.h), and makes no test of its own for
   them. Keyed, so a header written over cannot pass for a marked one. */
static inline uint64_t mi_geometry_sampled_mark(void) {
  return _mi_secure_geometry_keys[0] | 1;
}
#endif

/* MI_PAGE_FLAG_SAMPLED on or off, by the page's owner, which alone changes
   it (secure builds: a small or medium page's check word marked with it;
   it is sealed marked while flagged: segment/secure-header.c). */
static inline void mi_page_sampled_set(mi_page_t* page, bool on) {
  const bool was = ((mi_page_flags(page) & MI_PAGE_FLAG_SAMPLED) != 0);
  if (was == on) return;
  /* marked before the flag goes on, unmarked after it goes off: a free
     that finds the word marked finds the flag on */
  if (!on) mi_page_flags_clear(page, MI_PAGE_FLAG_SAMPLED);
#if MI_SECURE
  if (_mi_page_segment(page)->kind <= MI_SEGMENT_MEDIUM) {
    atomic_store_explicit(&page->geometry,
                          atomic_load_explicit(&page->geometry, memory_order_relaxed) ^ mi_geometry_sampled_mark(),
                          memory_order_release);
  }
#endif
  if (on) mi_page_flags_add(page, MI_PAGE_FLAG_SAMPLED);
}

/* A page's holes (page/holes.c), kept beside the segment's pages. */
static inline mi_page_holes_t* _mi_page_holes(const mi_page_t* page) {
  return &_mi_page_segment(page)->holes[page->index];
}

static inline size_t _mi_align_up(size_t n, size_t align) {
  return (n + align - 1) & ~(align - 1);
}

static inline bool _mi_is_power_of_two(size_t x) {
  return (x != 0 && (x & (x - 1)) == 0);
}

static inline bool _mi_mul_overflow(size_t count, size_t size, size_t* total) {
  return mi_mul_overflow(count, size, total);
}

/* The thread's generator (secure builds: page keys, the quarantine slot, the
   carving shuffle), seeded on first use from the process key and the thread. */
#if MI_SECURE
static inline uintptr_t _mi_tld_random(mi_tld_t* tld) {
  if (mi_unlikely(tld->rng == 0)) tld->rng = (_mi_process_key ^ (tld->thread_id * 0x9E3779B97F4A7C15ULL)) | 1;
  return _mi_random_next(&tld->rng);
}
#endif

static inline mi_heap_t* mi_get_default_heap(void) {
  return _mi_heap_default;
}

static inline bool mi_heap_is_initialized(const mi_heap_t* heap) {
  return (heap != &_mi_heap_empty);
}

/* The assertion ladder (MI_DEBUG, config.h). A failed assertion prints
   "mimalloc: assertion failed: FILE:LINE, FUNCTION: EXPRESSION" and aborts.
   - mi_assert (level 1): cheap checks where a call enters a layer (what
     the caller hands over is what the callee needs);
   - mi_assert_internal (level 2): the invariants of the slow paths (queue
     membership and the full flag, used <= capacity <= reserved, page
     state transitions, a segment's count of pages in use);
   - mi_assert_expensive (level 3): walks (a heap's pages and free lists at
     collection and thread exit, a segment's page table at each page taken
     or freed). */
#if MI_DEBUG > 0
void _mi_assert_fail(const char* assertion, const char* fname, unsigned line, const char* func) mi_decl_hidden;
#define mi_assert(x) ((x) ? (void)0 : _mi_assert_fail(#x, __FILE__, __LINE__, __func__))
#else
#define mi_assert(x) ((void)0)
#endif
#if MI_DEBUG > 1
#define mi_assert_internal mi_assert
#else
#define mi_assert_internal(x) ((void)0)
#endif
#if MI_DEBUG > 2
#define mi_assert_expensive mi_assert
#else
#define mi_assert_expensive(x) ((void)0)
#endif

#endif
