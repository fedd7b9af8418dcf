//! The pprof feature: this test binary, whose global allocator is the
//! crate's, profiles its own allocations and dumps them; tests/pprof's
//! checker (pprof_check.py: the files' structure, Go pprof, google-pprof,
//! protoc) accepts the dumps, and Go pprof's -top shows Rust's functions by
//! their readable names (the dump demangles them), the allocator's frames
//! and Rust's allocation shims left out, and the function that allocated.
#![cfg(all(feature = "pprof", target_os = "linux"))]

use std::path::{Path, PathBuf};
use std::process::Command;

use mimalloc_pprof::{prof, MiMalloc};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[inline(never)]
fn rust_alloc_site_keep(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| vec![(i % 251) as u8; 1000 + i % 100]).collect()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

fn go_pprof() -> Vec<String> {
    let checker = root().join("tests").join("pprof");
    let out = Command::new("python3")
        .arg("-c")
        .arg("import sys; sys.path.insert(0, sys.argv[1]); import pprof_check; print('\\n'.join(pprof_check.go_pprof()))")
        .arg(&checker)
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.to_string())
        .collect()
}

#[test]
fn pprof_dumps_read_by_go_pprof_rust_function_on_top() {
    prof::start_seeded(16 * 1024, 1).unwrap();
    assert!(prof::is_enabled());
    let kept = rust_alloc_site_keep(20_000); // about 21 MB live
    let dir = std::env::temp_dir().join(format!("mi-rust-pprof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let proto = dir.join("heap.pb.gz");
    let text = dir.join("heap.txt");
    prof::dump_proto(&proto).unwrap();
    prof::dump_text(&text).unwrap();
    let in_memory = prof::text().unwrap();
    assert!(
        in_memory.starts_with(b"heap profile: "),
        "{}",
        String::from_utf8_lossy(&in_memory[..40])
    );
    let stats = prof::stats();
    assert!(
        stats.enabled && stats.live_samples > 100,
        "live samples {}",
        stats.live_samples
    );
    let live: usize = kept.iter().map(|v| v.len()).sum();
    prof::stop();
    drop(kept);

    let exe = std::env::current_exe().unwrap();
    for f in [&proto, &text].iter() {
        let status = Command::new("python3")
            .arg(root().join("tests").join("pprof").join("pprof_check.py"))
            .arg(f)
            .arg(&exe)
            .status()
            .expect("python3");
        assert!(status.success(), "pprof_check.py rejected {}", f.display());
    }
    let pprof = go_pprof();
    let out = Command::new(&pprof[0])
        .args(&pprof[1..])
        .args(&["-top", "-sample_index=inuse_space", "-nodecount=100"])
        .arg(&exe)
        .arg(&proto)
        .env("PPROF_TMPDIR", &dir)
        .output()
        .expect("go pprof");
    let top = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "pprof -top: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{}", top);
    // the rows: flat, flat%, sum%, cum, cum%, name. The first (the most
    // flat) is a Rust function by its readable name (not the allocator's,
    // nor a mangled symbol), and the function that allocated holds nearly
    // all of the live bytes
    let rows: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .collect();
    let name = |row: &str| row.split_whitespace().skip(5).collect::<Vec<_>>().join(" ");
    let first = name(rows.first().copied().unwrap_or(""));
    assert!(
        first.contains("::") && !first.starts_with("_Z") && !first.starts_with("_R") && !first.contains("mi_"),
        "the top entry is not a readable Rust function: {:?}\n{}",
        first,
        top
    );
    let site = rows
        .iter()
        .find(|r| name(r) == "pprof_go::rust_alloc_site_keep")
        .unwrap_or_else(|| panic!("pprof_go::rust_alloc_site_keep not in -top:\n{}", top));
    let cum_pct: f64 = site
        .split_whitespace()
        .nth(4)
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!(cum_pct > 90.0, "{}", site);
    assert!(live > 20_000_000);
    let _ = std::fs::remove_dir_all(&dir);
}
