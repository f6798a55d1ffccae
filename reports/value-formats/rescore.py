"""The recorded BFCL calls rescored with today's argument conversions (`protocol.arguments.coerce`:
one text in brackets, year-first dates in a declared format), without running the model.

    python reports/value-formats/rescore.py ROWS.jsonl [ROWS.jsonl ...] > OUT.jsonl

The conversions act after the model has written its calls and change no token: a BFCL item is
one model step, and its score is the checker's verdict on the decoded calls
(`eval.bfcl.decode_for_checker`, which converts each value with `coerce`). So each recorded row's
calls, converted again, are exactly what a run today would score. Calls the grounding guard held
were scored as no call and stay so. Prints a table per category; writes one row per changed item.
"""

import collections
import json
import sys

from botpsy.eval.bfcl import _verdict
from botpsy.eval.bfcl_data import bfcl_tools, load_category
from botpsy.eval.bfcl_process import BfclWorker
from botpsy.protocol.arguments import ToolError, coerce


def converted(calls: list[dict], functions: list[dict]) -> list[dict]:
    props = {t.name: t.parameters.get("properties", {}) for t in bfcl_tools(functions)}
    out = []
    for call in calls:
        ((name, args),) = call.items()
        schema, new = props.get(name, {}), {}
        for k, v in args.items():
            if k in schema and v is not None:
                try:
                    v = coerce(v, schema[k], k)
                except ToolError:
                    pass  # kept as written, as decode_for_checker keeps it
            new[k] = v
        out.append({name: new})
    return out


def main(paths: list[str]) -> None:
    rows = [json.loads(line) for p in paths for line in open(p)]
    functions = {e["id"]: e["function"] for c in {r["category"] for r in rows} for e in load_category(c)}
    table = collections.defaultdict(collections.Counter)
    with BfclWorker() as worker:
        for r in rows:
            t = table[r["category"]]
            t["items"] += 1
            t["before"] += r["ok"]
            calls = r["detail"]["calls"]
            new = calls if r["detail"].get("held") else converted(calls, functions[r["id"]])
            if new == calls:
                t["after"] += r["ok"]
                continue
            ok = bool(_verdict(worker, r["category"], r["id"], new)["valid"])
            t["after"] += ok
            t["changed"] += 1
            t["wins"] += ok and not r["ok"]
            t["losses"] += r["ok"] and not ok
            print(
                json.dumps(
                    {
                        "category": r["category"],
                        "id": r["id"],
                        "before": r["ok"],
                        "after": ok,
                        "calls": calls,
                        "converted": new,
                    }
                )
            )
    print("| category | items | calls changed | wins | losses | before | after |", file=sys.stderr)
    print("|---|---|---|---|---|---|---|", file=sys.stderr)
    for c, t in table.items():
        print(
            f"| {c} | {t['items']} | {t['changed']} | {t['wins']} | {t['losses']} | "
            f"{t['before']} ({t['before'] / t['items']:.1%}) | {t['after']} ({t['after'] / t['items']:.1%}) |",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
