/* The heap profiler's recorder: the hooks the allocator's entry points
   call, the table of allocation sites (call stack -> counts), and the dump.
   The record of each live block (site, size, allocation time) is kept beside
   the heap (blocks.c).

   Counting follows Valgrind's DHAT so that the two agree exactly:
   - sizes are the requested sizes; a request of 0 bytes counts as 1;
   - realloc(p, n) of a recorded block counts one more block of n bytes for
     p's site (the site where p was first allocated), live blocks unchanged;
     realloc of NULL (or of a block allocated before recording started) is
     an allocation at the realloc's own site; a failed call counts nothing;
   - time is the number of bytes allocated so far;
   - t-gmax is the latest instant at which the live bytes reached their
     maximum (an equal later peak replaces an earlier one).

   The counts sit under one lock (class MI_LOCK_DHAT, last in the order),
   held only to update them: the stack is captured and the block's record
   found before it is taken. The tables live in OS memory. A thread-local
   guard keeps the profiler's own calls into the C library (stack bounds,
   the unwinder's first use, the dump) out of the profile. */
#include "dhat.h"

#include "../../include/mimalloc/dhat.h"

#if MI_DHAT

_Atomic(bool) _mi_dhat_on;

typedef struct mi_dhat_site_s {
  uint64_t hash;
  size_t frame_first; /* in the frame pool */
  uint32_t frame_count;
  bool dead;        /* merged into another site at dump time */
  uint64_t tb, tbk; /* total bytes and blocks */
  uint64_t tl;      /* lifetimes of freed blocks */
  uint64_t cur_b, cur_bk;
  uint64_t mb, mbk; /* at this site's own maximum */
  uint64_t gb, gbk; /* at the global peak numbered snap_epoch (see mi_dhat_site_touch) */
  uint64_t snap_epoch;
  uint64_t live_time; /* sum of the allocation times of live blocks */
} mi_dhat_site_t;

typedef struct mi_dhat_state_s {
  mi_dhat_site_t* sites;
  size_t site_count, site_cap;
  uint32_t* site_index; /* hash of the stack -> site + 1 */
  size_t site_index_cap;
  uintptr_t* frames;
  size_t frame_count, frame_cap;
  /* The clock: bytes allocated while recording since the process started
     (a restart does not reset it). A block's record holds its allocation
     time, so a record older than `base`, the clock when this profile
     started, belongs to an earlier profile and is ignored: a restart need
     not find the records of the last one. */
  uint64_t now;
  uint64_t base;
  uint64_t total_bk;
  uint64_t cur_b, cur_bk;
  uint64_t max_b, max_bk, tg;
  uint64_t epoch;   /* numbers the global peaks */
  uint32_t profile; /* numbers the profiles (never 0): tells the site hints' */
} mi_dhat_state_t;

static mi_lock_t mi_dhat_lock;
static mi_dhat_state_t mi_dhat; /* under mi_dhat_lock */
static mi_decl_thread bool mi_dhat_busy;
/* One dump at a time in the process: the symboliser's caches (symbolize.c,
   lines.c) are shared and unlocked. A dump asked for while another thread
   writes one fails with EBUSY rather than wait behind its file write (and
   no lock is held across the symboliser's calls into the C library). */
static _Atomic(bool) mi_dhat_dumping;
static bool mi_dhat_from_env; /* started by MIMALLOC_DHAT: dump at exit */
static long mi_dhat_env_pid;

static inline size_t mi_dhat_addr_home(uintptr_t p, size_t mask) {
  uint64_t h = (uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ULL;
  return (size_t)(h ^ (h >> 29)) & mask;
}

/* ---- Sites ---------------------------------------------------------------------- */

static uint64_t mi_dhat_stack_hash(const uintptr_t* frames, int n) {
  uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)n;
  for (int i = 0; i < n; i++) {
    h ^= (uint64_t)frames[i];
    h *= 0x100000001b3ULL;
    h ^= h >> 31;
  }
  return h;
}

static bool mi_dhat_site_index_grow(void) {
  size_t newcap = (mi_dhat.site_index_cap == 0 ? 4096 : mi_dhat.site_index_cap * 2);
  uint32_t* index = (uint32_t*)_mi_dhat_os_alloc(newcap * sizeof(uint32_t));
  if (index == NULL) return false;
  for (size_t s = 0; s < mi_dhat.site_count; s++) {
    size_t i = (size_t)mi_dhat.sites[s].hash & (newcap - 1);
    while (index[i] != 0) i = (i + 1) & (newcap - 1);
    index[i] = (uint32_t)s + 1;
  }
  _mi_dhat_os_free(mi_dhat.site_index, mi_dhat.site_index_cap * sizeof(uint32_t));
  mi_dhat.site_index = index;
  mi_dhat.site_index_cap = newcap;
  return true;
}

