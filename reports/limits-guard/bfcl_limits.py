"""The recorded BFCL calls checked by the limits guard (`agent.limits`), without running the model.

    python reports/limits-guard/bfcl_limits.py ROWS.jsonl [ROWS.jsonl ...]

The guard acts after the model has written a step's calls and changes no token, and a BFCL item is
one model step: a call it would hold is scored as no call. Prints every recorded call the guard
would hold (the value, the limit, whether the value is the user's) and, per category, how many
items declare any limit at all. Calls the grounding guard held stay held.
"""

import collections
import json
import sys

from botpsy.agent import limits
from botpsy.eval.bfcl_data import bfcl_tools, load_category
from botpsy.protocol.messages import ToolCall


def users_text(question) -> str:
    out = []

    def walk(x):
        if isinstance(x, dict) and x.get("role") == "user":
            out.append(str(x.get("content", "")))
        elif isinstance(x, list):
            for y in x:
                walk(y)

    walk(question)
    return "\n".join(out)


def recorded(paths: list[str]):
    """(row, the item's tools' parameter schemas, the user's words) for each recorded row, and
    whether its calls were already held."""
    rows = [json.loads(line) for p in paths for line in open(p)]
    entries = {e["id"]: e for c in {r["category"] for r in rows} for e in load_category(c)}
    for r in rows:
        e = entries[r["id"]]
        yield r, {t.name: t.parameters for t in bfcl_tools(e["function"])}, users_text(e["question"])


def main(paths: list[str]) -> None:
    declaring, held = collections.Counter(), collections.Counter()
    for r, tools, said in recorded(paths):
        if any(limits.declared_limits(s) for t in tools.values() for s in _schemas(t)):
            declaring[r["category"]] += 1
        if r["detail"].get("held"):
            continue
        calls = [ToolCall(*next(iter(c.items()))) for c in r["detail"]["calls"]]
        found = limits.step_broken(calls, tools, said)
        if found:
            held[r["category"], r["ok"]] += 1
            print(
                json.dumps(
                    {"category": r["category"], "id": r["id"], "ok": r["ok"], "broken": limits.as_data(found)}
                )
            )
    print("items whose functions declare a limit:", dict(declaring))
    print("recorded calls the guard holds (category, was right):", dict(held))


def _schemas(schema):
    if isinstance(schema, dict):
        yield schema
        for v in schema.values():
            yield from _schemas(v)
    elif isinstance(schema, list):
        for v in schema:
            yield from _schemas(v)


if __name__ == "__main__":
    main(sys.argv[1:])
