"""Run with the library preloaded (LD_PRELOAD): prints "VERSION True" when
the process's malloc is served by it, "VERSION False" when the library is
loaded but malloc is someone else's; fails when mi_version is not there
(the library is not loaded). Used by run-real-programs.sh and by
tests/real-suites/run-cpython.sh before they trust a preloaded run."""
import ctypes

lib = ctypes.CDLL(None)
lib.malloc.restype = ctypes.c_void_p
lib.malloc.argtypes = [ctypes.c_size_t]
lib.free.argtypes = [ctypes.c_void_p]
lib.mi_is_in_heap_region.argtypes = [ctypes.c_void_p]
lib.mi_is_in_heap_region.restype = ctypes.c_bool
p = lib.malloc(100)
print(lib.mi_version(), bool(lib.mi_is_in_heap_region(p)))
lib.free(p)
