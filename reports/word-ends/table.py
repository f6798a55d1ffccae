"""Wins and losses of each rule, from the rows `run.py` wrote (rule on; off where it chose), and
the BFCL categories' totals with the rules on.

    python reports/word-ends/table.py word-end=bfcl-word-end.jsonl,worlds-word-end.jsonl \
        whole-number=bfcl-whole-number.jsonl,worlds-whole-number.jsonl tool-name=...

The totals start from each item's latest recorded verdict (`recorded`) and take the rule-on run of
every item run here.
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

REPORTS = Path(__file__).resolve().parent.parent
CATEGORIES = ["live_simple", "simple_python", "multiple", "parallel", "irrelevance"]


def recorded() -> dict[tuple[str, str], tuple[bool, list]]:
    """Each BFCL item's latest recorded (verdict, calls): the whole-category run
    (`bfcl-whole-embedded/`), then the items later rules were measured on (`enum-values/`,
    `places-and-named/`, with those rules on)."""
    out = {}
    for line in open(REPORTS / "bfcl-whole-embedded/bfcl-items.jsonl"):
        r = json.loads(line)
        out[r["category"], r["id"]] = (r["ok"], r["detail"]["calls"])
    for line in open(REPORTS / "enum-values/rows.jsonl"):
        r = json.loads(line)
        if r.get("enum_guide"):
            out[r["cat"], r["id"]] = (r["ok"], r["calls"])
    for name in ("rows", "flags-rows", "percent-rows", "sentence-rows"):
        for line in open(REPORTS / f"places-and-named/{name}.jsonl"):
            r = json.loads(line)
            if r.get("can_act") and r.get("rules"):
                out[r["cat"], r["id"]] = (r["ok"], r["calls"])
    return out


def main() -> None:
    print("| rule | rows' suite | items run | rule chose a token | wins | losses | ok with the rule |")
    print("|---|---|---|---|---|---|---|")
    now = {key: ok for key, (ok, _) in recorded().items()}
    before = dict(now)
    for arg in sys.argv[1:]:
        rule, files = arg.split("=", 1)
        for path in files.split(","):
            runs = defaultdict(dict)
            for line in open(path):
                r = json.loads(line)
                runs[r.get("cat", "worlds"), r["id"]][r["rule"]] = r
            by_cat = defaultdict(lambda: [0, 0, 0, 0, 0])
            for key, pair in runs.items():
                on, off = pair[True], pair.get(False)
                row = by_cat[key[0]]
                row[0] += 1
                row[4] += on["ok"]
                if key in now:
                    now[key] = on["ok"]
                if off is not None:
                    row[1] += 1
                    row[2] += on["ok"] and not off["ok"]
                    row[3] += off["ok"] and not on["ok"]
            for cat, (n, chose, win, loss, ok) in by_cat.items():
                print(f"| {rule} | {cat} | {n} | {chose} | {win} | {loss} | {ok} |")
    print("\n| category | items | recorded before | with these rules |")
    print("|---|---|---|---|")
    for cat in CATEGORIES:
        keys = [k for k in now if k[0] == cat]
        print(f"| {cat} | {len(keys)} | {sum(before[k] for k in keys)} | {sum(now[k] for k in keys)} |")


if __name__ == "__main__":
    main()
