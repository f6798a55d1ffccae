"""Tools: typed functions over a state model, with a JSON schema derived from the signature.

A tool is written once as a plain function whose first parameter is the suite's state model and
whose other parameters carry type hints and a Google-style docstring. `@tool` reads both and
builds the JSON schema the model sees, so the schema can never drift from the code. Labels
(`mutates`, `egress`, `sensitive`) are declared beside the function; the agent's policies and the
confirmation prompt read them.

Tools never touch disk: the assistant loads the state from a real store, calls the tool, and saves
the state back atomically; a world seeds the state in memory and hashes it.

Arguments arrive from a model, so they are untrusted: `Tool.bind` converts and validates them
against the schema (`protocol.arguments.check_arguments`, the same validator the parser uses) and
raises a `ToolError` naming what was expected and what came, which goes back to the model as the
tool's result instead of ending the session.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from botpsy.protocol.arguments import ToolError, check_arguments, coerce, shown

__all__ = ["ToolError", "Labels", "Tool", "Toolbox", "coerce", "shown", "suite", "tool", "unexpected_failure"]


def unexpected_failure(name: str, e: BaseException) -> ToolError:
    """The ToolError for an exception a tool did not anticipate, worded for the model.

    Every call path (`Workspace.execute`, `World.call`, the MCP server) turns such exceptions into
    this error, so an argument the validation missed costs the model one step, never the session.
    """
    try:
        detail = str(e)
    except Exception:  # a message that cannot be built is still a failure to report
        detail = ""
    detail = " ".join(detail.split())[:200]
    what = f"{type(e).__name__}: {detail}" if detail else type(e).__name__
    return ToolError(f"{name} could not run with these arguments ({what}); check them and try again")


@dataclass(frozen=True)
class Labels:
    """What a tool does to the world; policies and confirmation prompts read these."""

    mutates: bool = False  # changes the user's data
    egress: bool = False  # sends data off the device
    sensitive: bool = False  # money, personal data or deletion

    @property
    def needs_confirmation(self) -> bool:
        return self.mutates or self.egress or self.sensitive

    def as_dict(self) -> dict[str, bool]:
        return {"mutates": self.mutates, "egress": self.egress, "sensitive": self.sensitive}


_PY_TO_JSON = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _json_type(hint: Any) -> tuple[dict[str, Any], bool]:
    """Schema fragment for a type hint, and whether None is allowed."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) != 1:
            raise TypeError(f"unions other than Optional[X] are not supported: {hint}")
        schema, _ = _json_type(non_none[0])
        return schema, True
    if origin is Literal:
        values = list(args)
        return {"type": _PY_TO_JSON[type(values[0])], "enum": values}, False
    if origin in (list, tuple) or hint in (list, tuple):
        item = args[0] if args else str
        return {"type": "array", "items": _json_type(item)[0]}, False
    if origin is dict or hint is dict:
        return {"type": "object"}, False
    if hint in _PY_TO_JSON:
        return {"type": _PY_TO_JSON[hint]}, False
    raise TypeError(f"unsupported parameter type {hint!r}")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary (text before `Args:`) and per-parameter descriptions of a Google-style docstring."""
    doc = inspect.cleandoc(doc or "")
    summary_part, _, args_part = doc.partition("\nArgs:")
    summary = " ".join(summary_part.split())
    params: dict[str, str] = {}
    current = None
    for line in args_part.splitlines():
        m = re.match(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
        if m:
            current = m.group(1)
            params[current] = m.group(2).strip()
        elif current and line.strip() and not re.match(r"^\w+:", line.strip()):
            params[current] += " " + line.strip()
        elif re.match(r"^\S", line):
            current = None
    return summary, params


@dataclass
class Tool:
    name: str
    fn: Callable[..., Any]
    description: str
    parameters: dict[str, Any]
    labels: Labels
    suite: str = ""
    defaults: dict[str, Any] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema that goes into the prompt."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def bind(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate and convert model-supplied arguments; raise ToolError describing any mismatch."""
        return check_arguments(self.name, self.parameters, arguments)

    def __call__(self, state: Any, **arguments: Any) -> Any:
        return self.fn(state, **self.bind(arguments))


def tool(
    *, mutates: bool = False, egress: bool = False, sensitive: bool = False, name: str | None = None
) -> Callable[[Callable[..., Any]], Tool]:
    """Turn `fn(state, ...)` into a `Tool` whose schema comes from its hints and docstring."""

    def wrap(fn: Callable[..., Any]) -> Tool:
        sig = inspect.signature(fn)
        hints = typing.get_type_hints(fn)
        summary, docs = _parse_docstring(fn.__doc__ or "")
        if not summary:
            raise TypeError(f"tool {fn.__name__} needs a docstring: it is the model's only description")
        params = list(sig.parameters.values())[1:]  # the first parameter is the state
        properties: dict[str, Any] = {}
        required: list[str] = []
        defaults: dict[str, Any] = {}
        for p in params:
            if p.name not in docs:
                raise TypeError(f"tool {fn.__name__}: parameter {p.name!r} is not described in Args:")
            schema, _ = _json_type(hints[p.name])
            schema["description"] = docs[p.name]
            properties[p.name] = schema
            if p.default is inspect.Parameter.empty:
                required.append(p.name)
            else:
                defaults[p.name] = p.default
        parameters = {"type": "object", "properties": properties, "required": required}
        return Tool(
            name=name or fn.__name__,
            fn=fn,
            description=summary,
            parameters=parameters,
            labels=Labels(mutates=mutates, egress=egress, sensitive=sensitive),
            defaults=defaults,
        )

    return wrap


class Toolbox:
    """The tools one agent can call, by name, all over one state object per suite."""

    def __init__(self, tools: list[Tool] | None = None):
        self._tools: dict[str, Tool] = {}
        for t in tools or []:
            self.add(t)

    def add(self, t: Tool) -> None:
        if t.name in self._tools:
            raise ValueError(f"two tools are named {t.name!r}")
        self._tools[t.name] = t

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self):
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self._tools.values()]


def suite(name: str, tools: list[Tool]) -> list[Tool]:
    """Stamp the suite name on each tool (shown by `botpsy tools list`)."""
    for t in tools:
        t.suite = name
    return tools
