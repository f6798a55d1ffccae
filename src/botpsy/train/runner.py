"""Runs resolved recipe stages in order: train, pick the best checkpoint on the dev split, measure, report.

See `botpsy.train.recipe` for the run layout and the resume rule (a stage with `done.json` is
skipped; an unfinished one resumes from its last TRL checkpoint, and candidate scores already in
`selection.json` are not recomputed).

Progress goes to `log` as plain text lines, never rich markup: they hold paths, model names and
error messages, and `botpsy recipe` prints them as text (`cli.text_log`).

Wall time per stage and phase (prepare, train, select, eval, export; MOPD also its teachers' eval) is added up in the run folder's
`timings.json`, across resumes, so the report gives the whole run's duration even when it ran in parts.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from pathlib import Path
from typing import Any

from botpsy.atomic import write_atomic
from botpsy.export.release import export_model
from botpsy.train.common import save_checkpoint
from botpsy.train.distill import run_mopd
from botpsy.train.heldout import EvalSpec, dev_score, heldout_figures
from botpsy.train.policy import hf_dir, load_policy
from botpsy.train.presets import STAGES
from botpsy.train.report import copy_report, write_report
from botpsy.train.rl_tools import RL1Config, run_rl1
from botpsy.train.rl_verifiable import RL2Config, run_rl2
from botpsy.train.sft import run_sft


def write_json(path: Path, obj: Any) -> None:
    """Run state (scores, done markers, timings) replaced in one step: a run stopped mid-write
    leaves the old file, so resuming never reads half a JSON document."""
    write_atomic(path, lambda f: f.write(json.dumps(obj, indent=2).encode()))


def materialize(adapter_dir: Path, start: str | Path, out: Path, name: str) -> Path:
    """A loadable checkpoint folder: the LoRA adapter at `adapter_dir` folded into `start`."""
    from peft import PeftModel

    if (out / "manifest.json").exists():
        return out
    model, tok = load_policy(str(start))
    merged = PeftModel.from_pretrained(model, str(adapter_dir))
    return save_checkpoint(merged, tok, out, name)


def materialize_base(base: str, out: Path) -> Path:
    """The recipe's starting model as a checkpoint folder (the GGUF base is dequantised once)."""
    if (out / "manifest.json").exists():
        return out
    model, tok = load_policy(base)
    return save_checkpoint(model, tok, out, "botpsy-base")


def candidates(stage_dir: Path) -> list[Path]:
    """TRL checkpoints holding a LoRA adapter, oldest first."""
    folder = stage_dir / "checkpoints"
    found = (
        [p for p in folder.glob("checkpoint-*") if (p / "adapter_config.json").exists()]
        if folder.exists()
        else []
    )
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def select_best(stage: str, stage_dir: Path, start: Path, spec: EvalSpec, log=print) -> Path:
    """The stage's checkpoint with the best dev score (the final weights win ties)."""
    final = stage_dir
    if spec.dev_tasks <= 0 and spec.dev_items <= 0:
        return final
    path = stage_dir / "selection.json"
    scores: dict[str, float] = json.loads(path.read_text())["scores"] if path.exists() else {}
    pool = {"final": final}
    summary = stage_dir / "train_summary.json"
    last_step = json.loads(summary.read_text()).get("steps") if summary.exists() else None
    for ck in candidates(stage_dir):
        if ck.name != f"checkpoint-{last_step}":  # the last checkpoint holds the final weights
            pool[ck.name] = stage_dir / "candidates" / ck.name
    for key, folder in pool.items():
        if key in scores:
            continue
        if key != "final":
            materialize(stage_dir / "checkpoints" / key, start, folder, f"botpsy-{stage}-{key}")
        scores[key] = dev_score(folder, spec)
        log(f"{stage}: dev score of {key}: {scores[key]}")
        write_json(path, {"scores": scores})
    best = max(scores, key=lambda k: (scores[k], k == "final"))
    write_json(path, {"scores": scores, "best": best})
    return pool[best]


def _previous_best(root: Path, stage: str, stages: tuple[str, ...]) -> Path | None:
    """The chosen checkpoint of the nearest finished stage before `stage` in this run folder."""
    for prev in reversed(stages[: stages.index(stage)]):
        done = root / prev / "done.json"
        if done.exists():
            return Path(json.loads(done.read_text())["best"])
    return None


TIMINGS = "timings.json"


def timings(root: Path) -> dict[str, dict[str, float]]:
    """Seconds spent per stage and phase in this run folder so far."""
    path = root / TIMINGS
    return json.loads(path.read_text()) if path.exists() else {}


def _timed(root: Path, stage: str, phase: str, fn, *args):
    """`fn(*args)`, its wall time added to `timings.json` under stage/phase (also when it fails)."""
    t0 = time.perf_counter()
    try:
        return fn(*args)
    finally:
        spent = timings(root)
        phases = spent.setdefault(stage, {})
        phases[phase] = round(phases.get(phase, 0.0) + time.perf_counter() - t0, 1)
        write_json(root / TIMINGS, spent)


