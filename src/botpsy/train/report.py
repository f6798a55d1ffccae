"""The recipe report: every stage's held-out figures side by side (JSON, markdown, and a PNG when matplotlib is there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from botpsy.eval.metrics import reasoning_tokens_per_correct
from botpsy.reports import JsonFormat, ReportWriter, pyplot

JSON = JsonFormat(newline=False)  # as the recipe's report has always been written

COLUMNS = (
    ("world success", "success"),
    ("call exact", "tool_call_exact"),
    ("IF acc (held-out types)", "instruction_following_accuracy"),
    ("reasoning acc", "reasoning_accuracy"),
    ("loop rate", "reasoning_loop_rate"),
    ("cap share", "token_cap_share"),
    ("reasoning tok / correct", "reasoning_tokens_per_correct"),
)


def _cell(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) <= 1.0 else f"{v:.1f}"
    return str(v)


def common_reasoning_tokens(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Reasoning tokens per correct answer on the reasoning items every stage solved (the fair comparison)."""
    per = {
        r["stage"]: {
            i["id"]: (i["score"] >= 1.0, i["reasoning_tokens"])
            for i in r.get("items", [])
            if i["domain"] in ("arithmetic", "mcq")
        }
        for r in rows
    }
    per = {k: v for k, v in per.items() if v}
    return reasoning_tokens_per_correct(per) if per else {"items": 0, "by_model": {}}


def markdown(
    rows: list[dict[str, Any]], preset: str, common: dict[str, Any], missing: list[str] | tuple[str, ...] = ()
) -> str:
    kinds = sorted({k for r in rows for k in r.get("by_kind", {})})
    head = ["stage", *[c for c, _ in COLUMNS], *[f"success: {k}" for k in kinds], "tok / correct (common)"]
    lines = [f"# Recipe `{preset}`: held-out figures per stage", ""]
    if missing:
        lines += [f"**Partial run: {', '.join(missing)} not run yet.**", ""]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in rows:
        cells = [r["stage"], *[_cell(r.get(key)) for _, key in COLUMNS]]
        cells += [_cell(r.get("by_kind", {}).get(k)) for k in kinds]
        cells.append(_cell(common.get("by_model", {}).get(r["stage"])))
        lines.append("| " + " | ".join(cells) + " |")
    n = rows[0] if rows else {}
    lines += [
        "",
        f"World tasks per stage: {n.get('n', '?')} (eval split). Instruction following: IFBench verifiers on "
        "constraint types held out of RL. Reasoning: arithmetic and multiple choice. Loop rate: "
        "`agent.detectors.reasoning_loop` over every IF and reasoning answer. "
        f"Common: reasoning tokens per correct answer on the {common.get('items', 0)} reasoning items every stage solved. "
        f"Engine: {n.get('eval_engine', 'transformers')}, greedy (`train.heldout`).",
    ]
    trained = [r for r in rows if r.get("train")]
    if trained:
        lines += [
            "",
            "| stage | steps | train minutes | tokens/s | loss first → last |",
            "|---|---|---|---|---|",
        ]
        for r in trained:
            t = r["train"]
            loss = (
                f"{t['first_loss']:.3f} → {t['last_loss']:.3f}"
                if isinstance(t.get("first_loss"), float) and isinstance(t.get("last_loss"), float)
                else "–"
            )
            minutes = t.get("train_seconds")
            lines.append(
                f"| {r['stage']} | {t.get('steps', '–')} | {_cell(round(minutes / 60, 1)) if minutes else '–'} | "
                f"{_cell(t.get('tokens_per_second'))} | {loss} |"
            )
    lines += teachers_markdown(rows)
    lines += effects_markdown(stage_effects(rows))
    return "\n".join(lines) + "\n"


