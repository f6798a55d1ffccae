"""`botpsy serve` under abuse (issue 14, item 5): body limit, read deadline, 400s for every malformed
field, streamed requests refused before the 200, the API key, the DNS-rebinding Host/Origin guard,
and the cap on open connections (a 503 with Retry-After beyond it, never a hang).

All on loopback against a scripted engine; the read deadline is shortened so the stall tests take
well under a second each.
"""

import json
import random
import socket
import threading
import time

import pytest

from botpsy.engine.oracle import ScriptedEngine
from botpsy.serve import ServeConfig, make_server

OK = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def start():
    servers = []

    def _start(engine=None, **cfg):
        cfg.setdefault("read_timeout_s", 0.5)
        srv = make_server(engine or ScriptedEngine([]), "127.0.0.1", 0, config=ServeConfig(**cfg))
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(srv)
        return srv.server_port

    _start.server = lambda port: next(srv for srv in servers if srv.server_port == port)
    yield _start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def port(start):
    return start()


def request(port, body=None, raw=None, headers=None, path="/v1/chat/completions", method="POST", timeout=5.0):
    """One request on a fresh connection: (status, body text); status None when the server hung."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
    head = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json", "Content-Length": str(len(data))}
    head.update(headers or {})
    lines = [f"{method} {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in head.items() if v is not None]
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
        got = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
                header, _, rest = got.partition(b"\r\n\r\n")
                n = [ln for ln in header.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
                if n and len(rest) >= int(n[0].split(b":")[1]):
                    break
        except TimeoutError:
            return None, ""
    if not got:
        return 0, ""  # closed without an answer
    status = int(got.split(b" ", 2)[1])
    return status, got.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")


def error_of(text):
    return json.loads(text)["error"]["message"]


def user(**extra):
    return {**OK, **extra}


MALFORMED = [
    (user(max_tokens=0), "max_tokens"),
    (user(max_tokens=-5), "max_tokens"),
    (user(max_tokens=True), "max_tokens"),
    (user(max_tokens=1.5), "max_tokens"),
    (user(max_tokens="lots"), "max_tokens"),
    (user(max_tokens=10**30), "max_tokens"),
    (user(max_completion_tokens=0), "max_completion_tokens"),
    (user(temperature="hot"), "temperature"),
    (user(temperature=-1), "temperature"),
    (user(temperature=1e308), "temperature"),
    (user(temperature=[1]), "temperature"),
    (user(stream="yes"), "stream"),
    (user(stream=1), "stream"),
    ({"messages": "hi"}, "messages"),
    ({"messages": None}, "messages"),
    ({"messages": {}}, "messages"),
    ({"messages": ["hi"]}, "messages[0]"),
    ({"messages": [{"content": "x"}]}, "role"),
    ({"messages": [{"role": 7, "content": "x"}]}, "role"),
    ({"messages": [{"role": ["user"], "content": "x"}]}, "role"),
    ({"messages": [{"role": "user", "content": 42}]}, "content"),
    ({"messages": [{"role": "user", "content": {"text": "x"}}]}, "content"),
    ({"messages": [{"role": "user", "content": [1, 2]}]}, "content[0]"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}, "text"),
    ({"messages": [{"role": "user", "content": "x"}, {"role": "system", "content": "late"}]}, "system"),
    ({"messages": [{"role": "assistant", "content": "", "tool_calls": "call"}]}, "tool_calls"),
    ({"messages": [{"role": "assistant", "content": "", "tool_calls": [None]}]}, "tool_calls[0]"),
    ({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": 1}}]}]}, "name"),
    (
        {"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{x"}}]}]},
        "JSON",
    ),
    (
        {
            "messages": [
                {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}
            ]
        },
        "object",
    ),
    ({"messages": [{"role": "tool", "content": "x", "name": 3}]}, "name"),
    ({"messages": [{"role": "assistant", "content": "x", "reasoning_content": 1}]}, "reasoning"),
    (user(tools={"a": 1}), "tools"),
    (user(tools=[None]), "tools[0]"),
    (user(tools=[{"type": "function", "function": {"name": ""}}]), "tools[0]"),
    (user(tools=[{"type": "retrieval", "function": {"name": "f"}}]), "type"),
    (user(tools=[{"function": {"name": "f", "parameters": "x"}}]), "parameters"),
    (user(tools=[{"function": {"name": "f", "description": 3}}]), "description"),
]


@pytest.mark.parametrize("body,field", MALFORMED)
def test_each_malformed_field_is_a_400_naming_it(port, body, field):
    code, text = request(port, body)
    assert code == 400 and field in error_of(text)
    code, text = request(
        port, {**body, "stream": True} if isinstance(body.get("stream"), bool | None) else body
    )
    assert code == 400  # streamed too: refused before the 200 and the event stream


@pytest.mark.parametrize(
    "raw,what",
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
        (b'{"messages": [{"role": "user", "content": "\\ud800"}]}', "not valid JSON"),  # lone surrogate
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),  # deep nesting
        (b'{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}', "temperature"),
        (b"", "JSON object"),
        (b"[]", "JSON object"),
        (b"null", "JSON object"),
    ],
)
def test_malformed_bodies_are_400(port, raw, what):
    code, text = request(port, raw=raw)
    assert code == 400 and what in error_of(text)


def test_a_stream_that_cannot_be_served_is_a_400_not_a_200(port):
    code, text = request(port, user(stream=True, max_tokens=0))
    assert code == 400 and "max_tokens" in error_of(text)
    code, text = request(port, user(stream=True))
    assert code == 200 and text.rstrip().endswith("data: [DONE]")


def test_body_over_the_limit_is_413_without_reading_it(start):
    port = start(max_body_bytes=1000)
    t0 = time.monotonic()
    code, text = request(port, raw=b"x" * 10, headers={"Content-Length": str(64 << 20)})
    assert code == 413 and "over the limit" in error_of(text)
    assert time.monotonic() - t0 < 1.0
    code, _ = request(port, raw=b" " * 1001)
    assert code == 413
    code, _ = request(port, OK)
    assert code == 200


@pytest.mark.parametrize("length,what", [("-1", "Content-Length"), ("ten", "Content-Length")])
def test_bad_content_length_is_400(port, length, what):
    code, text = request(port, raw=b"{}", headers={"Content-Length": length})
    assert code == 400 and what in error_of(text)


def test_chunked_upload_is_refused_with_411(port):
    code, _ = request(
        port, raw=b"2\r\n{}\r\n0\r\n\r\n", headers={"Content-Length": None, "Transfer-Encoding": "chunked"}
    )
    assert code == 411


def test_expect_100_continue_over_the_limit_is_413_before_the_body(start):
    port = start(max_body_bytes=1000)
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {10**9}\r\n"
            "Expect: 100-continue\r\n\r\n".encode()
        )
        assert s.recv(4096).startswith(b"HTTP/1.1 413")


@pytest.mark.parametrize("what", ["body", "headers"])
def test_a_stalled_or_dripping_upload_is_dropped_at_the_deadline(port, what):
    """A per-recv timeout alone would let a byte every 0.1 s hold the thread forever."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        s.sendall((head + "Content-Length: 1000\r\n\r\n{" if what == "body" else head).encode())
        t0 = time.monotonic()
        closed = None
        while time.monotonic() - t0 < 4:
            try:
                s.sendall(b" " if what == "body" else b"X-Drip: 1\r\n")
            except OSError:
                closed = time.monotonic() - t0
                break
            s.settimeout(0.1)
            try:
                if s.recv(4096) == b"":
                    closed = time.monotonic() - t0
                    break
            except TimeoutError:
                pass
            except OSError:
                closed = time.monotonic() - t0
                break
        assert closed is not None and closed < 2.0
    code, _ = request(port, OK)
    assert code == 200


def test_api_key(start, monkeypatch):
    port = start(api_key="s3cret")
    assert request(port, OK)[0] == 401
    assert request(port, OK, headers={"Authorization": "Bearer wrong"})[0] == 401
    assert request(port, OK, headers={"Authorization": "Bearer s3cret"})[0] == 200
    assert request(port, method="GET", path="/v1/models")[0] == 401
    assert request(port, method="GET", path="/health")[0] == 200  # probes need no key
    monkeypatch.setenv("BOTPSY_API_KEY", "from-env")
    assert ServeConfig.from_env().api_key == "from-env"
    assert ServeConfig.from_env(api_key="flag").api_key == "flag"


@pytest.mark.parametrize(
    "headers,code",
    [
        ({"Host": "evil.example"}, 403),  # a rebound name
        ({"Host": "evil.example:8080"}, 403),
        ({"Host": "localhost:8080"}, 200),
        ({"Host": "[::1]:8080"}, 200),
        ({"Host": "192.168.1.5:8080"}, 200),  # an IP literal cannot be rebound
        ({"Origin": "http://evil.example"}, 403),  # a page elsewhere posting to localhost
        ({"Origin": "null"}, 403),
        ({"Origin": "http://localhost:3000"}, 200),
        ({"Host": "box.lan", "Origin": "http://box.lan"}, 200),  # allowed below
    ],
)
def test_host_and_origin_guard_against_dns_rebinding(start, headers, code):
    port = start(allowed_hosts=("box.lan",))
    got, text = request(port, OK, headers=headers)
    assert got == code, text
    if code == 403:
        assert "not accepted" in error_of(text)


def test_allowed_hosts_star_turns_the_guard_off(start):
    port = start(allowed_hosts=("*",))
    assert request(port, OK, headers={"Host": "anything.example", "Origin": "http://x.example"})[0] == 200


def _mutations(rng: random.Random):
    """Malformed requests of every kind: the table above, broken bytes, wrong methods, routes, headers."""
    valid = json.dumps({**OK, "max_tokens": 8, "tools": [{"type": "function", "function": {"name": "f"}}]})
    for body, _ in MALFORMED:
        yield {"body": body}
    junk_values = [None, True, -1, 0, 1.5, "x", [], {}, [None], {"a": [1]}, "\u0000", 10**40]
    for key in ("messages", "tools", "max_tokens", "temperature", "stream", "max_completion_tokens"):
        for v in junk_values:
            yield {"body": {**OK, key: v}}
    for _ in range(120):
        b = bytearray(valid.encode())
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(b))
            b[i] = rng.choice(b'{}[]",:\\\x00\xff0-9tnx ')
        yield {"raw": bytes(b)}
    for _ in range(40):
        yield {"raw": valid.encode()[: rng.randrange(len(valid))]}
    yield {"raw": b"x", "headers": {"Content-Length": "99999999999999999999"}}
    yield {"raw": b"{}", "headers": {"Content-Length": "0x10"}}
    yield {"raw": b"{}", "headers": {"Content-Type": "text/plain"}}
    yield {"raw": b"{}", "method": "PUT"}
    yield {"raw": b"", "method": "DELETE"}
    yield {"raw": b"", "method": "BREW"}
    yield {"raw": b"{}", "path": "/v1/completions"}
    yield {"raw": b"", "method": "GET", "path": "/v1/../../etc/passwd"}
    yield {"raw": b"", "method": "GET", "path": "/" + "a" * 70_000}


