//! The Rust benchmark with the system allocator (glibc's malloc on
//! Linux), for bench/rust-bench.sh's comparison.
#[path = "bench/workload.rs"]
mod workload;

fn main() {
    workload::run();
}
