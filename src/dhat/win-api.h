/* <windows.h> as the profilers' Windows files include it: lean, and
   without the min and max macros. */
#ifndef MI_DHAT_WIN_API_H
#define MI_DHAT_WIN_API_H

#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#endif

#endif