/* The site of a stack, made on first sight; UINT32_MAX without memory. */
static uint32_t mi_dhat_site_of(const uintptr_t* frames, int n) {
  uint64_t h = mi_dhat_stack_hash(frames, n);
  size_t mask = mi_dhat.site_index_cap - 1;
  size_t i = (size_t)h & mask;
  for (; mi_dhat.site_index[i] != 0; i = (i + 1) & mask) {
    mi_dhat_site_t* s = &mi_dhat.sites[mi_dhat.site_index[i] - 1];
    if (s->hash == h && s->frame_count == (uint32_t)n &&
        memcmp(&mi_dhat.frames[s->frame_first], frames, (size_t)n * sizeof(uintptr_t)) == 0) {
      return mi_dhat.site_index[i] - 1;
    }
  }
  if (mi_dhat.site_count >= UINT32_MAX - 1) return UINT32_MAX;
  if (!_mi_dhat_grow((void**)&mi_dhat.sites, &mi_dhat.site_cap, sizeof(mi_dhat_site_t), mi_dhat.site_count + 1) ||
      !_mi_dhat_grow((void**)&mi_dhat.frames, &mi_dhat.frame_cap, sizeof(uintptr_t), mi_dhat.frame_count + (size_t)n)) {
    return UINT32_MAX;
  }
  uint32_t idx = (uint32_t)mi_dhat.site_count++;
  mi_dhat_site_t* s = &mi_dhat.sites[idx];
  memset(s, 0, sizeof(*s));
  s->hash = h;
  s->frame_first = mi_dhat.frame_count;
  s->frame_count = (uint32_t)n;
  s->snap_epoch = mi_dhat.epoch;
  memcpy(&mi_dhat.frames[mi_dhat.frame_count], frames, (size_t)n * sizeof(uintptr_t));
  mi_dhat.frame_count += (size_t)n;
  mi_dhat.site_index[i] = idx + 1;
  if (mi_dhat.site_count * 2 > mi_dhat.site_index_cap) (void)mi_dhat_site_index_grow();
  return idx;
}

/* The counts at the global peak are kept lazily. A site's live counts change
   only when the site is touched, so its counts at the latest peak are the
   ones it had before its first change after that peak: take them then. A site
   whose snapshot is of an older peak was not touched since the latest one,
   and its current counts are the ones at the peak. Call before any change. */
static inline void mi_dhat_site_touch(mi_dhat_site_t* s) {
  if (s->snap_epoch != mi_dhat.epoch) {
    s->gb = s->cur_b;
    s->gbk = s->cur_bk;
    s->snap_epoch = mi_dhat.epoch;
  }
}

/* After live bytes grew: a new global peak (or an equal, later one). */
static inline void mi_dhat_peak_check(mi_dhat_site_t* s) {
  if (mi_dhat.cur_b < mi_dhat.max_b) return;
  mi_dhat.max_b = mi_dhat.cur_b;
  mi_dhat.max_bk = mi_dhat.cur_bk;
  mi_dhat.tg = mi_dhat.now;
  mi_dhat.epoch++;
  /* the site that made the peak is at its peak value now; the others catch
     up when touched */
  s->gb = s->cur_b;
  s->gbk = s->cur_bk;
  s->snap_epoch = mi_dhat.epoch;
}

static inline void mi_dhat_site_max_check(mi_dhat_site_t* s) {
  if (s->cur_b > s->mb) {
    s->mb = s->cur_b;
    s->mbk = s->cur_bk;
  }
}

/* ---- Records -------------------------------------------------------------------------- */

static inline uint64_t mi_dhat_rec_size(const mi_dhat_rec_t* r) {
  return (r->size == MI_DHAT_SIZE_BIG ? r[1].time : r->size);
}

static inline void mi_dhat_rec_set(mi_dhat_rec_t* r, uint32_t site, uint64_t size, uint64_t time1) {
  r->site = site;
  if (size >= MI_DHAT_SIZE_BIG) {
    /* only a block with a segment of its own is this large: its record is
       the segment's first, and the next one lies in the segment's header,
       never the key of a block */
    r->size = MI_DHAT_SIZE_BIG;
    r[1].time = size;
  } else {
    r->size = (uint32_t)size;
  }
  r->time = time1;
}

