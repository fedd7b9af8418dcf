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
# - the heap profiler's and the override's tests: neither exists on Windows.

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
foreach(path IN LISTS mi_win_core_tests)
  get_filename_component(name ${path} NAME)
  mi_win_test_target(${name} ${path}.c)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${MI_TEST_TIMEOUT} LABELS "core;windows")
endforeach()

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
