//! The secure feature's checks, from Rust: a double free aborts with one
//! report line, in a child process (the test binary run again, only this
//! case, with MI_RUST_CHILD saying what to do); its clean twin exits 0.
#![cfg(all(feature = "secure", unix))]

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

use mimalloc_pprof::ffi;

fn child(test: &str, what: &str) -> Output {
    Command::new(std::env::current_exe().unwrap())
        .args(&[test, "--exact", "--nocapture", "--test-threads=1"])
        .env("MI_RUST_CHILD", what)
        .output()
        .unwrap()
}

/// In the child: free a block once, or twice. Returns false in the parent.
fn as_child() -> bool {
    let what = match std::env::var("MI_RUST_CHILD") {
        Ok(w) => w,
        Err(_) => return false,
    };
    unsafe {
        let p = ffi::mi_malloc(64);
        std::ptr::write_bytes(p as *mut u8, 1, 64);
        ffi::mi_free(p);
        if what == "misuse" {
            ffi::mi_free(p);
        }
    }
    true
}

#[test]
fn secure_double_free_aborts_with_report() {
    if as_child() {
        return;
    }
    let out = child("secure_double_free_aborts_with_report", "misuse");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(6), "status {:?}, stderr: {}", out.status, err);
    assert!(
        err.lines()
            .any(|l| l.starts_with("mimalloc: error: double free detected of block")),
        "stderr: {}",
        err
    );
}

#[test]
fn secure_single_free_exits_clean() {
    if as_child() {
        return;
    }
    let out = child("secure_single_free_exits_clean", "control");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "status {:?}, stderr: {}", out.status, err);
    assert!(!err.contains("mimalloc: error:"), "stderr: {}", err);
}
