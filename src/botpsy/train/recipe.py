"""The recipe runner: `botpsy recipe --preset tiny|scale|micro --stages sft,mopd,rl1,rl2 [--dry-run]`.

The stages, in order (their keys are the published recipe's names):
  sft   supervised fine-tuning on the worlds' gold trajectories          train/sft.py
  mopd  multi-teacher on-policy distillation, one teacher per skill      train/distill.py
  rl1   DAPO on the worlds' tool-use turns, with rule rewards            train/rl_tools.py
  rl2   DAPO on multi-domain verifiable rewards, length and loop shaping train/rl_verifiable.py
RL1 and RL2 share their training half (`train/dapo.py`) and its config (`train/dapo_config.py`).

Presets are YAML files in `train/presets/` (resolved by `train/presets.py`): one mapping per stage
whose keys are fields of that stage's config dataclass (`SFTStageConfig`, `MOPDConfig`, `RL1Config`,
`RL2Config`), plus `base` (the model the recipe starts from), `eval` (`heldout.EvalSpec`: sizes of
the held-out and dev evaluations) and `launch` (scale only: accelerate/DeepSpeed config files,
vLLM). `--set STAGE.KEY=VALUE` overrides one field (`eval.world_tasks=10` too); tuple fields take commas
(`--set mopd.teachers=tool_use=/ckpt/a,reasoning=/ckpt/b,instruction_following=/ckpt/c`).

Run layout, `OUT/PRESET/`:
  base/eval.json                the starting model's held-out figures (the report's first row)
  STAGE/config.json             the resolved config;  STAGE/checkpoints/  TRL checkpoints (resume)
  STAGE/hf, manifest.json       the stage's final weights (LoRA folded in) as a loadable model
  STAGE/selection.json          dev-split score of every candidate checkpoint and the one chosen
  STAGE/eval.json               held-out figures of the chosen checkpoint
  STAGE/done.json               written last: a rerun skips the stage and reuses its choice
  recipe-PRESET.json / .md      every stage's figures side by side (also copied to reports/
                                for the tiny and scale presets)

Each stage starts from the previous stage's chosen checkpoint (`student` in a stage's config
overrides that). An interrupted run resumes: finished stages are skipped, an unfinished one
continues from its last TRL checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from botpsy.engine.load import load_engine
from botpsy.eval.worlds import evaluate
from botpsy.train.presets import launch_command, resolve
from botpsy.train.runner import report_stages, run_stages
from botpsy.worlds import get_domain


def run_recipe(
    preset: str,
    stages: str,
    out: str,
    dry_run: bool,
    overrides: list[str],
    log=print,
    report_only: bool = False,
) -> int:
    names = [s.strip() for s in stages.split(",") if s.strip()]
    plan = resolve(preset, names, overrides)
    if report_only:
        report_stages(preset, plan, Path(out) / preset, log)
        return 0
    if dry_run:
        prev = "base"
        for stage, item in plan["stages"].items():
            cfg = item["config"]
            start = getattr(cfg, "base", None) if stage == "sft" else (getattr(cfg, "student", "") or prev)
            print(
                json.dumps(
                    {
                        "stage": stage,
                        "start_from": start,
                        "eval_tasks": item["eval_tasks"],
                        "config": dataclasses.asdict(cfg),
                    }
                )
            )
            prev = f"best checkpoint of {stage}"
        summary = {"eval": dataclasses.asdict(plan["eval"]), "base": plan["base"], "export": plan["export"]}
        if plan["launch"]:
            summary["launch"] = {
                **plan["launch"],
                "command": launch_command(preset, names, plan["launch"], overrides),
            }
        print(json.dumps(summary))
        return 0
    run_stages(preset, plan, Path(out) / preset, log)
    return 0


def evaluate_stage(model_dir: Path, n: int, seed: int = 1000) -> dict:
    """World figures of a GGUF model folder through llama.cpp (kept for callers of the SFT-only runner)."""
    engine = load_engine(model_dir, backend="llamacpp")
    domain = get_domain("calendar")
    return evaluate(lambda t: engine, domain, domain.generate(n, seed, "eval"), engine.name).summary()
