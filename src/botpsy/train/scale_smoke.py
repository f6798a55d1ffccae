"""A few steps of every scale-preset stage on the machine at hand: does the preset's code run there, and at what cost.

`botpsy recipe --preset scale --dry-run` checks the scale preset's configs; this runs its trainers.
Each stage (SFT; MOPD, distillation from teachers routed per skill; RL1 and RL2, DAPO with dynamic
sampling on world tool-use turns and on verifiable rewards) trains for a few steps from a random-init model of BotPsy's shape (Qwen3.5-0.8B layers, the real 248,320-row
vocabulary: `export.shapes.build_shape_model`, so nothing is downloaded). The preset's settings are
kept except the ones that size a run, which are cut to smoke sizes and listed in the report:
steps, data counts, prompts per RL step and completion lengths. A random-init policy writes
noise, so rewards and losses here say nothing about learning; the figures are the cost of a step.

Rollouts go through transformers' `generate`: vLLM (the preset's rollout engine) is not installed
where this ran. Every stage starts from the same shape model, and all three MOPD teachers are that
model too (same tokenizer; a 4B teacher is named with `--teacher`).

    python -m botpsy.train.scale_smoke --out runs/scale-smoke --steps 2
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from botpsy.bench.device import peak_rss_mb, reset_peak_rss
from botpsy.export.shapes import build_shape_model
from botpsy.reports import ReportWriter
from botpsy.train.presets import STAGES, _apply, resolve
from botpsy.train.runner import train_stage

# What the smoke run cuts, per stage: config field -> value. Prompt/task counts only need to cover
# `steps` batches; completion lengths bound a step's rollout time.
SMOKE_SIZES: dict[str, dict[str, Any]] = {
    "sft": {"conversations": 32},
    "mopd": {
        "prompts": ("tools=16", "arithmetic=8", "mcq=8", "code=8", "ifeval=8", "json=8"),
        "grad_accum": 1,
        "max_completion_length": 256,
    },
    "rl1": {"tasks": 32, "prompts_per_step": 2, "max_completion_length": 256},
    "rl2": {
        "domains": ("arithmetic=8", "mcq=8", "code=8", "ifeval=8", "json=8", "tools=8"),
        "prompts_per_step": 2,
        "max_completion_length": 256,
        "overlong_cache": 64,
    },
}

# `--tiny`: the same layer kinds (one linear-attention, one full-attention layer) at a CPU-quick size.
TINY_SHAPE = {
    "num_hidden_layers": 2,
    "full_attention_interval": 2,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 2,
}


def smoke_plan(steps: int, teacher: str, minutes: float, overrides: list[str] = ()) -> dict[str, Any]:
    """The scale preset's stage configs with the run sizes cut; `--set` overrides apply last."""
    named = [f"mopd.teachers=tool_use={teacher},reasoning={teacher},instruction_following={teacher}"]
    plan = resolve("scale", list(STAGES), named)
    out = {}
    for stage in STAGES:
        cfg = plan["stages"][stage]["config"]
        cut = dict(SMOKE_SIZES[stage])
        if stage == "sft":
            cut["conversations"] = max(cut["conversations"], steps * cfg.batch_size * cfg.grad_accum)
        cfg = dataclasses.replace(cfg, max_steps=steps, time_budget_min=minutes, **cut)
        if hasattr(cfg, "use_vllm"):
            cfg = dataclasses.replace(cfg, use_vllm=False)
        out[stage] = cfg
    if overrides:
        out = {stage: _apply(cfg, stage, list(overrides)) for stage, cfg in out.items()}
    return out


class PeakMemory:
    """Peak accelerator memory (torch's allocator) or, on a CPU, the process's peak RSS, per stage.

    On a CPU the peak is started over at each stage (`bench.device.reset_peak_rss`): the process's
    lifetime peak would carry an earlier, larger stage into every later row.
    """

    def __init__(self):
        import torch

        self.cuda = torch.cuda.is_available()

    def reset(self) -> None:
        import torch

        if self.cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        else:
            reset_peak_rss()

    def peak_gb(self) -> float:
        import torch

        if self.cuda:
            return round(torch.cuda.max_memory_allocated() / 1e9, 2)
        return round(peak_rss_mb() * 2**20 / 1e9, 2)


def machine() -> dict[str, Any]:
    import torch
    import transformers
    import trl

    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
        "device": torch.cuda.get_device_name(0)
        if torch.cuda.is_available()
        else platform.processor() or "cpu",
    }
    try:  # Qwen3.5's linear-attention layers fall back to plain torch without these kernels
        import fla  # noqa: F401

        info["flash_linear_attention"] = True
    except ImportError:
        info["flash_linear_attention"] = False
    return info


