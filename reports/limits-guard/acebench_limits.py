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


def main(rows_path: str, data: str) -> None:
    rows = [json.loads(line) for line in open(rows_path)]
    folder, _ = resolve_data(Path(data))
    items = {it["id"]: it for c in {r["category"] for r in rows} for it in load_category(folder, c)}
    for r in rows:
        if r["detail"].get("held") or not r["detail"].get("calls"):
            continue
        it = items[r["id"]]
        tools = {t.name: t.parameters for t in acebench_tools(it["function"])}
        calls = [ToolCall(*next(iter(c.items()))) for c in r["detail"]["calls"]]
        found = limits.step_broken(calls, tools, user_text(it["question"]))
        if found:
            print(
                json.dumps(
                    {"category": r["category"], "id": r["id"], "ok": r["ok"], "broken": limits.as_data(found)}
                )
            )


if __name__ == "__main__":
    main(*sys.argv[1:3])