def _figures(folder: Path, spec: EvalSpec, world_tasks: int | None, log) -> dict[str, Any]:
    path = folder / "eval.json"
    if path.exists():
        return json.loads(path.read_text())
    figures = heldout_figures(folder, spec, world_tasks, log)
    write_json(path, figures)
    return figures


def teacher_figures(root: Path, evaluate=None) -> dict[str, dict[str, Any]]:
    """Held-out figures of the specialist teachers this run trained (`ROOT/teachers/SKILL`), by skill.

    With `evaluate` (the stage evaluation) a teacher not yet measured is measured and cached in its
    folder's `eval.json`; without it only cached figures are read (`--report-only`). Teachers named
    as outside checkpoints (the scale preset's 4B models) are not evaluated here: the run did not
    make them. The report sets each teacher against the student it teaches, since a teacher no
    better than its student has nothing to pass on.
    """
    folder = root / "teachers"
    out: dict[str, dict[str, Any]] = {}
    for skill_dir in sorted(folder.iterdir()) if folder.is_dir() else ():
        if not (skill_dir / "done.json").exists():
            continue
        cached = skill_dir / "eval.json"
        if evaluate is not None:
            figures = evaluate(skill_dir)
        elif cached.exists():
            figures = json.loads(cached.read_text())
        else:
            continue
        out[skill_dir.name] = {k: v for k, v in figures.items() if k != "items"}
    return out


def run_stages(preset: str, plan: dict[str, Any], root: Path, log=print) -> dict[str, Any]:

    root.mkdir(parents=True, exist_ok=True)
    spec: EvalSpec = plan["eval"]
    base_dir = _timed(root, "base", "prepare", materialize_base, plan["base"], root / "base")
    log(f"base: {plan['base']} → {base_dir}")
    base_figures = _timed(root, "base", "eval", _figures, base_dir, spec, None, log)
    rows = [{"stage": "base", "model": str(base_dir), **base_figures}]

    def resolve_source(source: str, skill: str = "") -> str:
        if source.startswith("rl:"):
            start = resolve_source(source[3:], skill)
            return train_specialist(skill, start, root / "teachers" / skill, plan, log)
        if source == "student":
            return str(_previous_best(root, "mopd", STAGES) or base_dir)
        if source == "base":
            return str(base_dir)
        if source in STAGES:
            done = root / source / "done.json"
            if not done.exists():
                raise ValueError(
                    f"teacher source {source!r} needs that stage's output in {root / source} "
                    f"(run --stages {source} first) or name a checkpoint folder"
                )
            return json.loads(done.read_text())["best"]
        return source

    for stage, item in plan["stages"].items():
        cfg = item["config"]
        stage_dir = root / stage
        done = stage_dir / "done.json"
        if done.exists():
            log(f"stage {stage}: already done, reusing {json.loads(done.read_text())['best']}")
        else:
            start = Path(getattr(cfg, "student", "") or _previous_best(root, stage, STAGES) or base_dir)
            log(f"stage {stage}: from {start if stage != 'sft' else cfg.base} → {stage_dir}")
            _timed(root, stage, "train", _train, stage, cfg, start, stage_dir, base_dir, resolve_source, log)
            merge_start = base_dir if stage == "sft" else start
            best = _timed(root, stage, "select", select_best, stage, stage_dir, merge_start, spec, log)
            write_json(done, {"best": str(best), "start": str(start)})
        best = Path(json.loads(done.read_text())["best"])
        figures = _timed(root, stage, "eval", _figures, best, spec, item["eval_tasks"], log)
        if best != stage_dir:  # a candidate won: its figures also go where the stage's figures live
            write_json(stage_dir / "eval.json", figures)
        rows.append(_stage_row(stage_dir, stage, best, figures))
        log(f"held-out figures of {stage}: {json.dumps({k: v for k, v in figures.items() if k != 'items'})}")
        if stage == "mopd":
            evaluate = functools.partial(_figures, spec=spec, world_tasks=item["eval_tasks"], log=log)
            rows[-1]["teachers"] = _timed(root, "mopd", "teacher eval", teacher_figures, root, evaluate)
    if plan.get("export") and rows[-1]["stage"] != "base":
        rows[-1]["export"] = _timed(
            root,
            "export",
            "export",
            export_final,
            Path(rows[-1]["model"]),
            root / "release",
            preset,
            plan["export"],
            log,
        )
    report = write_report(rows, root, preset, wall=timings(root))
    copy_report(root, preset)
    return report


def _stage_row(stage_dir: Path, stage: str, best: str | Path, figures: dict[str, Any]) -> dict[str, Any]:
    """One stage's report row: its chosen checkpoint, training summary and held-out figures."""
    summary = stage_dir / "train_summary.json"
    train = json.loads(summary.read_text()) if summary.exists() else {}
    return {"stage": stage, "model": str(best), "train": train, **figures}