def run_smoke(
    model: Path,
    out: Path,
    steps: int = 2,
    minutes: float = 2.0,
    teacher: str = "",
    stages: tuple[str, ...] = ("sft", "mopd", "rl1", "rl2"),
    overrides: list[str] = (),
    log=print,
) -> dict[str, Any]:
    """Run each stage for `steps` steps (or `minutes`, whichever ends first) and time it."""
    plan = smoke_plan(steps, teacher or str(model), minutes, overrides)
    header = report_header(model, steps, minutes)
    report: dict[str, Any] = {}
    peak = PeakMemory()
    rows = []
    for stage in stages:
        cfg = plan[stage]
        peak.reset()
        t0 = time.perf_counter()
        try:
            if stage == "sft":
                cfg = dataclasses.replace(cfg, base=str(model))
            summary = train_stage(stage, cfg, model, out / stage, lambda source, skill="": source, log)
            error = None
        except Exception as e:  # the report says which stage failed and why; the next still runs
            summary, error = {}, f"{type(e).__name__}: {e}"
            log(f"{stage}: FAILED {error}")
        wall = time.perf_counter() - t0
        n = summary.get("steps") or 0
        train_s = summary.get("train_seconds")
        rows.append(
            {
                "stage": stage,
                "steps": n,
                "wall_s": round(wall, 1),
                "train_s": train_s,
                "s_per_step": round(train_s / n, 1) if n and train_s else None,
                "tokens_per_s": summary.get("tokens_per_second"),
                "peak_gb": peak.peak_gb(),
                "error": error,
                "sizes": {k: _plain(getattr(cfg, k)) for k in _sizes(stage)},
            }
        )
        log(f"{stage}: {rows[-1]}")
        # after each stage: a killed run keeps the rows it finished
        report = write_report({**header, "stages": rows}, out)
    return report


def report_header(model: Path, steps: int, minutes: float) -> dict[str, Any]:
    """What the report says of the run as a whole: the model, the sizes, the machine, the command."""
    info = model / "botpsy_shape.json"
    shape = json.loads(info.read_text()) if info.exists() else {}
    return {
        "model": str(model),
        "parameters": shape.get("parameters"),
        "shape": shape.get("shape_name"),
        "overrides": shape.get("overrides"),
        "steps": steps,
        "minutes_per_stage": minutes,
        "machine": machine(),
        "command": " ".join(["python -m botpsy.train.scale_smoke", *sys.argv[1:]]),
    }


def write_report(report: dict[str, Any], out: Path) -> dict[str, Any]:
    writer = ReportWriter(out)
    writer.json("scale-smoke.json", report)
    writer.text("scale-smoke.md", markdown(report))
    return report


def _sizes(stage: str) -> tuple[str, ...]:
    common = ("max_steps", "learning_rate", "lora_r")
    return {
        "sft": (*common, "batch_size", "grad_accum", "max_length", "conversations"),
        "mopd": (*common, "batch_size", "grad_accum", "max_completion_length"),
        "rl1": (*common, "num_generations", "prompts_per_step", "max_completion_length", "loss_type"),
        "rl2": (*common, "num_generations", "prompts_per_step", "max_completion_length", "loss_type"),
    }[stage]


def _plain(v):
    return list(v) if isinstance(v, tuple) else v


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "# Scale preset, smoke run",
        "",
        f"`{report['command']}` on {m['device']} (torch {m['torch']}, transformers {m['transformers']}, "
        f"TRL {m['trl']}; flash-linear-attention kernels: {'yes' if m['flash_linear_attention'] else 'no'}).",
        "",
        f"Model: random-init {report['shape'] or 'model'} shape, {report['parameters'] or '?'} parameters"
        + (f", shape overrides {report['overrides']}" if report.get("overrides") else "")
        + ". Rollouts through transformers `generate` (vLLM off). A random-init policy: the figures are the "
        "cost of a step, not learning.",
        "",
        "| stage | steps | train s | s/step | tokens/s | peak memory GB | smoke sizes | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["stages"]:
        sizes = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
        lines.append(
            f"| {r['stage']} | {r['steps']} | {r['train_s'] if r['train_s'] is not None else '—'} | "
            f"{r['s_per_step'] if r['s_per_step'] is not None else '—'} | {r['tokens_per_s'] or '—'} | "
            f"{r['peak_gb']} | {sizes} | {r['error'] or ''} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m botpsy.train.scale_smoke", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--out", type=Path, required=True, help="run folder (stage outputs, scale-smoke.json/.md)")
    p.add_argument("--model", type=Path, help="an HF folder to start from (default: build the shape model)")
    p.add_argument("--shape", default="qwen3.5-0.8b", help="shape to build when --model is not given")
    p.add_argument(
        "--tiny", action="store_true", help="build a 2-layer, 256-wide version of the shape (a CPU check)"
    )
    p.add_argument("--steps", type=int, default=2, help="optimizer steps per stage")
    p.add_argument("--minutes", type=float, default=2.0, help="time budget per stage")
    p.add_argument("--teacher", default="", help="MOPD teacher folder for all skills (default: the model)")
    p.add_argument(
        "--stages",
        default="sft,mopd,rl1,rl2",
        help="comma-separated stage keys, in order (what each trains: train/recipe.py)",
    )
    p.add_argument("--set", action="append", default=[], metavar="STAGE.KEY=VALUE")
    a = p.parse_args(argv)
    try:
        model = a.model
        if model is not None and not (model / "config.json").exists():
            raise ValueError(f"{model} holds no Hugging Face model (no config.json)")
        if model is None:
            model = build_shape_model(a.shape, a.out / "model", overrides=TINY_SHAPE if a.tiny else None)
        report = run_smoke(model, a.out, a.steps, a.minutes, a.teacher, tuple(a.stages.split(",")), a.set)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(markdown(report))
    return 0 if not any(r["error"] for r in report["stages"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
