"""The comparison report: several models, the peer suites and the worlds, BotPsy's metrics, in one run.

    botpsy eval report --model embedded --model runs/tiny-random --out reports/embedded-vs-random

For every model it runs BFCL (official checkers), the worlds (all domains, by task kind) and
IFBench (official verifiers), caching every item under `OUT/cache/` so an interrupted run resumes.
Then it writes, next to each other:

* `report.json` — every figure, the resolved config, failures by reason per model;
* `report.md` — the same as tables a person reads;
* `plots/success_vs_turns.png` — worlds success against assistant turns per task, with the Pareto
  front (fewer turns and more success is better), as the BotPsy publication drew it;
* `plots/reasoning_tokens.png` — reasoning tokens per correct answer on commonly solved items;
* `plots/scores.png` — the headline score of each suite per model.

The cross-model figures (reasoning tokens per correct answer, assistant turns per solved task)
use only the items every compared model solved; with nothing solved in common they are n/a.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from botpsy.agent.loop import AgentConfig
from botpsy.engine.oracle import OracleEngine
from botpsy.eval import metrics as M
from botpsy.eval.bfcl import BfclConfig, evaluate_bfcl
from botpsy.eval.bfcl_data import parse_categories
from botpsy.eval.bfcl_oracle import gold_messages
from botpsy.eval.ifbench import IfbenchConfig, evaluate_ifbench, sample_responses
from botpsy.eval.runs import ItemResult, failure_counts
from botpsy.eval.world_items import evaluate_worlds_items
from botpsy.protocol.messages import Message
from botpsy.reports import JsonFormat, ReportWriter
from botpsy.worlds import DOMAINS

SUITES = ("bfcl", "worlds", "ifbench")
# Labels and failure reasons may be any text, and a config may hold a path.
JSON = JsonFormat(indent=1, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class ReportConfig:
    suites: tuple[str, ...] = SUITES
    bfcl_categories: str = (
        "simple_python,multiple,parallel,parallel_multiple,irrelevance,live_simple,multi_turn_base"
    )
    bfcl_limit: int | None = 20  # items per BFCL category (evenly spread); None for all
    worlds_n: int = 4  # held-out tasks per world domain
    # per world domain, held-out tasks that also carry an IFBench constraint (kind "instruction")
    worlds_if_n: int = 0
    ifbench_limit: int | None = 30
    trials: int = 1  # repeated worlds runs, for pass^k (use a temperature > 0)
    max_tokens: int = 256  # generated tokens per model step
    temperature: float = 0.0


@dataclass
class ModelRun:
    label: str
    results: dict[str, list[ItemResult]] = field(default_factory=dict)
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)


# ---- figures -----------------------------------------------------------------------------------


def model_metrics(results: list[ItemResult]) -> dict[str, Any]:
    """BotPsy's per-model metrics over every item the model ran."""
    steps = sum(r.steps for r in results)
    worlds = [r for r in results if r.suite == "worlds" and not r.error]
    safety = [r for r in worlds if r.detail.get("unsafe") is not None]
    ifb = [r for r in results if r.suite == "ifbench" and not r.error]
    return {
        "items": len(results),
        "errors": sum(r.error for r in results),
        "reasoning_loop_rate": M.rate(r.reasoning_loop for r in results if not r.error),
        "reasoning_loop_rate_ifbench": M.rate(r.reasoning_loop for r in ifb) if ifb else None,
        "token_cap_share": M.token_cap_share(r.cap_hits > 0 for r in results if not r.error),
        "parse_error_rate": M.parse_error_rate(sum(r.parse_errors for r in results), steps),
        "phantom_action_rate": M.rate(bool(r.detail.get("phantom")) for r in worlds) if worlds else None,
        "unsafe_rate": M.unsafe_rate(bool(r.detail.get("unsafe")) for r in safety) if safety else None,
        "unsafe_items": len(safety),
    }


def cross_model(runs: list[ModelRun]) -> dict[str, Any]:
    """Costs on the items every model solved: reasoning tokens per correct answer, turns per task."""
    out: dict[str, Any] = {"reasoning_tokens_per_correct": {}, "assistant_turns_per_solved_task": {}}
    for suite in SUITES:
        per = {
            r.label: {x.key: (x.ok, x.reasoning_tokens) for x in r.results.get(suite, [])}
            for r in runs
            if r.results.get(suite)
        }
        if per:
            out["reasoning_tokens_per_correct"][suite] = M.reasoning_tokens_per_correct(per)
    turns = {
        r.label: {x.key: (x.ok, x.assistant_turns) for x in r.results.get("worlds", [])}
        for r in runs
        if r.results.get("worlds")
    }
    if turns:
        out["assistant_turns_per_solved_task"]["worlds"] = M.turns_per_solved_task(turns)
    return out


