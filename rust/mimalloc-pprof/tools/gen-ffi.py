#!/usr/bin/env python3
"""Write src/ffi.rs, the raw bindings of include/mimalloc.h (and of
include/mimalloc/profile.h, which it includes) and of
include/mimalloc-stats.h, from clang's AST of the headers: every exported
function, the types they use, the option and flag values.

Run from the crate's folder after the header changes:
    python3 tools/gen-ffi.py [clang]       (default clang: clang-19, else clang)
tests/bindings.rs fails while a function of the header is missing here."""
import json
import os
import re
import shutil
import subprocess
import sys

CRATE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(CRATE))
HEADERS = ["mimalloc.h", "mimalloc-stats.h", "mimalloc/dhat.h"]
CONST_HEADERS = HEADERS + ["mimalloc/profile.h"]

SCALARS = {
    "bool": "bool", "char": "c_char", "signed char": "i8", "unsigned char": "c_uchar",
    "int": "c_int", "unsigned int": "c_uint", "long": "c_long", "unsigned long": "c_ulong",
    "long long": "c_longlong", "unsigned long long": "c_ulonglong", "double": "f64",
    "size_t": "usize", "ptrdiff_t": "isize", "uint8_t": "u8", "uint16_t": "u16", "uint32_t": "u32",
    "uint64_t": "u64", "int8_t": "i8", "int16_t": "i16", "int32_t": "i32", "int64_t": "i64",
    "uintptr_t": "usize", "intptr_t": "isize", "wchar_t": "wchar_t", "void": "c_void",
    "mi_arena_id_t": "mi_arena_id_t", "mi_subproc_id_t": "mi_subproc_id_t",
    "mi_option_t": "mi_option_t", "mi_purge_flags_t": "mi_purge_flags_t",
}


def rust_type(c, records, funs):
    c = c.strip()
    c = re.sub(r"\*\s*const$", "*", c)  # a const pointer: the same type to the caller
    m = re.match(r"^(.*)\[(\d+)\]$", c)
    if m:
        return "[%s; %s]" % (rust_type(m.group(1), records, funs), m.group(2))
    if c.endswith("*"):
        inner = c[:-1].strip()
        const = inner.startswith("const ")
        if const:
            inner = inner[len("const "):].strip()
        if inner in funs:
            return funs[inner]
        base = rust_type(inner, records, funs)
        return ("*const " if const else "*mut ") + base
    if c.startswith("const "):
        return rust_type(c[len("const "):], records, funs)
    if c.startswith("struct "):
        c = c[len("struct "):]
    if c in SCALARS:
        return SCALARS[c]
    if c in records:
        return c
    raise SystemExit("gen-ffi: no Rust type for C type %r" % c)


def fn_type(qual, records, funs):
    m = re.match(r"^(.*?)\s*\((.*)\)$", qual)
    ret, args = m.group(1), m.group(2)
    parts = [a.strip() for a in args.split(",")] if args.strip() not in ("", "void") else []
    rargs = ", ".join(rust_type(a, records, funs) for a in parts)
    r = rust_type(ret, records, funs)
    return "Option<unsafe extern \"C\" fn(%s)%s>" % (rargs, "" if r == "c_void" else " -> " + r)


