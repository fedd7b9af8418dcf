/* Build switches of mimalloc-pprof, in one place. Each is set by the CMake
   option of the same name (or a compiler -D) and defaults to off.

   | switch          | levels | what it adds                                        |
   |-----------------|--------|-----------------------------------------------------|
   | MI_DEBUG        | 0..3   | 1: cheap assertions; 2: internal invariants on the  |
   |                 |        | slow paths; 3: full heap-consistency walks          |
   | MI_SECURE       | 0/1    | hardened build (see docs/secure-mode.md)            |
   | MI_STAT         | 0..2   | 1: per-size-class allocation counts on the fast     |
   |                 |        | path; 2: also malloc_requested, exact (every block's |
   |                 |        | requested size kept, every allocation observed)     |
   | MI_OVERRIDE     | CMake  | export malloc/free/... from the shared library (a   |
   |                 |        | choice of sources, no macro: src/api/override.c)    |
   | MI_GUARDED      | 0/1    | sampled guard pages, secure builds (secure/guard.c) |
   | MI_LOCKORDER    | 0/1    | run-time lock-order checker (base/lockorder.c); on  |
   |                 |        | in Debug builds (docs/lock-order.md)                |
   | MI_FAULT        | 0/1    | fault-injection hooks in the OS primitives, and the |
   |                 |        | teardown protocol's schedule points; on in Debug    |
   | MI_FAULT_PLANT_UNCHECKED | 0/1 | test only: one primitive's result left     |
   |                 |        | unchecked (positive control of the fault sweep)     |
   | MI_TEARDOWN_PLANT_PURGE_RACE | 0/1 | test only: the purge-refusal race put |
   |                 |        | back (positive control of tests/teardown)           |
   | MI_TEARDOWN_PLANT_SKIP_TAG | 0/1 | test only: the claim-on-free CAS    |
   |                 |        | compares the owner state, not the generation      |
   |                 |        | (positive control of tests/teardown)              |
   | MI_TEARDOWN_PLANT_STALE_LINKS | 0/1 | test only (secure): the page free   |
   |                 |        | checks purge links read before the purge lock     |
   |                 |        | (positive control of tests/teardown)              |
   | MI_SECURE_PLANT_FALSE_ALARM | 0/1 | test only (secure): every 2^20th     |
   |                 |        | small or medium free reported as a double free    |
   |                 |        | (control of the real-suite job, docs/real-suites.md)|
   | MI_WIN_PLANT_THREAD_LEAK | 0/1 | test only (Windows): the thread-exit   |
   |                 |        | hook never runs (positive control of              |
   |                 |        | tests/win/test-thread-exit)                         |
   | MI_TRACK_ASAN   | 0/1    | poison/unpoison blocks for AddressSanitizer         |
   |                 |        | (src/base/track.h, docs/sanitizers.md); not with SECURE  |
   | MI_TRACK_VALGRIND | 0/1  | memcheck client requests for blocks (src/base/track.h);  |
   |                 |        | not with SECURE                                     |
   | MI_DHAT         | 0/1    | exact DHAT-format heap profiler                     |
   | MI_PPROF        | 0/1    | sampled heap profiler in pprof's formats (src/prof) |
   | MI_PROF_PLANT_UNIFORM | 0/1 | test only: the sampler's gaps drawn uniformly |
   |                 |        | (positive control of tests/pprof's unbiasedness)    |
   | MI_MEMORY_EVENTS | 0/1   | memory events: live-byte counts and a callback per  |
   |                 |        | allocation, free and resize (src/events); idle      |
   |                 |        | until switched on (docs/memory-events.md)           |
   | MI_MEMORY_EVENTS_PLANT | 0..5 | test only: 1 a FREE dropped, 2 a moving    |
   |                 |        | realloc told as ALLOCATE + FREE, 3 totals off by    |
   |                 |        | one event, 4 a handler's operations counted, 5 a    |
   |                 |        | failed realloc told (controls of tests/events)      |
   | MI_TRACK_ETW    | 0/1    | Windows: ETW events 100/101 of the provider         |
   |                 |        | microsoft-windows-mimalloc (docs/windows.md)        |
   | MI_TRACK_ETW_STUB | 0/1  | test only: the ETW calls recorded in memory, a      |
   |                 |        | session always listening (tests/win/test-etw.c)     |
   | MI_TRACK_ETW_PLANT_ID | 0/1 | test only: the allocation event written     |
   |                 |        | with id 102 (positive control of tests/win/test-etw)|
   | MI_DEFAULT_SHOW_ERRORS | 0/1 | default of option show_errors (mimalloc's    |
   |                 |        | CMake MI_SHOW_ERRORS); else on in debug builds      |
   | MI_DEFAULT_ALLOW_THP | 0/1 | default of option allow_thp (mimalloc's CMake  |
   |                 |        | MI_NO_THP sets 0); else 1                           |
   | MI_WIN_EXIT_FLS | 0/1    | Windows: thread exit seen by a fiber-local-storage  |
   |                 |        | destructor instead of the TLS callback; default on  |
   |                 |        | only for compilers with neither GCC's section       |
   |                 |        | attribute nor MSVC's pragmas                        |

   Optional machinery compiles to nothing when its switch is 0. Every switch
   has its default below, and the library builds with -Wundef: a switch
   misspelt in an #if is an error, not a silent 0. */
