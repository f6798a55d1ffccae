"""Rendering conversations with tools, and parsing model output, in the Qwen3.5 and hermes formats.

Both formats share ChatML turns (`<|im_start|>role … <|im_end|>`), tools listed as JSON lines
inside `<tools>` in the system turn, tool results in a user turn as `<tool_response>` blocks, and a
`<think>` block opening every assistant turn. They differ in the call itself:

* ``qwen35`` (BotPsy / Qwen3.5): ``<tool_call>\\n<function=NAME>\\n<parameter=K>\\nV\\n</parameter>\\n
  </function>\\n</tool_call>`` — values are text, converted with the tool's schema.
* ``hermes`` (Qwen2.5 / Qwen3): ``<tool_call>\\n{"name": …, "arguments": {…}}\\n</tool_call>``.

Rendering is *incremental*: the agent appends blocks (system, user, generation prompt, tool
results) as token ids and never re-renders the past, so llama.cpp reuses its cached prefix. The
pieces concatenate to exactly what the project's jinja templates (``templates/*.jinja``) render,
and a parity test checks that through `transformers.apply_chat_template`. Unlike Qwen3.5's
official template, old `<think>` blocks are kept: dropping them would rewrite the history and
force a full re-prefill of the hybrid layers every turn.

The system preamble is the project's own, shorter than Qwen3.5's: on a 135M model trained on a
CPU every prompt token costs training and prefill time.

Parsing is lenient where the intent is unambiguous (a missing `</tool_call>` at the very end) and
otherwise returns structured `ParseError`s, which the agent sends back to the model as a tool error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from botpsy.protocol.arguments import ToolError, check_arguments
from botpsy.protocol.bare_calls import bare_calls
from botpsy.protocol.blocks import Block
from botpsy.protocol.messages import Message, ToolCall

FormatName = Literal["qwen35", "hermes"]
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"

QWEN35_PREAMBLE = (
    "# Tools\n\nYou can call these functions:\n<tools>\n{tools}\n</tools>\n\n"
    "To call one, reply with exactly:\n<tool_call>\n<function=NAME>\n<parameter=ARGUMENT>\nVALUE\n"
    "</parameter>\n</function>\n</tool_call>\n"
    "Give every required argument. If no function fits, answer in plain text."
)
HERMES_PREAMBLE = (
    "# Tools\n\nYou can call these functions:\n<tools>\n{tools}\n</tools>\n\n"
    'To call one, reply with exactly:\n<tool_call>\n{{"name": NAME, "arguments": {{ARGUMENTS}}}}\n</tool_call>\n'
    "Give every required argument. If no function fits, answer in plain text."
)


def tojson(value: Any) -> str:
    """JSON the way the chat templates' `tojson` filter writes it."""
    return json.dumps(value, ensure_ascii=False)


def template_text(fmt: FormatName) -> str:
    return resources.files("botpsy.protocol").joinpath(f"templates/{fmt}.jinja").read_text()


def detect_format(chat_template: str | None) -> FormatName:
    """Pick the call format a model was trained on from its chat template."""
    if chat_template and "<function=" in chat_template:
        return "qwen35"
    if chat_template and "<tool_call>" in chat_template:
        return "hermes"
    return "qwen35"


def _tool_lines(tools: list[dict[str, Any]]) -> str:
    return "\n".join(tojson(t) for t in tools)


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else tojson(value)