def teachers_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """MOPD's specialist teachers beside the student they taught (the stage before MOPD)."""
    order = [r["stage"] for r in rows]
    if "mopd" not in order or not rows[order.index("mopd")].get("teachers"):
        return []
    mopd = rows[order.index("mopd")]
    student = rows[order.index("mopd") - 1]
    keys = COLUMNS[:6]
    lines = [
        "",
        "## MOPD's specialist teachers",
        "",
        "Each prompt is routed to one teacher by its skill; a teacher can only pass on what it does "
        f"better than the student ({student['stage']}, the stage before MOPD). Same held-out items.",
        "",
        "| model | " + " | ".join(c for c, _ in keys) + " |",
        "|" + "---|" * (len(keys) + 1),
    ]
    named = [(f"student ({student['stage']})", student)]
    named += [(f"teacher: {skill}", figures) for skill, figures in mopd["teachers"].items()]
    named.append(("after MOPD", mopd))
    for name, r in named:
        lines.append(f"| {name} | " + " | ".join(_cell(r.get(k)) for _, k in keys) + " |")
    return lines


# BotPsy's published pattern: what each stage should move, against the stage before it.
EXPECTED = (
    ("sft", "success", +1, "SFT raises tool success"),
    ("mopd", "instruction_following_accuracy", +1, "MOPD recovers instruction following"),
    ("mopd", "reasoning_accuracy", +1, "MOPD recovers reasoning"),
    ("rl1", "tool_call_exact", +1, "RL1 raises argument accuracy (exact calls)"),
    ("rl2", "reasoning_loop_rate", -1, "RL2 cuts reasoning loops"),
    ("rl2", "reasoning_tokens_per_correct", -1, "RL2 cuts reasoning tokens per correct answer"),
)
# Held-out items behind each share: world tasks, IF items, reasoning items, all answers.
SAMPLES = {
    "success": lambda r: int(r.get("n") or 0),
    "tool_call_exact": lambda r: int(r.get("n") or 0),
    "instruction_following_accuracy": lambda r: sum(i["domain"] == "ifeval" for i in r.get("items", [])),
    "reasoning_accuracy": lambda r: sum(i["domain"] in ("arithmetic", "mcq") for i in r.get("items", [])),
    "reasoning_loop_rate": lambda r: len(r.get("items", [])),
}


def stage_effects(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each published claim against the measured change from the stage before, with a verdict.

    A change in a share counts only beyond two standard errors of the difference of two
    proportions; with 20–40 held-out items that is 20–30 points, so at tiny scale most verdicts
    are "within noise" — said, not hidden. Reasoning tokens per correct answer has no such bound
    here and is read as measured.
    """
    order = [r["stage"] for r in rows]
    out = []
    for stage, key, sign, claim in EXPECTED:
        if stage not in order or order.index(stage) == 0:
            continue
        before, after = rows[order.index(stage) - 1], rows[order.index(stage)]
        a, b = before.get(key), after.get(key)
        row: dict[str, Any] = {"stage": stage, "claim": claim, "metric": key, "before": a, "after": b}
        row["context"] = _context(after, key)
        if a is None or b is None:
            out.append({**row, "verdict": "not measurable (no value on one side)"})
            continue
        delta = b - a
        row["delta"] = round(delta, 4)
        verdict = "as published" if delta * sign > 0 else ("no change" if delta == 0 else "opposite")
        count = SAMPLES.get(key)
        if count and delta != 0:
            n1, n2 = count(before), count(after)
            two_se = 2 * (a * (1 - a) / max(n1, 1) + b * (1 - b) / max(n2, 1)) ** 0.5
            row["two_se"] = round(two_se, 4)
            if abs(delta) <= two_se:
                verdict = f"within noise ({verdict})"
        out.append({**row, "verdict": verdict})
    return out


# The teacher MOPD routes each measured skill to.
ROUTED = {"instruction_following_accuracy": "instruction_following", "reasoning_accuracy": "reasoning"}


def _context(after: dict[str, Any], key: str) -> str:
    """What the stage had to work with: its optimizer steps and, for MOPD, the routed teacher's own score."""
    parts = []
    steps = after.get("train", {}).get("steps")
    if steps is not None:
        parts.append(f"{steps} steps")
    teacher = after.get("teachers", {}).get(ROUTED.get(key, ""))
    if teacher is not None and teacher.get(key) is not None:
        parts.append(f"{ROUTED[key]} teacher {_cell(teacher[key])}")
    return "; ".join(parts)


def effects_markdown(effects: list[dict[str, Any]]) -> list[str]:
    if not effects:
        return []
    lines = [
        "",
        "## What each stage did, against the published pattern",
        "",
        "| stage | published | before → after | change | 2 SE | verdict | trained with |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in effects:
        lines.append(
            f"| {e['stage']} | {e['claim']} | {_cell(e['before'])} → {_cell(e['after'])} | "
            f"{_cell(e.get('delta'))} | {_cell(e.get('two_se'))} | {e['verdict']} | {e.get('context') or '–'} |"
        )
    return lines


def plot(rows: list[dict[str, Any]], writer: ReportWriter, name: str) -> bool:
    try:
        pyplot()
    except ImportError:
        return False
    keys = [(c, k) for c, k in COLUMNS[:5]]
    with writer.figure(name, figsize=(9, 4), dpi=120) as (fig, ax):
        width = 0.8 / max(len(rows), 1)
        for i, r in enumerate(rows):
            ax.bar(
                [j + i * width for j in range(len(keys))],
                [r.get(k) or 0 for _, k in keys],
                width,
                label=r["stage"],
            )
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))], [c for c, _ in keys], fontsize=8)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
        ax.set_title("held-out figures per recipe stage")
        fig.tight_layout()
    return True


