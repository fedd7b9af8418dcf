//! The override feature: C's malloc and free in the same binary are ours.
#![cfg(all(feature = "override", unix))]

use std::os::raw::c_void;

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(p: *mut c_void);
}

#[test]
fn override_c_malloc_is_in_heap_region() {
    unsafe {
        let p = malloc(1000);
        assert!(!p.is_null());
        assert!(mimalloc_pprof::is_in_heap_region(p as *const u8));
        free(p);
    }
}
