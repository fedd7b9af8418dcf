//! src/ffi.rs against the headers: every function `mimalloc.h` exports (the
//! profiler's `mimalloc/profile.h`, which it includes, too) and
//! `mimalloc-stats.h` and `mimalloc/dhat.h` export has its binding,
//! and no binding names a function the header no longer has. When this
//! fails after the header changed: `python3 tools/gen-ffi.py`.
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

fn exported(header: &Path) -> BTreeSet<String> {
    let text = fs::read_to_string(header).unwrap();
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if !line.contains("mi_decl_export") || line.trim_start().starts_with('#') {
            continue;
        }
        let at = line.find("mi_decl_export").unwrap();
        let rest = &line[at..];
        // the first mi_name( after the attributes
        let mut i = 0;
        let bytes = rest.as_bytes();
        while let Some(off) = rest[i..].find("mi_") {
            let start = i + off;
            let mut end = start;
            while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                end += 1;
            }
            let word = &rest[start..end];
            let after = rest[end..].trim_start();
            if after.starts_with('(') && !word.starts_with("mi_decl") && !word.starts_with("mi_attr") {
                names.insert(word.to_string());
                break;
            }
            i = end;
        }
    }
    names
}

fn bound(ffi: &Path) -> BTreeSet<String> {
    let text = fs::read_to_string(ffi).unwrap();
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("pub fn "))
        .map(|l| l[..l.find('(').unwrap()].to_string())
        .collect()
}

#[test]
fn bindings_cover_every_header_function() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..");
    let mut header = exported(&root.join("include").join("mimalloc.h"));
    header.extend(exported(&root.join("include").join("mimalloc").join("profile.h")));
    header.extend(exported(&root.join("include").join("mimalloc-stats.h")));
    header.extend(exported(&root.join("include").join("mimalloc").join("dhat.h")));
    let ffi = bound(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join("ffi.rs"));
    let missing: Vec<_> = header.difference(&ffi).collect();
    let stale: Vec<_> = ffi.difference(&header).collect();
    assert!(
        header.len() > 150,
        "the header scan found only {} functions",
        header.len()
    );
    assert!(missing.is_empty(), "not bound (run tools/gen-ffi.py): {:?}", missing);
    assert!(stale.is_empty(), "bound but not in the header: {:?}", stale);
}
