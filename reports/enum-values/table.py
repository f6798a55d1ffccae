"""Per category from run.py's rows: items, passes with and without enum guidance, items it touched,
wins, losses, and the sign test over all of them.

    python reports/enum-values/table.py ROWS.jsonl [ROWS.jsonl ...]
"""

import json
import sys

from botpsy.eval.paired import sign_test

on, off = {}, {}
for path in sys.argv[1:]:
    for r in map(json.loads, open(path)):
        key = (r["cat"], r["id"])
        if r["enum_guide"]:
            on[key] = r
        else:
            off[key] = r
# An item enum guidance did not touch made the same tokens without it: its row stands for both.
before = {k: off.get(k, r)["ok"] for k, r in on.items()}
after = {k: r["ok"] for k, r in on.items()}
print("| category | items | without | with | touched | wins | losses |")
print("|---|---|---|---|---|---|---|")
cats = sorted({c for c, _ in on}, key=lambda c: (c == "worlds", c))
for c in [*cats, "all"]:
    sel = [k for k in on if c in ("all", k[0])]
    w = sum(after[k] and not before[k] for k in sel)
    lo = sum(before[k] and not after[k] for k in sel)
    touched = sum(k in off for k in sel)
    print(
        f"| {c} | {len(sel)} | {sum(before[k] for k in sel)} | {sum(after[k] for k in sel)} | {touched} | {w} | {lo} |"
    )
w = sum(after[k] and not before[k] for k in on)
lo = sum(before[k] and not after[k] for k in on)
print(f"\nsign test over all items: {w} wins, {lo} losses, p = {sign_test(w, lo):.3f}")
