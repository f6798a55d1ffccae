"""`botpsy serve`: an OpenAI-compatible chat-completions server on the same engine as the assistant.

For clients that speak the OpenAI API, and for evaluation suites whose user simulator needs an
endpoint (τ²-bench through litellm). Standard library only (`http.server`), because the runtime
must stay small and one llama.cpp context serves one request at a time anyway (a lock serialises
them; llama.cpp's prefix cache then reuses whatever the previous request shared with this one).

Endpoints: `GET /v1/models`, `GET /health`, `POST /v1/chat/completions` with `messages`, optional
`tools`, `max_tokens`, `temperature`, `stream`. Tool calls come back in OpenAI's shape
(`choices[0].message.tool_calls`, `finish_reason: "tool_calls"`). A malformed request gets a 400
with a JSON error naming what was wrong; the server keeps serving.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botpsy.engine.base import EngineError
from botpsy.protocol.messages import Message


class BadRequest(Exception):
    pass


def _messages(body: dict[str, Any]) -> list[Message]:
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise BadRequest("'messages' must be a non-empty list")
    out = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            raise BadRequest(f"messages[{i}] needs a role of system, user, assistant or tool")
        content = m.get("content") or ""
        if isinstance(content, list):  # OpenAI content parts: keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise BadRequest(f"messages[{i}].content must be text")
        try:
            msg = Message.from_dict({**m, "content": content})
        except (KeyError, TypeError, json.JSONDecodeError) as e:
            raise BadRequest(f"messages[{i}] has malformed tool_calls: {e}") from None
        out.append(msg)
    return out


def _tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise BadRequest("'tools' must be a list")
    for i, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise BadRequest(f"tools[{i}] must be {{'type': 'function', 'function': {{'name': …}}}}")
    return tools


class ChatService:
    def __init__(self, engine, model_name: str | None = None):
        self.engine = engine
        self.model_name = model_name or engine.name
        self.lock = threading.Lock()

    def complete(self, body: dict[str, Any], on_text=None) -> dict[str, Any]:
        msgs = _messages(body)
        tools = _tools(body)
        try:
            max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 512)
            temperature = float(body.get("temperature") or 0.0)
        except (TypeError, ValueError):
            raise BadRequest("max_tokens must be an integer and temperature a number") from None
        if max_tokens <= 0:
            raise BadRequest("max_tokens must be positive")
        fmt = self.engine.chat_format
        thinking = getattr(self.engine, "thinking", True)
        prompt = fmt.render(msgs, tools or None, add_generation_prompt=True, thinking=thinking)
        with self.lock:
            ids = self.engine.tokenize(prompt)
            gen = self.engine.generate(ids, max_tokens, temperature, on_text=on_text)
        schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools}
        parsed = fmt.parse(gen.text, schemas if tools else None, thinking=thinking)
        message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
        if parsed.reasoning:
            message["reasoning_content"] = parsed.reasoning
        if parsed.calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
                }
                for c in parsed.calls
            ]
        if parsed.errors and not parsed.calls and not parsed.content:
            message["content"] = gen.text  # let the client see what the model said
        finish = "tool_calls" if parsed.calls else ("length" if gen.stop == "length" else "stop")
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


def make_handler(service: ChatService):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet by default
            pass

        def _json(self, code: int, obj: dict[str, Any]) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, code: int, message: str) -> None:
            self._json(
                code,
                {
                    "error": {
                        "message": message,
                        "type": "invalid_request_error" if code == 400 else "server_error",
                    }
                },
            )

        def do_GET(self):
            if self.path.rstrip("/") in ("/health", ""):
                return self._json(200, {"status": "ok"})
            if self.path.rstrip("/") == "/v1/models":
                return self._json(
                    200, {"object": "list", "data": [{"id": service.model_name, "object": "model"}]}
                )
            self._error(404, f"no route {self.path}")

        def do_POST(self):
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._error(404, f"no route {self.path}")
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                if not isinstance(body, dict):
                    raise BadRequest("the request body must be a JSON object")
                if body.get("stream"):
                    return self._stream(body)
                self._json(200, service.complete(body))
            except (json.JSONDecodeError, UnicodeDecodeError):
                self._error(400, "the request body is not valid JSON")
            except BadRequest as e:
                self._error(400, str(e))
            except EngineError as e:
                self._error(400, str(e))
            except Exception as e:  # keep serving whatever happens to one request
                self._error(500, f"{type(e).__name__}: {e}")

        def _stream(self, body: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            cid = f"chatcmpl-{uuid.uuid4().hex[:16]}"

            def send(delta: dict[str, Any], finish: str | None = None) -> None:
                chunk = {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": service.model_name,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()

            send({"role": "assistant"})
            # Reasoning streams token by token; the answer and any tool calls follow in one final
            # delta once parsed, so a client never sees half a <tool_call> as content.
            seen = {"text": "", "reasoning_sent": 0}

            def on_text(piece: str) -> None:
                seen["text"] += piece
                head = seen["text"].split("</think>", 1)[0]
                safe = len(head) if "</think>" in seen["text"] else max(len(head) - len("</think>"), 0)
                if safe > seen["reasoning_sent"]:
                    send({"reasoning_content": head[seen["reasoning_sent"] : safe]})
                    seen["reasoning_sent"] = safe

            try:
                result = service.complete(body, on_text=on_text)
            except (BadRequest, EngineError) as e:
                self.wfile.write(f"data: {json.dumps({'error': {'message': str(e)}})}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True
                return
            msg = result["choices"][0]["message"]
            final: dict[str, Any] = {"content": msg.get("content", "")}
            if "tool_calls" in msg:
                final["tool_calls"] = [{**c, "index": i} for i, c in enumerate(msg["tool_calls"])]
            send(final, result["choices"][0]["finish_reason"])
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


def make_server(engine, host: str = "127.0.0.1", port: int = 8080) -> ThreadingHTTPServer:
    return ThreadingHTTPServer((host, port), make_handler(ChatService(engine)))
