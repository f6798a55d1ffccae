"""BFCL v4 with the official data and checkers (`bfcl-eval`), run through botpsy's agent and backends.

    botpsy eval bfcl --backend oracle --categories simple_python,multiple,parallel,parallel_multiple,irrelevance --json
    botpsy eval bfcl --model embedded --categories non_live --limit 20 --out reports/bfcl

Every offline category is covered: simple (python, java, javascript), multiple, parallel,
parallel_multiple, irrelevance, the five live ones plus live_relevance, and the four multi-turn
ones. Memory and web search need the network to generate and are left out.

The path of one item: BFCL's function docs (with the language hints BFCL's inference adds) become
botpsy `Tool`s; the question goes to botpsy's `Agent` over the chosen engine in botpsy's own chat
format; the parsed calls become the decoded form BFCL's FC handlers produce
(`[{name: {arg: value}}]`, or call strings for execution); the official checker judges them in a
child process (`bfcl_worker`), because it `eval()`s strings. Multi-turn items execute their calls on
BFCL's simulated APIs in that same child process, turn by turn, as BFCL's inference does.

Where botpsy differs from BFCL's own inference, on purpose:
* the prompt is botpsy's (tools as JSON lines in the system turn, Qwen3.5 XML or hermes calls),
  because that is how the model is deployed;
* single-turn items get one model step (as in BFCL); in multi-turn items an unparseable step goes
  back to the model as an error, as in botpsy's runtime, instead of ending the turn; the step
  limit per turn is BFCL's (20 steps, then the item is force-terminated and fails);
* functions BFCL adds mid-conversation (miss_func) are listed in that turn's user message, since
  the history is append-only token ids and the system turn cannot change;
* the agent's grounding guard runs (`agent.grounding`): a call holding a number the question
  never states is not made, so the item is scored as no call; the model's own output is judged
  too, and `model_accuracy` beside `accuracy` is the model alone, from the same run;
* the six live_irrelevance items whose question has earlier turns get them as a transcript in the
  last user message.

Aggregation follows the leaderboard (`generate_leaderboard_csv`): non-live = unweighted mean of
simple (itself the mean of python/java/javascript), multiple, parallel, parallel_multiple; live =
count-weighted mean of the four live AST categories; hallucination = mean of irrelevance and
live_irrelevance; relevance = live_relevance; multi-turn = unweighted mean of its four; overall =
10% non-live + 10% live + 10% hallucination + 30% multi-turn + 40% agentic. `overall` in the JSON
renormalises these weights over the groups that were run (so a partial run can reach 100%);
`overall_leaderboard` is the official formula with missing groups — always agentic, offline —
counted as 0.
"""

from __future__ import annotations

import ast
import json
import os
import select
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botpsy.agent.loop import Agent, AgentConfig
from botpsy.engine.base import Engine, EngineError
from botpsy.eval.bfcl_literals import source_literal
from botpsy.eval.runs import ItemResult, ResultCache, failure_counts, run_items, token_counter, trace_figures
from botpsy.protocol.arguments import ToolError, coerce
from botpsy.protocol.formats import ChatFormat, Parsed, ParseError, parse_completion
from botpsy.protocol.messages import Message, ToolCall
from botpsy.tools.base import Labels, Tool, Toolbox

