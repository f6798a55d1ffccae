"""A client that leaves stops its generation, so the next client does not wait (issue 36, item 10).

Before: an abandoned non-streaming request kept the engine until its last token (the next client
waited 61 s). `SlowEngine` writes one character every few milliseconds for seconds, as a model
on a busy CPU does; each test abandons a request mid-way and times the next one. The llama.cpp
path (`should_stop` between real tokens) is checked in `test_serve_llamacpp.py`.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from botpsy.engine.base import Generation
from botpsy.engine.oracle import ScriptedEngine
from botpsy.protocol.messages import StepTiming
from botpsy.serve import make_server

LONG = "thinking\n</think>\n\n" + "word " * 600  # 3,000 characters: 6 s at 2 ms each
STEP_S = 0.002


class SlowEngine(ScriptedEngine):
    """Emits its reply a character at a time; takes `should_stop` as the llama.cpp engine does."""

    def __init__(self, texts):
        super().__init__(texts)
        self.runs: list[tuple[int, str]] = []  # (characters generated, stop) per request

    def generate(self, prompt_ids, max_tokens=512, temperature=0.0, on_text=None, should_stop=None):
        self.prompts.append(self.detokenize(prompt_ids))
        text = self.texts.pop(0) if self.texts else "ok\n</think>\n\nfine"
        out, stop = "", "eos"
        for ch in text:
            time.sleep(STEP_S)
            out += ch
            if on_text:
                on_text(ch)
            if should_stop is not None and should_stop():
                stop = "stopped"
                break
        self.runs.append((len(out), stop))
        return Generation(self.tokenize(out), out, stop, StepTiming(generated_tokens=len(out)))


class CallbackOnlyEngine(SlowEngine):
    """An engine without `should_stop` (transformers, HTTP): the server stops it from `on_text`."""

    def generate(self, prompt_ids, max_tokens=512, temperature=0.0, on_text=None):
        try:
            return super().generate(prompt_ids, max_tokens, temperature, on_text)
        except BaseException:
            self.runs.append((-1, "raised"))
            raise


@pytest.fixture
def start():
    servers = []

    def _start(engine):
        srv = make_server(engine, "127.0.0.1", 0)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(srv)
        return srv.server_port

    yield _start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def send(port, body) -> socket.socket:
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    s.sendall(head.encode() + data)
    return s


def answer(s: socket.socket) -> str:
    got = b""
    while chunk := s.recv(65536):
        got += chunk
        head, _, body = got.partition(b"\r\n\r\n")
        n = [ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
        if n and len(body) >= int(n[0].split(b":")[1]):
            break
    s.close()
    return got.decode()


def user(text="hi", **extra):
    return {"messages": [{"role": "user", "content": text}], **extra}


@pytest.mark.parametrize("engine_cls", [SlowEngine, CallbackOnlyEngine])
@pytest.mark.parametrize("stream", [False, True])
def test_an_abandoned_request_stops_and_the_next_one_is_served_at_once(start, engine_cls, stream):
    engine = engine_cls([LONG, "ok\n</think>\n\nsecond"])
    port = start(engine)
    first = send(port, user("tell me a long story", stream=stream))
    time.sleep(0.3)  # it is generating now
    first.close()  # the client gives up
    t0 = time.monotonic()
    second = answer(send(port, user()))
    waited = time.monotonic() - t0
    assert " 200 " in second.split("\r\n", 1)[0] and "second" in second
    # Before the fix the second request waited for all 3,000 characters (about 6 s).
    assert waited < 2.0, waited
    done, how = engine.runs[0]
    assert how in ("stopped", "raised") and done < len(LONG) // 2, engine.runs


def test_a_client_that_leaves_while_queued_is_never_generated_for(start):
    # Replies are handed out in order of generation: the third request gets the second one
    # only if the queued request never took its turn.
    engine = SlowEngine(["ok\n</think>\n\n" + "x" * 400, "ok\n</think>\n\nthird"])
    port = start(engine)
    busy = send(port, user("first"))  # holds the engine for about 0.8 s
    time.sleep(0.1)
    queued = send(port, user("second"))
    time.sleep(0.1)
    queued.close()  # gives up while the first request still holds the engine
    assert " 200 " in answer(busy)
    third = answer(send(port, user("third")))
    assert "third" in third
    # The queued request never generated: the runs are the first and the third only.
    assert [n for n, _ in engine.runs] == [len("ok\n</think>\n\n") + 400, len("ok\n</think>\n\nthird")]


def test_a_client_that_stays_gets_its_whole_answer(start):
    engine = SlowEngine(["ok\n</think>\n\n" + "y" * 300])
    port = start(engine)
    out = answer(send(port, user()))
    body = json.loads(out.partition("\r\n\r\n")[2])
    assert body["choices"][0]["message"]["content"] == "y" * 300
    assert engine.runs == [(len("ok\n</think>\n\n") + 300, "eos")]
