"""Rates written as fractions (`CopyGuide._asks_fraction`'s rate names), measured with the rule on
and off on every BFCL item it can act on.

    OMP_NUM_THREADS=2 python reports/value-formats/rates.py CATEGORIES OUT.jsonl

The rule acts only where the user wrote a percentage ("5%") and a tool has a number parameter whose
name makes it a rate; so those items are all it can change. Each runs twice on the shipped
`embedded` model (llama.cpp, greedy, the grounding guard and every other copy-guide rule on): with
the rate names (after) and with none (before: only descriptions that ask for a decimal, as until
now). One row per item; changed items are printed.
"""

import json
import os
import re
import sys

import botpsy.engine.copy_guide as CG
from botpsy.engine.load import load_engine
from botpsy.eval import bfcl as B
from botpsy.eval.bfcl_data import load_category
from botpsy.eval.bfcl_process import BfclWorker

PERCENT = re.compile(r"(?<![\d.])\d+(?:\.\d+)?\s?%")


def candidates(categories: list[str]) -> list[tuple[str, dict]]:
    out = []
    for c in categories:
        for e in load_category(c):
            user = " ".join(m["content"] for turn in e["question"] for m in turn if m["role"] == "user")
            rate = any(
                p.get("type") in ("float", "number") and not CG._RATE_WORDS.isdisjoint(CG._name_words(k))
                for f in e["function"]
                for k, p in f.get("parameters", {}).get("properties", {}).items()
            )
            if PERCENT.search(user) and rate:
                out.append((c, e))
    return out


def main(categories: str, out_path: str) -> None:
    items = candidates(categories.split(","))
    print(len(items), "items", flush=True)
    engine = load_engine(None, n_threads=int(os.environ.get("OMP_NUM_THREADS", "1")))
    names = CG._RATE_WORDS
    with BfclWorker() as worker, open(out_path, "w") as out:
        for c, e in items:
            row = {"category": c, "id": e["id"]}
            for label, rate_words in (("before", frozenset()), ("after", names)):
                CG._RATE_WORDS = rate_words
                r = B.run_item(c, e, engine, worker, "embedded", B.BfclConfig())
                row[label] = {"ok": r.ok, "calls": r.detail["calls"]}
            CG._RATE_WORDS = names
            out.write(json.dumps(row) + "\n")
            out.flush()
            if row["before"] != row["after"]:
                print(c, e["id"], row["before"]["ok"], "->", row["after"]["ok"], flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