NON_LIVE = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
]
LIVE = [
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
]
MULTI_TURN = ["multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"]
CATEGORIES = NON_LIVE + LIVE + MULTI_TURN
GROUPS = {
    "all": CATEGORIES,
    "single_turn": NON_LIVE + LIVE,
    "non_live": NON_LIVE,
    "live": LIVE,
    "multi_turn": MULTI_TURN,
    "python": ["simple_python", "multiple", "parallel", "parallel_multiple"],
}
# Items whose official ground truth fails the official checker whatever a model writes (checked
# with the oracle): the oracle's figure on these categories is below 100% by exactly these.
KNOWN_UNPASSABLE = {
    "simple_java_36": "ArrayList<any> of mixed values: the converter turns every element into a string",
    "simple_java_65": "ArrayList<any> of mixed values: the converter turns every element into a string",
    "simple_java_64": "a HashMap answer stored as a plain dict: only an empty map passes the dict checker",
    "live_simple_106-63-0": "required parameters whose possible answers are empty lists",
    "live_simple_112-68-0": "the answer omits required parameters the checker demands",
    "live_multiple_507-149-4": "required origin_airport may only be omitted, which the checker rejects",
    "live_multiple_862-181-3": "the answer uses journey_start_time, which the function does not declare",
    "live_multiple_964-207-0": "the answer names a parameter 'question'; the function declares 'statement'",
    # Typed integers for string-enum parameters: passable in JSON (hermes) calls only, since
    # Qwen3.5's XML values are text converted by the declared schema.
    "live_multiple_595-158-1": "qwen35 only: number_of_rooms answered as an integer, declared a string enum",
    "live_multiple_596-158-2": "qwen35 only: number_of_rooms answered as an integer, declared a string enum",
    "simple_javascript_43": "qwen35 only: the answer is the JavaScript source text null, which XML values read as None",
}
STEP_LIMIT = 20  # BFCL's MAXIMUM_STEP_LIMIT per multi-turn turn
ADDED_FUNCTIONS_PROMPT = (
    "I have updated some more functions you can choose from. What about now?"  # BFCL's wording
)
NOT_EXECUTED = json.dumps({"note": "BFCL single-turn items are judged on the calls; nothing was executed"})


def parse_categories(spec: str | list[str] | None) -> list[str]:
    """`simple_python,live` → the categories in order, groups expanded, duplicates dropped."""
    if not spec:
        return list(GROUPS["non_live"])
    parts = spec if isinstance(spec, list) else spec.split(",")
    out: list[str] = []
    for p in (x.strip() for part in parts for x in part.split(",")):
        if not p:
            continue
        names = GROUPS.get(p, [p])
        for n in names:
            if n not in CATEGORIES:
                known = ", ".join(list(GROUPS) + CATEGORIES)
                raise ValueError(f"unknown BFCL category {n!r}; known: {known}")
            if n not in out:
                out.append(n)
    return out


def bfcl_root() -> Path:
    """BFCL writes result/score/lock folders under BFCL_PROJECT_ROOT at import: point it somewhere writable."""
    root = Path(os.environ.get("BFCL_PROJECT_ROOT") or Path.home() / ".cache" / "botpsy" / "bfcl")
    root.mkdir(parents=True, exist_ok=True)
    os.environ["BFCL_PROJECT_ROOT"] = str(root)
    return root


def require_bfcl() -> None:
    bfcl_root()
    try:
        import bfcl_eval.utils  # noqa: F401
    except ImportError as e:
        raise ValueError(
            f"BFCL needs the bfcl-eval package ({e}); install the eval extra: pip install -e '.[eval]'"
        ) from None


# ---- data ------------------------------------------------------------------------------------


def load_category(category: str) -> list[dict[str, Any]]:
    """The category's entries as BFCL's inference sees them (language hints added to the docs)."""
    require_bfcl()
    from bfcl_eval.utils import load_dataset_entry

    return load_dataset_entry(category, include_prereq=False, include_language_specific_hint=True)


