"""The recipe report: every stage's held-out figures side by side (JSON, markdown, and a PNG when matplotlib is there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
        return f"{v:.3f}" if v <= 1.0 else f"{v:.1f}"
    return str(v)


def common_reasoning_tokens(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Reasoning tokens per correct answer on the reasoning items every stage solved (the fair comparison)."""
    from botpsy.eval.metrics import reasoning_tokens_per_correct

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


def markdown(rows: list[dict[str, Any]], preset: str, common: dict[str, Any]) -> str:
    kinds = sorted({k for r in rows for k in r.get("by_kind", {})})
    head = ["stage", *[c for c, _ in COLUMNS], *[f"success: {k}" for k in kinds], "tok / correct (common)"]
    lines = [f"# Recipe `{preset}`: held-out figures per stage", "", "| " + " | ".join(head) + " |"]
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
        "`eval.metrics.reasoning_loop` over every IF and reasoning answer. "
        f"Common: reasoning tokens per correct answer on the {common.get('items', 0)} reasoning items every stage solved.",
    ]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    keys = [(c, k) for c, k in COLUMNS[:5]]
    fig, ax = plt.subplots(figsize=(9, 4))
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
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_report(rows: list[dict[str, Any]], folder: Path, preset: str) -> dict[str, Any]:
    common = common_reasoning_tokens(rows)
    report = {
        "preset": preset,
        "stages": [{k: v for k, v in r.items() if k != "items"} for r in rows],
        "reasoning_tokens_per_correct_common": common,
    }
    (folder / f"recipe-{preset}.json").write_text(json.dumps(report, indent=2))
    (folder / f"recipe-{preset}.md").write_text(markdown(rows, preset, common))
    plot(rows, folder / f"recipe-{preset}.png")
    return report
