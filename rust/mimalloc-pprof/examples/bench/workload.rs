//! The Rust benchmark's workloads (bench/rust-bench.sh), shared by the
//! binaries that differ only in their global allocator. Each prints
//! "<workload> <seconds>".
use std::collections::HashMap;
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

/// xorshift64*: the same work every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
}

/// A HashMap<String, Vec<u8>> of about 100,000 entries churned: each step
/// inserts (or replaces) a key with a value of 16 B..2 KiB, and removes
/// another.
fn hashmap_churn(steps: usize) -> u64 {
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let mut map: HashMap<String, Vec<u8>> = HashMap::new();
    let mut check = 0u64;
    for _ in 0..steps {
        let k = rng.next() % 200_000;
        let len = 16 + (rng.next() % 2032) as usize;
        map.insert(format!("key-{}", k), vec![(k & 0xFF) as u8; len]);
        let r = rng.next() % 200_000;
        if let Some(v) = map.remove(&format!("key-{}", r)) {
            check = check.wrapping_add(v.len() as u64);
        }
    }
    check.wrapping_add(map.len() as u64)
}

/// Four threads in a pipeline over channels: messages are made by the
/// first, rebuilt by the second and third (each frees what it received:
/// every free is another thread's block), and counted by the last.
fn channel_pipeline(messages: usize) -> u64 {
    let (tx0, rx0) = mpsc::channel::<Vec<u8>>();
    let (tx1, rx1) = mpsc::channel::<String>();
    let (tx2, rx2) = mpsc::channel::<Vec<String>>();
    let producer = thread::spawn(move || {
        let mut rng = Rng(7);
        for _ in 0..messages {
            let len = 8 + (rng.next() % 500) as usize;
            tx0.send(vec![b'a' + (len % 26) as u8; len]).unwrap();
        }
    });
    let to_text = thread::spawn(move || {
        for v in rx0 {
            tx1.send(String::from_utf8(v).unwrap()).unwrap();
        }
    });
    let split = thread::spawn(move || {
        for s in rx1 {
            let parts: Vec<String> = s
                .as_bytes()
                .chunks(64)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect();
            tx2.send(parts).unwrap();
        }
    });
    let mut total = 0u64;
    let mut counts: HashMap<usize, u64> = HashMap::new();
    for parts in rx2 {
        for p in &parts {
            *counts.entry(p.len()).or_insert(0) += 1;
            total += p.len() as u64;
        }
    }
    producer.join().unwrap();
    to_text.join().unwrap();
    split.join().unwrap();
    total.wrapping_add(counts.len() as u64)
}

pub fn run() {
    let scale: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let t = Instant::now();
    let a = hashmap_churn((2_000_000.0 * scale) as usize);
    println!("hashmap_churn {:.4} ({})", t.elapsed().as_secs_f64(), a);
    let t = Instant::now();
    let b = channel_pipeline((1_000_000.0 * scale) as usize);
    println!("channel_pipeline {:.4} ({})", t.elapsed().as_secs_f64(), b);
}
