//! Compiles the repository's C sources (cmake/sources.txt, the list
//! CMakeLists.txt builds from) with the C compiler it finds (`CC`, else
//! `cc`), archives them (`AR`, else `ar`) and links the archive statically.
//! The features choose the groups and the defines as the MI_ CMake options
//! do (docs/build.md).
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

fn feature(name: &str) -> bool {
    env::var_os(format!("CARGO_FEATURE_{}", name.to_uppercase().replace('-', "_"))).is_some()
}

/// The files of `groups`, in the list's order.
fn sources(root: &Path, groups: &[&str]) -> Vec<PathBuf> {
    let list = root.join("cmake").join("sources.txt");
    let text = fs::read_to_string(&list).unwrap_or_else(|e| panic!("reading {}: {}", list.display(), e));
    let mut files = Vec::new();
    for group in groups {
        for line in text.lines() {
            let mut words = line.split_whitespace();
            match words.next() {
                Some(g) if !g.starts_with('#') && g == *group => files.extend(words.map(|f| root.join(f))),
                _ => {}
            }
        }
    }
    files
}

fn run(cmd: &mut Command) {
    let status = cmd.status().unwrap_or_else(|e| panic!("running {:?}: {}", cmd, e));
    if !status.success() {
        panic!("{:?} failed: {}", cmd, status);
    }
}

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = crate_dir.join("..").join("..");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let windows = target_os == "windows";
    let secure = feature("secure");

    let mut groups = vec!["core", if windows { "windows" } else { "unix" }, "events"];
    if secure {
        groups.push("secure");
    }
    if feature("override") {
        groups.push("override");
        groups.push("override-shared");
    }
    let pprof = feature("pprof");
    let dhat = feature("dhat") && !windows; // (DHAT's dump reads ELF and DWARF)
    if pprof {
        groups.push("pprof");
        if windows {
            groups.push("pprof-windows");
        }
    }
    if dhat {
        groups.push("dhat");
    }
    if pprof || dhat {
        // the stack capture and symbolisation both profilers use
        groups.push(if windows { "stacks-windows" } else { "stacks-unix" });
        groups.push("stacks");
    }
    let mut files = sources(&root, &groups);
    // the layout test's helper (tests/stats_layout.rs)
    files.push(crate_dir.join("csrc").join("stats-layout.c"));

    let mut defines = vec!["_GNU_SOURCE", "MI_DEBUG=0", "MI_MEMORY_EVENTS=1"];
    if secure {
        defines.push("MI_SECURE=1");
        defines.push("MI_GUARDED=1");
    }
    if feature("stats") {
        defines.push("MI_STAT=1");
    }
    if pprof {
        defines.push("MI_PPROF=1");
    }
    if dhat {
        defines.push("MI_DHAT=1");
    }
    if windows {
        defines.push("__USE_MINGW_ANSI_STDIO=1");
    }
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let ar = env::var("AR").unwrap_or_else(|_| "ar".to_string());
    let opt = match env::var("OPT_LEVEL").as_deref() {
        Ok("0") => "-O0",
        Ok("1") => "-O1",
        Ok("s") | Ok("z") => "-Os",
        _ => "-O2",
    };
    let mut flags: Vec<String> = vec![
        opt.to_string(),
        "-std=c11".to_string(),
        "-fPIC".to_string(),
        "-fvisibility=hidden".to_string(),
        "-Wall".to_string(),
        "-Wextra".to_string(),
        "-Wno-unknown-pragmas".to_string(),
        format!("-I{}", root.join("include").display()),
    ];
    if !windows {
        flags.push("-ftls-model=initial-exec".to_string());
    }
    if pprof || dhat {
        // the profilers walk frame pointers through the allocator's own frames
        flags.push("-fno-omit-frame-pointer".to_string());
    }
    flags.extend(defines.iter().map(|d| format!("-D{}", d)));

    // compile NUM_JOBS at a time (cargo sets it from -j)
    let jobs: usize = env::var("NUM_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(2)
        .max(1);
    let queue = Arc::new(Mutex::new(files.clone()));
    let objects = Arc::new(Mutex::new(Vec::new()));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..jobs)
        .map(|_| {
            let (queue, objects, failures) = (queue.clone(), objects.clone(), failures.clone());
            let (cc, flags, out, root) = (cc.clone(), flags.clone(), out.clone(), root.clone());
            std::thread::spawn(move || loop {
                let src = match queue.lock().unwrap().pop() {
                    Some(s) => s,
                    None => break,
                };
                let rel = src
                    .strip_prefix(&root)
                    .unwrap_or(&src)
                    .to_string_lossy()
                    .replace('/', "_")
                    .replace('\\', "_");
                let obj = out.join(format!("{}.o", rel));
                let mut cmd = Command::new(&cc);
                cmd.args(&flags);
                // mi_new's new_handler and operator new may unwind a C++ exception
                if rel.ends_with("new.c") || rel.ends_with("new-delete.c") {
                    cmd.arg("-fexceptions");
                }
                cmd.arg("-c").arg(&src).arg("-o").arg(&obj);
                match cmd.status() {
                    Ok(s) if s.success() => objects.lock().unwrap().push(obj),
                    other => failures.lock().unwrap().push(format!("{:?}: {:?}", cmd, other)),
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let failures = failures.lock().unwrap();
    if !failures.is_empty() {
        panic!("compiling the C sources failed:\n{}", failures.join("\n"));
    }
    let mut objects = objects.lock().unwrap().clone();
    objects.sort();

    let lib = out.join("libmimalloc_pprof_c.a");
    let _ = fs::remove_file(&lib);
    run(Command::new(&ar).arg("crs").arg(&lib).args(&objects));

    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=mimalloc_pprof_c");
    if windows {
        println!("cargo:rustc-link-lib=dylib=advapi32");
    } else {
        println!("cargo:rustc-link-lib=dylib=pthread");
        println!("cargo:rustc-link-lib=dylib=dl");
    }
    println!("cargo:include={}", root.join("include").display());
    println!(
        "cargo:rerun-if-changed={}",
        root.join("cmake").join("sources.txt").display()
    );
    println!("cargo:rerun-if-changed={}", root.join("src").display());
    println!("cargo:rerun-if-changed={}", root.join("include").display());
    println!("cargo:rerun-if-changed={}", crate_dir.join("csrc").display());
    println!("cargo:rerun-if-env-changed=CC");
    println!("cargo:rerun-if-env-changed=AR");
    println!("cargo:rerun-if-env-changed=CFLAGS");
}
