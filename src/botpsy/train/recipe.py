"""The recipe runner: `botpsy recipe --preset tiny|micro --stages sft[,mopd,rl1,rl2] [--dry-run]`.

Presets are YAML files in `train/presets/`, one mapping per stage whose keys are fields of that
stage's config dataclass; `--set sft.learning_rate=5e-4` overrides one. The resolved config is
written next to the stage's outputs (`OUT/PRESET/STAGE/config.json`), followed by the stage's
held-out world figures (`eval.json`). Only SFT exists so far; the other stages of BotPsy's recipe
(MOPD, RL1 with DAPO, RL2 on verifiable rewards) are refused with a clear message, not faked.
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path

import yaml

STAGES = ("sft", "mopd", "rl1", "rl2")
IMPLEMENTED = {"sft"}


def load_preset(name: str) -> dict:
    path = resources.files("botpsy.train").joinpath(f"presets/{name}.yaml")
    if not path.is_file():
        raise ValueError(f"unknown preset {name!r}")
    return yaml.safe_load(path.read_text()) or {}


def _coerce(value: str, current):
    if isinstance(current, bool):
        return value.lower() in ("1", "true", "yes")
    if isinstance(current, int):
        return int(value)
    if isinstance(current, float):
        return float(value)
    if isinstance(current, tuple):
        return tuple(v for v in value.split(",") if v)
    return value


def resolve(preset: str, stages: list[str], overrides: list[str]) -> dict[str, dict]:
    from botpsy.train.sft import SFTStageConfig

    raw = load_preset(preset)
    resolved = {}
    for stage in stages:
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; the recipe's stages are {', '.join(STAGES)}")
        if stage not in IMPLEMENTED:
            raise ValueError(
                f"stage {stage!r} is not implemented yet (only {', '.join(sorted(IMPLEMENTED))})"
            )
        fields = dict(raw.get(stage, {}))
        eval_tasks = fields.pop("eval_tasks", 50)
        cfg = SFTStageConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})
        for ov in overrides:
            key, _, value = ov.partition("=")
            st, _, name = key.partition(".")
            if st != stage:
                continue
            if name == "eval_tasks":
                eval_tasks = int(value)
                continue
            if name not in {f.name for f in dataclasses.fields(cfg)}:
                raise ValueError(f"{stage} has no setting {name!r}")
            cfg = dataclasses.replace(cfg, **{name: _coerce(value, getattr(cfg, name))})
        resolved[stage] = {"config": cfg, "eval_tasks": eval_tasks}
    return resolved


def run_recipe(preset: str, stages: str, out: str, dry_run: bool, overrides: list[str], log=print) -> int:
    names = [s.strip() for s in stages.split(",") if s.strip()]
    plan = resolve(preset, names, overrides)
    if dry_run:
        for stage, item in plan.items():
            print(
                json.dumps(
                    {
                        "stage": stage,
                        "eval_tasks": item["eval_tasks"],
                        "config": dataclasses.asdict(item["config"]),
                    }
                )
            )
        return 0
    from botpsy.train.sft import run_sft

    for stage, item in plan.items():
        stage_dir = Path(out) / preset / stage
        log(f"[bold]stage {stage}[/] → {stage_dir}")
        run_sft(item["config"], stage_dir, log=log)
        figures = evaluate_stage(stage_dir, item["eval_tasks"])
        (stage_dir / "eval.json").write_text(json.dumps(figures, indent=2))
        log(f"held-out figures: {json.dumps(figures)}")
    return 0


def evaluate_stage(model_dir: Path, n: int, seed: int = 1000) -> dict:
    from botpsy.eval.worlds import evaluate
    from botpsy.models import load_engine
    from botpsy.worlds import get_domain

    engine = load_engine(model_dir)
    domain = get_domain("calendar")
    return evaluate(lambda t: engine, domain, domain.generate(n, seed, "eval"), engine.name).summary()
