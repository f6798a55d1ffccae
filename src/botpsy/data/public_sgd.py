"""Schema-Guided Dialogue (SGD) training dialogues as botpsy conversations (the ``sgd`` shape).

SGD (google-research-datasets/dstc8-schema-guided-dialogue, CC BY-SA 4.0) holds human-written
task dialogues whose system turns call services: a frame's ``service_call`` is
``{"method": intent, "parameters": {slot: value}}`` and ``service_results`` the rows the service
returned. The services are described once, in the split's ``schema.json``: each has intents
(``required_slots``, ``optional_slots`` with defaults) and slots (a description, and the possible
values of a categorical slot).

The dialogues are published as ``train/dialogues_NNN.json`` shards beside ``schema.json``, so
`join` writes one JSONL file the build can read: each dialogue as published, with the schema of
the services it uses added under ``"schema"``. Nothing else of a dialogue changes.

A dialogue becomes a conversation: each user turn a user message; each system turn, first the
calls its frames made (one assistant turn, then one tool message per call with the results as
JSON), then the system's utterance as the assistant's answer. The tools are the intents of the
dialogue's services, named by the intent, with every slot typed string (SGD writes every value as
text, ``"party_size": "2"``); a categorical slot lists its possible values as an enum.

SGD's calendar is its own: "today" is 2019-03-01 (the schema's default for a date slot), and the
calls carry dates in that calendar while the user speaks of "today" or "the 3rd". The runtime
resolves those words against the real date, so a dialogue whose calls pass a date is skipped (it
would teach the model to ignore the resolved-dates line), and no date default is kept.

    python -m botpsy.data.public_sgd --out sgd-train.jsonl SGD/train/schema.json SGD/train/dialogues_*.json
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from botpsy.data.public_schema import BadRow
from botpsy.protocol.formats import tojson
from botpsy.protocol.messages import Message, ToolCall

_DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")


def is_sgd(row: dict) -> bool:
    return isinstance(row.get("turns"), list) and "dialogue_id" in row and "services" in row


def intent_tools(service: dict) -> list[dict[str, Any]]:
    """One OpenAI-style tool per intent of a service schema."""
    slots = {s["name"]: s for s in service.get("slots") or [] if isinstance(s, dict) and "name" in s}
    tools = []
    for intent in service.get("intents") or []:
        required = list(intent.get("required_slots") or [])
        optional = dict(intent.get("optional_slots") or {})
        props: dict[str, Any] = {}
        for name in required + [o for o in optional if o not in required]:
            slot = slots.get(name, {})
            prop: dict[str, Any] = {"type": "string", "description": slot.get("description", "")}
            if slot.get("is_categorical") and slot.get("possible_values"):
                prop["enum"] = list(slot["possible_values"])
            if name in optional and optional[name] != "dontcare" and not _DATE.search(optional[name]):
                prop["default"] = optional[name]
            props[name] = prop
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": intent["name"],
                    "description": intent.get("description", ""),
                    "parameters": {"type": "object", "properties": props, "required": required},
                },
            }
        )
    return tools


def from_sgd(row: dict) -> tuple[list[Message], list[dict[str, Any]]]:
    """One joined SGD dialogue (see `join`) as (messages, tools)."""
    schema = row.get("schema")
    if not isinstance(schema, list) or not schema:
        raise BadRow(
            "no 'schema' with the dialogue's services: build the file with `python -m botpsy.data.public_sgd`"
        )
    tools: dict[str, dict[str, Any]] = {}
    for service in schema:
        for tool in intent_tools(service):
            name = tool["function"]["name"]
            if name in tools and tools[name] != tool:
                raise BadRow(f"two services of the dialogue define intent {name!r} differently")
            tools[name] = tool
    msgs: list[Message] = []
    for n, turn in enumerate(row["turns"], 1):
        if not isinstance(turn, dict) or not isinstance(turn.get("utterance"), str):
            raise BadRow(f"turn {n} has no utterance")
        if turn.get("speaker") == "USER":
            msgs.append(Message("user", turn["utterance"]))
            continue
        if turn.get("speaker") != "SYSTEM":
            raise BadRow(f"turn {n}: unknown speaker {turn.get('speaker')!r} (expected USER or SYSTEM)")
        called = [f for f in turn.get("frames") or [] if isinstance(f, dict) and f.get("service_call")]
        if called:
            calls = [
                ToolCall(f["service_call"]["method"], dict(f["service_call"].get("parameters") or {}))
                for f in called
            ]
            for call in calls:
                dated = [v for v in call.arguments.values() if isinstance(v, str) and _DATE.search(v)]
                if dated:
                    raise BadRow(
                        f"turn {n}: {call.name} passes {dated[0]}, a date in SGD's 2019 calendar, which "
                        "the runtime's resolved-dates line contradicts"
                    )
            msgs.append(Message("assistant", "", tool_calls=calls))
            for call, frame in zip(calls, called, strict=True):
                msgs.append(Message("tool", tojson(frame.get("service_results") or []), name=call.name))
        msgs.append(Message("assistant", turn["utterance"]))
    return msgs, list(tools.values())


def join(schema_path: Path, shards: list[Path], out: Path) -> int:
    """Write every dialogue of the shards, with its services' schemas, to one JSONL file."""
    services = {s["service_name"]: s for s in json.loads(schema_path.read_text(encoding="utf-8"))}
    count = 0
    with open(out, "w", encoding="utf-8") as f:
        for shard in sorted(shards):
            for dialogue in json.loads(shard.read_text(encoding="utf-8")):
                missing = [s for s in dialogue["services"] if s not in services]
                if missing:
                    raise ValueError(
                        f"{shard}: dialogue {dialogue['dialogue_id']} uses {missing}, not in {schema_path}"
                    )
                dialogue["schema"] = [services[s] for s in dialogue["services"]]
                f.write(json.dumps(dialogue, ensure_ascii=False) + "\n")
                count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m botpsy.data.public_sgd", description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, type=Path, help="the JSONL file to write")
    p.add_argument("schema", type=Path, help="the split's schema.json")
    p.add_argument("shards", nargs="+", type=Path, help="the split's dialogues_NNN.json files")
    a = p.parse_args(argv)
    if "train" not in str(a.schema.parent.name) or any("train" not in s.parent.name for s in a.shards):
        p.error("only SGD's train split is training data; dev and test are its evaluation sets")
    try:
        n = join(a.schema, a.shards, a.out)
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        p.exit(2, f"{p.prog}: error: {e}\n")
    print(f"{a.out}: {n} dialogues from {len(a.shards)} shards")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