def main():
    clang = sys.argv[1] if len(sys.argv) > 1 else (shutil.which("clang-19") or "clang")
    both = "".join("#include <%s>\n" % h for h in HEADERS)
    out = subprocess.run([clang, "-Xclang", "-ast-dump=json", "-fsyntax-only", "-x", "c", "-I",
                          os.path.join(ROOT, "include"), "-"], input=both.encode(), check=True,
                         capture_output=True).stdout
    ast = json.loads(out)
    ours = []
    cur = None
    for d in ast["inner"]:
        f = d.get("loc", {}).get("file")
        if f:
            cur = f
        if cur and os.path.join(ROOT, "include") in os.path.abspath(cur):
            ours.append(d)
    records, funs, enums, fns = {}, {}, [], []
    # records and function typedefs first (their names), then their bodies
    for d in ours:
        if d["kind"] == "TypedefDecl":
            q = d["type"]["qualType"]
            if q.startswith("struct "):
                records[d["name"]] = q[len("struct "):]
    for d in ours:
        if d["kind"] == "TypedefDecl" and "(" in d["type"]["qualType"]:
            funs[d["name"]] = None
    for d in ours:
        if d["kind"] == "TypedefDecl" and d["name"] in funs:
            funs[d["name"]] = fn_type(d["type"]["qualType"], records, funs)
    bodies = {}
    for d in ours:
        if d["kind"] == "RecordDecl" and d.get("completeDefinition"):
            bodies[d["name"]] = [(x["name"], x["type"]["qualType"]) for x in d.get("inner", []) if x["kind"] == "FieldDecl"]
        if d["kind"] == "EnumDecl":
            for x in d.get("inner", []):
                if x["kind"] == "EnumConstantDecl":
                    enums.append((d["name"], x["name"]))
        if d["kind"] == "FunctionDecl" and d["name"].startswith("mi_") and d.get("storageClass") != "static":
            params = [(p.get("name") or "a%d" % i, p["type"]["qualType"])
                      for i, p in enumerate(x for x in d.get("inner", []) if x["kind"] == "ParmVarDecl")]
            ret = re.match(r"^(.*?)\s*\(", d["type"]["qualType"]).group(1)
            fns.append((d["name"], ret, params, d["type"]["qualType"].endswith("...)")))
    enums = [(e, n) for e, n in enums if e in ("mi_option_e", "mi_purge_flags_e")]
    lines = ["/* Generated by tools/gen-ffi.py from include/mimalloc.h: do not edit. */",
             "#![allow(non_camel_case_types, non_upper_case_globals, unused_imports, missing_docs, clippy::all)]", "",
             "use std::os::raw::{c_char, c_int, c_long, c_uchar, c_uint, c_ulong, c_ulonglong, c_longlong, c_void};", "",
             "#[cfg(windows)]", "pub type wchar_t = u16;", "#[cfg(not(windows))]", "pub type wchar_t = i32;",
             "pub type mi_arena_id_t = c_int;", "pub type mi_subproc_id_t = *mut c_void;",
             "pub type mi_option_t = c_int;", "pub type mi_purge_flags_t = c_int;", ""]
    seen_enum = set()
    for enum, name in enums:
        if name in seen_enum:
            continue
        seen_enum.add(name)
        # the values, evaluated by the C compiler below (tests/bindings.rs checks them)
    for name, fun in funs.items():
        lines.append("pub type %s = %s;" % (name, fun))
    lines.append("")
    for tname, rname in records.items():
        body = bodies.get(rname)
        if body is None:
            lines.append("#[repr(C)]\npub struct %s {\n    _opaque: [u8; 0],\n}\n" % tname)
            continue
        lines.append("#[repr(C)]\n#[derive(Clone, Copy, Debug)]\npub struct %s {" % tname)
        for fname, ftype in body:
            lines.append("    pub %s: %s," % (fname, rust_type(ftype, records, funs)))
        lines.append("}\n")
    lines.append("extern \"C\" {")
    for name, ret, params, variadic in fns:
        args = ", ".join("%s: %s" % (re.sub(r"^(type|fn|ref|mod|in|match|loop|self)$", r"\1_", p),
                                       rust_type(t, records, funs)) for p, t in params)
        if variadic:
            args += ", ..."
        r = rust_type(ret, records, funs)
        lines.append("    pub fn %s(%s)%s;" % (name, args, "" if r == "c_void" else " -> " + r))
    lines.append("}")
    with open(os.path.join(CRATE, "src", "ffi.rs"), "w") as f:
        f.write("\n".join(lines) + "\n")
    # the enum values: through the C compiler, as the header defines them
    prog = ["#include <mimalloc.h>", "#include <stdio.h>", "int main(void) {"]
    for enum, name in enums:
        prog.append('  printf("%s %%ld\\n", (long)%s);' % (name, name))
    prog.append("  return 0;\n}")
    src = os.path.join("/tmp", "gen-ffi-enums.c")
    exe = os.path.join("/tmp", "gen-ffi-enums")
    with open(src, "w") as f:
        f.write("\n".join(prog))
    subprocess.run([clang, "-I", os.path.join(ROOT, "include"), src, "-o", exe], check=True)
    values = subprocess.run([exe], check=True, capture_output=True, text=True).stdout.split("\n")
    enum_of = {n: e for e, n in enums}
    with open(os.path.join(CRATE, "src", "ffi.rs"), "a") as f:
        f.write("\n")
        done = set()
        for line in values:
            if not line:
                continue
            name, value = line.split()
            if name in done:
                continue
            done.add(name)
            ty = "mi_purge_flags_t" if enum_of[name] == "mi_purge_flags_e" else "mi_option_t"
            f.write("pub const %s: %s = %s;\n" % (name, ty, value))
    # the headers' constants the safe API uses
    consts = {"MI_MALLOC_VERSION": "c_int", "MI_PURGE_OK": "c_int", "MI_PURGE_PARTIAL": "c_int",
              "MI_PURGE_BUSY": "c_int", "MI_STAT_VERSION": "usize", "MI_BIN_HUGE": "usize", "MI_CBIN_COUNT": "usize",
              "MI_PROF_CONFIG_VERSION": "c_int", "MI_PROF_CONFIG_FALLBACK": "c_int", "MI_PROF_CONFIG_OVERRIDE": "c_int",
              "MI_PROF_FORMAT_TEXT": "c_int", "MI_PROF_FORMAT_PROTO": "c_int", "MI_PROF_STAT_VERSION": "c_int"}
    with open(os.path.join(CRATE, "src", "ffi.rs"), "a") as f:
        for h in CONST_HEADERS:
            for m in re.finditer(r"^#define (MI_[A-Z_]+)[ \t]*(?:\\\n[ \t]*)?(\d+)", open(os.path.join(ROOT, "include", h)).read(), re.M):
                if m.group(1) in consts:
                    f.write("pub const %s: %s = %s;\n" % (m.group(1), consts[m.group(1)], m.group(2)))
    # the typed options of the safe API: MiOption::SHOW_ERRORS and so on
    with open(os.path.join(CRATE, "src", "option_names.rs"), "w") as f:
        f.write("/* Generated by tools/gen-ffi.py from include/mimalloc.h: do not edit. */\n")
        f.write("use crate::ffi;\nuse crate::MiOption;\n\nimpl MiOption {\n")
        done = set()
        for enum, name in enums:
            if enum != "mi_option_e" or name in done or name == "_mi_option_last" or not name.startswith("mi_option_"):
                continue
            done.add(name)
            f.write("    pub const %s: MiOption = MiOption(ffi::%s);\n" % (name[len("mi_option_"):].upper(), name))
        f.write("}\n")
    # formatted as cargo fmt would (ci/rust.sh checks it)
    rustfmt = shutil.which("rustfmt") or os.path.expanduser("~/.cargo/bin/rustfmt")
    for name in ("ffi.rs", "option_names.rs"):
        subprocess.run([rustfmt, "--edition", "2021", os.path.join(CRATE, "src", name)], check=True)


main()
