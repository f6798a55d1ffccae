"""Per category from run.py's rows: items, items the rule can act on, passes with the rule off and
on, items it touched, wins, losses, and the sign test over all items.

    python reports/places-and-named/table.py ROWS.jsonl
"""

import json
import sys

from botpsy.eval.paired import sign_test

on, off, idle = {}, {}, {}
for r in map(json.loads, open(sys.argv[1])):
    key = (r["cat"], r["id"])
    if not r["can_act"]:
        idle[key] = r
    elif r["rules"]:
        on[key] = r
    else:
        off[key] = r
# An item the rule did not touch made the same tokens without it: its row stands for both.
before = {k: off.get(k, r)["ok"] for k, r in on.items()}
after = {k: r["ok"] for k, r in on.items()}
print("| category | items | rule can act | off | on | touched | wins | losses |")
print("|---|---|---|---|---|---|---|---|")
cats = sorted({c for c, _ in [*on, *idle]}, key=lambda c: (c == "worlds", c))
for c in [*cats, "all"]:
    sel = [k for k in on if c in ("all", k[0])]
    n = len(sel) + sum(c in ("all", k[0]) for k in idle)
    w = sum(after[k] and not before[k] for k in sel)
    lo = sum(before[k] and not after[k] for k in sel)
    t = sum(k in off for k in sel)
    print(
        f"| {c} | {n} | {len(sel)} | {sum(before[k] for k in sel)} | {sum(after[k] for k in sel)} | {t} | {w} | {lo} |"
    )
w = sum(after[k] and not before[k] for k in on)
lo = sum(before[k] and not after[k] for k in on)
print(f"\nsign test over all items: {w} wins, {lo} losses, p = {sign_test(w, lo):.3f}")