/* Whether a record's time (1 + allocation time) is of the current profile. */
static inline bool mi_dhat_rec_current(uint64_t time1) {
  return (time1 > mi_dhat.base);
}

/* ---- Events (under the lock) --------------------------------------------------------- */

/* A recorded block of the current profile is freed. */
static void mi_dhat_count_free(uint32_t site, uint64_t size, uint64_t time) {
  mi_dhat_site_t* s = &mi_dhat.sites[site];
  mi_dhat_site_touch(s);
  s->cur_b -= size;
  s->cur_bk--;
  s->tl += mi_dhat.now - time;
  s->live_time -= time;
  mi_dhat.cur_b -= size;
  mi_dhat.cur_bk--;
}

/* Take a record out; if it is of the current profile its block is freed. */
static void mi_dhat_rec_free(mi_dhat_rec_t* r) {
  if (mi_dhat_rec_current(r->time)) mi_dhat_count_free(r->site, mi_dhat_rec_size(r), r->time - 1);
  r->time = 0;
}

/* The site of a captured stack: from the thread's hint if it is of this
   profile, else looked up (and the hint filled in). */
static inline uint32_t mi_dhat_site_of_hinted(const uintptr_t* frames, int n, mi_dhat_site_hint_t* hint) {
  if (hint != NULL && hint->profile == mi_dhat.profile) return hint->site;
  uint32_t site = mi_dhat_site_of(frames, n);
  if (hint != NULL && site != UINT32_MAX) {
    hint->site = site;
    hint->profile = mi_dhat.profile;
  }
  return site;
}

static void mi_dhat_alloc_locked(mi_dhat_rec_t* rec, size_t size, const uintptr_t* frames, int n,
                                 mi_dhat_site_hint_t* hint) {
  mi_lock_assert_held(&mi_dhat_lock);
  uint64_t sz = (size == 0 ? 1 : (uint64_t)size);
  /* a record left at this block: it was freed without our seeing it */
  if (rec->time != 0) mi_dhat_rec_free(rec);
  uint32_t site = mi_dhat_site_of_hinted(frames, n, hint);
  if (site == UINT32_MAX) return;
  mi_dhat_site_t* s = &mi_dhat.sites[site];
  mi_dhat_site_touch(s);
  uint64_t t = mi_dhat.now;
  s->tb += sz;
  s->tbk++;
  s->cur_b += sz;
  s->cur_bk++;
  s->live_time += t;
  mi_dhat_site_max_check(s);
  mi_dhat.now += sz;
  mi_dhat.total_bk++;
  mi_dhat.cur_b += sz;
  mi_dhat.cur_bk++;
  mi_dhat_rec_set(rec, site, sz, t + 1);
  mi_dhat_peak_check(s);
}

/* ---- Hooks ------------------------------------------------------------------------------- */

void* _mi_dhat_record_alloc(void* p, size_t size) {
  if (mi_dhat_busy || _mi_observers_muted != 0 || p == NULL) return p;
  mi_dhat_busy = true;
  mi_dhat_rec_t* rec = _mi_dhat_rec_of(p, true); /* may map memory: before the lock */
  if (rec != NULL) {
    uintptr_t frames[MI_DHAT_MAX_FRAMES];
    mi_dhat_site_hint_t* hint;
    int n = _mi_dhat_stack_capture(frames, MI_DHAT_MAX_FRAMES, &hint);
    _mi_lock_acquire(&mi_dhat_lock);
    if (mi_dhat_is_on()) mi_dhat_alloc_locked(rec, size, frames, n, hint);
    _mi_lock_release(&mi_dhat_lock);
  }
  mi_dhat_busy = false;
  return p;
}

/* Not skipped while the thread is busy: no lock of ours is held then, and a
   block the program allocated may be freed inside a call the profiler makes. */
void _mi_dhat_record_free(void* p) {
  mi_dhat_rec_t* rec = _mi_dhat_rec_of(p, false);
  if (rec == NULL || rec->time == 0) return; /* not recorded: no lock */
  _mi_lock_acquire(&mi_dhat_lock);
  if (mi_dhat_is_on()) mi_dhat_rec_free(rec);
  _mi_lock_release(&mi_dhat_lock);
}

/* The record of a block being reallocated is taken out before realloc runs:
   once realloc frees the block, another thread may get the same address.
   The block stays counted live at its site meanwhile. */
