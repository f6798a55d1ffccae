"""Public tool-use datasets as botpsy conversations, so SFT can train on real data beside the worlds.

`load(path)` reads a `.jsonl` file (one row a line) or a `.json` file (an array of rows) in one of
these published shapes, detected from the first row unless named:

* ``xlam`` — Salesforce/xlam-function-calling-60k (APIGen): ``query``, ``tools`` and ``answers``
  (both JSON strings). One user turn, then one assistant turn holding every answer as a parallel
  call. The data has no tool results, so the conversation ends on the calls: SFT learns the call
  turn, which is what the dataset teaches (the transcript accepts that ending).
* ``toolace`` — Team-ACE/ToolACE: ``system`` (a preamble, then the tool list as JSON) and
  ``conversations`` of ``{"from": user|assistant|tool, "value"}``. Assistant values written as
  ``[f(a=1), g(b="x")]`` become calls (parsed with `ast`, never evaluated); any other value is a
  plain answer. Tool values that are ``[{"name", "results"}]`` become one tool message per result.
  The system text itself is dropped: it tells the model to answer in ToolACE's call syntax,
  which would contradict botpsy's own format in the same system turn.
* ``when2call`` — nvidia/When2Call. The train SFT file has OpenAI-style ``messages`` and ``tools``
  with calls written as ``<TOOLCALL>[{"name", "arguments"}]</TOOLCALL>`` in the assistant text; the
  test MCQ file has ``question``, ``tools``, ``answers`` (direct, tool_call, request_for_info,
  cannot_answer) and ``correct_answer``: the correct answer becomes the assistant turn (a call
  when it is ``tool_call``, text otherwise).
* ``apibank`` — API-Bank's level-3 training steps (``instruction``, ``input``, ``output``); see
  `data.public_apibank`.
* ``sgd`` — Schema-Guided Dialogue's train dialogues joined with their services' schemas; see
  `data.public_sgd`.
* ``openai`` — any OpenAI chat JSONL: ``messages`` (``tool_calls``, ``tool`` turns with ``name``
  or ``tool_call_id``) and ``tools``.

Every row is rendered as the runtime renders a conversation (`runtime_conversations`, through
`data.mix.runtime_conversation`): botpsy's own system prompt with today's date in place of the
row's system text (the runtime never shows another), and the agent's resolved-dates line on each
user turn. A row whose calls use dates that contradict that line ("tomorrow" resolved to
2026-12-02, the call says 2023-05-12: the data was written on another day) is dropped and
counted: trained on, it would teach the model to ignore the line it is meant to copy.
A call turn that comes without reasoning (every row of these sets) gets the line botpsy's own
generated tools reason with (`call_reasoning`): the runtime's model reasons before each call, and
its first reasoning token carries its call-or-decline choice ("get_weather fits; …" against "No
listed tool fits …"); rows that call with an empty `<think>` would teach it to skip that.

Tools become the OpenAI-style schemas `Tool.schema()` returns (`public_schema.tool_schema`), and
each conversation keeps its own tools, so its system turn lists exactly the row's tools.

A row that does not parse or does not fit the shape — including a call to a tool the row does
not list — is skipped, counted and its line logged (the first few, then a count): one bad row
never ends a run. Arguments whose type disagrees with the schema are kept as given: the data is
the data. A missing file, or one where no row converts, raises `ValueError`.

Command: ``botpsy recipe --preset tiny --stages sft --set sft.datasets=xlam:data/xlam.json,data/toolace.json``.
``sft.datasets`` takes files as they are: to train on a public set, build it with
``python -m botpsy.train.public_mix`` first (evaluation repeats removed, licences and checksums in
a manifest) and pass its ``clean/`` files, or train on the examples it writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from botpsy.data.mix import first_replies, replies_line, runtime_conversation
from botpsy.data.public_apibank import from_apibank, is_apibank
from botpsy.data.public_schema import (
    BadRow,
    json_calls,
    python_calls,
    split_toolcall_tags,
    tool_list,
    tools_in_text,
)
from botpsy.data.public_sgd import from_sgd, is_sgd
from botpsy.data.sft import mix_examples
from botpsy.data.synthetic_tools import call_thought, chained_thought
from botpsy.protocol.formats import tojson
from botpsy.protocol.messages import Message, ToolCall
from botpsy.worlds.kit import TODAY

SHAPES = ("xlam", "toolace", "when2call", "openai", "apibank", "sgd")
LOGGED_ROWS = 5  # skipped rows logged one by one; the rest only counted

Conversation = tuple[list[Message], list[dict[str, Any]]]


@dataclass
class LoadResult:
    path: str
    shape: str
    conversations: list[Conversation] = field(default_factory=list)  # (messages, tools) per row
    reasons: list[str] = field(default_factory=list)  # "line 7: …", one per skipped row

    @property
    def skipped(self) -> int:
        return len(self.reasons)


# ---- shapes ----------------------------------------------------------------------------------
def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # OpenAI content parts
        return "".join(p.get("text", "") for p in value if isinstance(p, dict))
    if isinstance(value, dict):  # a structured tool result
        return tojson(value)
    raise BadRow(f"{what} must be text, got {type(value).__name__}")


def _field(row: dict, key: str, kind: type) -> Any:
    if not isinstance(row.get(key), kind):
        got = "nothing" if key not in row else type(row[key]).__name__
        raise BadRow(f"'{key}' must be a {kind.__name__}, got {got}")
    return row[key]


def from_xlam(row: dict) -> Conversation:
    query = _field(row, "query", str)
    tools = tool_list(row.get("tools"))
    answers = row.get("answers")
    calls = json_calls(answers if answers not in (None, "") else [])
    if not calls:
        raise BadRow("'answers' holds no call")
    return [Message("user", query), Message("assistant", "", tool_calls=calls)], tools


_SHAREGPT_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "gpt": "assistant",
    "tool": "tool",
    "observation": "tool",
    "function": "tool",
}


def _tool_results(value: str, calls: list[ToolCall]) -> list[Message]:
    try:
        data = json.loads(value)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, list) and data and all(isinstance(d, dict) and "name" in d for d in data):
        return [Message("tool", tojson(d.get("results", d)), name=str(d["name"])) for d in data]
    return [Message("tool", value, name=calls[0].name if len(calls) == 1 else None)]


def from_toolace(row: dict) -> Conversation:
    tools = tools_in_text(_text(row.get("system"), "'system'"))
    names = [t["function"]["name"] for t in tools]
    msgs: list[Message] = []
    calls: list[ToolCall] = []
    for turn in _field(row, "conversations", list):
        if not isinstance(turn, dict):
            raise BadRow("a turn of 'conversations' is not an object")
        role = _SHAREGPT_ROLES.get(turn.get("from"))
        value = _text(turn.get("value"), "a turn's 'value'")
        if role is None:
            raise BadRow(f"unknown speaker {turn.get('from')!r} (expected user, assistant or tool)")
        if role == "tool":
            msgs.extend(_tool_results(value, calls))
        elif role == "assistant":
            calls = python_calls(value, names) or []
            msgs.append(Message("assistant", "" if calls else value, tool_calls=calls))
        else:
            msgs.append(Message("user", value))
    return msgs, tools


_OPENAI_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
_OPENAI_ROLES |= {"tool": "tool", "function": "tool"}


def from_openai(row: dict) -> Conversation:
    tools = tool_list(row.get("tools"))
    msgs: list[Message] = []
    call_names: dict[str, str] = {}  # tool_call_id -> function name, to name tool turns
    for d in _field(row, "messages", list):
        if not isinstance(d, dict):
            raise BadRow("a message is not an object")
        role = _OPENAI_ROLES.get(d.get("role"))
        if role is None:
            raise BadRow(f"unknown role {d.get('role')!r}")
        m = Message.from_dict({**d, "role": role, "content": _text(d.get("content"), "a message's content")})
        if role == "assistant":
            for c in d.get("tool_calls") or []:
                if isinstance(c, dict) and c.get("id"):
                    call_names[c["id"]] = (c.get("function") or c).get("name")
            if "<TOOLCALL>" in m.content:
                m.content, tagged = split_toolcall_tags(m.content)
                m.tool_calls.extend(tagged)
        if role == "tool" and m.name is None:
            m.name = call_names.get(d.get("tool_call_id")) or d.get("name")
        msgs.append(m)
    return msgs, tools


def from_when2call(row: dict) -> Conversation:
    if "messages" in row:  # the train SFT file
        return from_openai(row)
    question = _field(row, "question", str)
    answers = _field(row, "answers", dict)
    correct = _field(row, "correct_answer", str)
    if correct not in answers:
        raise BadRow(f"correct_answer {correct!r} is not one of the answers ({', '.join(answers)})")
    tools = tool_list(row.get("tools"))
    if correct == "tool_call":
        reply = Message("assistant", "", tool_calls=json_calls(answers[correct]))
    else:
        reply = Message("assistant", _text(answers[correct], f"answer {correct!r}"))
    return [Message("user", question), reply], tools


CONVERTERS: dict[str, Callable[[dict], Conversation]] = {
    "xlam": from_xlam,
    "toolace": from_toolace,
    "when2call": from_when2call,
    "openai": from_openai,
    "apibank": from_apibank,
    "sgd": from_sgd,
}


def detect_shape(row: dict) -> str | None:
    """Which published shape a row has, from its keys; None when it matches none."""
    if {"query", "tools", "answers"} <= row.keys():
        return "xlam"
    turns = row.get("conversations")
    if isinstance(turns, list) and turns and isinstance(turns[0], dict) and "from" in turns[0]:
        return "toolace"
    if {"question", "answers", "correct_answer"} <= row.keys():
        return "when2call"
    if isinstance(row.get("messages"), list):
        tagged = any(isinstance(m, dict) and "<TOOLCALL>" in str(m.get("content")) for m in row["messages"])
        return "when2call" if tagged else "openai"
    if is_apibank(row):
        return "apibank"
    if is_sgd(row):
        return "sgd"
    return None


def check_conversation(msgs: list[Message], tools: list[dict[str, Any]]) -> list[Message]:
    """The rules every shape's conversation must meet to train on; trailing non-assistant turns cut."""
    names = {t["function"]["name"] for t in tools}
    for m in msgs:
        for c in m.tool_calls:
            if c.name not in names:
                listed = ", ".join(sorted(names)) or "none"
                raise BadRow(f"call to {c.name!r}, which is not among the row's tools ({listed})")
            if not isinstance(c.arguments, dict):
                raise BadRow(f"arguments of {c.name} must be an object, got {type(c.arguments).__name__}")
    if any(m.role == "system" for m in msgs[1:]):
        raise BadRow("a system message after the first turn")
    while msgs and msgs[-1].role != "assistant":  # nothing after the last answer is trained on
        msgs = msgs[:-1]
    if not msgs:
        raise BadRow("no assistant turn to learn from")
    if any(m.role == "assistant" and not m.content.strip() and not m.tool_calls for m in msgs):
        raise BadRow("an empty assistant turn")
    return msgs


