/* Detailed statistics' entry points (MI_STAT >= 2: malloc_requested,
   exact, requested.c), called through the observers' dispatch of api/observe.h: the
   core includes that header, never this one. Only declarations of the base
   layer's types. */
#ifndef MI_STATS_HOOKS_H
#define MI_STATS_HOOKS_H

#include "../base/base.h"

#if MI_STAT >= 2
void _mi_stat_requested_page_init(mi_page_t* page) mi_decl_hidden;
void _mi_stat_requested_alloc(void* p, size_t size) mi_decl_hidden;
size_t _mi_stat_requested_take(void* p, bool realloc) mi_decl_hidden;
void _mi_stat_requested_free_done(size_t size) mi_decl_hidden;
void _mi_stat_requested_realloc_done(void* p, size_t size, void* newp, size_t newsize) mi_decl_hidden;
void _mi_stat_requested_page_gone(const mi_page_t* page) mi_decl_hidden;
#endif

#endif