void _mi_dhat_realloc_take(void* p, mi_dhat_held_t* held) {
  memset(held, 0, sizeof(*held));
  held->p = p;
  if (p == NULL) return;
  mi_dhat_rec_t* rec = _mi_dhat_rec_of(p, false);
  if (rec == NULL || rec->time == 0) return;
  held->found = true;
  held->site = rec->site;
  held->size = mi_dhat_rec_size(rec);
  held->time = rec->time;
  rec->time = 0;
}

void _mi_dhat_realloc_done(mi_dhat_held_t* held, void* newp, size_t newsize) {
  if (!held->found) {
    /* realloc of NULL or of a block we never saw: an allocation here */
    if (newp != NULL && mi_dhat_is_on()) (void)_mi_dhat_record_alloc(newp, newsize);
    return;
  }
  void* p = (newp != NULL ? newp : held->p);
  mi_dhat_rec_t* rec = _mi_dhat_rec_of(p, true);
  _mi_lock_acquire(&mi_dhat_lock);
  if (mi_dhat_rec_current(held->time)) {
    uint64_t old = held->size;
    uint64_t sz = old;
    if (rec != NULL && rec->time != 0) mi_dhat_rec_free(rec); /* freed unseen */
    if (newp != NULL) {
      /* one more block of the new size for the original site */
      sz = (newsize == 0 ? 1 : (uint64_t)newsize);
      mi_dhat_site_t* s = &mi_dhat.sites[held->site];
      mi_dhat_site_touch(s);
      s->tb += sz;
      s->tbk++;
      s->cur_b = s->cur_b - old + sz;
      mi_dhat_site_max_check(s);
      mi_dhat.now += sz;
      mi_dhat.total_bk++;
      mi_dhat.cur_b = mi_dhat.cur_b - old + sz;
      if (sz > old) mi_dhat_peak_check(s);
    }
    if (rec != NULL) {
      mi_dhat_rec_set(rec, held->site, sz, held->time);
    } else {
      mi_dhat_count_free(held->site, sz, held->time - 1); /* no memory for its record */
    }
  }
  _mi_lock_release(&mi_dhat_lock);
}

/* A destroyed heap's blocks go without a call to free: each one still
   recorded is counted freed now, when its memory goes. (Valgrind never sees
   such an event: a heap destroy is the business of a custom allocator. The
   blocks are gone, so the profile says so rather than keep them live.) */
void _mi_dhat_record_page_gone(const mi_page_t* page) {
  mi_dhat_rec_t* recs;
  size_t stride;
  size_t count = _mi_dhat_page_recs(page, &recs, &stride);
  if (count == 0) return;
  _mi_lock_acquire(&mi_dhat_lock);
  if (mi_dhat_is_on()) {
    for (size_t k = 0; k < count; k++) {
      mi_dhat_rec_t* r = &recs[k * stride];
      if (r->time != 0) mi_dhat_rec_free(r);
    }
  }
  _mi_lock_release(&mi_dhat_lock);
}

/* ---- Start, stop ----------------------------------------------------------------------- */

static void mi_dhat_reset_locked(void) {
  mi_lock_assert_held(&mi_dhat_lock);
  if (mi_dhat.site_index != NULL) memset(mi_dhat.site_index, 0, mi_dhat.site_index_cap * sizeof(uint32_t));
  mi_dhat.site_count = 0;
  mi_dhat.frame_count = 0;
  mi_dhat.base = mi_dhat.now; /* the records of earlier profiles are older */
  mi_dhat.total_bk = mi_dhat.cur_b = mi_dhat.cur_bk = 0;
  mi_dhat.max_b = mi_dhat.max_bk = mi_dhat.epoch = 0;
  mi_dhat.tg = mi_dhat.now;
  if (++mi_dhat.profile == 0) mi_dhat.profile = 1; /* hints of an earlier profile are stale */
}

bool mi_dhat_start(void) {
  _mi_process_init_once();
  if (mi_dhat_busy) return false;
  mi_dhat_busy = true;
  _mi_dhat_stack_init(); /* may allocate: not recorded */
  _mi_lock_acquire(&mi_dhat_lock);
  if (mi_dhat.site_index == NULL) (void)mi_dhat_site_index_grow();
  bool ok = (mi_dhat.site_index != NULL);
  if (ok) {
    mi_dhat_reset_locked();
    atomic_store_explicit(&_mi_dhat_on, true, memory_order_release);
    atomic_fetch_or_explicit(&_mi_observers, MI_OBSERVER_DHAT, memory_order_release);
    _mi_observers_changed();
  }
  _mi_lock_release(&mi_dhat_lock);
  mi_dhat_busy = false;
  return ok;
}

