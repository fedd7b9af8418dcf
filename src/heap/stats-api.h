/* The statistics as data, between the struct's filling (stats-api.c) and
   its JSON (stats-json.c). */
#ifndef MI_STATS_API_H
#define MI_STATS_API_H

#include "heap.h"
#include "../../include/mimalloc-stats.h"

bool _mi_stats_valid(const mi_stats_t* stats) mi_decl_hidden;
void _mi_stats_fill(mi_stats_t* stats) mi_decl_hidden; /* the process's figures */

#endif
