# The library's name and where an install puts each part, as mimalloc names
# and places them (docs/build.md), so variants install side by side and a
# script that looks for mimalloc's files finds them. Included by
# CMakeLists.txt once the variant (MI_SECURE, MI_TRACK_*) is known; sets
#   mi_basename       mimalloc[-secure][-valgrind][-asan][-<build type>]
#                     (no build-type suffix for Release, RelWithDebInfo,
#                     MinSizeRel, None: libmimalloc.so, libmimalloc-secure.so)
#   mi_version        <major>.<minor>
#   mi_install_incdir, mi_install_objdir, mi_install_cmakedir
# The shared library always goes to the library directory; the headers, the
# static library, mimalloc.o and the CMake package go to versioned
# directories (include/mimalloc-2.4, lib/mimalloc-2.4, lib/cmake/mimalloc-2.4)
# unless MI_INSTALL_TOPLEVEL is on.

if(MI_TRACK_VALGRIND)
  string(APPEND mi_basename "-valgrind")
endif()
if(MI_TRACK_ASAN)
  string(APPEND mi_basename "-asan")
endif()
string(TOLOWER "${CMAKE_BUILD_TYPE}" mi_build_type_lc)
if(mi_build_type_lc AND NOT mi_build_type_lc MATCHES "^(release|relwithdebinfo|minsizerel|none)$")
  string(APPEND mi_basename "-${mi_build_type_lc}")
endif()

set(mi_version "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")
if(MI_INSTALL_TOPLEVEL)
  set(mi_install_incdir "${CMAKE_INSTALL_INCLUDEDIR}")
  set(mi_install_objdir "${CMAKE_INSTALL_LIBDIR}")
  set(mi_install_cmakedir "${CMAKE_INSTALL_LIBDIR}/cmake/mimalloc")
else()
  set(mi_install_incdir "${CMAKE_INSTALL_INCLUDEDIR}/mimalloc-${mi_version}")
  set(mi_install_objdir "${CMAKE_INSTALL_LIBDIR}/mimalloc-${mi_version}")
  set(mi_install_cmakedir "${CMAKE_INSTALL_LIBDIR}/cmake/mimalloc-${mi_version}")
endif()
message(STATUS "mimalloc-pprof: library name ${mi_basename}, headers installed to ${mi_install_incdir}")
