//! The dhat feature: this test binary's own allocations, recorded exactly
//! and dumped in DHAT's format.
#![cfg(all(feature = "dhat", target_os = "linux"))]

use mimalloc_pprof::{dhat, MiMalloc};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[inline(never)]
fn dhat_alloc_site(n: usize) -> Vec<Box<[u8; 1000]>> {
    (0..n).map(|_| Box::new([7u8; 1000])).collect()
}

#[test]
fn dhat_dump_counts_every_block() {
    dhat::start().unwrap();
    assert!(dhat::is_running());
    let kept = dhat_alloc_site(5_000);
    let path = std::env::temp_dir().join(format!("mi-rust-dhat-{}.json", std::process::id()));
    dhat::dump(&path).unwrap();
    dhat::stop();
    drop(kept);
    let json = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(json.contains("\"dhatFileVersion\""), "{}", &json[..json.len().min(300)]);
    // the 5,000 blocks of 1,000 bytes are one program point's: "tb" (total
    // bytes) 5,000,000 and "tbk" (total blocks) 5,000 at least
    assert!(
        json.contains("\"tb\":5000000") || json.contains("\"tb\": 5000000"),
        "no 5 MB point"
    );
    assert!(
        json.contains("dhat_alloc_site"),
        "the Rust function is not named in the frames"
    );
}
