"""A backend on any OpenAI-compatible server: vLLM, llama.cpp's server, `botpsy serve`.

The agent keeps its conversation as token ids and hands the engine the ids of the whole prompt.
Here the ids are UTF-8 bytes (as in the oracle), so the prompt text is exact, and one of two
endpoints turns it into a completion:

* `completions` (`POST /v1/completions`): the rendered prompt goes as is and the server continues
  it; the model sees exactly what the on-device llama.cpp backend would feed it. vLLM and
  llama.cpp's server offer it; the server must know botpsy's chat format (the model's own).
* `chat` (`POST /v1/chat/completions`): the prompt is read back into messages and tools (it was
  rendered by botpsy's `ChatFormat`, so the reading is exact) and the server renders it with its
  own template; the reply's content, reasoning and tool calls are written back in botpsy's format
  for the agent to parse. `botpsy serve` offers only this one.

`mode="auto"` uses `completions` and falls back to `chat` for good when the server has no such
route. Token counts come from the server's `usage`; `count_tokens` asks `/tokenize` (vLLM and
llama.cpp both have one) and otherwise estimates four bytes a token. Every failure — refused
connection, HTTP error, malformed reply — is an `EngineError` naming the server and the cause.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from botpsy.engine.base import EngineBase, EngineError, Generation
from botpsy.protocol.formats import (
    HERMES_PREAMBLE,
    IM_END,
    QWEN35_PREAMBLE,
    THINK_CLOSE,
    THINK_OPEN,
    ChatFormat,
)
from botpsy.protocol.messages import Message, StepTiming, ToolCall

_BLOCK_RE = re.compile(r"<\|im_start\|>(system|user|assistant)\n(.*?)<\|im_end\|>", re.S)
_RESPONSE_RE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.S)


def _preamble_parts(fmt: ChatFormat) -> tuple[str, str]:
    preamble = QWEN35_PREAMBLE if fmt.name == "qwen35" else HERMES_PREAMBLE
    head, _, tail = preamble.partition("{tools}")
    return head, tail.replace("{{", "{").replace("}}", "}")


def prompt_to_messages(prompt: str, fmt: ChatFormat) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Read a prompt rendered by `fmt` back into OpenAI messages and tools."""
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    head, tail = _preamble_parts(fmt)
    call_ids: list[str] = []
    n_calls = 0
    for role, body in _BLOCK_RE.findall(prompt):
        if role == "system":
            if body.startswith(head) and tail in body:
                listing, _, rest = body[len(head) :].partition(tail)
                tools = [json.loads(line) for line in listing.splitlines() if line.strip()]
                body = rest.strip()
            if body:
                messages.append({"role": "system", "content": body})
        elif role == "user":
            results = _RESPONSE_RE.findall(body)
            if results and not _RESPONSE_RE.sub("", body).strip():
                for r in results:
                    tid = call_ids.pop(0) if call_ids else f"call_{n_calls}"
                    messages.append({"role": "tool", "tool_call_id": tid, "content": r})
            else:
                messages.append({"role": "user", "content": body.strip()})
        else:
            schemas = {
                t["function"]["name"]: t["function"].get("parameters", {}) for t in tools if "function" in t
            }
            parsed = fmt.parse(body, schemas or None, thinking=body.lstrip().startswith(THINK_OPEN))
            msg: dict[str, Any] = {"role": "assistant", "content": parsed.content}
            if parsed.reasoning:
                msg["reasoning_content"] = parsed.reasoning
            if parsed.calls:
                call_ids = []
                msg["tool_calls"] = []
                for c in parsed.calls:
                    n_calls += 1
                    cid = f"call_{n_calls}"
                    call_ids.append(cid)
                    msg["tool_calls"].append(
                        {
                            "id": cid,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": json.dumps(c.arguments, ensure_ascii=False),
                            },
                        }
                    )
            messages.append(msg)
    return messages, tools


def reply_to_text(message: dict[str, Any], fmt: ChatFormat, thinking: bool) -> str:
    """A chat reply written as the completion botpsy's format expects after its generation prompt."""
    calls = []
    for tc in message.get("tool_calls") or []:
        fn = tc.get("function", tc)
        args = fn.get("arguments") or {}
        if isinstance(args, str):
            try:
                args = json.loads(args or "{}")
            except json.JSONDecodeError:
                args = {"_unparsed": args}
        calls.append(ToolCall(fn.get("name", ""), args))
    content = message.get("content") or ""
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    if thinking and THINK_CLOSE in content and not reasoning:  # a server that leaves <think> in content
        reasoning, _, content = content.partition(THINK_CLOSE)
        reasoning = reasoning.replace(THINK_OPEN, "")
    m = Message("assistant", content, reasoning, calls)
    return fmt.completion(m, thinking=thinking).removesuffix(IM_END)


