#!/usr/bin/env python3
"""Write the seed corpus of the fuzz harnesses, fuzz/corpus/alloc/ and
fuzz/corpus/secure/ (one small program per file in the encoding of
fuzz/program.h; the opcode numbers below must match enum fz_op_e), and
their dictionary fuzz/alloc.dict.

Each seed exercises one area (size classes, alignment, reallocation, heaps,
the second thread, the failure rules; for the secure harness, each
corruption case) so that the fuzzer starts from programs that already reach
it. No seed uses opcode 31: the planted use-after-free of the positive
control must be found by the fuzzer, not handed to it.

    python3 fuzz/make-corpus.py            # rewrite the corpus and the dictionary
"""
import os
import shutil

OP = dict(MALLOC=0, ZALLOC=1, CALLOC=2, MALLOC_SMALL=3, MALLOC_ALIGNED=4, MALLOC_ALIGNED_AT=5,
          ZALLOC_ALIGNED=6, CALLOC_ALIGNED=7, POSIX_MEMALIGN=8, ALIGNED_ALLOC=9, FREE=10, REALLOC=11,
          REZALLOC=12, RECALLOC=13, REALLOC_ALIGNED=14, USABLE=15, EXPAND=16, HEAP_NEW=17, HEAP_ALLOC=18,
          HEAP_REALLOC=19, HEAP_DELETE=20, HEAP_DESTROY=21, HEAP_VISIT=22, HANDOFF=23, WORKER_ALLOC=24,
          WORKER_REALLOC=25, WORKER_RESTART=26, COLLECT=27, HUGE=28, OVERFLOW=29, CORRUPT=30)


def size(n):
    """The 2-byte size operand for n bytes (rounded down to what the range can say)."""
    if n < 512:
        v = n
    elif n < 16384:
        v = (1 << 14) | n
    elif n < (16384 << 4):
        v = (2 << 14) | (n >> 4)
    else:
        v = (3 << 14) | min(n >> 8, 0x3fff)
    return bytes([v >> 8, v & 0xff])


def align(a):
    """The 1-byte alignment operand for a power of two a."""
    return bytes([a.bit_length() - 1])


def op(name, *operands):
    out = bytes([OP[name]])
    for x in operands:
        out += x if isinstance(x, bytes) else bytes([x])
    return out


def seeds_alloc():
    s = {}
    s["size-classes"] = b"".join(op("MALLOC", i, size(n)) for i, n in enumerate(
        [0, 1, 8, 16, 17, 100, 128, 129, 1000, 4096, 8000, 8192, 8193, 65536, 131072, 131073, 300000, 1 << 20]))
    s["zero-calls"] = (op("ZALLOC", 0, size(100)) + op("CALLOC", 1, 7, size(24)) + op("MALLOC_SMALL", 2, size(64), 1)
                       + op("REZALLOC", 0, size(5000)) + op("RECALLOC", 1, 3, size(300)) + op("REZALLOC", 0, size(50)))
    s["aligned"] = (op("MALLOC_ALIGNED", 0, size(100), align(64)) + op("MALLOC_ALIGNED_AT", 1, size(200), align(256), 8)
                    + op("ZALLOC_ALIGNED", 2, size(5000), align(4096)) + op("CALLOC_ALIGNED", 3, 2, size(40), align(32))
                    + op("POSIX_MEMALIGN", 4, size(64), align(16)) + op("ALIGNED_ALLOC", 5, size(300000), align(1 << 16))
                    + op("MALLOC_ALIGNED", 6, size(10), 22) + op("POSIX_MEMALIGN", 7, size(10), align(2))
                    + op("REALLOC_ALIGNED", 0, size(3000), align(128)) + op("FREE", 1))
    s["realloc-chain"] = b"".join(op("REALLOC", 0, size(n)) for n in [10, 100, 60, 4000, 200000, 1000, 0, 70000, 8])
    s["usable-expand"] = (op("MALLOC", 0, size(20)) + op("USABLE", 0) + op("EXPAND", 0, size(10))
                          + op("EXPAND", 0, size(30)) + op("MALLOC", 1, size(1000)) + op("EXPAND", 1, size(5000)))
    s["heaps"] = (op("HEAP_NEW", 0) + op("HEAP_ALLOC", 0, 0, size(100), 0) + op("HEAP_ALLOC", 0, 1, size(3000), 1)
                  + op("HEAP_ALLOC", 0, 2, size(200000), 2) + op("HEAP_ALLOC", 0, 3, size(64), 3 | (6 << 2))
                  + op("HEAP_VISIT", 0) + op("HEAP_REALLOC", 0, 0, size(500), 0) + op("HEAP_NEW", 1)
                  + op("HEAP_ALLOC", 1, 4, size(48), 0) + op("HEAP_DESTROY", 1) + op("HEAP_DELETE", 0)
                  + op("HEAP_VISIT", 4) + op("FREE", 2))
    s["threads"] = (op("MALLOC", 0, size(64)) + op("MALLOC", 1, size(20000)) + op("HANDOFF", 0)
                    + op("WORKER_ALLOC", 2, size(100), 0) + op("WORKER_ALLOC", 3, size(300000), 1)
                    + op("WORKER_REALLOC", 1, size(40)) + op("WORKER_RESTART") + op("FREE", 2)
                    + op("REALLOC", 3, size(10)) + op("HANDOFF", 1) + op("COLLECT", 1))
    s["huge-and-failures"] = (op("HUGE", 0, 3) + op("OVERFLOW", 0, 4) + op("OVERFLOW", 1, 0) + op("OVERFLOW", 1, 2)
                              + op("OVERFLOW", 0, 6) + op("FREE", 0) + op("COLLECT", 3))
    s["churn"] = b"".join(op("MALLOC", i % 8, size(16 * (i % 5 + 1))) + op("FREE", (i * 3) % 8) for i in range(40))
    # the inputs of the bugs the fuzzers found (docs/fuzzing.md), kept as seeds
    s["found-realloc-aligned-null"] = op("REALLOC_ALIGNED", 40, size(40), align(1 << 21))
    s["found-realloc-aligned-offset"] = (op("MALLOC_ALIGNED_AT", 1, size(100), align(64), 7)
                                         + op("REALLOC_ALIGNED", 1, size(100), align(16)))
    s["found-zalloc-one-block-page"] = op("ZALLOC", 1, size(6160)) + op("ZALLOC", 2, size(6160))
    s["found-rezalloc-after-move"] = (op("RECALLOC", 45, 14, size(0)) + op("RECALLOC", 45, 1, size(0))
                                      + op("RECALLOC", 45, 1, size(5)) + op("REZALLOC", 45, size(16)))
    return s


