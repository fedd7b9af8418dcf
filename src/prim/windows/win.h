/* Shared by the Windows implementation of the OS contract (prim.h): the
   error mapping and the record of which primitive paths a run took. */
#ifndef MI_PRIM_WIN_H
#define MI_PRIM_WIN_H

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include "../../compiler.h"
#include "../prim.h"
#include "path-count.h"

/* The errno-style code for GetLastError(): the out-of-memory codes become
   ENOMEM (retried by os.c), the rest what they mean (docs/windows.md). */
int _mi_win_errno(void) mi_decl_hidden;
int _mi_win_errno_of(DWORD err) mi_decl_hidden;
void _mi_win_path_note(mi_win_path_t path) mi_decl_hidden;

/* Tests: use VirtualAlloc2 where the system has it (the default), or act as
   on a system without it; returns whether it is in use now. */
bool _mi_win_use_virtual_alloc2(bool use) mi_decl_hidden;

/* Run-time binding of a function that older Windows versions lack; NULL if
   the module or the function is not there. */
void* _mi_win_bind(const char* module, const char* name, bool load) mi_decl_hidden;

#endif
