"""The OpenAI request options that change what `botpsy serve` may generate, checked at the edge.

Issue 36, item 8: `tool_choice`, `n`, `response_format`, `stop` and `stream_options` used to be
read by nobody, so a client that asked for "no tools", "a call to get_weather", "JSON" or "stop
at a blank line" got whatever the model did, with an HTTP 200. Each is now either enforced or
refused with a 400 that says what is supported:

* `tool_choice`: "auto" (default), "none" (tools are not shown to the model and generation stops
  at `<tool_call>`), "required" or `{"type": "function", "function": {"name": N}}` (a grammar
  forces one or more calls, to N only; `serve_grammar`). Forcing needs a backend that decodes
  under a grammar (llama.cpp); others answer 400.
* `parallel_tool_calls: false`: at most one call (the grammar's and the parser's limit).
* `response_format`: "text", "json_object" or "json_schema" (a grammar holds the answer to JSON,
  or to the schema). A JSON answer and tools the model may call at will do not mix (the answer
  is either); with tools, send `tool_choice` "none" (answer in JSON) or "required".
* `stop`: up to 4 non-empty strings; the answer ends before the first one (not the reasoning,
  which would otherwise end at the first "\\n" a client asks to stop at, and not the tool-call
  markup: stop strings apply to the text before any `<tool_call>`).
* `n`: 1 only (one llama.cpp context generates one sequence at a time); larger is a 400.
* `stream_options.include_usage`: a last chunk with empty `choices` and the `usage` (streams only).
* `logprobs`, `top_logprobs`, `logit_bias`, the deprecated `functions` / `function_call`,
  `frequency_penalty` or `presence_penalty` other than 0, and a `seed` or a `top_p` other than 1
  when sampling with a temperature (greedy decoding honours both trivially): 400, because nothing
  here can honour them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botpsy.serve_errors import BadRequest, kind_of
from botpsy.serve_schema import check_schema

MAX_STOP = 4  # OpenAI's limit


@dataclass(frozen=True)
class Options:
    tool_choice: str = "auto"  # "auto", "none", "required" or "function" (then `tool_name`)
    tool_name: str | None = None
    parallel_tool_calls: bool = True
    response_format: str = "text"  # "text", "json_object" or "json_schema" (then `json_schema`)
    json_schema: dict[str, Any] | None = None
    stop: tuple[str, ...] = ()
    include_usage: bool = False

    @property
    def forced(self) -> bool:
        return self.tool_choice in ("required", "function")


def _tool_choice(value: Any, names: list[str]) -> tuple[str, str | None]:
    if value is None or value == "auto":
        return "auto", None
    if value in ("none", "required"):
        if value == "required" and not names:
            raise BadRequest("tool_choice 'required' needs at least one entry in 'tools'")
        return value, None
    fn = value.get("function") if isinstance(value, dict) and value.get("type") == "function" else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise BadRequest(
            "tool_choice must be 'auto', 'none', 'required' or "
            f"{{'type': 'function', 'function': {{'name': …}}}}, got {repr(value)[:120]}"
        )
    if fn["name"] not in names:
        known = ", ".join(names[:20]) or "none (send 'tools')"
        raise BadRequest(
            f"tool_choice names the function {fn['name'][:80]!r}, which 'tools' does not hold; tools: {known}"
        )
    return "function", fn["name"]


def _response_format(value: Any) -> tuple[str, dict[str, Any] | None]:
    if value is None:
        return "text", None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind in ("text", "json_object"):
        return kind, None
    if kind == "json_schema":
        spec = value.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("schema", {}), dict):
            raise BadRequest(
                "response_format.json_schema must be {'name': …, 'schema': {…}}, got "
                f"{kind_of(spec) if not isinstance(spec, dict) else 'a schema of ' + kind_of(spec.get('schema'))}"
            )
        schema = spec.get("schema") or {}
        check_schema(schema, "response_format.json_schema.schema", tag_names=False)
        return kind, schema
    raise BadRequest(
        "response_format.type must be 'text', 'json_object' or 'json_schema', got "
        f"{repr(kind)[:80] if isinstance(value, dict) else kind_of(value)}"
    )


def _stop(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if (
        not isinstance(stops, list)
        or not 1 <= len(stops) <= MAX_STOP
        or not all(isinstance(s, str) and s for s in stops)
    ):
        raise BadRequest(
            f"stop must be a non-empty string or a list of 1 to {MAX_STOP} non-empty strings, got "
            f"{kind_of(value) if not isinstance(value, list) else f'a list of {len(value)}'}"
        )
    return tuple(stops)


def _flag(body: dict[str, Any], key: str, default: bool) -> bool:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BadRequest(f"{key} must be true or false, got {kind_of(value)}")
    return value


# Sampling knobs the engine does not take per request, with the value that asks for nothing.
NEUTRAL = {"top_p": 1, "frequency_penalty": 0, "presence_penalty": 0}


def _sampling(body: dict[str, Any]) -> None:
    """Refuse a sampling knob the server would otherwise ignore. Its neutral value (or null) passes,
    and so do `seed` and `top_p` when decoding is greedy (temperature 0, the default), where they
    change nothing: τ²-bench's simulators, for one, send a seed with every request."""
    temperature = body.get("temperature")
    greedy = temperature is None or (isinstance(temperature, int | float) and temperature == 0)
    for key, neutral in NEUTRAL.items():
        value = body.get(key)
        if value is None or (key == "top_p" and greedy):
            continue
        if isinstance(value, int | float) and not isinstance(value, bool) and value == neutral:
            continue
        raise BadRequest(
            f"{key}={value!r} is not supported by this server (sampling is greedy or by temperature "
            f"only); leave it out or send {neutral}"
        )
    if body.get("seed") is not None and not greedy:
        raise BadRequest(
            "seed is not supported per request with temperature > 0 (the server's sampler is seeded "
            "when it starts); leave it out, or decode greedily (temperature 0)"
        )