def test_250_malformed_requests_give_no_500_and_no_hang(start):
    port = start(read_timeout_s=1.0)
    cases = list(_mutations(random.Random(14)))
    assert len(cases) >= 250
    codes = [request(port, **case, timeout=5.0)[0] for case in cases]
    hangs = codes.count(None)
    fives = sum(1 for c in codes if c is not None and c >= 500)
    assert (fives, hangs) == (0, 0), [
        (c, case) for c, case in zip(codes, cases, strict=True) if c is None or c >= 500
    ]
    assert 0 not in codes  # every request got an answer, none a silently closed connection
    assert request(port, OK)[0] == 200


class HeldEngine(ScriptedEngine):
    """Generates only once `release` is set, so requests pile up on the server."""

    def __init__(self):
        super().__init__([])
        self.release, self.started = threading.Event(), threading.Event()

    def generate(self, prompt_ids, max_tokens=512, temperature=0.0, on_text=None):
        self.started.set()
        assert self.release.wait(10)
        return super().generate(prompt_ids, max_tokens, temperature, on_text)


def wait_for(predicate, seconds=5.0):
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def post_in_two_sends(port, pause=0.05):
    """A POST whose headers and body go out apart, as http.client sends them: (head, body) bytes."""
    body = json.dumps(OK).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        time.sleep(pause)
        s.sendall(body)  # a server that answered and closed already would break this send
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    head, _, text = got.partition(b"\r\n\r\n")
    return head, text.decode()


