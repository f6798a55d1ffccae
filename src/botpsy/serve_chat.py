"""One chat completion for `botpsy serve`: check, render, tokenize, generate, answer in OpenAI's shape.

The HTTP side (`serve`) hands a request body here and gets back a completion dict; everything
the client asked for is enforced on the way (issue 36, item 8, `serve_options`):

* `tool_choice` "none": the tools are not shown to the model and generation stops at
  `<tool_call>`, so no call comes back; "required" / a named function: a grammar
  (`serve_grammar`) forces the calls; "auto" (the default): the calls the model chooses to make
  are held to the client's tools by the agent's lazy grammar (`serve_grammar.auto_calls_grammar`)
  and their values guided from the user's words (`engine.copy_guide`), as in `botpsy run` and
  every evaluation; `parallel_tool_calls: false` keeps the first call only.
* `response_format` JSON: the same grammar machinery holds the answer to JSON (or the schema).
* `stop`: generation stops once the answer holds a stop string, and the answer ends before it.
* Reasoning cut by `max_tokens` stays reasoning (`reasoning_content`), with finish_reason
  "length"; it never comes back as the answer.

Generation stops early, and the engine is free for the next request, when the caller's
`client_gone()` says the client left (item 10): checked between tokens through the engine's
`should_stop` where it takes one (llama.cpp), else from the per-token text callback, which then
raises `ClientGone`.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botpsy.serve_errors import BadRequest
from botpsy.serve_grammar import accepts, auto_calls_grammar, request_grammar
from botpsy.serve_request import ChatRequest, parse_body

THINK_CLOSE = "</think>"
TOOL_CALL = "<tool_call>"


class ClientGone(Exception):
    """The client left (closed its connection, or stopped reading a stream); nothing to answer."""


@dataclass
class Prepared:
    req: ChatRequest
    ids: list[int]
    grammar: Any = None  # what the engine samples under (serve_grammar), or None


class AnswerWatch:
    """Where the answer must end: at the first stop string, and (tool_choice "none") at the first
    `<tool_call>`. The answer is the text after `</think>` when the model thinks; stop strings
    apply to it up to the first `<tool_call>`, never to reasoning or call markup."""

    def __init__(self, thinking: bool, stops: tuple[str, ...], no_calls: bool):
        self.thinking, self.stops, self.no_calls = thinking, stops, no_calls
        self.active = bool(stops) or no_calls
        self.text = ""
        self.hit = False

    def feed(self, piece: str) -> None:
        self.text += piece
        if not self.hit and self.cut(self.text) is not None:
            self.hit = True

    def cut(self, text: str) -> int | None:
        """The index in `text` where the answer ends, or None when it runs to the end."""
        if not self.active:
            return None
        start = 0
        if self.thinking:
            at = text.find(THINK_CLOSE)
            if at < 0:
                return None
            start = at + len(THINK_CLOSE)
        call = text.find(TOOL_CALL, start)
        if self.no_calls and call >= 0:
            end = call
        else:
            end = len(text) if call < 0 else call
        region = text[start:end]
        found = [i for i in (region.find(s) for s in self.stops) if i >= 0]
        if found:
            return start + min(found)
        return end if self.no_calls and call >= 0 else None


class ChatService:
    def __init__(self, engine, model_name: str | None = None):
        self.engine = engine
        self.model_name = model_name or engine.name
        self.lock = threading.Lock()

    def prepare(self, body: bytes | dict[str, Any]) -> Prepared:
        """Check, render, tokenize and build the grammar; every problem is a BadRequest."""
        req = (
            parse_body(body)
            if isinstance(body, (bytes, bytearray))
            else parse_body(json.dumps(body).encode())
        )
        fmt = self.engine.chat_format
        # tool_choice "none": a model shown no tools has nothing to call (and the watch stops it
        # at a <tool_call> it writes anyway).
        shown = req.tools if req.options.tool_choice != "none" else []
        try:
            prompt = fmt.render(
                req.messages, shown or None, add_generation_prompt=True, thinking=self.engine.thinking
            )
        except (ValueError, TypeError, KeyError, RecursionError) as e:
            raise BadRequest(f"these messages cannot be rendered: {e}") from None
        with self.lock:
            ids = self.engine.tokenize(prompt)
        grammar = request_grammar(self.engine, req.tools, req.options, self.lock)
        if grammar is None:
            grammar = auto_calls_grammar(self.engine, shown, req.options, self.lock)
        n_ctx = self.engine.n_ctx
        if n_ctx is not None and len(ids) > n_ctx - 8:
            raise BadRequest(
                f"the conversation ({len(ids)} tokens) does not fit the context window ({n_ctx}); "
                "shorten it or restart the server with a larger --n-ctx"
            )
        return Prepared(req, ids, grammar)

    def complete(self, body: bytes | dict[str, Any], on_text=None) -> dict[str, Any]:
        return self.generate(self.prepare(body), on_text=on_text)

    def generate(
        self,
        prep: Prepared,
        on_text: Callable[[str], None] | None = None,
        client_gone: Callable[[], bool] | None = None,
    ) -> dict[str, Any]:
        req, opts = prep.req, prep.req.options
        thinking = self.engine.thinking
        watch = AnswerWatch(thinking, opts.stop, opts.tool_choice == "none")
        gone = client_gone or (lambda: False)
        with self.lock:
            if gone():  # it left while an earlier request held the engine
                raise ClientGone()
            gen = self._run(prep, watch, on_text, gone)
        if gone():
            raise ClientGone()
        return self._answer(req, gen, watch)

    def _run(self, prep: Prepared, watch: AnswerWatch, on_text, gone):
        kwargs: dict[str, Any] = {}
        if prep.grammar is not None:
            kwargs["grammar"] = prep.grammar
        stoppable = accepts(self.engine, "should_stop")
        if stoppable:
            kwargs["should_stop"] = lambda: watch.hit or gone()
        guide = self._guide(prep.req)
        if guide is not None:
            kwargs["guide"] = guide

        def text_cb(piece: str) -> None:
            if watch.active:
                watch.feed(piece)
            if on_text is not None:
                on_text(piece)
            if not stoppable and gone():  # an engine without should_stop: abandon it this way
                raise ClientGone()

        need_cb = watch.active or on_text is not None or not stoppable
        req = prep.req
        return self.engine.generate(
            prep.ids, req.max_tokens, req.temperature, on_text=text_cb if need_cb else None, **kwargs
        )

    def _guide(self, req: ChatRequest):
        """The copy guide (`engine.copy_guide`) for the calls of this request, as the agent has one:
        sources are the user's messages only (never a tool result), enums come from the client's
        tools. None without tools shown, or on an engine that takes no guide."""
        if not req.tools or req.options.tool_choice == "none" or not accepts(self.engine, "guide"):
            return None
        users = [m.content for m in req.messages if m.role == "user"]
        return self.engine.copy_guide(users, req.schemas(), req.prior(" ".join(users)))

    def _answer(self, req: ChatRequest, gen, watch: AnswerWatch) -> dict[str, Any]:
        fmt, opts = self.engine.chat_format, req.options
        text = gen.text
        cut = watch.cut(text)
        if cut is not None:
            text = text[:cut]
        use_tools = bool(req.tools) and opts.tool_choice != "none"
        parsed = fmt.parse(text, req.schemas() if use_tools else None, thinking=self.engine.thinking)
        calls = parsed.calls if use_tools else []
        if not opts.parallel_tool_calls:
            calls = calls[:1]
        cut_reasoning = any(e.kind == "unclosed_think" for e in parsed.errors) and gen.stop == "length"
        message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
        if parsed.reasoning:
            message["reasoning_content"] = parsed.reasoning
        if calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
                }
                for c in calls
            ]
        if parsed.errors and not calls and not parsed.content and not cut_reasoning:
            message["content"] = text  # let the client see what the model said
        if calls:
            finish = "tool_calls"
        elif gen.stop == "length" and cut is None:
            finish = "length"
        else:
            finish = "stop"
        t = gen.timing
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": t.prompt_tokens + t.cached_tokens,
                "completion_tokens": t.generated_tokens,
                "total_tokens": t.prompt_tokens + t.cached_tokens + t.generated_tokens,
                "prompt_tokens_details": {"cached_tokens": t.cached_tokens},
            },
        }
