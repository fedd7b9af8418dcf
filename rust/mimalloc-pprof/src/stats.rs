//! The statistics as data (docs/statistics.md): `Stats` is C's `mi_stats_t`
//! (its layout is checked against the C compiler's by tests/stats_layout.rs).
use std::ffi::CStr;
use std::os::raw::{c_char, c_void};

use crate::ffi;
use crate::Heap;

pub use crate::ffi::mi_stat_count_t as StatCount;
pub use crate::ffi::mi_stat_counter_t as StatCounter;
pub use crate::ffi::mi_stats_t as Stats;

/// The layout version `Stats` has (`MI_STAT_VERSION`).
pub const VERSION: usize = ffi::MI_STAT_VERSION;
/// `malloc_bins` and `page_bins` hold `BIN_HUGE + 1` entries.
pub const BIN_HUGE: usize = ffi::MI_BIN_HUGE;

fn empty() -> Box<Stats> {
    // all zero is a valid Stats (integers only)
    let mut s: Box<Stats> = unsafe { Box::new(std::mem::zeroed()) };
    s.size = std::mem::size_of::<Stats>();
    s.version = VERSION;
    s
}

/// The process's figures, every thread's included. `Stats` (and
/// `StatCount`, `StatCounter`) print with `{:?}`, under their C names:
///
/// ```
/// let s = mimalloc_pprof::stats::get();
/// let text = format!("{:?}", s);
/// assert!(text.starts_with("mi_stats_t {"), "{}", text);
/// assert!(text.contains("malloc_requested: mi_stat_count_t { total: "), "{}", text);
/// ```
pub fn get() -> Box<Stats> {
    let mut s = empty();
    let ok = unsafe { ffi::mi_stats_get(&mut *s) };
    assert!(
        ok,
        "mi_stats_get refused a Stats of size {} version {}",
        s.size, s.version
    );
    s
}

/// The figures of one heap's blocks and pages.
pub fn heap_get(heap: &Heap) -> Box<Stats> {
    let mut s = empty();
    let ok = unsafe { ffi::mi_heap_stats_get(heap.as_raw(), &mut *s) };
    assert!(
        ok,
        "mi_heap_stats_get refused a Stats of size {} version {}",
        s.size, s.version
    );
    s
}

/// The block size of size class `bin` (1..BIN_HUGE; 0 for the others).
pub fn bin_size(bin: usize) -> usize {
    unsafe { ffi::mi_stats_get_bin_size(bin) }
}

/// The process's figures as JSON (the same document as `mi_stats_get_json`).
pub fn json() -> String {
    unsafe {
        let p: *mut c_char = ffi::mi_stats_get_json(0, std::ptr::null_mut());
        assert!(!p.is_null(), "mi_stats_get_json: out of memory");
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        ffi::mi_free(p as *mut c_void);
        s
    }
}

/// The counters back to zero (the current values are kept).
pub fn reset() {
    unsafe { ffi::mi_stats_reset() }
}