PHASES = ("prepare", "train", "select", "eval", "teacher eval", "export")


def wall_markdown(wall: dict[str, dict[str, float]]) -> list[str]:
    """Minutes per stage and phase, and the whole run's, from the run folder's `timings.json`."""
    if not wall:
        return []
    phases = [p for p in PHASES if any(p in w for w in wall.values())]
    lines = [
        "",
        "## Wall time",
        "",
        "Minutes on this machine per stage and phase, added up across resumes (`timings.json`); a "
        "stage's train time includes what it trains first (MOPD: its specialist teachers).",
        "",
        "| stage | " + " | ".join(phases) + " | total |",
        "|" + "---|" * (len(phases) + 2),
    ]
    for stage, w in wall.items():
        cells = [f"{w[p] / 60:.1f}" if p in w else "–" for p in phases]
        lines.append(f"| {stage} | " + " | ".join(cells) + f" | {sum(w.values()) / 60:.1f} |")
    total = sum(sum(w.values()) for w in wall.values())
    lines += ["", f"Whole run: **{round(total / 60, 1)} minutes** ({round(total / 3600, 2)} h)."]
    return lines


def write_report(
    rows: list[dict[str, Any]],
    folder: Path,
    preset: str,
    missing: list[str] | tuple[str, ...] = (),
    wall: dict[str, dict[str, float]] | None = None,
) -> dict[str, Any]:
    common = common_reasoning_tokens(rows)
    wall = wall or {}
    report = {
        "preset": preset,
        "complete": not missing,
        "stages_not_run": list(missing),
        "wall_seconds": wall,
        "wall_seconds_total": round(sum(sum(w.values()) for w in wall.values()), 1),
        "stages": [{k: v for k, v in r.items() if k != "items"} for r in rows],
        "reasoning_tokens_per_correct_common": common,
        "stage_effects": stage_effects(rows),
    }
    writer = ReportWriter(folder)
    writer.json(f"recipe-{preset}.json", report, JSON)
    writer.text(
        f"recipe-{preset}.md",
        markdown(rows, preset, common, missing) + "\n".join(wall_markdown(wall)) + ("\n" if wall else ""),
    )
    plot(rows, writer, f"recipe-{preset}.png")
    return report


REPORTED_PRESETS = {"tiny", "scale"}  # their reports are copied to reports/ (micro is CI scratch)


def copy_report(folder: Path, preset: str, reports: Path = Path("reports")) -> list[Path]:
    """The recipe report's files, byte for byte, into `reports/` (tiny and scale only); the paths copied."""
    if preset not in REPORTED_PRESETS:
        return []
    writer = ReportWriter(reports)
    for ext in ("json", "md", "png"):
        if (folder / f"recipe-{preset}.{ext}").exists():
            writer.copy(folder / f"recipe-{preset}.{ext}")
    return writer.paths
