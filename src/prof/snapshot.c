/* Snapshots of the samples: copies in OS memory that a visitor reads
   without the profiler's lock (so it may allocate), and the loaded modules.
   Where the allocator is linked into the program (static library) its
   frames cannot be told by address at capture: they are dropped here, by
   name, before anything reads the stacks, so frame 0 is always the
   program's call. */
#include "prof.h"

#if MI_PPROF

/* Entries whose stacks became the same once trimmed (the program's call
   reached the allocator by different internal paths) are merged into the
   first: pprof wants one record per stack. */
static void mi_prof_snapshot_merge(mi_prof_snapshot_t* snap) {
  size_t cap = 64;
  while (cap < 2 * snap->count) cap *= 2;
  uint32_t* index = (uint32_t*)_mi_os_alloc_meta(cap * sizeof(uint32_t)); /* entry + 1 */
  if (index == NULL) return;                                              /* left unmerged: still valid data */
  size_t kept = 0;
  for (size_t i = 0; i < snap->count; i++) {
    mi_prof_entry_t* e = &snap->entries[i];
    uint64_t h = 0xcbf29ce484222325ULL ^ e->depth;
    for (uint32_t k = 0; k < e->depth; k++) h = (h ^ e->frames[k]) * 0x100000001B3ULL;
    size_t j = (size_t)(h ^ (h >> 29)) & (cap - 1);
    mi_prof_entry_t* same = NULL;
    for (; index[j] != 0; j = (j + 1) & (cap - 1)) {
      mi_prof_entry_t* o = &snap->entries[index[j] - 1];
      if (o->depth == e->depth && memcmp(o->frames, e->frames, e->depth * sizeof(uintptr_t)) == 0) {
        same = o;
        break;
      }
    }
    if (same != NULL) {
      same->live_objs += e->live_objs;
      same->live_bytes += e->live_bytes;
      same->accum_objs += e->accum_objs;
      same->accum_bytes += e->accum_bytes;
      continue;
    }
    snap->entries[kept] = *e;
    index[j] = (uint32_t)(kept + 1);
    kept++;
  }
  snap->count = kept;
  _mi_os_free_meta(index, cap * sizeof(uint32_t));
}

void _mi_prof_snapshot_trim(mi_prof_snapshot_t* snap) {
  if (snap == NULL || !_mi_dhat_allocator_linked_in()) return;
  char name[256];
  for (size_t i = 0; i < snap->count; i++) {
    mi_prof_entry_t* e = &snap->entries[i];
    while (e->depth > 1) {
      mi_dhat_sym_t sym;
      memset(&sym, 0, sizeof(sym));
      _mi_dhat_symbolize(e->frames[0], name, sizeof(name), &sym);
      if (!sym.internal) break;
      e->frames++;
      e->depth--;
    }
  }
  _mi_dhat_symbolize_done();
  mi_prof_snapshot_merge(snap);
}

mi_prof_snapshot_t* mi_prof_snapshot_new(void) {
  if (!mi_prof_is_on() || _mi_prof_thread_busy()) return NULL;
  _mi_prof_thread_enter();
  mi_prof_snapshot_t* snap = _mi_prof_snapshot_take();
  _mi_prof_snapshot_trim(snap);
  _mi_prof_thread_leave();
  return snap;
}

bool mi_prof_snapshot_visit(const mi_prof_snapshot_t* snapshot, mi_prof_visit_fun* visitor, void* arg) {
  if (snapshot == NULL || visitor == NULL) return false;
  for (size_t i = 0; i < snapshot->count; i++) {
    const mi_prof_entry_t* e = &snapshot->entries[i];
    mi_prof_sample_info_t info = {(const void* const*)e->frames, e->depth,
                                  (size_t)e->live_objs,          (size_t)e->live_bytes,
                                  (size_t)e->accum_objs,         (size_t)e->accum_bytes};
    if (!visitor(&info, arg)) break;
  }
  return true;
}

void mi_prof_snapshot_free(mi_prof_snapshot_t* snapshot) {
  _mi_prof_snapshot_release(snapshot);
}

bool mi_prof_modules_visit(mi_prof_module_visit_fun* visitor, void* arg) {
  if (visitor == NULL) return false;
  mi_prof_mapping_t* maps = NULL;
  size_t count = 0;
  if (!_mi_prof_mappings(&maps, &count)) return false;
  for (size_t i = 0; i < count; i++) {
    mi_prof_module_info_t info = {maps[i].path, maps[i].start, (size_t)(maps[i].limit - maps[i].start)};
    if (!visitor(&info, arg)) break;
  }
  _mi_prof_mappings_free(maps, count);
  return true;
}

#endif
