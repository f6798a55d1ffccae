"""Recorded ACEBench rows (normal and special are one model step each) checked by the limits guard,
without running the model: which recorded calls it would hold, and whether the value is the user's.

    python reports/limits-guard/acebench_limits.py ROWS.jsonl ACEBENCH_DIR
"""

import json
import sys
from pathlib import Path

from botpsy.agent import limits
from botpsy.eval.acebench import user_text
from botpsy.eval.acebench_data import acebench_tools, load_category, resolve_data
from botpsy.protocol.messages import ToolCall


def recorded(paths: list[str], data: str):
    """(row, the item's tools' parameter schemas, the user's words) for each recorded row whose
    calls were made (not held, not none)."""
    rows = [json.loads(line) for p in paths for line in open(p)]
    folder, _ = resolve_data(Path(data))
    items = {it["id"]: it for c in {r["category"] for r in rows} for it in load_category(folder, c)}
    for r in rows:
        if r["detail"].get("held") or not r["detail"].get("calls"):
            continue
        it = items[r["id"]]
        yield r, {t.name: t.parameters for t in acebench_tools(it["function"])}, user_text(it["question"])


def main(rows_path: str, data: str) -> None:
    for r, tools, said in recorded([rows_path], data):
        calls = [ToolCall(*next(iter(c.items()))) for c in r["detail"]["calls"]]
        found = limits.step_broken(calls, tools, said)
        if found:
            print(
                json.dumps(
                    {"category": r["category"], "id": r["id"], "ok": r["ok"], "broken": limits.as_data(found)}
                )
            )


if __name__ == "__main__":
    main(*sys.argv[1:3])
