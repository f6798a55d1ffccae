"""Generating and checking task files across domains: what `botpsy tasks generate|check` run.

`generate_tasks("all", n, seed, split)` gives n tasks per domain; `check_tasks(tasks)` replays
every gold trajectory on a fresh world and reports the tasks that do not reach their expected
hash. Task files are JSON lines (`Task.to_json`), one task per line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from botpsy.worlds import DOMAINS, get_domain
from botpsy.worlds.base import Task, replay_gold


def domain_names(domain: str) -> list[str]:
    """'all', one name, or a comma-separated list."""
    if domain == "all":
        return list(DOMAINS)
    names = [d.strip() for d in domain.split(",") if d.strip()]
    for name in names:
        get_domain(name)  # raises KeyError listing the known names
    return names


def generate_tasks(domain: str = "all", n: int = 10, seed: int = 0, split: str = "train") -> list[Task]:
    return [t for name in domain_names(domain) for t in get_domain(name).generate(n, seed, split)]


@dataclass
class CheckResult:
    task_id: str
    domain: str
    kind: str
    ok: bool
    reason: str = ""


def check_tasks(tasks: Iterable[Task]) -> list[CheckResult]:
    out = []
    for t in tasks:
        try:
            ok, reason = replay_gold(get_domain(t.domain), t)
        except Exception as e:  # a malformed task file must be reported, not crash the whole check
            ok, reason = False, f"{type(e).__name__}: {e}"
        out.append(CheckResult(t.id, t.domain, t.kind, ok, reason))
    return out


def write_tasks(tasks: Iterable[Task], path: Path | str) -> int:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for t in tasks:
            f.write(t.to_json() + "\n")
            n += 1
    return n


def read_tasks(path: Path | str) -> list[Task]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [Task.from_json(line) for line in lines if line.strip()]
