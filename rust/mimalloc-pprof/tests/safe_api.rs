//! The safe layer over the C API.
use std::alloc::Layout;
use std::sync::atomic::{AtomicI32, Ordering};

use mimalloc_pprof::{collect, set_error_callback, usable_size, version, Heap, MiOption};

#[test]
fn version_is_mimalloc_2_4_1() {
    assert_eq!(version(), 20401);
}

#[test]
fn heap_alloc_contains_destroy() {
    let heap = Heap::new().unwrap();
    let layout = Layout::from_size_align(1000, 8).unwrap();
    let blocks: Vec<_> = (0..1000).map(|_| heap.alloc(layout).unwrap()).collect();
    for b in &blocks {
        assert!(heap.contains(b.as_ptr()));
        unsafe { b.as_ptr().write_bytes(3, 1000) };
    }
    let big = heap.alloc(Layout::from_size_align(3 << 20, 4096).unwrap()).unwrap();
    assert_eq!(big.as_ptr() as usize % 4096, 0);
    let z = heap.alloc_zeroed(Layout::from_size_align(5000, 64).unwrap()).unwrap();
    assert!(unsafe { std::slice::from_raw_parts(z.as_ptr(), 5000) }
        .iter()
        .all(|&b| b == 0));
    let grown = unsafe { heap.realloc(blocks[0], layout, 50_000) }.unwrap();
    assert!(unsafe { std::slice::from_raw_parts(grown.as_ptr(), 1000) }
        .iter()
        .all(|&b| b == 3));
    assert!(unsafe { usable_size(grown.as_ptr()) } >= 50_000);
    heap.collect(true);
    unsafe { heap.destroy() }; // every block at once
    collect(true);
}

#[test]
fn heap_dropped_blocks_stay_valid() {
    let heap = Heap::new().unwrap();
    let p = heap.alloc(Layout::from_size_align(64, 8).unwrap()).unwrap();
    unsafe { p.as_ptr().write_bytes(9, 64) };
    drop(heap); // the block moves to the thread's default heap
    assert!(unsafe { std::slice::from_raw_parts(p.as_ptr(), 64) }
        .iter()
        .all(|&b| b == 9));
    unsafe { mimalloc_pprof::ffi::mi_free(p.as_ptr() as *mut _) };
}

#[test]
fn options_typed_set_and_read_back() {
    let old = MiOption::PURGE_DELAY.get();
    MiOption::PURGE_DELAY.set(250);
    assert_eq!(MiOption::PURGE_DELAY.get(), 250);
    MiOption::PURGE_DELAY.set(old);
    MiOption::SHOW_ERRORS.set_enabled(true);
    assert!(MiOption::SHOW_ERRORS.is_enabled());
    assert_eq!(MiOption::PURGE_DELAY.get_clamp(0, 10), old.max(0).min(10));
}

static SEEN: AtomicI32 = AtomicI32::new(0);
fn on_error(err: i32) {
    SEEN.store(err, Ordering::SeqCst);
}

#[test]
fn error_callback_called_with_enomem() {
    set_error_callback(Some(on_error));
    // far more than the address space: ENOMEM, reported to the callback
    let p = unsafe { mimalloc_pprof::ffi::mi_malloc(usize::MAX / 2) };
    assert!(p.is_null());
    set_error_callback(None);
    assert_eq!(SEEN.load(Ordering::SeqCst), 12); // ENOMEM
}