class OpenAIHTTPEngine(EngineBase):
    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        chat_format: str = "qwen35",
        mode: str = "auto",
        timeout_s: float = 600.0,
        api_key: str | None = None,
    ):
        if mode not in ("auto", "completions", "chat"):
            raise EngineError(f"unknown mode {mode!r}; expected auto, completions or chat")
        self.base = base_url.rstrip("/")
        self.model = model
        self.chat_format = ChatFormat(chat_format)  # type: ignore[arg-type]
        self.mode = mode
        self.timeout_s = timeout_s
        self.api_key = api_key
        self.thinking = True
        self.name = model or self.base.split("//", 1)[-1]
        self._tokenize_route: str | None | bool = None  # None: not probed yet; False: none

    # ---- transport -------------------------------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(
            self.base + path,
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return json.loads(r.read().decode() or "{}")
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")[:300]
            raise _HTTPStatus(e.code, f"{self.base}{path} answered {e.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            reason = getattr(e, "reason", e)
            raise EngineError(f"cannot reach {self.base}{path}: {reason}; is the server running?") from None
        except json.JSONDecodeError:
            raise EngineError(f"{self.base}{path} did not answer JSON") from None

    # ---- tokens ----------------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        return list(text.encode())

    def detokenize(self, ids: list[int]) -> str:
        return bytes(ids).decode("utf-8", errors="replace")

    def count_tokens(self, text: str) -> int:
        """The server's token count for `text` when it has /tokenize, else about 4 bytes a token."""
        if not text:
            return 0
        root = self.base.removesuffix("/v1")
        if self._tokenize_route is not False:
            for path, body, key in (
                (root + "/tokenize", {"model": self.model, "prompt": text}, "count"),
                (root + "/tokenize", {"content": text}, "tokens"),
            ):
                if self._tokenize_route not in (None, path + key):
                    continue
                try:
                    req = urllib.request.Request(
                        path, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
                    )
                    with urllib.request.urlopen(req, timeout=30) as r:
                        got = json.loads(r.read().decode()).get(key)
                    n = got if isinstance(got, int) else len(got) if isinstance(got, list) else None
                    if n is not None:
                        self._tokenize_route = path + key
                        return n
                except (
                    urllib.error.URLError,
                    TimeoutError,
                    ConnectionError,
                    json.JSONDecodeError,
                    AttributeError,
                ):
                    pass
            self._tokenize_route = False
        return max(1, round(len(text.encode()) / 4))

    # ---- generation ------------------------------------------------------------------------------
    def generate(
        self,
        prompt_ids: list[int],
        max_tokens: int = 512,
        temperature: float = 0.0,
        on_text: Callable[[str], None] | None = None,
    ) -> Generation:
        prompt = self.detokenize(prompt_ids)
        t0 = time.perf_counter()
        if self.mode in ("auto", "completions"):
            try:
                text, stop, usage = self._complete(prompt, max_tokens, temperature)
            except _HTTPStatus as e:
                if self.mode == "completions" or e.code not in (404, 405, 501):
                    raise EngineError(str(e)) from None
                self.mode = "chat"  # this server has no raw completions: use chat from now on
        if self.mode == "chat":
            try:
                text, stop, usage = self._chat(prompt, max_tokens, temperature)
            except _HTTPStatus as e:
                raise EngineError(str(e)) from None
        elapsed = time.perf_counter() - t0
        if on_text:
            on_text(text)
        ids = self.tokenize(text)
        n_gen = int(usage.get("completion_tokens") or self.count_tokens(text))
        timing = StepTiming(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            cached_tokens=int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0),
            generated_tokens=n_gen,
            ttft_s=elapsed,
            decode_tok_s=n_gen / elapsed if elapsed > 0 else 0.0,
            total_s=elapsed,
        )
        return Generation(ids + self.tokenize(IM_END), text, stop, timing)

    def _complete(self, prompt: str, max_tokens: int, temperature: float) -> tuple[str, str, dict[str, Any]]:
        body = {
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stop": [IM_END],
            "skip_special_tokens": False,
        }
        if self.model:
            body["model"] = self.model
        r = self._post("/completions", body)
        try:
            choice = r["choices"][0]
            text = choice.get("text") or ""
        except (KeyError, IndexError, TypeError):
            raise EngineError(f"{self.base}/completions answered without choices: {str(r)[:200]}") from None
        return text.removesuffix(IM_END), _stop(choice.get("finish_reason")), r.get("usage") or {}

    def _chat(self, prompt: str, max_tokens: int, temperature: float) -> tuple[str, str, dict[str, Any]]:
        messages, tools = prompt_to_messages(prompt, self.chat_format)
        # The open assistant turn at the end says whether thinking is on (an empty think block: off).
        thinking = not prompt.rstrip("\n").endswith(THINK_CLOSE)
        body: dict[str, Any] = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature}
        if tools:
            body["tools"] = tools
        if self.model:
            body["model"] = self.model
        r = self._post("/chat/completions", body)
        try:
            choice = r["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise EngineError(
                f"{self.base}/chat/completions answered without a message: {str(r)[:200]}"
            ) from None
        text = reply_to_text(message, self.chat_format, thinking)
        return text, _stop(choice.get("finish_reason")), r.get("usage") or {}


class _HTTPStatus(EngineError):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _stop(finish_reason: Any) -> str:
    return "length" if finish_reason == "length" else "eos"