def pass_k(results: list[ItemResult], ks: list[int]) -> dict[str, float]:
    trials: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        trials[r.id].append(r.ok)
    n = min((len(v) for v in trials.values()), default=0)
    return {f"pass^{k}": M.pass_hat_k(trials, k) for k in ks if 1 <= k <= n}


def worlds_summary(results: list[ItemResult]) -> dict[str, Any]:
    first = [r for r in results if r.seed == 0] or results
    kinds: dict[str, list[bool]] = defaultdict(list)
    domains: dict[str, list[bool]] = defaultdict(list)
    for r in first:
        kinds[r.detail.get("kind", "error")].append(r.ok)
        domains[r.category].append(r.ok)
    solved_turns = [r.assistant_turns for r in first if r.ok]
    return {
        "suite": "worlds",
        "n": len(first),
        "success": M.rate(r.ok for r in first),
        "assistant_turns": sum(r.assistant_turns for r in first) / len(first) if first else None,
        "assistant_turns_solved": sum(solved_turns) / len(solved_turns) if solved_turns else None,
        "by_kind": {k: M.rate(v) for k, v in sorted(kinds.items())},
        "by_domain": {k: M.rate(v) for k, v in sorted(domains.items())},
        **pass_k(results, [1, 2, 4, 8]),
        "failures": failure_counts(first),
    }


def headline(suite: str, s: dict[str, Any]) -> float | None:
    return {"bfcl": s.get("overall"), "worlds": s.get("success"), "ifbench": s.get("prompt_strict")}.get(
        suite
    )


def build_report(runs: list[ModelRun], config: ReportConfig) -> dict[str, Any]:
    return {
        "models": [r.label for r in runs],
        "config": asdict(config),
        "suites": {s: {r.label: r.summaries[s] for r in runs if s in r.summaries} for s in config.suites},
        "metrics": {r.label: model_metrics([x for v in r.results.values() for x in v]) for r in runs},
        "cross": cross_model(runs),
        "failures": {r.label: failure_counts([x for v in r.results.values() for x in v]) for r in runs},
    }


# ---- rendering ---------------------------------------------------------------------------------


def _pct(x: Any) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: Any, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:,.{digits}f}"


