"""What a tool call changed, record by record, and how to take it back.

Every suite's state is one pydantic model read and written in one store transaction, so the
change a call made is the difference between the state before and after the tool ran, found the
same way for every suite (no per-tool undo code to drift from the tools):
* a `list` of records with a key (`id`, `url`, `product_id`) is compared record by record
  (`events/e-12`), with the record's position, so a restored record goes back where it was;
* a `dict` of records (the files suite's paths) is compared entry by entry (`entries/notes.txt`);
* any other field (a setting, a list of names, the telecom phone) is one record (`volume`);
* the clock (`now`, `today`) and store bookkeeping (`source`) are never compared.

`undo(state, changes)` puts the `before` of each record back into a state loaded in a write
transaction — after checking that each record is still exactly as the call left it; where
one changed since, nothing is restored and the error names it (the world moved on).
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel

from botpsy.stores.common import CLOCK_FIELDS

KEYS = ("id", "url", "product_id")
BOOKKEEPING = {"source"}  # the files store's on-disk origin of an entry: not content


class MovedOn(Exception):
    """A record changed after the call being undone: restoring it would lose the newer change."""


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in BOOKKEEPING}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _record_type(annotation: Any) -> type[BaseModel] | None:
    args = typing.get_args(annotation)
    item = args[-1] if args else None
    return item if isinstance(item, type) and issubclass(item, BaseModel) else None


def _layout(state_type: type[BaseModel], name: str) -> tuple[str, str | None]:
    """How a field holds records, from its type (never from its current value, which may be an
    empty list): ("list", key) | ("dict", None) | ("whole", None)."""
    annotation = state_type.model_fields[name].annotation
    origin, item = typing.get_origin(annotation), _record_type(annotation)
    if origin is list and item is not None:
        key = next((k for k in KEYS if k in item.model_fields), None)
        if key is not None:
            return "list", key
    if origin is dict and item is not None:
        return "dict", None
    return "whole", None


def records(state: BaseModel) -> dict[str, tuple[Any, int | None]]:
    """Every record of a state: name -> (content, position in its list or None)."""
    data = state.model_dump(mode="json")
    out: dict[str, tuple[Any, int | None]] = {}
    for name, value in data.items():
        if name in CLOCK_FIELDS or name not in type(state).model_fields:
            continue
        layout, key = _layout(type(state), name)
        if layout == "list":
            for i, item in enumerate(value):
                out[f"{name}/{item[key]}"] = (_clean(item), i)
        elif layout == "dict":
            for k, item in value.items():
                out[f"{name}/{k}"] = (_clean(item), None)
        else:
            out[name] = (_clean(value), None)
    return out


def diff(before: BaseModel, after: BaseModel) -> list[dict[str, Any]]:
    """The records a call changed: [{record, before, after, at}], `None` for absent."""
    old, new = records(before), records(after)
    out = []
    for name in list(old) + [n for n in new if n not in old]:
        b, a = old.get(name, (None, None)), new.get(name, (None, None))
        if b[0] != a[0]:
            out.append({"record": name, "before": b[0], "after": a[0], "at": b[1]})
    return out


def _sourced(container: dict[str, Any], changes: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """Entries to put back into a dict of records, with the store's `source` set from where their
    content is now: an entry the call moved goes back by a move (a binary file keeps its bytes),
    one it overwrote is rewritten in place, one it deleted is made again from its content."""
    ours = [c for c in changes if c["record"].startswith(name + "/")]
    leaving = {
        c["record"].partition("/")[2]: container.get(c["record"].partition("/")[2])
        for c in ours
        if c["before"] is None
    }
    out = {}
    for c in ours:
        if c["before"] is None:
            continue
        key = c["record"].partition("/")[2]
        item = dict(c["before"])
        if key in container:
            item["source"] = container[key].get("source")
        else:
            match = next((k for k, v in leaving.items() if v is not None and _clean(v) == c["before"]), None)
            item["source"] = leaving.pop(match).get("source") if match is not None else None
        out[key] = item
    return out


def undo(state: BaseModel, changes: list[dict[str, Any]]) -> None:
    """Restore `before` of each changed record in `state` (loaded in a write transaction).

    Raises MovedOn, naming the records, when any is no longer as the call left it; the state is
    then untouched."""
    now = records(state)
    moved = [c["record"] for c in changes if now.get(c["record"], (None, None))[0] != c["after"]]
    if moved:
        raise MovedOn(", ".join(moved))
    data = state.model_dump()
    restored_entries: dict[str, dict[str, Any]] = {}
    for name, value in data.items():
        if isinstance(value, dict) and any(c["record"].startswith(name + "/") for c in changes):
            restored_entries[name] = _sourced(value, changes, name)
    for c in sorted(changes, key=lambda c: (c["at"] is None, c["at"] or 0)):
        name, _, key = c["record"].partition("/")
        before = c["before"]
        if not key:
            data[name] = before
            continue
        container = data[name]
        if isinstance(container, dict):
            container.pop(key, None)
            if before is not None:
                container[key] = restored_entries[name][key]
            continue
        k = _layout(type(state), name)[1] or "id"
        pos = next((i for i, item in enumerate(container) if str(item.get(k)) == key), None)
        if pos is not None:
            container.pop(pos)
        if before is not None:
            at = c["at"] if c["at"] is not None else len(container)
            container.insert(min(at, len(container)), before)
    restored = type(state).model_validate(data)
    for name in type(state).model_fields:
        if name not in CLOCK_FIELDS:
            setattr(state, name, getattr(restored, name))
