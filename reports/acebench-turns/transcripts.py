"""ACEBench's normal items whose question is a transcript, run through the agent one by one: the
paired measure of `Agent.seed` (earlier turns as turns) against the transcript in one message.

    OMP_NUM_THREADS=1 python reports/acebench-turns/transcripts.py ACEBench OUT.jsonl [CONVERSATIONS [CATEGORY,…]]

Runs every item with a "system:" line in normal_similar_api and normal_atom_bool (or the categories
named), and the first CONVERSATIONS conversations (default 6) of each normal multi-turn category
named, with the `embedded`
model on one llama.cpp thread, the CLI's defaults otherwise. Resumable: ids already in OUT are
skipped. Run it from a checkout of the commit to measure (`PYTHONPATH=that/src`); the rows say which
harness ran (`seeded`: whether `Agent.seed` exists).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from botpsy.agent.loop import Agent
from botpsy.engine.load import load_engine, resolve_backend
from botpsy.eval.acebench import AceConfig, run_single
from botpsy.eval.acebench_data import conversation, load_category, resolve_data

CATEGORIES = (
    "normal_multi_turn_user_adjust",
    "normal_multi_turn_user_switch",
    "normal_similar_api",
    "normal_atom_bool",
)


def items(data: Path, conversations: int, categories: tuple[str, ...] = CATEGORIES) -> list[tuple[str, dict]]:
    out = []
    for category in categories:
        rows = [it for it in load_category(data, category) if "system:" in it["question"]]
        if "multi_turn" in category:
            keep = list(dict.fromkeys(conversation(it["id"]) for it in rows))[:conversations]
            rows = [it for it in rows if conversation(it["id"]) in keep]
        out += [(category, it) for it in rows]
    return out


def main(checkout: str, out: str, conversations: int = 6, categories: tuple[str, ...] = CATEGORIES) -> None:
    data, _ = resolve_data(checkout)
    done = set()
    path = Path(out)
    if path.exists():
        done = {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}
    engine = load_engine(resolve_backend("embedded", "auto"), n_ctx=8192, n_threads=1)  # the CLI's window
    seeded = hasattr(Agent, "seed")
    todo = [(c, it) for c, it in items(data, conversations, categories) if it["id"] not in done]
    print(f"{len(todo)} items to run ({len(done)} done), seeded={seeded}", flush=True)
    with path.open("a") as f:
        for category, item in todo:
            r = run_single(category, item, engine, "embedded", AceConfig())
            row = {"id": r.id, "category": category, "ok": r.ok, "seeded": seeded, "detail": r.detail}
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            f.flush()


if __name__ == "__main__":
    named = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else CATEGORIES
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 6, named)
