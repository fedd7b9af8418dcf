# The Windows test suite (MinGW-w64 cross build, run by ctest through Wine:
# cmake/mingw-w64.cmake, docs/windows.md). The same test sources as on
# Linux, with tests/win/cmocka-shim.h as their <cmocka.h> (cmocka has no
# MinGW package). The tests' own threads use winpthreads; executables are
# linked statically so Wine needs no MinGW DLLs beside them.
#
# Not built here, and why:
# - fork-storm, test-teardown, test-lockorder: each case is a forked child
#   (fork storms, forced interleavings under a watchdog, fork handlers);
#   Windows has no fork and the cases are about POSIX fork semantics or
#   need a per-case process with shared setup a spawned process lacks.
# - the DHAT profiler's and the override's tests: neither exists on Windows.

set(MI_TEST_TIMEOUT 600)
set(mi_win_test_defines __USE_MINGW_ANSI_STDIO=1)
if(mi_debug_level GREATER 0)
  list(APPEND mi_win_test_defines MI_TEST_DEBUG_CHECK=${mi_debug_level})
endif()
if(MI_SECURE)
  list(APPEND mi_win_test_defines MI_TEST_SECURE=1)
endif()

function(mi_win_test_target name source)
  add_executable(${name} ${source})
  set_target_properties(${name} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  # tests/win first: its cmocka.h and its POSIX stand-ins
  target_include_directories(${name} BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/win)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(${name} PRIVATE ${mi_win_test_defines})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Werror -U_FORTIFY_SOURCE
                                         -include ${CMAKE_CURRENT_SOURCE_DIR}/win/posix-compat.h)
  target_link_libraries(${name} PRIVATE mimalloc-static)
  target_link_options(${name} PRIVATE -static -pthread)
endfunction()

set(mi_win_core_tests test-api test-aligned test-heap test-stress test-threads test-options test-heap-check
                      test-memory-return)
if(MI_SECURE)
  list(APPEND mi_win_core_tests secure/test-secure)
  if(MI_GUARDED)
    list(APPEND mi_win_core_tests guard/test-guard)
  endif()
endif()
# The secure build's reports (tests/win/check_win_reports.py, run by
# ci/windows.sh on the Release build): each misuse's first lines and its
# stacks named through the PE's symbols, with and without the blocks' stacks
if(MI_SECURE)
  add_executable(report-misuse win/report-misuse.c)
  target_include_directories(report-misuse PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(report-misuse PRIVATE -Wall -Wextra -Werror -g -O0 -fno-omit-frame-pointer)
  target_link_libraries(report-misuse PRIVATE mimalloc-static)
  target_link_options(report-misuse PRIVATE -static)
endif()

foreach(path IN LISTS mi_win_core_tests)
  get_filename_component(name ${path} NAME)
  mi_win_test_target(${name} ${path}.c)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${MI_TEST_TIMEOUT} LABELS "core;windows")
endforeach()

# ETW allocation events (docs/windows.md), in a build whose ETW calls are
# the library's recording stub (-DMI_TRACK_ETW=ON -DMI_TRACK_ETW_STUB=ON:
# Wine has no ETW session); ci/windows.sh builds it, and its positive
# control (-DMI_TRACK_ETW_PLANT_ID=ON: the allocation event's id wrong).
if(MI_TRACK_ETW AND MI_TRACK_ETW_STUB)
  mi_win_test_target(test-etw win/test-etw.c)
  target_include_directories(test-etw PRIVATE ${PROJECT_SOURCE_DIR}/src)
  add_test(NAME test-etw COMMAND test-etw)
  set_tests_properties(test-etw PROPERTIES TIMEOUT ${MI_TEST_TIMEOUT} LABELS "windows")
endif()

# Thread exit under MinGW: 10,000 threads come and go, committed memory stays flat.
mi_win_test_target(test-thread-exit win/test-thread-exit.c)
add_test(NAME test-thread-exit COMMAND test-thread-exit)
set_tests_properties(test-thread-exit PROPERTIES TIMEOUT ${MI_TEST_TIMEOUT} LABELS "core;windows")
# (its positive control: -DMI_WIN_PLANT_THREAD_LEAK=ON builds the library
# with the exit hook planted away; ci/windows.sh checks the test fails)

# The fault tests and sweeps, with Windows error codes injected.
if(mi_fault_on)
  foreach(name fault-sweep test-fault)
    mi_win_test_target(${name} fault/${name}.c)
    target_compile_definitions(${name} PRIVATE ${mi_defines})
  endforeach()
  # the Windows primitives directly: error mapping, injected Windows codes, paths taken
  mi_win_test_target(test-win-prim win/test-win-prim.c)
  target_compile_definitions(test-win-prim PRIVATE ${mi_defines})
  if(MI_FAULT_PLANT_UNCHECKED)
    add_test(NAME fault-sweep-positive-control COMMAND fault-sweep --arena --kind commit --expect-failure)
    set_tests_properties(fault-sweep-positive-control PROPERTIES TIMEOUT 600 LABELS "fault")
  else()
    add_test(NAME test-fault COMMAND test-fault)
    add_test(NAME test-win-prim COMMAND test-win-prim)
    set_tests_properties(test-fault test-win-prim PROPERTIES TIMEOUT 600 LABELS "core;windows")
    add_test(NAME fault-sweep COMMAND fault-sweep)
    add_test(NAME fault-sweep-threads COMMAND fault-sweep --threads 2)
    add_test(NAME fault-sweep-arena COMMAND fault-sweep --arena)
    set_tests_properties(fault-sweep fault-sweep-threads fault-sweep-arena PROPERTIES TIMEOUT 900 LABELS "fault;windows")
  endif()