def load_truth(category: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Possible answers by entry id (aligned by index, as BFCL's runner aligns them); {} for relevance."""
    from bfcl_eval.utils import load_ground_truth_entry

    if "relevance" in category:
        return {}
    return {
        e["id"]: g["ground_truth"] for e, g in zip(entries, load_ground_truth_entry(category), strict=False)
    }


_GORILLA_TYPES = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "long": "integer",
    "short": "integer",
    "byte": "integer",
    "string": "string",
    "char": "string",
    "any": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "ArrayList": "array",
    "Array": "array",
    "dict": "object",
    "object": "object",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
}


def to_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A BFCL parameter schema (Python type names like dict/float/tuple) as JSON schema."""
    out = {k: v for k, v in schema.items() if k not in ("type", "properties", "items")}
    out["type"] = _GORILLA_TYPES.get(schema.get("type", "string"), "string")
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: to_json_schema(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = to_json_schema(schema["items"])
    return out


def _not_executed(state: Any, **kwargs: Any) -> str:
    return NOT_EXECUTED


def bfcl_tools(functions: list[dict[str, Any]]) -> list[Tool]:
    """BFCL function docs as botpsy tools (first of duplicate names wins); no labels: nothing is real."""
    tools, seen = [], set()
    for f in functions:
        if f["name"] in seen:
            continue
        seen.add(f["name"])
        params = to_json_schema({**f.get("parameters", {}), "type": "dict"})
        params.setdefault("properties", {})
        params["required"] = [
            r for r in f.get("parameters", {}).get("required", []) if r in params["properties"]
        ]
        tools.append(Tool(f["name"], _not_executed, f.get("description", ""), params, Labels(), suite="bfcl"))
    return tools


# ---- the oracle: ground truth as assistant turns -----------------------------------------------


def _pick(options: list[Any]) -> tuple[bool, Any]:
    """One acceptable value of a possible answer: (False, None) when leaving the argument out is
    accepted (`""` among the options: always safe, whatever the other options' types), else the
    first option. Dicts in possible answers hold option lists per key, so they are picked from too.
    """
    if not isinstance(options, list) or "" in options or not options:
        return False, None
    return True, _materialise(options[0])


def _materialise(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, opts in value.items():
            keep, v = _pick(opts) if isinstance(opts, list) else (True, opts)
            if keep:
                out[k] = v
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_materialise(v) for v in value]
    return value


def _placeholder(schema: dict[str, Any]) -> Any:
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    return {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}.get(
        schema.get("type"), "x"
    )


def parse_call_string(text: str, functions: dict[str, dict[str, Any]]) -> ToolCall:
    """`sort('final_report.pdf')` → ToolCall("sort", {"file_name": ...}): positional arguments are
    named after the function doc's parameter order (BFCL's gold calls use both forms)."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call):
        raise ValueError(f"not a call: {text!r}")
    name = ast.unparse(node.func)
    order = list(functions.get(name, {}).get("parameters", {}).get("properties", {}))
    args: dict[str, Any] = {}
    for i, a in enumerate(node.args):
        if i >= len(order):
            raise ValueError(f"{text!r}: more positional arguments than {name} has parameters")
        args[order[i]] = ast.literal_eval(a)
    for kw in node.keywords:
        args[kw.arg] = ast.literal_eval(kw.value)  # type: ignore[index]
    return ToolCall(name, args)


def gold_messages(category: str, entry: dict[str, Any], truth: Any) -> list[Message]:
    """The assistant turns a perfect model would produce for one entry, in botpsy's message form."""
    reasoning = "The ground truth."
    if category in MULTI_TURN:
        docs = {f["name"]: f for f in entry["function"]}
        for funcs in entry.get("missed_function", {}).values():
            docs.update({f["name"]: f for f in funcs})
        out = []
        for turn in truth:
            calls = [parse_call_string(s, docs) for s in turn]
            if calls:
                out.append(Message("assistant", "", reasoning, calls))
                out.append(Message("assistant", "Done.", reasoning))
            else:
                out.append(Message("assistant", "I cannot do that with the functions I have.", reasoning))
        return out
    if "irrelevance" in category:
        return [Message("assistant", "None of the available functions fits this request.", reasoning)]
    if category == "live_relevance":
        f = entry["function"][0]
        props = to_json_schema({**f["parameters"], "type": "dict"}).get("properties", {})
        args = {p: _placeholder(props[p]) for p in f["parameters"].get("required", []) if p in props}
        return [Message("assistant", "", reasoning, [ToolCall(f["name"], args)])]
    language = "java" if "java" in category and "javascript" not in category else None
    language = "javascript" if "javascript" in category else language
    raw = _raw_docs(category, entry["id"]) if language else {}
    calls = []
    for answer in truth:
        ((name, params),) = answer.items()
        doc = next((f for f in entry["function"] if f["name"] == name), {})
        required = set(doc.get("parameters", {}).get("required", []))
        args = {}
        for p, options in params.items():
            keep, value = _pick(options)
            others = [o for o in options if o != ""] if isinstance(options, list) else []
            if not keep and p in required and others:  # the checker insists on required arguments
                keep, value = True, _materialise(others[0])
            if keep and language:
                schema = raw.get(name, {}).get("parameters", {}).get("properties", {}).get(p, {})
                value = source_literal(language, value, schema)
            if keep:
                args[p] = value
        calls.append(ToolCall(name, args))
    return [Message("assistant", "", reasoning, calls)]


_RAW: dict[str, dict[str, dict[str, Any]]] = {}


def _raw_docs(category: str, item_id: str) -> dict[str, dict[str, Any]]:
    """The entry's function docs by name, with their declared Java/JavaScript types (no hints)."""
    if category not in _RAW:
        from bfcl_eval.utils import load_dataset_entry

        for e in load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False):
            _RAW[e["id"]] = {f["name"]: f for f in e["function"]}
        _RAW[category] = {}
    return _RAW.get(item_id, {})