def parse_options(body: dict[str, Any], tool_names: list[str], stream: bool) -> Options:
    """The options of a request body whose `tools` were already checked (`tool_names`)."""
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int)):
        raise BadRequest(f"n must be an integer, got {kind_of(n)}")
    if n is not None and n != 1:
        raise BadRequest(
            f"only n=1 is supported (one choice per request), got n={n}; send n separate requests"
        )
    for key in ("functions", "function_call"):
        if body.get(key) is not None:
            raise BadRequest(
                f"'{key}' is the deprecated form of function calling; send 'tools' and 'tool_choice'"
            )
    if _flag(body, "logprobs", False) or body.get("top_logprobs") is not None:
        raise BadRequest("logprobs are not supported by this server; leave out logprobs and top_logprobs")
    if body.get("logit_bias"):
        raise BadRequest("logit_bias is not supported by this server; leave it out")
    _sampling(body)
    choice, name = _tool_choice(body.get("tool_choice"), tool_names)
    fmt, schema = _response_format(body.get("response_format"))
    if fmt != "text" and tool_names and choice == "auto":
        raise BadRequest(
            f"response_format {fmt!r} with tools the model may call at will is not supported: send "
            "tool_choice 'none' for a JSON answer, or 'required' / a function for a call"
        )
    opts = body.get("stream_options")
    include_usage = False
    if opts is not None:
        if not stream:
            raise BadRequest("stream_options is only allowed with stream: true")
        if not isinstance(opts, dict):
            raise BadRequest(f"stream_options must be an object, got {kind_of(opts)}")
        unknown = sorted(set(opts) - {"include_usage"})
        if unknown:
            raise BadRequest(f"stream_options.{unknown[0][:40]} is not supported; only include_usage is")
        include_usage = _flag(opts, "include_usage", False)
    return Options(
        tool_choice=choice,
        tool_name=name,
        parallel_tool_calls=_flag(body, "parallel_tool_calls", True),
        response_format=fmt,
        json_schema=schema,
        stop=_stop(body.get("stop")),
        include_usage=include_usage,
    )
