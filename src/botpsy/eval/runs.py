"""Per-item results shared by every suite: what one item cost, how it ended, and a resumable cache.

Each suite (BFCL, IFBench, τ²-bench, the worlds) turns one dataset item into one `ItemResult`.
The record carries both the suite's verdict and the efficiency figures BotPsy reports (reasoning
tokens, assistant turns, token-cap hits, reasoning loops), so the metrics and the report need no
second pass over traces.

`run_items` is the one loop every suite uses. It appends each finished item to a JSONL cache, so an
interrupted run resumes where it stopped, and it turns any exception — a backend that dies, a
malformed dataset line, a checker that raises — into a failed item whose `reason` says why; the run
goes on and the report counts failures by reason.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from botpsy.agent.detectors import reasoning_loop
from botpsy.engine.base import Engine
from botpsy.protocol.messages import Message, Trace


@dataclass
class ItemResult:
    suite: str
    category: str
    id: str
    model: str
    ok: bool
    reason: str = ""  # why it failed: the checker's error class, or "error: <ExceptionType>"
    error: bool = False  # the item could not be run or checked at all (backend, data or checker fault)
    steps: int = 0  # model steps
    assistant_turns: int = 0
    parse_errors: int = 0
    generated_tokens: int = 0
    reasoning_tokens: int = 0
    cap_hits: int = 0  # model steps that stopped at the token cap
    reasoning_loop: bool = False  # the documented repetition detector fired on some step's reasoning
    stopped: str = ""  # answer | step_limit | token_cap | error
    seed: int = 0
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.id}#{self.seed}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, default=str)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ItemResult:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def failed(
    suite: str, category: str, item_id: str, model: str, exc: BaseException, seed: int = 0
) -> ItemResult:
    """The record for an item that crashed: scored failed, with the exception class as its reason."""
    reason = f"error: {type(exc).__name__}"
    if "context window" in str(exc):  # the most common backend fault on long items: say so
        reason = "error: context window full"
    return ItemResult(
        suite,
        category,
        item_id,
        model,
        ok=False,
        reason=reason,
        error=True,
        stopped="error",
        seed=seed,
        detail={"message": str(exc)[:500]},
    )


def trace_figures(trace: Trace, count_tokens: Callable[[str], int]) -> dict[str, Any]:
    """Efficiency figures of one episode, from its trace alone."""
    assistant = [m for m in trace.messages if m.role == "assistant"]
    model_events = [e for e in trace.events if e.kind == "model"]
    reasoning = [m.reasoning or "" for m in assistant]
    return {
        "steps": len(trace.timings),
        "assistant_turns": len(assistant),
        "parse_errors": trace.parse_errors,
        "generated_tokens": sum(t.generated_tokens for t in trace.timings),
        "reasoning_tokens": sum(count_tokens(r) for r in reasoning if r),
        "cap_hits": sum(1 for e in model_events if e.data.get("stop") == "length"),
        "reasoning_loop": any(reasoning_loop(r) for r in reasoning),
        "stopped": trace.stopped,
    }


def item_turn(agent: Any, earlier: list[Message], text: str) -> Trace:
    """An item's turn on `agent` (`agent.loop.Agent`): the item's earlier turns seeded as turns
    (`Agent.seed`), then `text` sent. The trace returned holds only this turn's messages, from the
    user's message on: the seeded turns and any before them are not the agent's answer, calls or
    figures for this turn; events, timings and ids stay the whole conversation's."""
    agent.seed(earlier)
    start = len(agent.trace.messages)
    return replace(agent.send(text), messages=agent.trace.messages[start:])


def token_counter(engine: Engine) -> Callable[[str], int]:
    """How to count an engine's tokens in a text (`Engine.count_tokens`: its tokenizer unless it has better)."""
    return engine.count_tokens


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("_")[:80] or "model"


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:10]


class ResultCache:
    """Append-only JSONL of finished items for one (suite, model, run config); read back to resume.

    The file name carries a hash of the run config (backend, token cap, format …), so changing a
    setting starts a fresh cache instead of mixing results measured two ways. A torn last line
    from an interrupted write is ignored.
    """

    def __init__(self, folder: str | Path | None, suite: str, model: str, config: dict[str, Any]):
        self.path: Path | None = None
        self.done: dict[str, ItemResult] = {}
        if folder is None:
            return
        d = Path(folder) / "cache" / suite
        d.mkdir(parents=True, exist_ok=True)
        self.path = d / f"{slug(model)}-{config_hash(config)}.jsonl"
        (d / f"{slug(model)}-{config_hash(config)}.config.json").write_text(
            json.dumps(config, indent=1, sort_keys=True, default=str)
        )
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    r = ItemResult.from_dict(json.loads(line))
                except (json.JSONDecodeError, TypeError):
                    continue
                self.done[r.key] = r

    def add(self, r: ItemResult) -> None:
        self.done[r.key] = r
        if self.path is not None:
            with open(self.path, "a") as f:
                f.write(r.to_json() + "\n")


def run_items(
    items: Iterable[tuple[str, str, Any]],
    run_one: Callable[[Any], ItemResult],
    cache: ResultCache,
    suite: str,
    model: str,
    progress: Callable[[ItemResult], None] | None = None,
    seed: int = 0,
) -> list[ItemResult]:
    """Run `run_one` on each (category, id, item), skipping items the cache already holds."""
    out = []
    for category, item_id, item in items:
        key = f"{item_id}#{seed}"
        if key in cache.done:
            r = cache.done[key]
        else:
            try:
                r = run_one(item)
            except KeyboardInterrupt:
                raise
            except Exception as e:  # any fault of one item fails that item only
                r = failed(suite, category, item_id, model, e, seed)
            r.seed = seed
            cache.add(r)
        out.append(r)
        if progress:
            progress(r)
    return out


def failure_counts(results: list[ItemResult]) -> dict[str, int]:
    """How many items failed for which reason, most common first."""
    c = Counter(r.reason or "unknown" for r in results if not r.ok)
    return dict(c.most_common())


def sample(entries: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """`limit` entries spread evenly over the category (deterministic), or all of them."""
    if not limit or limit >= len(entries):
        return entries
    step = len(entries) / limit
    return [entries[int(i * step)] for i in range(limit)]
