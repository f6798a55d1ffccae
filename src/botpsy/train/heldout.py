"""Held-out figures of a recipe checkpoint, and the dev-split score that picks a stage's best checkpoint.

Figures (BotPsy's, at recipe scale):
* world success overall and by task kind, tool-call exactness — `botpsy.eval.worlds.evaluate` on the
  worlds' eval split;
* instruction-following accuracy — IFBench verifiers on *held-out* constraint types
  (`botpsy.data.verifiable`, ifeval eval split);
* reasoning accuracy — arithmetic and multiple-choice items of the eval split;
* reasoning-loop rate — `botpsy.agent.detectors.reasoning_loop` over the reasoning of every IF and
  reasoning item (BotPsy reports it on IFBench), and the share that hit the token cap;
* reasoning tokens per correct answer — mean over this checkpoint's correct reasoning items; the
  recipe report also gives it on the items *every* stage solved
  (`metrics.reasoning_tokens_per_correct`), the fair comparison.

All generation is greedy and every stage is measured the same way, through one of two engines
(preset `eval: engine:`):

* `llamacpp` (default): the checkpoint's `hf/` folder converted once to an f16 GGUF beside it
  (`eval-f16.gguf`) and run by llama.cpp, the engine botpsy ships; the worlds' shared system prompt
  is prefilled once, not per task. A tiny-preset stage's held-out evaluation took 156 s this way
  against 506-555 s through transformers in the run before (file times, possibly shared CPU), and
  the base model's figures came out identical.
* `transformers`: the checkpoint in float32 through `TransformersEngine`, for a model llama.cpp
  cannot convert.

The tool-call grammar stays off in both, so the figures are the model's own output, as trained.
Per-item outcomes are kept for the cross-stage comparison.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botpsy.agent.detectors import reasoning_loop
from botpsy.agent.loop import AgentConfig
from botpsy.data.verifiable import generate, mixture, score
from botpsy.engine.load import load_engine
from botpsy.eval.worlds import evaluate
from botpsy.export.gguf import convert_hf_to_gguf
from botpsy.protocol.formats import THINK_CLOSE
from botpsy.train.policy import hf_dir
from botpsy.worlds import get_domain


@dataclass(frozen=True)
class EvalSpec:
    """Sizes of the held-out and dev evaluations (preset section `eval:`)."""

    world_domains: tuple[str, ...] = ("calendar",)
    world_tasks: int = 50  # per domain, eval split
    if_items: int = 30  # held-out IFBench constraint types
    reasoning_items: int = 30  # arithmetic + multiple choice
    max_tokens: int = 384  # generation cap per model step (the agent's token cap)
    max_steps: int = 8  # model steps per user message in world episodes
    dev_tasks: int = 20  # dev split (train-split stream, unseen seed) for checkpoint selection
    dev_items: int = 10
    seed: int = 1000
    dev_seed: int = 5000
    threads: int = 0
    engine: str = "llamacpp"  # or "transformers" (module docstring)

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ValueError(f"eval engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")


ENGINES = ("llamacpp", "transformers")
EVAL_GGUF = "eval-f16.gguf"


def n_ctx(spec: EvalSpec) -> int:
    """Context for a world episode: the prompt (about 1,500 tokens of tools) plus every step's cap."""
    return min(32768, max(4096, 2048 + spec.max_tokens * spec.max_steps))


def eval_gguf(model_dir: str | Path) -> Path:
    """The checkpoint as an f16 GGUF for llama.cpp, converted on first use and kept beside it."""
    path = Path(model_dir) / EVAL_GGUF
    if not path.exists():
        convert_hf_to_gguf(hf_dir(model_dir), path, "f16", model_name=Path(model_dir).name)
    return path


@contextmanager
def _engine(model_dir: str | Path, spec: EvalSpec):
    """The engine that measures `model_dir`, closed (its memory freed) when the block ends."""
    threads = spec.threads or None
    if spec.engine == "transformers":
        yield load_engine(hf_dir(model_dir), backend="transformers", chat_format="qwen35", n_threads=threads)
        return
    engine = load_engine(
        eval_gguf(model_dir), backend="llamacpp", n_ctx=n_ctx(spec), n_threads=threads, chat_format="qwen35"
    )
    try:
        yield engine
    finally:
        engine.llm.close()