@dataclass
class ChatFormat:
    name: FormatName = "qwen35"

    # ---- rendering -------------------------------------------------------------------------
    # Every method returns a `Block`: the format's own literals are markup, everything else (a
    # request, a tool result, a schema, a value, the system text) is data, tokenized as text.
    def system(self, tools: list[dict[str, Any]] | None, system_text: str = "") -> Block:
        system_text = system_text.strip()
        if not tools:
            return (
                Block([f"{IM_START}system\n", (system_text, True), f"{IM_END}\n"]) if system_text else Block()
            )
        preamble = QWEN35_PREAMBLE if self.name == "qwen35" else HERMES_PREAMBLE
        head, _, tail = preamble.partition("{tools}")
        body = Block([head.format(), (_tool_lines(tools), True), tail.format()])
        if system_text:
            body += Block(["\n\n", (system_text, True)])
        return f"{IM_START}system\n" + body + f"{IM_END}\n"

    def more_tools(self, tools: list[dict[str, Any]]) -> str:
        """The note a later user turn carries when retrieval adds tools after the system block."""
        return Block(
            ["\n\nMore functions you can call:\n<tools>\n", (_tool_lines(tools), True), "\n</tools>"]
        )

    def user(self, text: str) -> Block:
        return Block([f"{IM_START}user\n", (text.strip(), True), f"{IM_END}\n"])

    def generation_prompt(self, thinking: bool = True) -> str:
        head = f"{IM_START}assistant\n{THINK_OPEN}\n"
        return head if thinking else head + f"\n{THINK_CLOSE}\n\n"

    def tool_results(self, contents: list[str]) -> Block:
        body = Block.join(Block(["\n<tool_response>\n", (c, True), "\n</tool_response>"]) for c in contents)
        return f"{IM_START}user" + body + f"{IM_END}\n"

    def calls(self, calls: list[ToolCall], after_text: bool) -> Block:
        out: list[str] = []
        for i, c in enumerate(calls):
            sep = ("\n\n" if after_text else "") if i == 0 else "\n"
            if self.name == "qwen35":
                params = Block.join(
                    Block(["<parameter=", (k, True), ">\n", (_value_text(v), True), "\n</parameter>\n"])
                    for k, v in c.arguments.items()
                )
                head = Block([f"{sep}<tool_call>\n<function=", (c.name, True), ">\n"])
                out.append(head + params + "</function>\n</tool_call>")
            else:
                payload = tojson({"name": c.name, "arguments": c.arguments})
                out.append(Block([f"{sep}<tool_call>\n", (payload, True), "\n</tool_call>"]))
        return Block.join(out)

    def completion(self, message: Message, thinking: bool = True) -> Block:
        """What the model generates after `generation_prompt(thinking)`, up to and including <|im_end|>."""
        content = Block.data(message.content.strip())
        head = Block([((message.reasoning or "").strip(), True), f"\n{THINK_CLOSE}\n\n"]) if thinking else ""
        return head + content + self.calls(message.tool_calls, bool(content)) + IM_END

    def render(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        thinking: bool = True,
    ) -> Block:
        """The whole conversation as one string: the concatenation of the incremental blocks."""
        out: list[str] = []
        system_text = messages[0].content if messages and messages[0].role == "system" else ""
        out.append(self.system(tools, system_text))
        pending: list[str] = []
        rest = messages[1:] if messages and messages[0].role == "system" else messages
        for m in rest:
            if m.role == "tool":
                pending.append(m.content)
                continue
            if pending:
                out.append(self.tool_results(pending))
                pending = []
            if m.role == "user":
                out.append(self.user(m.content))
            elif m.role == "assistant":
                # A stored assistant turn always carries its think block (empty when thinking is off).
                out.append(self.generation_prompt(True) + self.completion(m, True) + "\n")
            else:
                raise ValueError(f"a {m.role!r} message can only come first")
        if pending:
            out.append(self.tool_results(pending))
        if add_generation_prompt:
            out.append(self.generation_prompt(thinking))
        return Block.join(out)

    # ---- parsing ---------------------------------------------------------------------------
    def parse(
        self, text: str, tools: dict[str, dict[str, Any]] | None = None, thinking: bool = True
    ) -> Parsed:
        """Split a completion into reasoning, text and tool calls; never raises on bad output."""
        return parse_completion(text, self.name, tools, thinking)


@dataclass
class ParseError:
    kind: Literal[
        "unclosed_think",
        "unclosed_call",
        "bad_json",
        "no_function",
        "unknown_function",
        "bad_arguments",
        "stray_tag",
    ]
    message: str

    def as_tool_result(self) -> str:
        return tojson({"error": self.message, "kind": self.kind})


@dataclass
class Parsed:
    reasoning: str | None = None
    content: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)

    def message(self) -> Message:
        return Message("assistant", self.content, self.reasoning, list(self.calls))


_CALL_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_FUNC_RE = re.compile(r"^\s*<function=([^>\n]*)>(.*?)(?:</function>\s*|\Z)", re.S)
_PARAM_RE = re.compile(r"<parameter=([^>\n]+)>\n?(.*?)\n?</parameter>", re.S)


