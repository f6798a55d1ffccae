"""`botpsy serve`: an OpenAI-compatible chat-completions server on the same engine as the assistant.

For clients that speak the OpenAI API, and for evaluation suites whose user simulator needs an
endpoint (τ²-bench through litellm). Standard library only (`http.server`), because the runtime
must stay small and one llama.cpp context serves one request at a time anyway (a lock serialises
them; llama.cpp's prefix cache then reuses whatever the previous request shared with this one).

Endpoints: `GET /v1/models`, `GET /health`, `POST /v1/chat/completions` with `messages`, optional
`tools`, `tool_choice`, `parallel_tool_calls`, `response_format`, `stop`, `n` (1), `max_tokens`,
`temperature`, `stream`, `stream_options`. Tool calls come back in OpenAI's shape
(`choices[0].message.tool_calls`, `finish_reason: "tool_calls"`). Every option is enforced or
refused with a 400 (`serve_options`); the completion itself is `serve_chat`'s. A client that
disconnects stops its generation within `GONE_POLL_S` of a token, so an abandoned request does
not hold the engine from the next one.

Under abuse (`ServeConfig` holds the knobs):
* a body over `max_body_bytes` is a 413, refused from its Content-Length before a byte of it is
  read, so a 64 MB POST cannot hold the engine lock or the memory;
* reading a request (request line, headers, body) has one deadline, `read_timeout_s`, enforced by
  a timer that shuts the socket: a per-recv timeout alone lets a client that sends a byte every
  few seconds hold a thread forever;
* every malformed input is a 400 naming the field (`botpsy.serve_request`), checked, rendered and
  tokenized before any header goes out, so a stream that cannot be served is a 400 and not an
  HTTP 200 carrying the error; only a failure during generation still arrives inside the stream;
* with an API key (`api_key`, or the `BOTPSY_API_KEY` environment variable) every /v1 route needs
  `Authorization: Bearer KEY` (401 without it); /health stays open for probes;
* at most `max_connections` connections are served at once (each holds a thread, and its
  request waits for the engine); one more is answered 503 with a JSON error and `Retry-After`
  once its request is read (under a deadline of at most 2 s), on a thread of a second pool of
  the same size; past both, the accepting thread answers 503 itself without reading, so a flood
  of connections can neither hang the server nor grow its threads past 2 × max_connections. A
  connection frees its slot when it closes, at the latest at the read deadline of an idle or
  stalled one (`serve_limits`);
* DNS rebinding: a page on evil.example that rebinds its name to 127.0.0.1 still sends
  `Host: evil.example`, so the Host must be a loopback name, the bound host, an IP literal (an IP
  cannot be rebound), or listed in `allowed_hosts` (`BOTPSY_ALLOWED_HOSTS`, comma-separated; `*`
  turns the check off). A browser's `Origin`, when sent, must name a loopback or allowed host: a
  page served from any other origin cannot make this server generate. Both refusals are 403.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from botpsy.engine.base import EngineError
from botpsy.serve_chat import ChatService, ClientGone, Prepared
from botpsy.serve_limits import CappedServer, peer_gone
from botpsy.serve_request import BadRequest

__all__ = ["BadRequest", "ChatService", "ServeConfig", "make_handler", "make_server"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
GONE_POLL_S = 0.05  # how often a generating request checks that its client is still connected


@dataclass(frozen=True)
class ServeConfig:
    max_body_bytes: int = field(default=1 << 20, metadata={"help": "largest request body; beyond it 413"})
    read_timeout_s: float = field(
        default=10.0,
        metadata={"help": "time to receive one whole request (line, headers, body); then the socket closes"},
    )
    api_key: str | None = field(
        default=None, metadata={"help": "require 'Authorization: Bearer KEY' on /v1 routes"}
    )
    allowed_hosts: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "extra Host/Origin names to accept (loopback and the bound host always are); '*' = any"
        },
    )
    # One engine generates for one request at a time, so a dozen clients already queue; 16 leaves
    # room for an evaluation's parallel simulator while a flood is refused at once.
    max_connections: int = field(
        default=16,
        metadata={"help": "connections open at once (their requests queue for the engine); beyond it 503"},
    )
    retry_after_s: int = field(default=2, metadata={"help": "the Retry-After of a 503 for a full server"})

    def __post_init__(self):
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {self.max_connections}")

    @classmethod
    def from_env(
        cls, api_key: str | None = None, allowed_hosts: list[str] | tuple[str, ...] | None = None, **kw
    ):
        """Arguments win over the environment (`BOTPSY_API_KEY`, `BOTPSY_ALLOWED_HOSTS`)."""
        key = api_key if api_key is not None else os.environ.get("BOTPSY_API_KEY") or None
        if allowed_hosts is None:
            allowed_hosts = [h for h in os.environ.get("BOTPSY_ALLOWED_HOSTS", "").split(",") if h.strip()]
        return cls(api_key=key, allowed_hosts=tuple(h.strip().lower() for h in allowed_hosts), **kw)


def _host_name(value: str) -> str:
    """'Example.com:8080' → 'example.com'; '[::1]:8080' → '::1'."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}


