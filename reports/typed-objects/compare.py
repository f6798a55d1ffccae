"""Pair two objects_run.py outputs by item: per category n, passes before/after, wins, losses.

python reports/typed-objects/compare.py BEFORE.jsonl AFTER.jsonl
"""

import json
import sys

from botpsy.eval.paired import sign_test


def load(path):
    return {r["id"]: r for r in map(json.loads, open(path))}


a, b = load(sys.argv[1]), load(sys.argv[2])
ids = [i for i in b if i in a]
cats = sorted({b[i]["cat"] for i in ids}, key=lambda c: (not c.startswith("normal"), c))
rows = [(c, [i for i in ids if b[i]["cat"] == c]) for c in cats] + [("all", ids)]
print("| category | items | before | after | wins | losses | held before | held after |")
print("|---|---|---|---|---|---|---|---|")
for c, sel in rows:
    w = sum(b[i]["ok"] and not a[i]["ok"] for i in sel)
    lo = sum(a[i]["ok"] and not b[i]["ok"] for i in sel)
    held = [sum(bool(x[i]["detail"].get("held")) for i in sel) for x in (a, b)]
    print(
        f"| {c} | {len(sel)} | {sum(a[i]['ok'] for i in sel)} | {sum(b[i]['ok'] for i in sel)} | {w} | {lo} "
        f"| {held[0]} | {held[1]} |"
    )
w = sum(b[i]["ok"] and not a[i]["ok"] for i in ids)
lo = sum(a[i]["ok"] and not b[i]["ok"] for i in ids)
print(f"\nsign test over all paired items: p = {sign_test(w, lo):.3f}")