def test_connections_past_the_cap_get_a_503_with_retry_after_at_once(start):
    """No cap before: every connection got a thread and its request queued for the engine."""
    engine = HeldEngine()
    port = start(engine, max_connections=2, retry_after_s=3, read_timeout_s=5.0)
    srv = start.server(port)
    held = []
    for _ in range(2):  # one generating, one queued for the engine lock
        threading.Thread(target=lambda: held.append(request(port, OK, timeout=10)), daemon=True).start()
    assert engine.started.wait(5)
    wait_for(lambda: srv.connections == 2)
    for _ in range(10):
        t0 = time.monotonic()
        head, text = post_in_two_sends(port)
        assert time.monotonic() - t0 < 1.0
        assert head.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: 3\r\n" in head, head
        assert b"application/json" in head and b"Connection: close" in head
        assert "all 2 connections are in use" in error_of(text)
    assert srv.connections == 2  # refused connections never took a serving slot
    engine.release.set()
    wait_for(lambda: len(held) == 2)
    assert [code for code, _ in held] == [200, 200]
    wait_for(lambda: srv.connections == 0 and srv.refusing == 0)
    assert request(port, OK)[0] == 200


def test_a_flood_past_both_pools_is_answered_by_the_accepting_thread(start):
    engine = HeldEngine()
    port = start(engine, max_connections=1, read_timeout_s=5.0)
    srv = start.server(port)
    threading.Thread(target=lambda: request(port, OK, timeout=10), daemon=True).start()
    assert engine.started.wait(5)
    silent = socket.create_connection(("127.0.0.1", port))  # takes the one refusing thread, sends nothing
    try:
        wait_for(lambda: srv.refusing == 1)
        answers = [request(port, OK, timeout=2) for _ in range(30)]
        assert [code for code, _ in answers] == [503] * 30
        # answered without reading, by the accepting thread (the refusing pool's answer names the cap)
        assert {error_of(text) for _, text in answers} == {"the server is busy; retry in a moment"}
        assert (srv.connections, srv.refusing) == (1, 1)
    finally:
        silent.close()
        engine.release.set()
    wait_for(lambda: srv.connections == 0 and srv.refusing == 0)
    assert request(port, OK)[0] == 200