def generate_items(engine, items, max_tokens: int) -> list[dict[str, Any]]:
    """Greedy completions of verifiable items, scored, with reasoning length and loop flags."""
    out = []
    for item in items:
        ids = engine.tokenize(item.prompt(engine.chat_format))
        engine.reset()  # items are independent: no cached prefix from the previous one
        gen = engine.generate(ids, max_tokens=max_tokens, temperature=0.0)
        reasoning = gen.text.split(THINK_CLOSE, 1)[0]
        out.append(
            {
                "id": item.id,
                "domain": item.domain,
                "score": score(item, gen.text),
                "reasoning_tokens": len(engine.tokenize(reasoning)),
                "loop": reasoning_loop(reasoning),
                "cap": gen.stop == "length",
            }
        )
    return out


def world_figures(engine, spec: EvalSpec, split_seed: int, n: int, split: str = "eval") -> dict[str, Any]:
    config = AgentConfig(max_tokens=spec.max_tokens, max_steps=spec.max_steps, tool_grammar=False)
    merged: dict[str, Any] = {"n": 0, "success": 0.0, "tool_call_exact": 0.0, "by_kind": {}}
    kinds: dict[str, list[float]] = {}
    for name in spec.world_domains:
        domain = get_domain(name)
        report = evaluate(
            lambda t: engine, domain, domain.generate(n, split_seed, split), engine.name, config
        )
        merged["n"] += report.n
        merged["success"] += report.success * report.n
        merged["tool_call_exact"] += report.tool_call_exact * report.n
        for r in report.results:
            kinds.setdefault(r.kind, []).append(float(r.success))
    total = max(merged["n"], 1)
    merged["success"] = round(merged["success"] / total, 4)
    merged["tool_call_exact"] = round(merged["tool_call_exact"] / total, 4)
    merged["by_kind"] = {k: round(sum(v) / len(v), 4) for k, v in sorted(kinds.items())}
    return merged


def heldout_figures(
    model_dir: str | Path, spec: EvalSpec, world_tasks: int | None = None, log=print
) -> dict[str, Any]:
    half = spec.reasoning_items // 2
    if_items = mixture({"ifeval": spec.if_items}, spec.seed, "eval", log) if spec.if_items else []
    t0 = time.perf_counter()
    with _engine(model_dir, spec) as engine:
        n = spec.world_tasks if world_tasks is None else world_tasks
        figures = world_figures(engine, spec, spec.seed, n)
        reasoning = generate_items(
            engine,
            generate("arithmetic", spec.reasoning_items - half, spec.seed, "eval")
            + generate("mcq", half, spec.seed, "eval"),
            spec.max_tokens,
        )
        follow = generate_items(engine, if_items, spec.max_tokens)
    both = reasoning + follow
    correct = [r for r in reasoning if r["score"] >= 1.0]
    figures.update(
        {
            "reasoning_accuracy": round(sum(r["score"] for r in reasoning) / max(len(reasoning), 1), 4),
            "instruction_following_accuracy": (
                round(sum(r["score"] for r in follow) / len(follow), 4) if follow else None
            ),
            "reasoning_loop_rate": round(sum(r["loop"] for r in both) / max(len(both), 1), 4),
            "token_cap_share": round(sum(r["cap"] for r in both) / max(len(both), 1), 4),
            "reasoning_tokens_per_correct": (
                round(sum(r["reasoning_tokens"] for r in correct) / len(correct), 1) if correct else None
            ),
            "items": both,
            "eval_engine": spec.engine,
            "eval_seconds": round(time.perf_counter() - t0, 1),
        }
    )
    return figures


def dev_score(model_dir: str | Path, spec: EvalSpec) -> float:
    """One number to rank checkpoints of a stage: mean of dev world success and dev verifiable score."""
    items = generate("arithmetic", spec.dev_items, spec.dev_seed, "train") + generate(
        "json", spec.dev_items, spec.dev_seed, "train"
    )
    with _engine(model_dir, spec) as engine:
        world = world_figures(engine, spec, spec.dev_seed, spec.dev_tasks, split="train")["success"]
        scored = generate_items(engine, items, spec.max_tokens)
    verifiable = sum(r["score"] for r in scored) / max(len(scored), 1)
    return round((world + verifiable) / 2, 4)