endif()

# The pprof sampler (docs/pprof.md, "Windows"). Its calls and environment:
# tests/pprof/test-prof-api.c, with the fork case skipped (no fork) and the
# signal case Windows' own (MIMALLOC_PROF_SIGNAL refused, one warning, no
# dump). Its stacks and modules: tests/pprof/win_check.py runs the programs
# of tests/pprof/win-sites.c under Wine, every allocation sampled and dumped
# at exit (proto and text), and checks on the Linux side that every frame
# lies in a module that exists and that the MinGW addr2line names the site
# functions at frame 0 (address - mapping start + the file's ImageBase);
# win-sites links the static library (the allocator's frames told by the
# program's symbol table), win-sites-dll the DLL (told by its image), its
# sites in win-sites-lib.dll, which the loader must relocate (it prefers
# the program's own load address). ci/windows.sh adds the checker's
# positive control (the rebasing forgotten must fail).
if(MI_PPROF)
  # and its limits (a budget, a thread running at the start) and in-place
  # resizes (tests/pprof/test-prof-limits.c, test-prof-resize.c)
  foreach(name test-prof-api test-prof-limits test-prof-resize)
    mi_win_test_target(${name} pprof/${name}.c)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES TIMEOUT ${MI_TEST_TIMEOUT} LABELS "core;pprof;windows")
  endforeach()

  set(mi_win_sites_flags -Wall -Wextra -Werror -g -O2)
  add_executable(win-sites pprof/win-sites.c)
  target_include_directories(win-sites PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(win-sites PRIVATE ${mi_win_sites_flags})
  target_link_libraries(win-sites PRIVATE mimalloc-static)
  target_link_options(win-sites PRIVATE -static)
  set(mi_pprof_dir ${CMAKE_CURRENT_SOURCE_DIR}/pprof)
  set(mi_pprof_env "MI_PPROF_TOOLS_DEFAULT=${CMAKE_CURRENT_BINARY_DIR}/pprof-tools") # $MI_PPROF_TOOLS: shared
  add_test(NAME pprof-win-sites COMMAND python3 ${mi_pprof_dir}/win_check.py --run $<TARGET_FILE:win-sites>
                                        --out ${CMAKE_CURRENT_BINARY_DIR}/pprof-win-sites)
  if(TARGET mimalloc)
    add_library(win-sites-lib SHARED pprof/win-sites.c)
    set_target_properties(win-sites-lib PROPERTIES PREFIX "")
    target_compile_definitions(win-sites-lib PRIVATE WIN_SITES_LIB)
    target_compile_options(win-sites-lib PRIVATE ${mi_win_sites_flags})
    target_link_libraries(win-sites-lib PRIVATE mimalloc)
    target_link_options(win-sites-lib PRIVATE -Wl,--image-base,0x140000000) # the program's: relocated
    add_executable(win-sites-dll pprof/win-sites.c)
    target_compile_definitions(win-sites-dll PRIVATE WIN_SITES_USE_LIB)
    target_compile_options(win-sites-dll PRIVATE ${mi_win_sites_flags})
    target_link_libraries(win-sites-dll PRIVATE win-sites-lib mimalloc)
    # the DLLs it loads beside it, where Wine finds them: the allocator's, and the libgcc that one imports
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libgcc_s_seh-1.dll OUTPUT_VARIABLE mi_libgcc_dll
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(mi_copy_libgcc "")
    if(IS_ABSOLUTE "${mi_libgcc_dll}" AND EXISTS "${mi_libgcc_dll}")
      set(mi_copy_libgcc COMMAND ${CMAKE_COMMAND} -E copy_if_different ${mi_libgcc_dll} $<TARGET_FILE_DIR:win-sites-dll>)
    endif()
    add_custom_command(TARGET win-sites-dll POST_BUILD
                       COMMAND ${CMAKE_COMMAND} -E copy_if_different $<TARGET_FILE:mimalloc> $<TARGET_FILE_DIR:win-sites-dll>
                       ${mi_copy_libgcc})
    add_test(NAME pprof-win-sites-dll COMMAND python3 ${mi_pprof_dir}/win_check.py --run $<TARGET_FILE:win-sites-dll>
                                              --relocated win-sites-lib.dll
                                              --out ${CMAKE_CURRENT_BINARY_DIR}/pprof-win-sites-dll)
    set_tests_properties(pprof-win-sites-dll PROPERTIES TIMEOUT 600 LABELS "pprof;windows" ENVIRONMENT "${mi_pprof_env}")
  endif()
  set_tests_properties(pprof-win-sites PROPERTIES TIMEOUT 600 LABELS "pprof;windows" ENVIRONMENT "${mi_pprof_env}")
endif()
