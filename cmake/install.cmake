# What an install holds and the targets only it needs (docs/build.md):
# the shared library, the static library that overrides malloc (as
# mimalloc's does), mimalloc.o (MI_BUILD_OBJECT), every header of include/,
# the CMake package (targets `mimalloc` and `mimalloc-static`, with
# `mimalloc::` aliases, and mimalloc's MIMALLOC_*_DIR variables) and the
# pkg-config files. Included at the end of CMakeLists.txt, after the library
# targets; the layout comes from cmake/install-layout.cmake.

set(mi_install_targets "")
if(MI_BUILD_SHARED)
  install(TARGETS mimalloc EXPORT mimalloc-targets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# The static library a program links overrides malloc when MI_OVERRIDE is on,
# as mimalloc's does: the objects of mimalloc-static (compiled once) and the
# override in one more archive, installed and exported as `mimalloc-static`.
# The build tree's mimalloc-static stays without it: the test programs link
# it and keep the C library's malloc. Not with MI_TRACK_ASAN, whose run-time
# owns malloc.
set(mi_static_installed "")
if(MI_BUILD_STATIC)
  if(MI_OVERRIDE AND NOT MI_TRACK_ASAN)
    add_library(mimalloc-static-override STATIC $<TARGET_OBJECTS:mimalloc-static> src/api/override.c)
    mi_setup_target(mimalloc-static-override)
    set_target_properties(mimalloc-static-override PROPERTIES
      EXPORT_NAME mimalloc-static
      ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/override)
    set(mi_static_installed mimalloc-static-override)
  else()
    set(mi_static_installed mimalloc-static)
  endif()
  install(TARGETS ${mi_static_installed} EXPORT mimalloc-targets ARCHIVE DESTINATION ${mi_install_objdir})
endif()

# mimalloc.o: the installed static library's objects linked into one
# relocatable object (named as the library: mimalloc-secure.o, ...), for a
# program that must have the allocator whatever its link order
if(MI_BUILD_OBJECT AND NOT WIN32)
  if(NOT MI_BUILD_STATIC)
    message(FATAL_ERROR "mimalloc-pprof: MI_BUILD_OBJECT needs MI_BUILD_STATIC (mimalloc.o is made from the static library's objects)")
  endif()
  set(mi_object ${CMAKE_CURRENT_BINARY_DIR}/${mi_basename}${CMAKE_C_OUTPUT_EXTENSION})
  add_custom_command(OUTPUT ${mi_object}
    COMMAND ${CMAKE_C_COMPILER} -r -nostdlib -o ${mi_object}
            -Wl,--whole-archive $<TARGET_FILE:${mi_static_installed}> -Wl,--no-whole-archive
    DEPENDS ${mi_static_installed}
    COMMENT "Linking ${mi_basename}${CMAKE_C_OUTPUT_EXTENSION} (MI_BUILD_OBJECT)")
  add_custom_target(mimalloc-obj ALL DEPENDS ${mi_object})
  install(FILES ${mi_object} DESTINATION ${mi_install_objdir})
elseif(MI_BUILD_OBJECT)
  message(STATUS "mimalloc-pprof: MI_BUILD_OBJECT is not supported on Windows: off")
endif()

# every header of include/ (mimalloc.h, mimalloc-override.h,
# mimalloc-new-delete.h, ...) and the include/mimalloc/ APIs
file(GLOB mi_public_headers ${PROJECT_SOURCE_DIR}/include/*.h)
install(FILES ${mi_public_headers} DESTINATION ${mi_install_incdir})
install(DIRECTORY include/mimalloc DESTINATION ${mi_install_incdir} FILES_MATCHING PATTERN "*.h")

# The CMake package: each variant's targets in a file of its own
# (mimalloc-targets.cmake, mimalloc-secure-targets.cmake, ...), so variants
# installed into one prefix keep theirs; the config file loads the variant
# installed last unless MIMALLOC_VARIANT names another.
install(EXPORT mimalloc-targets FILE ${mi_basename}-targets.cmake DESTINATION ${mi_install_cmakedir})
include(CMakePackageConfigHelpers)
set(mi_install_libdir ${CMAKE_INSTALL_LIBDIR})
configure_package_config_file(cmake/mimalloc-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/mimalloc-config.cmake
  INSTALL_DESTINATION ${mi_install_cmakedir}
  PATH_VARS mi_install_incdir mi_install_libdir mi_install_objdir)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/mimalloc-config-version.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/mimalloc-config.cmake ${CMAKE_CURRENT_BINARY_DIR}/mimalloc-config-version.cmake
  DESTINATION ${mi_install_cmakedir})

# pkg-config: <name>.pc for the variant (mimalloc-secure.pc, ...) and, as
# mimalloc does, mimalloc.pc for whichever variant was installed last. The
# prefix is found from where the file lies (pkg-config's pcfiledir), not
# from CMAKE_INSTALL_PREFIX: `cmake --install --prefix DIR` installs
# elsewhere than configured, and the file must point at DIR then.
file(RELATIVE_PATH mi_pc_to_prefix "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" mi_pc_to_prefix "${mi_pc_to_prefix}")
configure_file(cmake/mimalloc.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${mi_basename}.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${mi_basename}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(NOT mi_basename STREQUAL "mimalloc")
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${mi_basename}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
    RENAME mimalloc.pc)
endif()
