//! The stats feature: `Stats` laid out as the C compiler lays out
//! mi_stats_t (offset_of! here, offsetof in csrc/stats-layout.c), and the
//! figures read through it.
#![cfg(feature = "stats")]

use std::mem::{offset_of, size_of};

use mimalloc_pprof::stats::{self, Stats};
use mimalloc_pprof::MiMalloc;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

extern "C" {
    fn mi_rust_stats_layout(out: *mut usize, n: usize) -> usize;
}

macro_rules! offsets {
    ($($field:ident),*) => { vec![$(offset_of!(Stats, $field)),*] };
}

#[test]
fn stats_layout_matches_c() {
    let mut rust = offsets!(
        size,
        version,
        pages,
        reserved,
        committed,
        reset,
        purged,
        page_committed,
        pages_abandoned,
        threads,
        malloc_normal,
        malloc_huge,
        malloc_requested,
        mmap_calls,
        commit_calls,
        reset_calls,
        purge_calls,
        arena_count,
        malloc_normal_count,
        malloc_huge_count,
        malloc_guarded_count,
        arena_rollback_count,
        arena_purges,
        pages_extended,
        pages_retire,
        page_searches,
        page_searches_count,
        segments,
        segments_abandoned,
        segments_cache,
        _segments_reserved,
        heaps,
        theaps,
        pages_reclaim_on_alloc,
        pages_reclaim_on_free,
        pages_reabandon_full,
        pages_unabandon_busy_wait,
        heaps_delete_wait,
        _stat_reserved,
        _stat_counter_reserved,
        malloc_bins,
        page_bins,
        chunk_bins
    );
    rust.push(size_of::<Stats>());
    let mut c = vec![0usize; 128];
    let n = unsafe { mi_rust_stats_layout(c.as_mut_ptr(), c.len()) };
    c.truncate(n);
    assert_eq!(rust, c, "Rust's offsets (then size) differ from C's");
}

#[test]
fn stats_get_counts_this_programs_blocks() {
    let before = stats::get();
    assert_eq!(before.version, stats::VERSION);
    let blocks: Vec<Box<[u8; 100]>> = (0..10_000).map(|_| Box::new([1u8; 100])).collect();
    let during = stats::get();
    assert!(during.reserved.current > 0 && during.committed.current > 0);
    // counted (MI_STAT=1): the small blocks handed out, and by the size
    // class of a 100-byte block (its total: docs/statistics.md)
    assert!(during.malloc_normal_count.total >= before.malloc_normal_count.total + 10_000);
    let bin = (1..stats::BIN_HUGE).find(|&b| stats::bin_size(b) >= 100).unwrap();
    assert!(during.malloc_bins[bin].total >= before.malloc_bins[bin].total + 10_000);
    drop(blocks);
    let json = stats::json();
    assert!(
        json.starts_with('{') && json.contains("\"reserved\""),
        "{}",
        &json[..json.len().min(200)]
    );
}