def parse_completion(
    text: str,
    fmt: FormatName = "qwen35",
    tools: dict[str, dict[str, Any]] | None = None,
    thinking: bool = True,
) -> Parsed:
    """Parse model output produced after the generation prompt.

    `tools` maps tool names to their JSON-schema `parameters`; when given, calls to unknown
    functions and arguments that do not fit the schema become errors and values are converted.
    """
    out = Parsed()
    text = text.replace(IM_END, "")
    if thinking or text.lstrip().startswith(THINK_OPEN):
        body = text.lstrip()
        if body.startswith(THINK_OPEN):
            body = body[len(THINK_OPEN) :]
        if THINK_CLOSE in body:
            reasoning, _, text = body.partition(THINK_CLOSE)
            out.reasoning = reasoning.strip()
        else:
            out.reasoning = body.strip()
            out.errors.append(ParseError("unclosed_think", "the reasoning was never closed with </think>"))
            return out
    pieces = []
    last = 0
    for m in _CALL_RE.finditer(text):
        pieces.append(text[last : m.start()])
        last = m.end()
        raw = m.group(0)
        inner = m.group(1)
        if (
            not raw.rstrip().endswith("</tool_call>")
            and text[m.end() :].strip() == ""
            and inner.strip() == ""
        ):
            out.errors.append(ParseError("unclosed_call", "a <tool_call> was opened but holds nothing"))
            continue
        call, err = _parse_one(inner, fmt)
        if err:
            out.errors.append(err)
            continue
        assert call is not None
        _add_checked(out, call, tools)
    rest = "".join(pieces) + text[last:]
    if fmt == "hermes" and not pieces and not out.errors:
        # No tagged call: a hermes model may have written it as bare or fenced JSON (bare_calls).
        found = bare_calls(rest)
        if found is not None:
            for call in found[0]:
                _add_checked(out, call, tools)
            rest = found[1]
    if "</tool_call>" in rest or "<function=" in rest:
        out.errors.append(
            ParseError("stray_tag", "found </tool_call> or <function=…> outside a <tool_call> block")
        )
    out.content = rest.strip()
    return out


def _add_checked(out: Parsed, call: ToolCall, tools: dict[str, dict[str, Any]] | None) -> None:
    """Add `call` to `out`, or the error that says why it does not fit the tools."""
    if tools is not None:
        if call.name not in tools:
            known = ", ".join(sorted(tools)) or "none"
            out.errors.append(
                ParseError("unknown_function", f"there is no function {call.name!r}; available: {known}")
            )
            return
        try:
            call.arguments = check_arguments(call.name, tools[call.name], call.arguments)
        except ToolError as e:
            out.errors.append(ParseError("bad_arguments", str(e)))
            return
    out.calls.append(call)


def _parse_one(inner: str, fmt: FormatName) -> tuple[ToolCall | None, ParseError | None]:
    inner_stripped = inner.strip()
    if inner_stripped.startswith("<function=") or (fmt == "qwen35" and not inner_stripped.startswith("{")):
        fm = _FUNC_RE.match(inner)
        if not fm or not fm.group(1).strip():
            return None, ParseError("no_function", "a <tool_call> must hold <function=NAME>…</function>")
        args: dict[str, Any] = {}
        for pm in _PARAM_RE.finditer(fm.group(2)):
            args[pm.group(1).strip()] = pm.group(2)
        leftover = _PARAM_RE.sub("", fm.group(2)).strip()
        if "<parameter=" in leftover:
            return None, ParseError("unclosed_call", "a <parameter=…> was never closed with </parameter>")
        return ToolCall(fm.group(1).strip(), args), None
    try:
        obj = json.loads(inner_stripped)
    except json.JSONDecodeError as e:
        return None, ParseError("bad_json", f"the tool call is not valid JSON ({e.msg} at char {e.pos})")
    except (ValueError, RecursionError) as e:  # an integer past Python's digit limit, or nesting too deep
        return None, ParseError("bad_json", f"the tool call's JSON cannot be read ({_reason(e)})")
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None, ParseError("no_function", 'a JSON tool call needs {"name": …, "arguments": {…}}')
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):
            return None, ParseError("bad_json", "the call's arguments are a string that is not JSON")
    if not isinstance(args, dict):
        return None, ParseError("bad_arguments", "the call's arguments must be a JSON object")
    return ToolCall(obj["name"], args), None


def _reason(e: BaseException) -> str:
    if isinstance(e, RecursionError):
        return "nested too deeply"
    return " ".join(str(e).split())[:120]
