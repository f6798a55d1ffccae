"""Two models on the same tasks: per-task wins and losses, and whether the difference is noise.

`eval worlds --out DIR` writes one JSON row per task (`task_id`, `success`, `domain`, `kind`, …).
Two such files from the same task set are a paired sample: only the tasks the models disagree on
say anything about which is better, and an exact two-sided sign test over them says how likely a
split at least that uneven is when neither model is better. At 190 tasks a 4-point gap in success
is often noise; this is what decides whether a new model replaces the default.

The binomial tail is a dozen lines of exact integer arithmetic (`math.comb`), so no statistics
package is pulled into the evaluation extra for it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path


class RowsError(ValueError):
    """A per-task row file that cannot be compared: missing, not JSON lines, or without task ids."""


def load_rows(path: str | Path) -> dict[str, dict]:
    """task_id -> row from an `eval worlds` per-task `.jsonl` file."""
    p = Path(path)
    if not p.is_file():
        raise RowsError(f"{p}: no such file (give the per-task .jsonl that `eval worlds --out DIR` writes)")
    rows: dict[str, dict] = {}
    for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise RowsError(f"{p}:{n}: not a JSON row ({e.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("task_id"), str) or "success" not in row:
            raise RowsError(f"{p}:{n}: a row needs a string task_id and a success field")
        rows[row["task_id"]] = row
    if not rows:
        raise RowsError(f"{p}: no rows")
    return rows


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test: P(a split at least this uneven | both models equally good)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2**n)


@dataclass
class Paired:
    """A against B over the same tasks, overall and per group."""

    n: int = 0
    a: int = 0  # tasks A solved
    b: int = 0  # tasks B solved
    a_only: int = 0  # solved by A and not by B
    b_only: int = 0
    groups: dict[str, dict[str, Paired]] = field(default_factory=dict)  # "domain"/"kind" -> value -> Paired

    def add(self, sa: bool, sb: bool) -> None:
        self.n += 1
        self.a += sa
        self.b += sb
        self.a_only += sa and not sb
        self.b_only += sb and not sa

    @property
    def p(self) -> float:
        return sign_test(self.a_only, self.b_only)

    def summary(self) -> dict:
        return {
            "n": self.n,
            "a_success": self.a / self.n if self.n else 0.0,
            "b_success": self.b / self.n if self.n else 0.0,
            "a_only": self.a_only,
            "b_only": self.b_only,
            "sign_test_p": round(self.p, 4),
        }


def compare(a: dict[str, dict], b: dict[str, dict], by: tuple[str, ...] = ("domain", "kind")) -> Paired:
    """Pair the rows of A and B by task id; tasks only one side has are left out (the caller says so)."""
    common = [t for t in a if t in b]
    if not common:
        raise RowsError("the two files share no task id: run both on the same --domain/--n/--seed")
    out = Paired(groups={g: {} for g in by})
    for t in common:
        sa, sb = bool(a[t]["success"]), bool(b[t]["success"])
        out.add(sa, sb)
        for g in by:
            key = str(a[t].get(g, b[t].get(g, "?")))
            out.groups[g].setdefault(key, Paired()).add(sa, sb)
    return out


def to_json(p: Paired, label_a: str, label_b: str, only_a: int, only_b: int) -> dict:
    return {
        "a": label_a,
        "b": label_b,
        **p.summary(),
        "unpaired": {"a": only_a, "b": only_b},
        **{g: {k: v.summary() for k, v in sorted(vals.items())} for g, vals in p.groups.items()},
    }


def markdown(p: Paired, label_a: str, label_b: str) -> str:
    """The comparison as markdown: overall, then one table per group."""

    def pct(x: int, n: int) -> str:
        return f"{100 * x / n:.1f}%" if n else "-"

    lines = [
        f"A = {label_a}, B = {label_b}, {p.n} paired tasks",
        "",
        f"success: A {pct(p.a, p.n)}, B {pct(p.b, p.n)}; "
        f"A only {p.a_only}, B only {p.b_only}; sign test p = {p.p:.3f}",
    ]
    for g, vals in p.groups.items():
        lines += ["", f"| {g} | n | A | B | A only | B only | p |", "|---|---|---|---|---|---|---|"]
        for k, v in sorted(vals.items()):
            lines.append(
                f"| {k} | {v.n} | {pct(v.a, v.n)} | {pct(v.b, v.n)} | {v.a_only} | {v.b_only} | {v.p:.3f} |"
            )
    return "\n".join(lines)
