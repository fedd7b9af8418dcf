//! The Rust benchmark with this crate as the global allocator (the
//! `secure` feature: the hardened build). bench/rust-bench.sh times it.
#[path = "bench/workload.rs"]
mod workload;

#[global_allocator]
static GLOBAL: mimalloc_pprof::MiMalloc = mimalloc_pprof::MiMalloc;

fn main() {
    workload::run();
}