#ifndef MI_CONFIG_H
#define MI_CONFIG_H

#ifndef MI_DEBUG
#define MI_DEBUG 0
#endif
#ifndef MI_SECURE
#define MI_SECURE 0
#endif
#ifndef MI_STAT
#define MI_STAT 0
#endif
#ifndef MI_RECLAIM_PLANT_LIVE_ARENA
#define MI_RECLAIM_PLANT_LIVE_ARENA 0
#endif
#ifndef MI_HOLES_PLANT_OVERREACH
#define MI_HOLES_PLANT_OVERREACH 0
#endif
#ifndef MI_HOLES_PLANT_LISTED
#define MI_HOLES_PLANT_LISTED 0
#endif
#ifndef MI_STAT_PLANT_REQUESTED_OFF_BY_ONE
#define MI_STAT_PLANT_REQUESTED_OFF_BY_ONE 0
#endif
#ifndef MI_SECURE_PLANT_FALSE_ALARM
#define MI_SECURE_PLANT_FALSE_ALARM 0
#endif
#ifndef MI_DEFAULT_SHOW_ERRORS
#define MI_DEFAULT_SHOW_ERRORS (MI_DEBUG > 0 ? 1 : 0)
#endif
#ifndef MI_DEFAULT_ALLOW_THP
#define MI_DEFAULT_ALLOW_THP 1
#endif
#ifndef MI_GUARDED
#define MI_GUARDED 0
#endif
#ifndef MI_DHAT
#define MI_DHAT 0
#endif
#ifndef MI_PPROF
#define MI_PPROF 0
#endif
#ifndef MI_PROF_PLANT_UNIFORM
#define MI_PROF_PLANT_UNIFORM 0
#endif
#ifndef MI_MEMORY_EVENTS
#define MI_MEMORY_EVENTS 0
#endif
#ifndef MI_MEMORY_EVENTS_PLANT
#define MI_MEMORY_EVENTS_PLANT 0
#endif
#ifndef MI_TRACK_ETW
#define MI_TRACK_ETW 0
#endif
#ifndef MI_TRACK_ETW_STUB
#define MI_TRACK_ETW_STUB 0
#endif
#ifndef MI_TRACK_ETW_PLANT_ID
#define MI_TRACK_ETW_PLANT_ID 0
#endif
/* any observer of the program's allocations built in (api/observe.h);
   detailed statistics are one, armed for the whole run */
#define MI_OBSERVERS (MI_DHAT || MI_PPROF || MI_MEMORY_EVENTS || MI_STAT >= 2)
/* MIMALLOC_SECURE_STACKS (secure/stacks.c): the secure build's per-block
   stacks, which take the profilers' capture and symboliser */
#define MI_SECURE_STACKS (MI_SECURE && (MI_DHAT || MI_PPROF))

/* The secure build's level unless MIMALLOC_SECURE_LEVEL says otherwise:
   2 full, 1 light (CMake MI_SECURE_LEVEL; docs/secure-mode.md, "Levels") */
#ifndef MI_SECURE_LEVEL_DEFAULT
#define MI_SECURE_LEVEL_DEFAULT 2
#endif
#ifndef MI_LOCKORDER
#define MI_LOCKORDER 0
#endif
#ifndef MI_FAULT
#define MI_FAULT 0
#endif
#ifndef MI_FAULT_PLANT_UNCHECKED
#define MI_FAULT_PLANT_UNCHECKED 0
#endif
#ifndef MI_TEARDOWN_PLANT_PURGE_RACE
#define MI_TEARDOWN_PLANT_PURGE_RACE 0
#endif
#ifndef MI_TEARDOWN_PLANT_SKIP_TAG
#define MI_TEARDOWN_PLANT_SKIP_TAG 0
#endif
#ifndef MI_TEARDOWN_PLANT_STALE_LINKS
#define MI_TEARDOWN_PLANT_STALE_LINKS 0
#endif
#ifndef MI_WIN_PLANT_THREAD_LEAK
#define MI_WIN_PLANT_THREAD_LEAK 0
#endif
#ifndef MI_TRACK_ASAN
#define MI_TRACK_ASAN 0
#endif
#ifndef MI_TRACK_VALGRIND
#define MI_TRACK_VALGRIND 0
#endif
#ifndef MI_WIN_EXIT_FLS
#if defined(__GNUC__) || defined(_MSC_VER)
#define MI_WIN_EXIT_FLS 0
#else
#define MI_WIN_EXIT_FLS 1
#endif
#endif
#if MI_TRACK_VALGRIND && MI_SECURE
#error "MI_TRACK_VALGRIND is not supported in secure builds yet (docs/sanitizers.md)"
#endif
#if MI_TRACK_ASAN && MI_SECURE
#error "MI_TRACK_ASAN is not supported in secure builds yet (docs/sanitizers.md)"
#endif
#if MI_GUARDED && !MI_SECURE
#error "MI_GUARDED builds on secure mode: configure with MI_SECURE"
#endif
#if MI_TRACK_ETW && !MI_MEMORY_EVENTS
#error "MI_TRACK_ETW writes its events where the memory events are told: configure with MI_MEMORY_EVENTS"
#endif
#if MI_TRACK_ETW && !defined(_WIN32)
#error "MI_TRACK_ETW is Event Tracing for Windows: Windows builds only"
#endif

#include "layout.h"

#endif