def seeds_secure():
    s = seeds_alloc()
    base = op("MALLOC", 0, size(48)) + op("MALLOC_ALIGNED", 1, size(100), align(64)) + op("MALLOC", 2, size(300000))
    for kind, args in [(0, (0, 0)), (1, (0, 0)), (2, (0, 0)), (3, (0, 0)), (3, (7, 1)), (4, (5, 0)), (4, (20, 2)),
                       (5, (3, 7)), (6, (0, 0)), (6, (3, 1)), (7, (0, 0)), (8, (0, 0))]:
        for slot in (0, 1, 2):
            if kind == 5 and slot == 2:
                continue
            s[f"corrupt-{kind}-{args[0]}-{args[1]}-slot{slot}"] = base + op("CORRUPT", slot, kind, *args)
    return s


def write_dict(path):
    lines = ["# Dictionary of the fuzz harnesses (libFuzzer -dict=, afl-fuzz -x), written by",
             "# fuzz/make-corpus.py in the encoding of fuzz/program.h: the opcode bytes,",
             "# then operand values at the allocator's boundaries. Opcode 31 (the planted",
             "# use-after-free of the positive control) is left out on purpose.", ""]
    for name, code in sorted(OP.items(), key=lambda kv: kv[1]):
        lines.append(f'op_{name.lower()}="\\x{code:02x}"')
    lines += ["", "# sizes (2-byte operands) around 16 and 128 bytes, 8 KiB (small pages),",
              "# 128 KiB (medium pages), 1 MiB and 4 MiB (a segment)"]
    for n in [0, 15, 16, 17, 127, 128, 129, 1024, 8184, 8192, 8193, 16384, 131072, 131088, 1 << 20, (4 << 20) - 256]:
        v = size(n)
        lines.append(f'size_{n}="\\x{v[0]:02x}\\x{v[1]:02x}"')
    lines += ["", "# alignments (1-byte operands): 64, 4 KiB, 64 KiB, 2 MiB, 3 (not a power of", "# two), 4 MiB (a sparse segment of its own)"]
    for name, v in [("64", 6), ("4k", 12), ("64k", 16), ("2m", 21), ("3", 22), ("4m", 23)]:
        lines.append(f'align_{name}="\\x{v:02x}"')
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, seeds in (("alloc", seeds_alloc()), ("secure", seeds_secure())):
        d = os.path.join(here, "corpus", name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for seed, data in seeds.items():
            with open(os.path.join(d, seed), "wb") as f:
                f.write(data)
        # crashing inputs saved by a campaign, kept as they were found
        found = os.path.join(here, "found", name)
        for seed in sorted(os.listdir(found)) if os.path.isdir(found) else []:
            shutil.copyfile(os.path.join(found, seed), os.path.join(d, seed))
    write_dict(os.path.join(here, "alloc.dict"))


if __name__ == "__main__":
    main()
