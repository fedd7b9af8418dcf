# An allocation-heavy Python program for bench/prof-real.sh: dictionaries of
# short strings, lists of tuples, JSON round trips and sorts, so that the
# interpreter's small-object allocator and malloc both work. Its output is a
# checksum, the same under every allocator.
import json
import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
total = 0
for r in range(rounds):
    table = {}
    for i in range(60000):
        key = f"k{r}-{i}"
        table[key] = {"id": i, "name": key * (1 + i % 5), "tags": [str(i % 7), str(i % 11)]}
    text = json.dumps(table)
    back = json.loads(text)
    rows = sorted(((v["name"], v["id"]) for v in back.values()), reverse=(r % 2 == 1))
    total += len(text) + rows[0][1] + sum(len(v["tags"]) for v in back.values())
    del table, back, rows, text
print(total)
