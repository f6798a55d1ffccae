"""The README's layout section names every folder and top-level module of the package (issue 34:
it had drifted from the tree), and names none that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "botpsy"


def _layout() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Layout") :]
    return section[section.index("```") + 3 : section.index("```", section.index("```") + 3)]


def test_every_folder_and_top_level_module_is_named():
    block = _layout()
    folders = [p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    modules = [p.stem for p in PKG.glob("*.py") if p.stem != "__init__"]
    missing = [f"{f}/" for f in folders if f"{f}/" not in block]
    for m in modules:
        prefix = m.split("_")[0]
        if f"{m}.py" not in block and f"{prefix}_*.py" not in block:
            missing.append(f"{m}.py")
    assert not missing, f"README layout lacks: {missing}"


def test_every_module_it_names_exists():
    named = set(re.findall(r"\b([a-z_]+\.py)\b", _layout()))
    files = {p.name for p in PKG.rglob("*.py")}
    assert named <= files, f"README layout names modules that do not exist: {sorted(named - files)}"
