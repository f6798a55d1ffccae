"""ACEBench's English data as the user's checkout lays it out, and its functions as botpsy tools.

ACEBench (github.com/chenchen0103/ACEBench) keeps one JSON-lines file per category,
`data_all/data_en/data_<category>.json`, and the answers beside it in
`data_all/data_en/possible_answer/data_<category>.json`, aligned by `id`. botpsy ships none of it:
`--data DIR` points at the repository root, `data_all` or `data_all/data_en` (`resolve_data`).

Items: `question` (a transcript, "user: …\\nsystem: …\\n"), `function` (JSON-schema-like docs with
ACEBench's type names), `time` (a date line, normal and special items), `profile` (preference items).
Normal multi-turn items are one row per turn with ids `<category>_<conversation>_<turn>`;
ACEBench scores them per conversation, so `--limit` samples conversations there (`sample_items`).
Agent items carry `initial_config`, `involved_classes`, and answers with the end `ground_truth`
states plus `mile_stone` calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from botpsy.tools.base import Labels, Tool

NORMAL = [
    "normal_single_turn_single_function",
    "normal_single_turn_parallel_function",
    "normal_multi_turn_user_adjust",
    "normal_multi_turn_user_switch",
    "normal_similar_api",
    "normal_preference",
    "normal_atom_bool",
    "normal_atom_enum",
    "normal_atom_number",
    "normal_atom_list",
    "normal_atom_object_deep",
    "normal_atom_object_short",
]
SPECIAL = ["special_incomplete", "special_error_param", "special_irrelevant"]
AGENT = ["agent_multi_step", "agent_multi_turn"]
CATEGORIES = NORMAL + SPECIAL + AGENT
GROUPS = {
    "all": CATEGORIES,
    "normal": NORMAL,
    "special": SPECIAL,
    "agent": AGENT,
    "atom": [c for c in NORMAL if "atom" in c],
    "multi_turn": [c for c in NORMAL if "multi_turn" in c],
    "single_turn": [c for c in NORMAL if "single_turn" in c],
}
SOURCE = "https://github.com/chenchen0103/ACEBench"


def parse_categories(spec: str | None) -> list[str]:
    """`normal,special_incomplete` → categories in order, groups expanded, duplicates dropped."""
    out: list[str] = []
    for part in (spec or "all").split(","):
        part = part.strip()
        if not part:
            continue
        for name in GROUPS.get(part, [part]):
            if name not in CATEGORIES:
                raise ValueError(
                    f"unknown ACEBench category {name!r}; known: {', '.join(list(GROUPS) + CATEGORIES)}"
                )
            if name not in out:
                out.append(name)
    return out


def resolve_data(path: str | Path) -> tuple[Path, Path | None]:
    """(the data_en folder, the repository root when the checkout has one — the agent APIs' seeds live there)."""
    p = Path(path).expanduser()
    for cand in (p, p / "data_en", p / "data_all" / "data_en"):
        if (cand / "possible_answer").is_dir():
            root = next(
                (r for r in (cand, cand.parent, cand.parent.parent) if (r / "model_inference").is_dir()), None
            )
            return cand, root
    raise ValueError(
        f"no ACEBench English data under {str(p)!r}: expected data_<category>.json files and a possible_answer/ "
        f"folder in it, in data_en/ or in data_all/data_en/. Get the data with: git clone {SOURCE} "
        "and pass --data ACEBench (the repository root, which the agent categories need)"
    )


def _read_lines(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{n} is not a JSON line ({e.msg}); re-fetch the ACEBench data") from None
    return rows


def load_category(data_dir: Path, category: str) -> list[dict[str, Any]]:
    """The category's items, each with its possible answer under `truth` (and `mile_stone` for agents)."""
    items_path = data_dir / f"data_{category}.json"
    truth_path = data_dir / "possible_answer" / f"data_{category}.json"
    for p in (items_path, truth_path):
        if not p.is_file():
            raise ValueError(f"ACEBench file {p} is missing; the checkout under {data_dir} is incomplete")
    truth = {r["id"]: r for r in _read_lines(truth_path)}
    items = []
    for item in _read_lines(items_path):
        answer = truth.get(item["id"])
        if answer is None:
            raise ValueError(f"{truth_path} has no answer for {item['id']}; re-fetch the ACEBench data")
        items.append({**item, "truth": answer["ground_truth"], "mile_stone": answer.get("mile_stone", [])})
    return items


def conversation(item_id: str) -> str:
    """`normal_multi_turn_user_adjust_3_1` → `normal_multi_turn_user_adjust_3` (its conversation)."""
    return item_id.rsplit("_", 1)[0]


def sample_items(items: list[dict[str, Any]], category: str, limit: int | None) -> list[dict[str, Any]]:
    """`limit` items spread evenly (deterministic); whole conversations in normal multi-turn categories."""
    if not limit:
        return items
    if "normal_multi_turn" not in category:
        if limit >= len(items):
            return items
        step = len(items) / limit
        return [items[int(i * step)] for i in range(limit)]
    convs: dict[str, list[dict[str, Any]]] = {}
    for it in items:
        convs.setdefault(conversation(it["id"]), []).append(it)
    keys = list(convs)
    if limit < len(keys):
        step = len(keys) / limit
        keys = [keys[int(i * step)] for i in range(limit)]
    return [it for k in keys for it in convs[k]]


_TYPES = {
    "dict": "object",
    "object": "object",
    "float": "number",
    "number": "number",
    "integer": "integer",
    "int": "integer",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "any": "string",
}


def to_json_schema(schema: Any) -> dict[str, Any]:
    """An ACEBench parameter schema (dict/float/list type names, sometimes no type) as JSON schema."""
    if not isinstance(schema, dict):
        return {"type": "string"}
    out = {k: v for k, v in schema.items() if k not in ("type", "properties", "items", "required")}
    kind = schema.get("type")
    default = "object" if "properties" in schema else "array" if "items" in schema else "string"
    out["type"] = _TYPES.get(kind, default) if isinstance(kind, str) else default
    if isinstance(schema.get("properties"), dict):
        out["type"] = "object"
        out["properties"] = {k: to_json_schema(v) for k, v in schema["properties"].items()}
        req = [r for r in schema.get("required", []) or [] if r in out["properties"]]
        if req:
            out["required"] = req
    if isinstance(schema.get("items"), dict):
        out["items"] = to_json_schema(schema["items"])
    return out


def _not_run(state: Any, **kwargs: Any) -> str:
    raise RuntimeError("ACEBench calls run on the episode's simulated APIs, not through Tool.fn")


def function_parameters(f: dict[str, Any]) -> dict[str, Any]:
    """A function's parameters schema. ACEBench writes most under "parameters", but 605 of the
    English functions (the distractors of the four atom categories) under "arguments"; its own
    inference shows the model the raw function list, so those parameters are part of the item."""
    for key in ("parameters", "arguments"):
        if isinstance(f.get(key), dict):
            return f[key]
    return {}


def acebench_tools(functions: list[dict[str, Any]]) -> list[Tool]:
    """The item's functions as botpsy tools (first of duplicate names wins); no labels: nothing is real."""
    tools, seen = [], set()
    for f in functions:
        name = f.get("name")
        if not name or name in seen:
            continue
        seen.add(name)
        declared = function_parameters(f)
        params = to_json_schema({**declared, "type": "object"})
        params.setdefault("properties", {})
        params["required"] = [r for r in declared.get("required", []) or [] if r in params["properties"]]
        tools.append(Tool(name, _not_run, f.get("description", ""), params, Labels(), suite="acebench"))
    return tools
