"""Allocation-heavy deterministic Python workload for the LD_PRELOAD test.

Four threads build and drop dicts, lists, strings and bytes; the output is a
checksum that must be identical with and without the preloaded allocator.
Run with PYTHONMALLOC=malloc so that every object goes through malloc."""
import hashlib
import threading

ROUNDS = 6


def work(tid, results):
    h = hashlib.sha256()
    for r in range(ROUNDS):
        base = tid * 1000003 + r * 7919
        d = {}
        for i in range(20000):
            key = "k%d_%d" % (base, i)
            d[key] = [i, str(i * 31), ("x" * (i % 97)).upper(), bytes((i + j) % 256 for j in range(i % 13))]
        # rebuild / shrink / grow
        lst = [v[1] + v[2] for k, v in d.items() if len(k) % 3 != 0]
        big = "|".join(lst)
        h.update(big.encode())
        parts = big.split("|")
        h.update(str(len(parts)).encode())
        for k in list(d.keys())[::2]:
            del d[k]
        nested = [[j * i for j in range(i % 50)] for i in range(5000)]
        h.update(repr(sum(len(x) for x in nested)).encode())
        s = bytearray()
        for i in range(3000):
            s += ("%08x" % (i * base & 0xFFFFFFFF)).encode()
            if i % 100 == 0:
                s = bytearray(bytes(s))  # realloc-like copies
        h.update(bytes(s))
        h.update(repr(sorted(d.items())[:50]).encode())
        del d, lst, big, parts, nested, s
    results[tid] = h.hexdigest()


def main():
    results = [None] * 4
    threads = [threading.Thread(target=work, args=(t, results)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = hashlib.sha256("".join(results).encode()).hexdigest()
    for i, r in enumerate(results):
        print("thread %d %s" % (i, r))
    print("total %s" % total)


if __name__ == "__main__":
    main()