void mi_dhat_stop(void) {
  atomic_fetch_and_explicit(&_mi_observers, (uint8_t)~MI_OBSERVER_DHAT, memory_order_release);
  atomic_store_explicit(&_mi_dhat_on, false, memory_order_release);
  _mi_observers_changed();
}

bool mi_dhat_is_running(void) {
  return mi_dhat_is_on();
}

void _mi_dhat_process_init(void) {
  /* held for a few dozen instructions, taken at every allocation and free */
  _mi_lock_init_spin(&mi_dhat_lock, MI_LOCK_DHAT);
  if (!mi_option_is_enabled(mi_option_dhat)) return;
  mi_dhat_env_pid = mi_prim_getpid();
  mi_dhat_from_env = mi_dhat_start();
  if (!mi_dhat_from_env) _mi_warning_message("the heap profiler could not start (MIMALLOC_DHAT)\n");
}

void _mi_dhat_process_done(void) {
  if (!mi_dhat_from_env || mi_dhat_env_pid != mi_prim_getpid()) return;
  mi_dhat_from_env = false;
  if (!mi_dhat_dump(NULL)) _mi_warning_message("the heap profile could not be written (error %d)\n", errno);
  mi_dhat_stop();
}

/* fork(): the child's profiler is off and writes nothing at exit; it may
   start a profile of its own with mi_dhat_start. (Counting on would charge
   the child with the parent's live blocks, and both would write one file.) */
void _mi_dhat_after_fork_child(void) {
  atomic_fetch_and_explicit(&_mi_observers, (uint8_t)~MI_OBSERVER_DHAT, memory_order_relaxed);
  atomic_store_explicit(&_mi_dhat_on, false, memory_order_relaxed);
  _mi_observers_changed();
  mi_dhat_from_env = false;
  mi_dhat_busy = false;
  atomic_store_explicit(&mi_dhat_dumping, false, memory_order_relaxed); /* the dumping thread is not in the child */
  _mi_dhat_symbolizer_after_fork_child();
}

/* ---- Dump --------------------------------------------------------------------------------- */

/* A return address seen in the profile: its frame string and what it is. */
typedef struct mi_dhat_addr_s {
  uintptr_t addr; /* 0: empty slot */
  int64_t ftbl;   /* index in the frame table; -1 until a kept stack uses it */
  size_t str;     /* offset of its frame string in the string pool */
  mi_dhat_sym_t sym;
} mi_dhat_addr_t;

typedef struct mi_dhat_dump_s {
  mi_dhat_site_t* sites;
  size_t site_count;
  uintptr_t* frames;
  size_t frame_count;
  mi_dhat_addr_t* addrs; /* open addressing */
  size_t addr_cap;
  char* strs;
  size_t strs_len, strs_cap;
  uintptr_t* ftbl; /* frame table order: ftbl[i] is an address (0: "[root]") */
  size_t ftbl_count, ftbl_cap;
  uint32_t* merge; /* open addressing over trimmed stacks: site + 1 */
  size_t merge_cap;
} mi_dhat_dump_t;

static mi_dhat_addr_t* mi_dhat_addr_of(mi_dhat_dump_t* d, uintptr_t addr) {
  size_t mask = d->addr_cap - 1;
  size_t i = mi_dhat_addr_home(addr, mask);
  while (d->addrs[i].addr != 0 && d->addrs[i].addr != addr) i = (i + 1) & mask;
  mi_dhat_addr_t* a = &d->addrs[i];
  if (a->addr == 0) {
    char buf[1024];
    a->addr = addr;
    a->ftbl = -1;
    _mi_dhat_symbolize(addr, buf, sizeof(buf), &a->sym);
    size_t n = strlen(buf) + 1;
    if (_mi_dhat_grow((void**)&d->strs, &d->strs_cap, 1, d->strs_len + n)) {
      memcpy(d->strs + d->strs_len, buf, n);
      a->str = d->strs_len;
      d->strs_len += n;
    } else {
      a->str = SIZE_MAX;
    }
  }
  return a;
}

/* Cut a site's stack to what Valgrind shows: from the allocator's caller
   down to main. */
static void mi_dhat_trim(mi_dhat_dump_t* d, mi_dhat_site_t* s) {
  size_t first = s->frame_first;
  size_t end = s->frame_first + s->frame_count;
  size_t i = first;
  while (i < end && mi_dhat_addr_of(d, d->frames[i])->sym.internal) i++;
  if (i == end) i = first; /* all ours (should not happen): keep them */
  size_t j = i;
  while (j < end) {
    if (mi_dhat_addr_of(d, d->frames[j++])->sym.is_main) break;
  }
  s->frame_first = i;
  s->frame_count = (uint32_t)(j - i);
  s->hash = mi_dhat_stack_hash(&d->frames[i], (int)(j - i));
}

