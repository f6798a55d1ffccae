"""How well a model tells BFCL irrelevance requests from live_simple ones at its first reasoning
token, threshold-free: over the rows `../bfcl-whole-embedded/decide.py` writes, the margin
logit("No") - best tool-name logit, and the share of (irrelevance, live_simple) pairs where the
irrelevance item's margin is the larger (ties count half). 0.5 is chance, 1 a perfect split.

    python reports/issue35-gpu/first_token_auc.py ROWS.jsonl [ROWS.jsonl ...] [--only ITEMS.jsonl]

`--only` keeps the rows whose item is in an `eval bfcl` items file (the probes' 80 + 80).
"""

import json
import sys


def rows(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def auc(decline: list[float], call: list[float]) -> float:
    pairs = sum((a > b) + 0.5 * (a == b) for a in decline for b in call)
    return pairs / (len(decline) * len(call))


def main(argv: list[str]) -> None:
    only = None
    if "--only" in argv:
        i = argv.index("--only")
        only = {(r["category"], r["id"]) for r in rows(argv[i + 1])}
        argv = argv[:i] + argv[i + 2 :]
    for path in argv:
        kept = [r for r in rows(path) if "no" in r and (only is None or (r["cat"], r["id"]) in only)]
        margin = {
            c: [r["no"] - r["tool"] for r in kept if r["cat"] == c] for c in ("irrelevance", "live_simple")
        }
        top = {c: sum(r["top"] == "No" for r in kept if r["cat"] == c) for c in margin}
        print(
            f"{path}: AUC {auc(margin['irrelevance'], margin['live_simple']):.3f} over "
            f"{len(margin['irrelevance'])} irrelevance and {len(margin['live_simple'])} live_simple items; "
            f'"No" on top: {top["irrelevance"]} and {top["live_simple"]}'
        )


if __name__ == "__main__":
    main(sys.argv[1:])
