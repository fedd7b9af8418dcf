//! The exact heap profiler in Valgrind DHAT's file format (docs/profiling.md)
//! from safe Rust: every allocation, resize and free counted while it runs;
//! the file opens in Valgrind's viewer (dh_view.html).
use std::io;
use std::path::Path;

use crate::{c_path, ffi};

/// Start recording (again: the profile restarts empty).
pub fn start() -> io::Result<()> {
    if unsafe { ffi::mi_dhat_start() } {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::Other,
            "mi_dhat_start: the profiler did not start",
        ))
    }
}

/// Stop recording; what was recorded is kept for `dump`.
pub fn stop() {
    unsafe { ffi::mi_dhat_stop() }
}

pub fn is_running() -> bool {
    unsafe { ffi::mi_dhat_is_running() }
}

/// The profile so far, written to `path` ("%p": the process id).
pub fn dump(path: &Path) -> io::Result<()> {
    let p = c_path(path)?;
    if unsafe { ffi::mi_dhat_dump(p.as_ptr()) } {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