/* Sites whose trimmed stacks are equal become one (the viewer requires each
   stack once). */
static void mi_dhat_merge(mi_dhat_dump_t* d, size_t idx) {
  mi_dhat_site_t* s = &d->sites[idx];
  size_t mask = d->merge_cap - 1;
  size_t i = (size_t)s->hash & mask;
  for (; d->merge[i] != 0; i = (i + 1) & mask) {
    mi_dhat_site_t* t = &d->sites[d->merge[i] - 1];
    if (t->hash == s->hash && t->frame_count == s->frame_count &&
        memcmp(&d->frames[t->frame_first], &d->frames[s->frame_first], s->frame_count * sizeof(uintptr_t)) == 0) {
      t->tb += s->tb;
      t->tbk += s->tbk;
      t->tl += s->tl;
      /* both maxima can not be told apart any more: the larger is a lower bound */
      if (s->mb > t->mb) {
        t->mb = s->mb;
        t->mbk = s->mbk;
      }
      t->gb += s->gb;
      t->gbk += s->gbk;
      t->cur_b += s->cur_b;
      t->cur_bk += s->cur_bk;
      s->dead = true;
      return;
    }
  }
  d->merge[i] = (uint32_t)idx + 1;
}

static void mi_dhat_out_field(mi_dhat_out_t* out, const char* name, uint64_t v) {
  _mi_dhat_out_str(out, name);
  _mi_dhat_out_u64(out, v);
}

static void mi_dhat_write(mi_dhat_out_t* out, mi_dhat_dump_t* d, const mi_dhat_state_t* g) {
  char cmd[1024];
  mi_prim_cmdline(cmd, sizeof(cmd));
  _mi_dhat_out_str(out, "{\"dhatFileVersion\":2\n,\"mode\":\"heap\",\"verb\":\"Allocated\"\n");
  /* block lifetimes yes; access counts no: they need every load and store,
     which only an instrumenting tool sees. bkacc:false makes the viewer
     leave out reads and writes and the sort orders built on them. */
  _mi_dhat_out_str(out, ",\"bklt\":true,\"bkacc\":false\n");
  _mi_dhat_out_str(out, ",\"tu\":\"bytes allocated\",\"Mtu\":\"MB allocated\"\n,\"tuth\":1024\n,\"cmd\":");
  _mi_dhat_out_quoted(out, cmd);
  mi_dhat_out_field(out, "\n,\"pid\":", (uint64_t)mi_prim_getpid());
  mi_dhat_out_field(out, "\n,\"te\":", g->now - g->base);
  mi_dhat_out_field(out, "\n,\"tg\":", g->tg - g->base);
  _mi_dhat_out_str(out, "\n,\"pps\":\n [");
  bool first = true;
  for (size_t k = 0; k < d->site_count; k++) {
    const mi_dhat_site_t* s = &d->sites[k];
    if (s->dead || s->tbk == 0) continue;
    _mi_dhat_out_str(out, first ? "{" : "\n ,{");
    first = false;
    mi_dhat_out_field(out, "\"tb\":", s->tb);
    mi_dhat_out_field(out, ",\"tbk\":", s->tbk);
    mi_dhat_out_field(out, ",\"tl\":", s->tl);
    mi_dhat_out_field(out, ",\"mb\":", s->mb);
    mi_dhat_out_field(out, ",\"mbk\":", s->mbk);
    mi_dhat_out_field(out, ",\"gb\":", s->gb);
    mi_dhat_out_field(out, ",\"gbk\":", s->gbk);
    mi_dhat_out_field(out, ",\"eb\":", s->cur_b);
    mi_dhat_out_field(out, ",\"ebk\":", s->cur_bk);
    _mi_dhat_out_str(out, ",\"fs\":[");
    for (uint32_t f = 0; f < s->frame_count; f++) {
      mi_dhat_addr_t* a = mi_dhat_addr_of(d, d->frames[s->frame_first + f]);
      if (a->ftbl < 0 && _mi_dhat_grow((void**)&d->ftbl, &d->ftbl_cap, sizeof(uintptr_t), d->ftbl_count + 1)) {
        a->ftbl = (int64_t)d->ftbl_count;
        d->ftbl[d->ftbl_count++] = a->addr;
      }
      if (f > 0) _mi_dhat_out_str(out, ",");
      _mi_dhat_out_u64(out, (uint64_t)(a->ftbl < 0 ? 0 : a->ftbl));
    }
    _mi_dhat_out_str(out, "]}");
  }
  _mi_dhat_out_str(out, "\n ]\n,\"ftbl\":\n [\"[root]\"");
  for (size_t i = 1; i < d->ftbl_count; i++) {
    mi_dhat_addr_t* a = mi_dhat_addr_of(d, d->ftbl[i]);
    _mi_dhat_out_str(out, "\n ,");
    _mi_dhat_out_quoted(out, a->str == SIZE_MAX ? "???" : d->strs + a->str);
  }
  _mi_dhat_out_str(out, "\n ]\n}\n");
}