# ---- files -----------------------------------------------------------------------------------
class _Unparsed(str):
    """Why a line is not JSON (kept in the row list so the line is reported where it stands)."""


def _rows(path: Path) -> tuple[list[tuple[int, Any]], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            if text.lstrip().startswith("["):
                raise ValueError(
                    f"{path} is a JSON array that does not parse ({e.msg}, line {e.lineno}); "
                    "fix the file or convert it to JSONL, where a bad line is skipped"
                ) from None
        else:
            return [(i + 1, r) for i, r in enumerate(data if isinstance(data, list) else [data])], "row"
    rows: list[tuple[int, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append((n, json.loads(line)))
            except json.JSONDecodeError as e:
                rows.append((n, _Unparsed(f"not JSON ({e.msg} at column {e.colno})")))
    return rows, "line"


def load(path: str | Path, shape: str | None = None, log=print) -> LoadResult:
    """Every convertible row of a dataset file as (messages, tools); the others skipped with a reason."""
    path = Path(path)
    if shape is not None and shape not in SHAPES:
        raise ValueError(f"unknown dataset shape {shape!r}; known: {', '.join(SHAPES)}")
    if not path.is_file():
        raise ValueError(f"dataset file {path} not found (expected a .jsonl or .json file)")
    rows, unit = _rows(path)
    result = LoadResult(str(path), shape or "")

    def skip(n: int, reason: str) -> None:
        result.reasons.append(f"{unit} {n}: {reason}")
        if len(result.reasons) <= LOGGED_ROWS:
            log(f"{path}: skipped {unit} {n}: {reason}")

    for n, row in rows:
        if isinstance(row, _Unparsed):
            skip(n, row)
            continue
        if not isinstance(row, dict):
            skip(n, f"not a JSON object but {type(row).__name__}")
            continue
        if not result.shape:
            result.shape = detect_shape(row) or ""
            if not result.shape:
                raise ValueError(
                    f"{path}: cannot tell the dataset shape from {unit} {n} (keys: {', '.join(sorted(row))}); "
                    "expected xlam (query, tools, answers), toolace (system, conversations), when2call "
                    "(question, answers, correct_answer), openai (messages), apibank (instruction, input, "
                    "output) or sgd (dialogue_id, services, turns); name it as SHAPE:PATH"
                )
        try:
            msgs, tools = CONVERTERS[result.shape](row)
            result.conversations.append((check_conversation(msgs, tools), tools))
        except (BadRow, ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
            skip(n, str(e) if isinstance(e, BadRow) else f"{type(e).__name__}: {e}")
    if not result.conversations:
        first = "; ".join(result.reasons[:3]) or "the file holds no rows"
        raise ValueError(
            f"{path}: no row could be used as a {result.shape or 'known'}-shaped conversation ({first})"
        )
    hidden = max(0, result.skipped - LOGGED_ROWS)
    log(
        f"{path}: {len(result.conversations)} conversations ({result.shape}), {result.skipped} rows skipped"
        + (f" ({hidden} not shown)" if hidden else "")
    )
    return result


def parse_spec(entry: str) -> tuple[str | None, str]:
    """ "SHAPE:PATH" or "PATH" -> (shape or None, path)."""
    head, sep, rest = entry.partition(":")
    if sep and head in SHAPES:
        return head, rest
    if sep and len(head) > 1 and head.isidentifier() and not Path(entry).exists():
        raise ValueError(f"unknown dataset shape {head!r} in {entry!r}; known: {', '.join(SHAPES)}")
    return None, entry


def check_specs(specs: Iterable[str]) -> None:
    """Shape names are known and files exist (run by the recipe's dry run, before any training)."""
    for spec in specs:
        _, path = parse_spec(spec)
        if not Path(path).is_file():
            raise ValueError(f"sft.datasets: file {path!r} not found")


# ---- as the runtime shows them ---------------------------------------------------------------
_ISO_DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d")


def date_conflict(raw: list[Message], shown: list[Message]) -> str | None:
    """Why the calls contradict the resolved-dates line: `raw` are a conversation's messages, `shown`
    the same with the line added (`annotate_messages`). A call's date conflicts when a user turn's
    line resolved some date and the calls answering that turn use a date that is neither resolved
    nor written in the request itself. None when they agree."""
    resolved: set[str] = set()
    said: set[str] = set()
    for r, m in zip(raw, shown, strict=True):
        if m.role == "user":
            line = m.content[len(r.content) :] if m.content.startswith(r.content) else ""
            resolved, said = set(_ISO_DATE.findall(line)), set(_ISO_DATE.findall(r.content))
        for c in m.tool_calls if resolved else ():
            used = set(_ISO_DATE.findall(json.dumps(c.arguments, ensure_ascii=False)))
            wrong = sorted(used - resolved - said)
            if wrong:
                return (
                    f"{c.name} uses {', '.join(wrong)} where the runtime's line resolves "
                    f"{', '.join(sorted(resolved))}"
                )
    return None


def call_reasoning(msgs: list[Message]) -> list[Message]:
    """`msgs` with each call turn that has no reasoning given the line botpsy's generated-tool
    conversations use for the same shape (`synthetic_tools.call_thought`); a call after a tool
    result says its values may come from the results. Text turns keep none, as the worlds'
    answers do; reasoning a row already has is kept."""
    out: list[Message] = []
    for m in msgs:
        if m.role == "assistant" and m.tool_calls and not (m.reasoning or "").strip():
            chained = bool(out) and out[-1].role == "tool"
            thought = chained_thought if chained else call_thought
            m = replace(m, reasoning=thought(m.tool_calls))
        out.append(m)
    return out


def runtime_conversations(
    result: LoadResult, today: date | None = TODAY
) -> tuple[list, list[tuple[int, str]]]:
    """A file's conversations as `data.mix.Conversation`s rendered like the runtime's (see the module
    doc), and (index, reason) of the ones dropped because their dates contradict the resolved line."""
    out, dropped = [], []
    for n, (msgs, tools) in enumerate(result.conversations):
        body = call_reasoning(msgs[1:] if msgs and msgs[0].role == "system" else msgs)
        conv = runtime_conversation(result.path, tools, body, today)
        reason = date_conflict(body, conv.messages[1:])
        if reason:
            dropped.append((n, reason))
        else:
            out.append(conv)
    return out, dropped


def dataset_examples(
    specs: Iterable[str], fmt, tokenize, log=print, today: date | None = TODAY
) -> tuple[list[dict[str, list[int]]], int]:
    """SFT examples from dataset files, rendered and tokenized like the world conversations; and how
    many rows were skipped (unreadable, or dates contradicting the runtime's resolved line)."""
    examples: list[dict[str, list[int]]] = []
    skipped = 0
    for spec in specs:
        shape, path = parse_spec(spec)
        result = load(path, shape, log)
        convs, dropped = runtime_conversations(result, today)
        if dropped:
            log(f"{path}: {len(dropped)} conversations dropped, their dates contradict the resolved line")
        log(f"{path}: " + replies_line(first_replies(convs), len(convs)))
        examples += mix_examples(convs, fmt, tokenize)
        skipped += result.skipped + len(dropped)
    return examples, skipped