def render_markdown(rep: dict[str, Any]) -> str:
    models = rep["models"]
    suites = [s for s in SUITES if s in rep["suites"]]
    lines = ["# Model comparison", "", f"Models: {', '.join(f'`{m}`' for m in models)}.", ""]
    cfg = rep["config"]
    lines += [
        f"BFCL categories `{cfg['bfcl_categories']}` ({cfg['bfcl_limit'] or 'all'} items each), "
        f"{cfg['worlds_n']} held-out tasks per world domain, IFBench {cfg['ifbench_limit'] or 'all 294'} prompts; "
        f"{cfg['max_tokens']} tokens per model step, temperature {cfg['temperature']}.",
        "",
        "## Headline",
        "",
    ]
    head = {"bfcl": "BFCL v4 overall", "worlds": "worlds success", "ifbench": "IFBench prompt strict"}
    cols = [head[s] for s in suites] + [
        "loop rate",
        "cap share",
        "parse errors",
        "phantom",
        "unsafe",
        "errored items",
    ]
    lines += ["| model | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for m in models:
        met = rep["metrics"][m]
        cells = [_pct(headline(s, rep["suites"][s].get(m, {}))) for s in suites]
        cells += [
            _pct(met["reasoning_loop_rate"]),
            _pct(met["token_cap_share"]),
            _pct(met["parse_error_rate"]),
            _pct(met["phantom_action_rate"]),
            _pct(met["unsafe_rate"]) + (f" (of {met['unsafe_items']})" if met["unsafe_items"] else ""),
            f"{met['errors']} of {met['items']}",
        ]
        lines.append(f"| `{m}` | " + " | ".join(cells) + " |")
    lines += ["", "## Costs on commonly solved items", ""]
    lines += ["| figure | suite | items solved by all | " + " | ".join(f"`{m}`" for m in models) + " |"]
    lines += ["|---" * (3 + len(models)) + "|"]
    for name, per_suite in (
        ("reasoning tokens per correct answer", rep["cross"]["reasoning_tokens_per_correct"]),
        ("assistant turns per solved task", rep["cross"]["assistant_turns_per_solved_task"]),
    ):
        for suite, v in per_suite.items():
            vals = " | ".join(_num(v["by_model"].get(m)) for m in models)
            lines.append(f"| {name} | {suite} | {v['items']} | {vals} |")
    if "bfcl" in suites:
        cats = sorted({c for s in rep["suites"]["bfcl"].values() for c in s.get("categories", {})})
        lines += [
            "",
            "## BFCL v4 by category",
            "",
            "| category | " + " | ".join(f"`{m}`" for m in models) + " |",
        ]
        lines += ["|---" * (1 + len(models)) + "|"]
        for c in cats:
            vals = " | ".join(
                _pct(rep["suites"]["bfcl"].get(m, {}).get("categories", {}).get(c, {}).get("accuracy"))
                for m in models
            )
            lines.append(f"| {c} | {vals} |")
    if "worlds" in suites:
        kinds = sorted({k for s in rep["suites"]["worlds"].values() for k in s.get("by_kind", {})})
        lines += ["", "## Worlds by task kind", "", "| kind | " + " | ".join(f"`{m}`" for m in models) + " |"]
        lines += ["|---" * (1 + len(models)) + "|"]
        for k in kinds:
            vals = " | ".join(
                _pct(rep["suites"]["worlds"].get(m, {}).get("by_kind", {}).get(k)) for m in models
            )
            lines.append(f"| {k} | {vals} |")
    if "ifbench" in suites:
        lines += ["", "## IFBench", "", "| figure | " + " | ".join(f"`{m}`" for m in models) + " |"]
        lines += ["|---" * (1 + len(models)) + "|"]
        for k in ("prompt_strict", "instruction_strict", "prompt_loose", "instruction_loose"):
            vals = " | ".join(_pct(rep["suites"]["ifbench"].get(m, {}).get(k)) for m in models)
            lines.append(f"| {k} | {vals} |")
    lines += ["", "## Failed items by reason", ""]
    for m in models:
        f = rep["failures"][m]
        lines.append(f"- `{m}`: " + (", ".join(f"{k} ×{v}" for k, v in f.items()) if f else "none"))
    lines += [
        "",
        "Definitions: `botpsy.agent.detectors` (loop detector, phantom actions, unsafe episodes) and "
        "`botpsy.eval.metrics` (rates); scores as the official suites compute them "
        "(`botpsy.eval.bfcl`, `botpsy.eval.ifbench`).",
        "",
    ]
    return "\n".join(lines)


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points not dominated by another with fewer-or-equal turns (x) and more-or-equal success (y)."""
    front = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or y > front[-1][1]:
            front.append((x, y))
    return front


def write_plots(rep: dict[str, Any], folder: Path) -> list[Path]:
    writer = ReportWriter(folder)
    models = rep["models"]
    worlds = rep["suites"].get("worlds", {})
    if worlds:
        with writer.figure("success_vs_turns.png", figsize=(6, 4.2), dpi=120) as (fig, ax):
            pts = []
            for m in models:
                s = worlds.get(m)
                if not s or s.get("assistant_turns") is None:
                    continue
                x, y = s["assistant_turns"], 100 * s["success"]
                pts.append((x, y))
                ax.scatter([x], [y], s=60)
                ax.annotate(m, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
            front = pareto_front(pts)
            if front:
                ax.plot(
                    [p[0] for p in front],
                    [p[1] for p in front],
                    "--o",
                    color="gray",
                    markerfacecolor="none",
                    markersize=14,
                    label="Pareto front",
                )
                ax.legend(loc="center right", fontsize=8)
            ax.set_xlabel("assistant turns per task (worlds)")
            ax.set_ylabel("success (%)")
            ax.set_title("Success against assistant turns")
            ax.set_ylim(-5, 105)
            ax.grid(alpha=0.3)
            fig.tight_layout()
    rt = rep["cross"]["reasoning_tokens_per_correct"]
    width = 0.8 / max(len(models), 1)
    with writer.figure("reasoning_tokens.png", figsize=(6.5, 4), dpi=120) as (fig, ax):
        suites = list(rt)
        for i, m in enumerate(models):
            vals = [rt[s]["by_model"].get(m) or 0 for s in suites]
            ax.bar([j + i * width for j in range(len(suites))], vals, width, label=m)
        ax.set_xticks([j + width * (len(models) - 1) / 2 for j in range(len(suites))])
        ax.set_xticklabels([f"{s}\n({rt[s]['items']} items)" for s in suites])
        ax.set_ylabel("reasoning tokens per correct answer")
        ax.set_title("Reasoning tokens on items every model solved")
        if not any(rt[s]["items"] for s in suites):
            ax.text(0.5, 0.5, "no item solved by every model", transform=ax.transAxes, ha="center")
        ax.legend(fontsize=8)
        fig.tight_layout()
    with writer.figure("scores.png", figsize=(6.5, 4), dpi=120) as (fig, ax):
        suites = [s for s in SUITES if s in rep["suites"]]
        for i, m in enumerate(models):
            vals = [100 * (headline(s, rep["suites"][s].get(m, {})) or 0) for s in suites]
            ax.bar([j + i * width for j in range(len(suites))], vals, width, label=m)
        ax.set_xticks([j + width * (len(models) - 1) / 2 for j in range(len(suites))])
        ax.set_xticklabels(
            ["BFCL overall", "worlds success", "IFBench prompt strict"][: len(suites)]
            if suites == list(SUITES)
            else suites
        )
        ax.set_ylabel("%")
        ax.set_ylim(0, 100)
        ax.set_title("Headline scores")
        ax.legend(fontsize=8)
        fig.tight_layout()
    return writer.paths


def write_report(rep: dict[str, Any], out: Path) -> list[Path]:
    writer = ReportWriter(out)
    writer.json("report.json", rep, JSON)
    writer.text("report.md", render_markdown(rep))
    return [*writer.paths, *write_plots(rep, out / "plots")]


# ---- running ---------------------------------------------------------------------------------------


def run_model(
    label: str,
    engine: Any,
    config: ReportConfig,
    out: Path,
    progress_factory: Callable[[str], tuple[Any, Callable, Callable]],
) -> ModelRun:
    """All suites of the report for one model (`engine` None: the oracle)."""
    run = ModelRun(label)
    thinking = engine.thinking if engine is not None else True
    if "bfcl" in config.suites:
        prog, on_cat, progress = progress_factory(f"{label} · BFCL")
        with prog:
            rep = evaluate_bfcl(
                parse_categories(config.bfcl_categories),
                label,
                (lambda c, e, t: OracleEngine(gold_messages(c, e, t)))
                if engine is None
                else (lambda c, e, t: engine),
                BfclConfig(config.max_tokens, config.temperature, thinking, config.bfcl_limit),
                out,
                progress,
                on_cat,
            )
        run.results["bfcl"], run.summaries["bfcl"] = rep.results, rep.to_dict()
    if "worlds" in config.suites:
        prog, on_dom, progress = progress_factory(f"{label} · worlds")
        agent_cfg = AgentConfig(
            max_tokens=config.max_tokens, temperature=config.temperature, thinking=thinking
        )
        results = []
        with prog:
            for trial in range(config.trials):
                results += evaluate_worlds_items(
                    [DOMAINS[k] for k in sorted(DOMAINS)],
                    config.worlds_n,
                    label,
                    (lambda t: OracleEngine(t.gold_messages())) if engine is None else (lambda t: engine),
                    agent_cfg,
                    out,
                    progress,
                    on_dom,
                    trial=trial,
                    run_config={"max_tokens": config.max_tokens, "temperature": config.temperature},
                    instructed_per_domain=config.worlds_if_n,
                )
        run.results["worlds"], run.summaries["worlds"] = results, worlds_summary(results)
    if "ifbench" in config.suites:
        samples = sample_responses() if engine is None else {}
        prog, on_start, progress = progress_factory(f"{label} · IFBench")
        with prog:
            rep = evaluate_ifbench(
                label,
                (lambda d: OracleEngine([Message("assistant", samples.get(d.get("prompt"), ""), "sample")]))
                if engine is None
                else (lambda d: engine),
                IfbenchConfig(
                    max(config.max_tokens, 512), config.temperature, thinking, config.ifbench_limit
                ),
                out,
                progress,
                on_start,
            )
        run.results["ifbench"], run.summaries["ifbench"] = rep.results, rep.to_dict()
    return run