static void mi_dhat_dump_free(mi_dhat_dump_t* d) {
  _mi_dhat_os_free(d->sites, d->site_count * sizeof(mi_dhat_site_t));
  _mi_dhat_os_free(d->frames, (d->frame_count + 1) * sizeof(uintptr_t));
  _mi_dhat_os_free(d->addrs, d->addr_cap * sizeof(mi_dhat_addr_t));
  _mi_dhat_os_free(d->strs, d->strs_cap);
  _mi_dhat_os_free(d->ftbl, d->ftbl_cap * sizeof(uintptr_t));
  _mi_dhat_os_free(d->merge, d->merge_cap * sizeof(uint32_t));
  _mi_dhat_symbolize_done();
}

/* The file name: `path`, or MIMALLOC_DHAT_FILE, or dhat-heap.json; "%p"
   becomes the process id. */
static void mi_dhat_file_name(const char* path, char* buf, size_t size) {
  /* `path` may point into env after the if: its scope cannot shrink */
  /* cppcheck-suppress variableScope */
  char env[512];
  if (path == NULL)
    path = (mi_prim_getenv("MIMALLOC_DHAT_FILE", env, sizeof(env)) && env[0] != 0 ? env : "dhat-heap.json");
  (void)_mi_path_with_pid(path, buf, size); /* a name cut short is still a name */
}

static void mi_dhat_sift_down(uintptr_t* a, size_t i, size_t n) {
  for (;;) {
    size_t j = 2 * i + 1;
    if (j >= n) return;
    if (j + 1 < n && a[j + 1] > a[j]) j++;
    if (a[j] <= a[i]) return;
    uintptr_t t = a[i];
    a[i] = a[j];
    a[j] = t;
    i = j;
  }
}

/* Sorts addresses (heap sort: no allocation, no recursion). */
static void mi_dhat_sort_addrs(uintptr_t* a, size_t n) {
  for (size_t k = n / 2; k-- > 0;) mi_dhat_sift_down(a, k, n);
  for (size_t end = n; end-- > 1;) {
    uintptr_t t = a[0];
    a[0] = a[end];
    a[end] = t;
    mi_dhat_sift_down(a, 0, end);
  }
}

static size_t mi_dhat_pow2_at_least(size_t n) {
  size_t cap = 1024;
  while (cap < n) cap *= 2;
  return cap;
}