def make_handler(service: ChatService, config: ServeConfig | None = None, bound_host: str = "127.0.0.1"):
    cfg = config or ServeConfig()
    hosts = {*LOOPBACK_NAMES, _host_name(bound_host), *(_host_name(h) for h in cfg.allowed_hosts)}
    hosts -= {"", "0.0.0.0", "::"}  # a wildcard bind names no host a client would send
    any_host = "*" in cfg.allowed_hosts

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        deadline_s = cfg.read_timeout_s  # to receive one whole request
        timeout = deadline_s  # per socket operation; the deadline below bounds the total

        def log_message(self, fmt, *args):  # quiet by default
            pass

        # ---- the read deadline -------------------------------------------------------------
        def handle_one_request(self):
            self._reading = True
            self._phase_lock = threading.Lock()
            timer = threading.Timer(self.deadline_s, self._expire)
            timer.daemon = True
            timer.start()
            try:
                super().handle_one_request()
            except (TimeoutError, ConnectionError, OSError):
                self.close_connection = True  # the client stalled or left; nothing to answer
            finally:
                timer.cancel()

        def _expire(self) -> None:
            with self._phase_lock:
                if self._reading:
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        def _done_reading(self) -> bool:
            """End the read phase; False when the deadline already closed the socket."""
            with self._phase_lock:
                was = self._reading
                self._reading = False
                return was

        # ---- answers -----------------------------------------------------------------------
        def _json(self, code: int, obj: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def _error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
            kind = ERROR_TYPES.get(code, "server_error" if code >= 500 else "invalid_request_error")
            self._json(code, {"error": {"message": message, "type": kind}}, headers)

        def send_error(self, code, message=None, explain=None):
            """http.server's own refusals (bad request line, huge headers, unknown method) as JSON."""
            self.close_connection = True
            if code == 501:  # an unknown method is the client's mistake, not a server failure
                code, message = 405, f"{self.command[:20]} is not supported; use GET or POST"
            try:
                self._error(code, message or self.responses.get(code, ("error",))[0])
            except OSError:
                pass

        # ---- guards ------------------------------------------------------------------------
        def _refused(self) -> bool:
            """Answer and return True when Host, Origin or the API key rule this request out."""
            if not any_host:
                host = _host_name(self.headers.get("Host") or "")
                if host not in hosts and not _is_ip(host):
                    self._error(
                        403,
                        f"Host {host!r} is not accepted (DNS rebinding guard); start the server "
                        "with --allow-host NAME or BOTPSY_ALLOWED_HOSTS=NAME to accept it",
                    )
                    return True
                origin = self.headers.get("Origin")
                if origin is not None and (urlsplit(origin).hostname or "") not in hosts:
                    self._error(
                        403, f"Origin {origin[:200]!r} is not accepted; allow its host with --allow-host"
                    )
                    return True
            if cfg.api_key and self.path.startswith("/v1"):
                auth = self.headers.get("Authorization") or ""
                given = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
                if not hmac.compare_digest(given.encode(), cfg.api_key.encode()):
                    self._error(
                        401,
                        "missing or wrong API key: send 'Authorization: Bearer KEY'",
                        {"WWW-Authenticate": "Bearer"},
                    )
                    return True
            return False

        def _body_length(self) -> int | None:
            """The declared body length, or None after answering why it cannot be read."""
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                self.close_connection = True
                self._error(411, "chunked bodies are not accepted; send a Content-Length")
                return None
            raw = self.headers.get("Content-Length")
            try:
                length = int(raw) if raw is not None else 0
            except ValueError:
                length = -1
            if length < 0:
                self.close_connection = True
                self._error(400, f"Content-Length must be a non-negative integer, got {raw!r}"[:300])
                return None
            if length > cfg.max_body_bytes:
                self.close_connection = True  # the unread body must not be parsed as the next request
                self._error(
                    413, f"the request body ({length} bytes) is over the limit of {cfg.max_body_bytes}"
                )
                return None
            return length

        def handle_expect_100(self):
            if self._refused() or self._body_length() is None:
                return False
            return super().handle_expect_100()

        # ---- routes ------------------------------------------------------------------------
        def do_GET(self):
            self._done_reading()
            if self._refused():
                return
            route = self.path.split("?", 1)[0].rstrip("/")
            if route in ("/health", ""):
                return self._json(200, {"status": "ok"})
            if route == "/v1/models":
                return self._json(
                    200, {"object": "list", "data": [{"id": service.model_name, "object": "model"}]}
                )
            self._error(404, f"no route {self.path[:200]}")

        def do_POST(self):
            if self._refused():
                self.close_connection = True  # its body, if any, was not read
                return
            length = self._body_length()
            if length is None:
                return
            data = self.rfile.read(length)
            if not self._done_reading() or len(data) < length:
                self.close_connection = True  # the deadline closed the socket, or the client left
                return
            if self.path.split("?", 1)[0].rstrip("/") != "/v1/chat/completions":
                return self._error(404, f"no route {self.path[:200]}")
            try:
                prep = service.prepare(data)
                if prep.req.stream:
                    return self._stream(prep)
                self._json(200, service.generate(prep, client_gone=self._client_gone()))
            except BadRequest as e:
                self._error(400, str(e))
            except EngineError as e:
                self._error(503, f"the model could not answer: {e}")
            except (ClientGone, ConnectionError, TimeoutError):
                self.close_connection = True
            except Exception as e:  # keep serving whatever happens to one request
                self._error(500, f"{type(e).__name__}: {e}")

        def do_PUT(self):
            self._method_not_allowed()

        do_DELETE = do_PATCH = do_OPTIONS = do_PUT

        def _method_not_allowed(self):
            self._done_reading()
            self.close_connection = True
            self._error(405, f"{self.command} is not supported; use GET or POST", {"Allow": "GET, POST"})

        def _client_gone(self):
            return peer_gone(self.connection, GONE_POLL_S)

        def _stream(self, prep: Prepared) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            cid = f"chatcmpl-{uuid.uuid4().hex[:16]}"
            usage_too = prep.req.options.include_usage

            def write(data: bytes) -> None:
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                except OSError as e:  # a client that left or stopped reading: stop generating for it
                    raise ClientGone() from e

            def send(delta: dict[str, Any] | None, finish: str | None = None, usage=None) -> None:
                chunk: dict[str, Any] = {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": service.model_name,
                    "choices": []
                    if delta is None
                    else [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                if usage_too:  # OpenAI: null on every chunk but the last one, which has no choices
                    chunk["usage"] = usage
                write(f"data: {json.dumps(chunk)}\n\n".encode())

            send({"role": "assistant"})
            # Reasoning streams token by token; the answer and any tool calls follow in one final
            # delta once parsed, so a client never sees half a <tool_call> as content.
            seen = {"text": "", "reasoning_sent": 0}
            thinking = service.engine.thinking

            def on_text(piece: str) -> None:
                if not thinking:
                    return  # the prompt closed the think block: everything is the answer
                seen["text"] += piece
                head = seen["text"].split("</think>", 1)[0]
                safe = len(head) if "</think>" in seen["text"] else max(len(head) - len("</think>"), 0)
                if safe > seen["reasoning_sent"]:
                    send({"reasoning_content": head[seen["reasoning_sent"] : safe]})
                    seen["reasoning_sent"] = safe

            try:
                result = service.generate(prep, on_text=on_text, client_gone=self._client_gone())
            except ClientGone:
                return
            except Exception as e:  # headers are out: the error can only travel in the stream
                kind = "server_error" if not isinstance(e, EngineError) else "engine_error"
                write(f"data: {json.dumps({'error': {'message': str(e), 'type': kind}})}\n\n".encode())
                write(b"data: [DONE]\n\n")
                return
            if thinking and "</think>" not in seen["text"]:
                # Reasoning cut by max_tokens: what the end-tag guard held back is still reasoning.
                rest = seen["text"][seen["reasoning_sent"] :]
                if rest:
                    send({"reasoning_content": rest})
            choice = result["choices"][0]
            msg = choice["message"]
            final: dict[str, Any] = {"content": msg.get("content", "")}
            if "tool_calls" in msg:
                final["tool_calls"] = [{**c, "index": i} for i, c in enumerate(msg["tool_calls"])]
            send(final, choice["finish_reason"])
            if usage_too:
                send(None, usage=result["usage"])
            write(b"data: [DONE]\n\n")

    class Busy(Handler):
        """A connection past `max_connections`: its request is read (under a short deadline) and
        answered 503, then the connection closes. Answering before the request is read would
        break clients that send headers and body apart: their second send meets a closed socket
        and they never read the answer (http.client raises BrokenPipeError)."""

        deadline_s = min(cfg.read_timeout_s, 2.0)
        timeout = deadline_s

        def _busy(self) -> None:
            self.close_connection = True
            length = self._body_length()
            if length is None:
                return
            data = self.rfile.read(length)
            if not self._done_reading() or len(data) < length:
                return
            self._error(
                503,
                f"the server is busy: all {cfg.max_connections} connections are in use; retry in a "
                "moment (or start it with a larger --max-connections)",
                {"Retry-After": str(cfg.retry_after_s)},
            )

        def handle_expect_100(self):
            self._busy()  # answers instead of "100 Continue"; the body is never read
            return False

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _busy

    Handler.Busy = Busy
    return Handler


def make_server(
    engine,
    host: str = "127.0.0.1",
    port: int = 8080,
    config: ServeConfig | None = None,
    api_key: str | None = None,
    allowed_hosts: list[str] | None = None,
    **limits: Any,
) -> ThreadingHTTPServer:
    """A server for `engine`; `api_key` and `allowed_hosts` override the environment's; `limits`
    are other `ServeConfig` fields (max_connections, ...)."""
    cfg = config or ServeConfig.from_env(api_key=api_key, allowed_hosts=allowed_hosts, **limits)
    return CappedServer((host, port), make_handler(ChatService(engine), cfg, bound_host=host), cfg)
