"""Recorded BFCL and ACEBench calls checked for placeholders (`agent.grounding.placeholder`): a
required argument whose text only names its own parameter, which the grounding guard now holds.

    python reports/limits-guard/placeholders.py BFCL_ROWS.jsonl [...] -- ACEBENCH_ROWS.jsonl [...] ACEBENCH_DIR

Both suites' items are one model step, scored on the decoded calls, and the guard acts after the
step: a call it holds is scored as no call. Prints each recorded call it would now hold.
"""

import json
import sys
from pathlib import Path

from bfcl_limits import users_text

from botpsy.agent import grounding
from botpsy.eval.acebench import user_text
from botpsy.eval.acebench_data import acebench_tools, load_category as ace_category, resolve_data
from botpsy.eval.bfcl_data import bfcl_tools, load_category
from botpsy.protocol.messages import ToolCall


def newly_held(calls: list[dict], tools: dict, said: str) -> list[tuple[str, str]]:
    out = []
    for c in calls:
        ((name, args),) = c.items()
        required = set(tools.get(name, {}).get("required", []))
        out += [(f"{name}.{k}", v) for k, v in args.items() if k in required and grounding.placeholder(k, v, said)]
    return out


def main(argv: list[str]) -> None:
    cut = argv.index("--")
    bfcl, ace, data = argv[:cut], argv[cut + 1 : -1], argv[-1]
    rows = [json.loads(line) for p in bfcl for line in open(p)]
    entries = {e["id"]: e for c in {r["category"] for r in rows} for e in load_category(c)}
    for r in rows:
        if r["detail"].get("held"):
            continue
        e = entries[r["id"]]
        tools = {t.name: t.parameters for t in bfcl_tools(e["function"])}
        found = newly_held(r["detail"]["calls"], tools, users_text(e["question"]).lower())
        if found:
            print("bfcl", r["category"], r["id"], "right" if r["ok"] else "wrong", found)
    folder, _ = resolve_data(Path(data))
    rows = [json.loads(line) for p in ace for line in open(p)]
    items = {it["id"]: it for c in {r["category"] for r in rows} for it in ace_category(folder, c)}
    for r in rows:
        if r["detail"].get("held") or not r["detail"].get("calls"):
            continue
        it = items[r["id"]]
        tools = {t.name: t.parameters for t in acebench_tools(it["function"])}
        found = newly_held(r["detail"]["calls"], tools, user_text(it["question"]).lower())
        if found:
            print("acebench", r["category"], r["id"], "right" if r["ok"] else "wrong", found)


if __name__ == "__main__":
    main(sys.argv[1:])
