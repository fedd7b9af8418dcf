# Cross-build for 64-bit Windows with MinGW-w64 (Debian: gcc-mingw-w64-x86-64)
# and run the tests under Wine (Debian: wine64):
#   cmake -S . -B build-win -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64.cmake -DMI_BUILD_TESTS=ON
#   cmake --build build-win -j2 && (cd build-win && ctest)
# ctest runs each test executable through cmake/wine-run.sh (see there for
# why a wrapper). ci/windows.sh does all of it. docs/windows.md.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(MI_MINGW_PREFIX x86_64-w64-mingw32 CACHE STRING "MinGW-w64 tool prefix")
set(CMAKE_C_COMPILER ${MI_MINGW_PREFIX}-gcc)
set(CMAKE_CXX_COMPILER ${MI_MINGW_PREFIX}-g++)
set(CMAKE_RC_COMPILER ${MI_MINGW_PREFIX}-windres)

set(CMAKE_FIND_ROOT_PATH /usr/${MI_MINGW_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)

set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/wine-run.sh)