bool mi_dhat_dump(const char* path) {
  _mi_process_init_once();
  bool idle = false;
  if (mi_dhat_busy || !atomic_compare_exchange_strong_explicit(&mi_dhat_dumping, &idle, true, memory_order_acquire,
                                                               memory_order_relaxed)) {
    errno = EBUSY;
    return false;
  }
  mi_dhat_busy = true;
  mi_sched_point(MI_SCHED_DHAT_DUMPING); /* a test holds a dump here to see a second one refused */
  _mi_dhat_symbolizer_enter();           /* the pprof writer may be symbolising */
  char fname[1024];
  mi_dhat_file_name(path, fname, sizeof(fname));
  mi_dhat_dump_t d;
  memset(&d, 0, sizeof(d));
  mi_dhat_state_t g;
  /* a copy of the sites and stacks, so that symbolising and writing run
     without the lock (the symboliser may call into the C library) */
  _mi_lock_acquire(&mi_dhat_lock);
  g = mi_dhat;
  d.site_count = mi_dhat.site_count;
  d.frame_count = mi_dhat.frame_count;
  /* the frames' copy even when there is no site: every later step may
     take it as there */
  d.sites = (d.site_count == 0 ? NULL : (mi_dhat_site_t*)_mi_dhat_os_alloc(d.site_count * sizeof(mi_dhat_site_t)));
  d.frames = (uintptr_t*)_mi_dhat_os_alloc((d.frame_count + 1) * sizeof(uintptr_t));
  bool ok = ((d.sites != NULL || d.site_count == 0) && d.frames != NULL);
  if (ok && d.site_count > 0) {
    memcpy(d.sites, mi_dhat.sites, d.site_count * sizeof(mi_dhat_site_t));
    memcpy(d.frames, mi_dhat.frames, d.frame_count * sizeof(uintptr_t));
  }
  _mi_lock_release(&mi_dhat_lock);
  int err = ENOMEM;
  if (ok) {
    d.addr_cap = mi_dhat_pow2_at_least(2 * d.frame_count + 2);
    d.merge_cap = mi_dhat_pow2_at_least(2 * d.site_count + 2);
    d.addrs = (mi_dhat_addr_t*)_mi_dhat_os_alloc(d.addr_cap * sizeof(mi_dhat_addr_t));
    d.merge = (uint32_t*)_mi_dhat_os_alloc(d.merge_cap * sizeof(uint32_t));
    ok = (d.addrs != NULL && d.merge != NULL && _mi_dhat_grow((void**)&d.ftbl, &d.ftbl_cap, sizeof(uintptr_t), 1));
  }
  if (ok) {
    /* symbolised in address order: the line reader then runs each line
       program once for all the addresses in it (lines.c) */
    uintptr_t* sorted = (uintptr_t*)_mi_dhat_os_alloc((d.frame_count + 1) * sizeof(uintptr_t));
    if (sorted != NULL) {
      memcpy(sorted, d.frames, d.frame_count * sizeof(uintptr_t));
      mi_dhat_sort_addrs(sorted, d.frame_count);
      for (size_t i = 0; i < d.frame_count; i++) {
        if (i == 0 || sorted[i] != sorted[i - 1]) (void)mi_dhat_addr_of(&d, sorted[i]);
      }
      _mi_dhat_os_free(sorted, (d.frame_count + 1) * sizeof(uintptr_t));
    }
    d.ftbl[d.ftbl_count++] = 0; /* "[root]" */
    for (size_t k = 0; k < d.site_count; k++) {
      mi_dhat_site_t* s = &d.sites[k];
      /* finish the lazy peak snapshot and the lifetimes of live blocks */
      if (s->snap_epoch != g.epoch) {
        s->gb = s->cur_b;
        s->gbk = s->cur_bk;
      }
      s->tl += s->cur_bk * g.now - s->live_time;
      mi_dhat_trim(&d, s);
      mi_dhat_merge(&d, k);
    }
    mi_dhat_out_t* out = (mi_dhat_out_t*)_mi_dhat_os_alloc(sizeof(mi_dhat_out_t));
    if (out == NULL) {
      ok = false;
    } else {
      err = mi_prim_file_create(fname, &out->fd);
      if (err == 0) {
        mi_dhat_write(out, &d, &g);
        _mi_dhat_out_flush(out);
        err = out->err;
        int cerr = mi_prim_file_close(out->fd);
        if (err == 0) err = cerr;
      }
      ok = (err == 0);
      _mi_dhat_os_free(out, sizeof(mi_dhat_out_t));
    }
  }
  mi_dhat_dump_free(&d);
  _mi_dhat_symbolizer_leave();
  mi_dhat_busy = false;
  atomic_store_explicit(&mi_dhat_dumping, false, memory_order_release);
  if (!ok) errno = err;
  else _mi_verbose_message("heap profile written to %s\n", fname);
  return ok;
}

/* ---- Listening to the rare events (base/listeners.h) ---------------------------------- */

static void mi_dhat_segment_unmapped(const void* segment, size_t size) {
  (void)size;
  _mi_dhat_segment_unmapped(segment); /* the records kept beside it */
}
static void mi_dhat_page_gone(const mi_page_t* page) {
  if (mi_unlikely(mi_dhat_is_on())) _mi_dhat_record_page_gone(page); /* its live blocks are freed */
}
mi_listener_define(mi_dhat_listener) = {
    .name = "dhat",
    .order = MI_LISTEN_DHAT,
    .process_ready = &_mi_dhat_process_init, /* MIMALLOC_DHAT=1: the profiler starts now */
    .process_done = &_mi_dhat_process_done,
    .fork_child = &_mi_dhat_after_fork_child,
    .segment_unmapped = &mi_dhat_segment_unmapped,
    .page_gone = &mi_dhat_page_gone,
};
#else /* MI_DHAT */

bool mi_dhat_start(void) {
  errno = ENOSYS;
  return false;
}
void mi_dhat_stop(void) {}
bool mi_dhat_dump(const char* path) {
  (void)path;
  errno = ENOSYS;
  return false;
}
bool mi_dhat_is_running(void) {
  return false;
}

#endif