# ---- the child process -----------------------------------------------------------------------


class WorkerError(Exception):
    """The BFCL child process failed a request (its message names the cause)."""


class BfclWorker:
    """A long-lived `python -m botpsy.eval.bfcl_worker`; restarted after a crash or a timeout."""

    def __init__(self, timeout_s: float = 120.0):
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen | None = None

    def _start(self) -> None:
        env = {**os.environ, "BFCL_PROJECT_ROOT": str(bfcl_root()), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "botpsy.eval.bfcl_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        hello = self._read(max(self.timeout_s, 180.0))
        if not hello.get("ok"):
            self.close()
            raise ValueError(hello.get("error", "the BFCL worker did not start"))

    def _read(self, timeout: float) -> dict[str, Any]:
        assert self.proc and self.proc.stdout
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.close()
            raise WorkerError(f"the BFCL checker did not answer within {timeout:.0f} s")
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            raise WorkerError("the BFCL checker process died")
        return json.loads(line)

    def request(self, op: str, **kwargs: Any) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc and self.proc.stdin
        try:
            self.proc.stdin.write(json.dumps({"op": op, **kwargs}, default=str) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.close()
            raise WorkerError("the BFCL checker process died") from None
        reply = self._read(self.timeout_s)
        if not reply.get("ok"):
            raise WorkerError(reply.get("error", "unknown checker error"))
        return reply

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self.proc = None

    def __enter__(self) -> BfclWorker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---- environments ------------------------------------------------------------------------------


class StubEnv:
    """Single-turn items: the calls are the answer; executing them returns a note."""

    def __init__(self, tools: list[Tool]):
        self.toolbox = Toolbox(tools)

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        return NOT_EXECUTED


class ApiEnv:
    """Multi-turn items: calls run on BFCL's simulated APIs in the worker, state kept per tag."""

    def __init__(self, tools: list[Tool], worker: BfclWorker, category: str, item_id: str, tag: str):
        self.toolbox = Toolbox(tools)
        self.worker, self.category, self.item_id, self.tag = worker, category, item_id, tag

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        reply = self.worker.request(
            "execute", category=self.category, id=self.item_id, tag=self.tag, calls=[{name: arguments}]
        )
        return str(reply["results"][0]) if reply["results"] else ""


# ---- running one item ----------------------------------------------------------------------------


def _question_text(turn: list[dict[str, Any]]) -> tuple[str, str]:
    """(system text, user text) of one BFCL turn; earlier turns become a transcript."""
    system = "\n\n".join(m["content"] for m in turn if m["role"] == "system")
    rest = [m for m in turn if m["role"] != "system"]
    if not rest:
        return system, ""
    last = rest[-1]["content"]
    if len(rest) > 1:
        history = "\n".join(f"{m['role']}: {m['content']}" for m in rest[:-1])
        last = f"Earlier in this conversation:\n{history}\n\nNow: {last}"
    return system, last


class BfclFormat(ChatFormat):
    """botpsy's chat format with BFCL's tolerance: a call to a known function is kept even when its
    arguments miss the schema (types, required ones), because BFCL executes what the model wrote
    and returns the error as the result; the official docs and answers disagree in a few items.
    Calls to unknown functions stay parse errors: there is nothing to execute."""

    def parse(
        self, text: str, tools: dict[str, dict[str, Any]] | None = None, thinking: bool = True
    ) -> Parsed:
        parsed = parse_completion(text, self.name, None, thinking)
        if tools is None:
            return parsed
        kept = []
        for d, call in zip(decode_for_checker(text, self, tools, thinking), parsed.calls, strict=False):
            if call.name not in tools:
                known = ", ".join(sorted(tools)) or "none"
                parsed.errors.append(
                    ParseError("unknown_function", f"there is no function {call.name!r}; available: {known}")
                )
                continue
            kept.append(ToolCall(call.name, d[call.name]))
        parsed.calls = kept
        return parsed


def _decoded(msg: Message) -> list[dict[str, Any]]:
    return [{c.name: dict(c.arguments)} for c in msg.tool_calls]


def _as_written(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def decode_for_checker(
    text: str, fmt: Any, tools: dict[str, dict[str, Any]], thinking: bool
) -> list[dict[str, Any]]:
    """The calls of one completion in BFCL's decoded form, judged by BFCL rather than by botpsy.

    botpsy's parser drops a call whose arguments miss the schema (and tells the model why); BFCL's
    FC handlers decode whatever JSON the model wrote and let the checker rule on types, missing
    arguments and unknown functions. So every syntactically complete call goes through: values
    are converted with the schema where they fit and kept as written (JSON-decoded if they parse)
    where they do not — the official docs and answers disagree on types in a few items. Hermes
    calls are JSON, so their values are kept exactly as written, as BFCL's Qwen FC handler does.
    """
    out = []
    for call in parse_completion(text, fmt.name, None, thinking).calls:
        if fmt.name == "hermes":
            out.append({call.name: dict(call.arguments)})
            continue
        props = tools.get(call.name, {}).get("properties", {})
        args = {}
        for k, v in call.arguments.items():
            if isinstance(v, str) and v.strip() == "null":  # Qwen3.5's parsers read a bare null as None
                args[k] = None
                continue
            try:
                args[k] = coerce(v, props[k], k) if k in props else _as_written(v)
            except ToolError:
                args[k] = _as_written(v)
        out.append({call.name: args})
    return out


@dataclass(frozen=True)
class BfclConfig:
    max_tokens: int = 512  # generated tokens per model step
    temperature: float = 0.0
    thinking: bool = True
    limit: int | None = None  # items per category (evenly spaced), None for all
    # The agent's grounding guard (agent/grounding.py): a call it holds is scored as no call, and
    # the raw model's verdict is kept beside it (`model_accuracy`).
    grounding_guard: bool = True


def run_item(
    category: str,
    entry: dict[str, Any],
    engine: Engine,
    worker: BfclWorker,
    model: str,
    config: BfclConfig = BfclConfig(),
) -> ItemResult:
    count = token_counter(engine)
    if category in MULTI_TURN:
        return _run_multi_turn(category, entry, engine, worker, model, config, count)
    system, user = _question_text(entry["question"][0])
    agent = Agent(
        engine,
        StubEnv(bfcl_tools(entry["function"])),
        system,
        AgentConfig(
            max_steps=1,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            thinking=config.thinking,
            grounding_guard=config.grounding_guard,
        ),
    )
    agent.fmt = BfclFormat(engine.chat_format.name)
    trace = agent.send(user)
    if trace.stopped == "error":
        raise EngineError(
            next((e.data["message"] for e in trace.events if e.kind == "error"), "backend error")
        )
    first = next((m for m in trace.messages if m.role == "assistant"), Message("assistant"))
    step = next((e for e in trace.events if e.kind == "model"), None)
    output = decode_for_checker(step.data["text"], agent.fmt, agent.tools, config.thinking) if step else []
    held = any(e.kind == "grounding_guard" for e in trace.events)
    # What the agent did: a call the grounding guard held was not made. The model's own output
    # is judged too when the two differ, so the guard's effect stays visible per item.
    verdict = _verdict(worker, category, entry["id"], [] if held else output)
    detail: dict[str, Any] = {"calls": output, "answer": first.content[:300]}
    if held:
        detail.update(held=True, model_ok=bool(_verdict(worker, category, entry["id"], output)["valid"]))
    figs = trace_figures(trace, count)
    return ItemResult(
        "bfcl",
        category,
        entry["id"],
        model,
        bool(verdict["valid"]),
        "" if verdict["valid"] else verdict.get("error_type") or "invalid",
        detail=detail,
        **figs,
    )


def _verdict(worker: BfclWorker, category: str, item_id: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    if "relevance" in category:
        return worker.request("relevance", category=category, output=output)
    return worker.request("ast", category=category, id=item_id, output=output)


def model_ok(r: ItemResult) -> bool:
    """Whether the model's own output (before the agent's guards) passed the checker."""
    return bool(r.detail.get("model_ok", r.ok)) if not r.error else False


def _run_multi_turn(
    category: str,
    entry: dict[str, Any],
    engine: Engine,
    worker: BfclWorker,
    model: str,
    config: BfclConfig,
    count: Callable[[str], int],
) -> ItemResult:
    tag = f"botpsy_{uuid.uuid4().hex[:12]}"
    env = ApiEnv(bfcl_tools(entry["function"]), worker, category, entry["id"], tag)
    agent = Agent(
        engine,
        env,
        "",
        AgentConfig(
            max_steps=STEP_LIMIT + 1,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            thinking=config.thinking,
            grounding_guard=config.grounding_guard,
        ),
    )
    agent.fmt = BfclFormat(engine.chat_format.name)
    missed = entry.get("missed_function", {})
    # Held-out functions are announced at their turn, but BFCL executes any method of the involved
    # classes at any time (one gold answer calls one early): parse and run them from the start.
    for funcs in missed.values():
        for tool in bfcl_tools(funcs):
            if tool.name not in env.toolbox:
                env.toolbox.add(tool)
                agent.tools[tool.name] = tool.parameters
    output: list[list[list[dict[str, Any]]]] = []
    force_quit = False
    try:
        for t, turn in enumerate(entry["question"]):
            if str(t) in missed:
                added = bfcl_tools(missed[str(t)])
                listing = "\n".join(json.dumps(tool.schema(), ensure_ascii=False) for tool in added)
                user = f"<tools>\n{listing}\n</tools>\n{ADDED_FUNCTIONS_PROMPT}"
            else:
                _, user = _question_text(turn)
            start = len(agent.trace.messages)
            trace = agent.send(user)
            output.append(
                [_decoded(m) for m in trace.messages[start:] if m.role == "assistant" and m.tool_calls]
            )
            if trace.stopped == "error":
                raise EngineError(
                    next(
                        (e.data["message"] for e in reversed(trace.events) if e.kind == "error"),
                        "backend error",
                    )
                )
            if trace.stopped == "step_limit":
                force_quit = True
                break
        verdict = worker.request(
            "multi_turn", category=category, id=entry["id"], tag=tag, output=output, force_quit=force_quit
        )
    finally:
        try:
            worker.request("forget", tag=tag)
        except WorkerError:
            pass
    figs = trace_figures(agent.trace, count)
    return ItemResult(
        "bfcl",
        category,
        entry["id"],
        model,
        bool(verdict["valid"]),
        "" if verdict["valid"] else verdict.get("error_type") or "invalid",
        detail={"turns": len(output), "calls": sum(len(s) for turn in output for s in turn)},
        **figs,
    )


# ---- aggregation ----------------------------------------------------------------------------------

GROUP_WEIGHTS = {"non_live": 10, "live": 10, "hallucination": 10, "multi_turn": 30, "agentic": 40}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def aggregate(per_category: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Leaderboard groups and overall from {category: {"accuracy", "total"}} (see the module doc)."""
    acc = {c: v["accuracy"] for c, v in per_category.items()}
    n = {c: v["total"] for c, v in per_category.items()}
    simple = _mean([acc[c] for c in ("simple_python", "simple_java", "simple_javascript") if c in acc])
    non_live = _mean(
        [
            x
            for x in (simple, acc.get("multiple"), acc.get("parallel"), acc.get("parallel_multiple"))
            if x is not None
        ]
    )
    live_cats = [
        c for c in ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple") if c in acc
    ]
    live = sum(acc[c] * n[c] for c in live_cats) / sum(n[c] for c in live_cats) if live_cats else None
    halluc = _mean([acc[c] for c in ("irrelevance", "live_irrelevance") if c in acc])
    multi = _mean([acc[c] for c in MULTI_TURN if c in acc])
    groups = {
        "non_live": non_live,
        "live": live,
        "hallucination": halluc,
        "multi_turn": multi,
        "agentic": None,
        "relevance": acc.get("live_relevance"),
    }
    present = {g: v for g, v in groups.items() if g in GROUP_WEIGHTS and v is not None}
    weight = sum(GROUP_WEIGHTS[g] for g in present)
    overall = sum(GROUP_WEIGHTS[g] * v for g, v in present.items()) / weight if weight else None
    if overall is None and acc:  # only live_relevance was run
        overall = _mean(list(acc.values()))
    leaderboard = sum(GROUP_WEIGHTS[g] * (groups[g] or 0.0) for g in GROUP_WEIGHTS) / sum(
        GROUP_WEIGHTS.values()
    )
    return {
        "overall": overall,
        "overall_leaderboard": leaderboard,
        "groups": {g: v for g, v in groups.items() if v is not None},
        "simple": simple,
    }


@dataclass
class BfclReport:
    model: str
    categories: dict[str, dict[str, Any]]
    summary: dict[str, Any]
    failures: dict[str, int]
    results: list[ItemResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        r4 = lambda x: round(x, 4) if isinstance(x, float) else x  # noqa: E731
        return {
            "suite": "bfcl",
            "model": self.model,
            "overall": r4(self.summary["overall"]),
            "overall_leaderboard": r4(self.summary["overall_leaderboard"]),
            "groups": {k: r4(v) for k, v in self.summary["groups"].items()},
            "categories": {
                c: {**v, "accuracy": r4(v["accuracy"]), "model_accuracy": r4(v.get("model_accuracy"))}
                for c, v in self.categories.items()
            },
            "n": sum(v["total"] for v in self.categories.values()),
            "failures": self.failures,
        }


def sample(entries: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """`limit` entries spread evenly over the category (deterministic), or all of them."""
    if not limit or limit >= len(entries):
        return entries
    step = len(entries) / limit
    return [entries[int(i * step)] for i in range(limit)]


def evaluate_bfcl(
    categories: list[str],
    model: str,
    engine_for: Callable[[str, dict[str, Any], Any], Engine],
    config: BfclConfig = BfclConfig(),
    out: str | Path | None = None,
    progress: Callable[[ItemResult], None] | None = None,
    on_category: Callable[[str, int], None] | None = None,
    worker: BfclWorker | None = None,
    run_config: dict[str, Any] | None = None,
) -> BfclReport:
    """Run `categories` for one model. `engine_for(category, entry, truth)` gives the item's engine
    (the same engine every time for a real model; a fresh oracle per item for the oracle)."""
    require_bfcl()
    cache = ResultCache(out, "bfcl", model, {"model": model, **(run_config or {}), **config.__dict__})
    own = worker is None
    worker = worker or BfclWorker()
    results: list[ItemResult] = []
    per_category: dict[str, dict[str, Any]] = {}
    try:
        for category in categories:
            full = load_category(category)
            entries = sample(full, config.limit)
            truth = load_truth(category, full)
            if on_category:
                on_category(category, len(entries))

            def one(entry: dict[str, Any], category: str = category, truth: dict = truth) -> ItemResult:
                engine = engine_for(category, entry, truth.get(entry["id"]))
                return run_item(category, entry, engine, worker, model, config)

            rs = run_items(((category, e["id"], e) for e in entries), one, cache, "bfcl", model, progress)
            results.extend(rs)
            per_category[category] = {
                "accuracy": sum(r.ok for r in rs) / len(rs) if rs else 0.0,
                "correct": sum(r.ok for r in rs),
                "total": len(rs),
                "held": sum(bool(r.detail.get("held")) for r in rs),
                "model_accuracy": sum(model_ok(r) for r in rs) / len(rs) if rs else 0.0,
            }
    finally:
        if own:
            worker.close()
    return BfclReport(model, per_category, aggregate(per_category), failure_counts(results), results)