def test_stalled_connections_hold_their_slot_only_until_the_read_deadline(start):
    port = start(max_connections=3, read_timeout_s=0.5)
    stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    try:
        stalled[0].sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and no more
        wait_for(lambda: start.server(port).connections == 3)
        code, text = request(port, OK, timeout=2)
        assert code == 503 and "busy" in error_of(text)
        wait_for(lambda: start.server(port).connections == 0, seconds=3)  # the deadline closed them
        assert request(port, OK, timeout=2)[0] == 200
    finally:
        for s in stalled:
            s.close()


def test_max_connections_must_be_positive():
    with pytest.raises(ValueError, match="max_connections"):
        ServeConfig(max_connections=0)


def test_serve_flags_reach_the_server(monkeypatch):
    """`botpsy serve --api-key K --allow-host H` hands both to `make_server` (the environment is the fallback)."""
    from botpsy import cli

    a = cli.build_parser().parse_args(
        ["serve", "--api-key", "k", "--allow-host", "box.lan", "--allow-host", "x"]
    )
    assert (a.api_key, a.allow_host) == ("k", ["box.lan", "x"])
    assert cli.build_parser().parse_args(["serve", "--max-connections", "4"]).max_connections == 4
    a = cli.build_parser().parse_args(["serve"])
    assert a.max_connections == ServeConfig().max_connections
    monkeypatch.setenv("BOTPSY_ALLOWED_HOSTS", "a.lan, b.lan")
    assert ServeConfig.from_env(api_key=a.api_key, allowed_hosts=a.allow_host).allowed_hosts == (
        "a.lan",
        "b.lan",
    )
