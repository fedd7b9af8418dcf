//! The crate's allocator as this test binary's global allocator.
use std::alloc::{alloc, alloc_zeroed, dealloc, realloc, Layout};
use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc;
use std::thread;

use mimalloc_pprof::{is_in_heap_region, usable_size, MiMalloc};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[test]
fn global_allocator_box_is_in_heap_region() {
    let b = Box::new([7u64; 4]);
    assert!(is_in_heap_region(&*b));
    let v: Vec<u8> = vec![1; 100_000];
    assert!(is_in_heap_region(v.as_ptr()));
    let on_stack = 5u64;
    assert!(!is_in_heap_region(&on_stack));
}

#[test]
fn collections_and_threads_work_contents_kept() {
    let mut map: HashMap<String, Vec<u8>> = HashMap::new();
    for i in 0..20_000u32 {
        map.insert(format!("key-{}", i), vec![(i % 251) as u8; (i % 300) as usize]);
    }
    for i in (0..20_000u32).step_by(3) {
        map.remove(&format!("key-{}", i));
    }
    for (k, v) in &map {
        let i: u32 = k[4..].parse().unwrap();
        assert_eq!(v.len(), (i % 300) as usize);
        assert!(v.iter().all(|&b| b == (i % 251) as u8));
    }
    let (tx, rx) = mpsc::channel::<Vec<u64>>();
    let producers: Vec<_> = (0..4u64)
        .map(|t| {
            let tx = tx.clone();
            thread::spawn(move || {
                for i in 0..2_000u64 {
                    tx.send(vec![t * 1_000_000 + i; (i % 64) as usize + 1]).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let mut tree = BTreeMap::new();
    for v in rx {
        assert!(v.iter().all(|&x| x == v[0]));
        tree.insert(v[0], v.len());
    }
    for p in producers {
        p.join().unwrap();
    }
    assert_eq!(tree.len(), 8_000);
}

#[test]
fn every_alignment_1_to_1mib_honoured() {
    for shift in 0..=20 {
        let align = 1usize << shift;
        for &size in &[1, align, align + 1, 3 * align, 100_000] {
            let layout = Layout::from_size_align(size, align).unwrap();
            unsafe {
                let p = alloc(layout);
                assert!(!p.is_null(), "size {} align {}", size, align);
                assert_eq!(p as usize % align, 0, "size {} align {}", size, align);
                assert!(usable_size(p) >= size);
                p.write_bytes(0xA5, size);
                let z = alloc_zeroed(layout);
                assert_eq!(z as usize % align, 0);
                assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                dealloc(z, layout);
                dealloc(p, layout);
            }
        }
    }
}

#[test]
fn alloc_zeroed_zeroes_reused_memory() {
    for &size in &[8usize, 100, 1000, 8000, 70_000, 600_000, 5_000_000] {
        let layout = Layout::from_size_align(size, 8).unwrap();
        unsafe {
            // dirty blocks freed first, so the zeroed ones may reuse them
            let dirty: Vec<*mut u8> = (0..8).map(|_| alloc(layout)).collect();
            for &p in &dirty {
                p.write_bytes(0xFF, size);
            }
            for &p in &dirty {
                dealloc(p, layout);
            }
            let zeroed: Vec<*mut u8> = (0..8).map(|_| alloc_zeroed(layout)).collect();
            for &p in &zeroed {
                assert!(
                    std::slice::from_raw_parts(p, size).iter().all(|&b| b == 0),
                    "size {}",
                    size
                );
                dealloc(p, layout);
            }
        }
    }
}

#[test]
fn realloc_keeps_contents_across_size_classes() {
    for &align in &[8usize, 64, 4096] {
        let mut size = 8usize;
        let mut layout = Layout::from_size_align(size, align).unwrap();
        unsafe {
            let mut p = alloc(layout);
            for i in 0..size {
                *p.add(i) = (i % 253) as u8;
            }
            while size < (8 << 20) {
                let new_size = size * 2 + 3;
                p = realloc(p, layout, new_size);
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0);
                for i in 0..size {
                    assert_eq!(
                        *p.add(i),
                        (i % 253) as u8,
                        "align {} size {} -> {}",
                        align,
                        size,
                        new_size
                    );
                }
                for i in size..new_size {
                    *p.add(i) = (i % 253) as u8;
                }
                size = new_size;
                layout = Layout::from_size_align(size, align).unwrap();
            }
            // and down again
            while size > 16 {
                let new_size = size / 3;
                p = realloc(p, layout, new_size);
                for i in 0..new_size {
                    assert_eq!(*p.add(i), (i % 253) as u8);
                }
                size = new_size;
                layout = Layout::from_size_align(size, align).unwrap();
            }
            dealloc(p, layout);
        }
    }
}