def report_stages(preset: str, plan: dict[str, Any], root: Path, log=print) -> dict[str, Any]:
    """The report from what a run folder already holds, training nothing (`botpsy recipe --report-only`).

    For a run that is still going or was interrupted: the finished stages are reported and the
    rest are named as not run, so a partial report never reads as a finished one.
    """

    base = root / "base" / "eval.json"
    if not base.exists():
        raise ValueError(
            f"{root} holds no evaluated base model yet; run `botpsy recipe --preset {preset}` first"
        )
    rows = [{"stage": "base", "model": str(root / "base"), **json.loads(base.read_text())}]
    missing = []
    for stage in plan["stages"]:
        done, figures = root / stage / "done.json", root / stage / "eval.json"
        if not (done.exists() and figures.exists()):
            missing.append(stage)
            continue
        best = json.loads(done.read_text())["best"]
        rows.append(_stage_row(root / stage, stage, best, json.loads(figures.read_text())))
        if stage == "mopd":
            rows[-1]["teachers"] = teacher_figures(root)
    log(
        f"report of {', '.join(r['stage'] for r in rows)}"
        + (f"; not run yet: {', '.join(missing)}" if missing else "")
    )
    report = write_report(rows, root, preset, missing=missing, wall=timings(root))
    copy_report(root, preset)
    return report


def export_final(model: Path, out: Path, preset: str, options: dict[str, Any], log=print) -> dict[str, Any]:
    """The last stage's checkpoint as GGUF files (`botpsy.export.release.export_model`); a failure is reported, not fatal.

    Whether it replaces the embedded default is decided by comparing it with the current one on the
    worlds evaluation through llama.cpp (`botpsy eval worlds --model OUT/release`), not here.
    """
    if (out / "manifest.json").exists():
        return {"manifest": str(out / "manifest.json")}
    try:
        manifest = export_model(
            hf_dir(model),
            out,
            name=f"botpsy-recipe-{preset}",
            quants=tuple(options.get("quants", ("Q8_0",))),
            default=options.get("default", "Q8_0"),
            check_parity=bool(options.get("check_parity", True)),
        )
    except Exception as e:  # the converter rejects some vocabularies; the trained checkpoint stays usable
        log(f"export failed: {type(e).__name__}: {e}")
        return {"error": f"{type(e).__name__}: {e}"}
    log(f"exported {model} → {out}")
    return {"manifest": str(manifest)}


SPECIALIST_DOMAINS = {
    "reasoning": ("arithmetic=48", "mcq=32", "code=16"),
    "instruction_following": ("ifeval=48", "json=32"),
}


def train_specialist(skill: str, start: str, out: Path, plan: dict[str, Any], log=print) -> str:
    """A specialist teacher: a short RL run on one skill's data (RL1 on world turns for tool use, RL2 otherwise).

    Generation settings come from the plan's rl1/rl2 configs (or their defaults); only the data and
    the step count (`mopd.specialist_steps`) change.
    """
    done = out / "done.json"
    if done.exists():
        return json.loads(done.read_text())["best"]
    steps = plan["stages"]["mopd"]["config"].specialist_steps
    log(f"mopd: training the {skill} specialist teacher ({steps} RL steps from {start})")
    if skill == "tool_use":
        cfg = plan["stages"].get("rl1", {}).get("config") or RL1Config()
        run_rl1(dataclasses.replace(cfg, max_steps=steps, student=""), start, out, log=log)
    else:
        cfg = plan["stages"].get("rl2", {}).get("config") or RL2Config()
        cfg = dataclasses.replace(cfg, max_steps=steps, student="", domains=SPECIALIST_DOMAINS[skill])
        run_rl2(cfg, start, out, log=log)
    write_json(done, {"best": str(out), "start": start})
    return str(out)


def train_stage(stage: str, cfg, start: str | Path, stage_dir: Path, resolve_source, log=print) -> dict:
    """Train one stage from `start` into `stage_dir`; returns its training summary.

    SFT reads its base from `cfg.base`; the other stages start from `start`.
    """
    if stage == "sft":
        return run_sft(cfg, stage_dir, log=log)
    if stage == "mopd":
        return run_mopd(cfg, str(start), stage_dir, resolve_source, log=log)
    if stage == "rl1":
        return run_rl1(cfg, str(start), stage_dir, log=log)
    if stage == "rl2":
        return run_rl2(cfg, str(start), stage_dir, log=log)
    raise ValueError(f"unknown stage {stage!r}")


def _train(stage: str, cfg, start: Path, stage_dir: Path, base_dir: Path, resolve_source, log) -> None:
    train_stage(stage, cfg, start, stage_dir, resolve_source, log)
    if stage == "sft":
        _fold_sft(stage_dir, base_dir)


def _fold_sft(stage_dir: Path, base_dir: Path) -> None:
    """Add the merged `hf/` checkpoint to the SFT output; its manifest keeps the GGUF base + adapter too."""
    from peft import PeftModel

    manifest_path = stage_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("hf"):
        return
    model, tok = load_policy(str(base_dir))
    merged = PeftModel.from_pretrained(model, str(stage_dir / "adapter")).merge_and_unload()
    merged.save_pretrained(stage_dir / "hf")
    tok.save_pretrained(stage_dir / "hf")
    manifest["hf"] = "hf"
    write_json(manifest_path, manifest)
