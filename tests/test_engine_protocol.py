"""Every backend has every member of `engine.base.Engine`, so callers never probe with getattr (issue 15)."""

import pytest

from botpsy.engine.base import Engine, EngineBase
from botpsy.engine.llamacpp import LlamaCppEngine
from botpsy.engine.openai_http import OpenAIHTTPEngine
from botpsy.engine.oracle import OracleEngine, ScriptedEngine
from botpsy.engine.transformers_engine import TransformersEngine

MEMBERS = sorted(
    {
        *Engine.__annotations__,
        *(k for k in vars(Engine) if not k.startswith("_") and callable(getattr(Engine, k))),
    }
    | {"cheap_rollback"}
)


def test_the_protocol_declares_what_callers_use():
    assert {"thinking", "n_ctx", "mode", "cheap_rollback", "count_tokens", "reset", "tool_grammar"} <= set(
        MEMBERS
    )


@pytest.mark.parametrize(
    "cls", [ScriptedEngine, OracleEngine, OpenAIHTTPEngine, TransformersEngine, LlamaCppEngine]
)
def test_every_engine_has_every_member(cls):
    assert issubclass(cls, EngineBase)
    instance_only = {"name", "chat_format"}  # set in __init__ by every engine
    missing = [m for m in MEMBERS if m not in instance_only and not hasattr(cls, m)]
    assert not missing, f"{cls.__name__} lacks {missing}"


def test_defaults_of_a_scripted_engine():
    e = ScriptedEngine(["a"])
    assert (e.thinking, e.n_ctx, e.mode, e.cheap_rollback) == (True, None, None, True)
    assert e.count_tokens("héllo") == len("héllo".encode())
    assert e.tool_grammar([]) is None
    e.reset()


def test_no_caller_probes_an_engine():
    """The last probes sat in agent/loop, cli, cli_eval and serve; `EngineBase` gives every member."""
    import re
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src" / "botpsy"
    probe = re.compile(r"\b(getattr|hasattr)\(\s*[\w.]*engine\b")
    found = [
        f"{p.relative_to(src)}:{i}: {line.strip()}"
        for p in sorted(src.rglob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if probe.search(line)
    ]
    assert not found, "\n".join(found)
