//! The sampled heap profiler (docs/pprof.md) from safe Rust: start it,
//! dump the live set as pprof's heap text or as profile.proto (gzipped when
//! the path ends in ".gz"), read its statistics. Go pprof and google-pprof
//! read the dumps; Rust's frames are found by the platform unwinder where
//! there are no frame pointers, and named by the dump's own symbolizer.
use std::io;
use std::os::raw::{c_char, c_void};
use std::path::Path;

use crate::{c_path, ffi};

pub use crate::ffi::mi_prof_stats_t as ProfStats;

/// Start sampling, one sample per `sample_rate` bytes allocated on average
/// (0: the environment's MIMALLOC_PROF_SAMPLE_RATE or the default, 512 KiB).
pub fn start(sample_rate: usize) -> io::Result<()> {
    if unsafe { ffi::mi_prof_start(sample_rate) } {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::Other,
            "mi_prof_start: the profiler did not start",
        ))
    }
}

/// The same with the sampler's random sequence fixed by `seed` (tests).
pub fn start_seeded(sample_rate: usize, seed: u64) -> io::Result<()> {
    if unsafe { ffi::mi_prof_start_seeded(sample_rate, seed) } {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::Other,
            "mi_prof_start_seeded: the profiler did not start",
        ))
    }
}

/// Stop, dropping every record.
pub fn stop() {
    unsafe { ffi::mi_prof_stop() }
}

pub fn is_enabled() -> bool {
    unsafe { ffi::mi_prof_is_enabled() }
}

/// Zero the cumulative counters.
pub fn reset() {
    unsafe { ffi::mi_prof_reset() }
}

fn dumped(ok: bool, what: &str) -> io::Result<()> {
    if ok {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::Other,
            format!("{}: the dump failed", what),
        ))
    }
}

/// The live set as pprof's heap text (heap_v2), written to `path`.
pub fn dump_text(path: &Path) -> io::Result<()> {
    let p = c_path(path)?;
    dumped(unsafe { ffi::mi_prof_dump(p.as_ptr()) }, "mi_prof_dump")
}

/// The live set as profile.proto, written to `path` (gzipped for ".gz").
pub fn dump_proto(path: &Path) -> io::Result<()> {
    let p = c_path(path)?;
    dumped(unsafe { ffi::mi_prof_dump_proto(p.as_ptr()) }, "mi_prof_dump_proto")
}

unsafe extern "C" fn append(arg: *mut c_void, buf: *const c_char, len: usize) {
    let out = &mut *(arg as *mut Vec<u8>);
    out.extend_from_slice(std::slice::from_raw_parts(buf as *const u8, len));
}

/// The heap text, in memory.
pub fn text() -> io::Result<Vec<u8>> {
    let mut out: Vec<u8> = Vec::new();
    let ok = unsafe { ffi::mi_prof_dump_writer(Some(append), &mut out as *mut Vec<u8> as *mut c_void) };
    dumped(ok, "mi_prof_dump_writer").map(|_| out)
}

/// The profile.proto, uncompressed, in memory.
pub fn proto() -> io::Result<Vec<u8>> {
    let mut out: Vec<u8> = Vec::new();
    let ok = unsafe { ffi::mi_prof_dump_proto_writer(Some(append), &mut out as *mut Vec<u8> as *mut c_void) };
    dumped(ok, "mi_prof_dump_proto_writer").map(|_| out)
}

/// The profiler's and the allocator's figures (the latest version).
/// `ProfStats` prints with `{:?}` (under its C name, `mi_prof_stats_t`):
///
/// ```
/// let s = mimalloc_pprof::prof::stats();
/// let text = format!("{:?}", s);
/// assert!(text.starts_with("mi_prof_stats_t {"), "{}", text);
/// assert!(text.contains(&format!("live_bytes: {}", s.live_bytes)), "{}", text);
/// ```
pub fn stats() -> ProfStats {
    let mut s: ProfStats = unsafe { std::mem::zeroed() };
    s.size = std::mem::size_of::<ProfStats>();
    s.version = ffi::MI_PROF_STAT_VERSION;
    let ok = unsafe { ffi::mi_prof_stats_get(&mut s) };
    assert!(ok, "mi_prof_stats_get refused size {} version {}", s.size, s.version);
    s
}
