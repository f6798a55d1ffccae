"""The OpenAI-compatible HTTP backend against a tiny local stub server (and against `botpsy serve`)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from botpsy.agent.loop import Agent
from botpsy.engine.base import EngineError
from botpsy.engine.openai_http import OpenAIHTTPEngine, prompt_to_messages, reply_to_text
from botpsy.protocol.formats import ChatFormat
from botpsy.protocol.messages import Message, ToolCall
from botpsy.tools.base import Labels, Tool, Toolbox

CALL = "Use the tool.\n</think>\n\n<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n<parameter=b>\n3\n</parameter>\n</function>\n</tool_call>"
ANSWER = "Got it.\n</think>\n\nThe sum is 5."


class Stub:
    """Records requests; answers /v1/completions from `texts`, /v1/chat/completions from `chats`."""

    def __init__(self, texts=(), chats=(), routes=("completions", "chat"), tokenize=True):
        self.texts, self.chats, self.routes, self.tokenize = list(texts), list(chats), routes, tokenize
        self.requests: list[tuple[str, dict]] = []

    def handler(self):
        stub = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                stub.requests.append((self.path, body))
                if self.path == "/tokenize" and stub.tokenize:
                    return self._send(200, {"tokens": list(range(len(body.get("content", "").split())))})
                if self.path == "/v1/completions" and "completions" in stub.routes:
                    text = stub.texts.pop(0)
                    return self._send(
                        200,
                        {
                            "choices": [{"text": text, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 7},
                        },
                    )
                if self.path == "/v1/chat/completions" and "chat" in stub.routes:
                    msg = stub.chats.pop(0)
                    if msg == "500":
                        return self._send(500, {"error": "boom"})
                    return self._send(
                        200, {"choices": [{"message": msg, "finish_reason": "stop"}], "usage": {}}
                    )
                self._send(404, {"error": f"no route {self.path}"})

        return H


@pytest.fixture
def serve():
    servers = []

    def start(stub):
        srv = ThreadingHTTPServer(("127.0.0.1", 0), stub.handler())
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}/v1"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def _add(state, a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: first
        b: second
    """
    return a + b


ADD = Tool(
    "add",
    _add,
    "Add two numbers.",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
    Labels(),
)


class Env:
    toolbox = Toolbox([ADD])

    def call(self, name, arguments):
        return json.dumps({"result": arguments["a"] + arguments["b"]})


def test_completions_mode_runs_the_agent_loop(serve):
    stub = Stub(texts=[CALL, ANSWER])
    engine = OpenAIHTTPEngine(serve(stub), model="m")
    trace = Agent(engine, Env(), "Be brief.").send("What is 2+3?")
    assert trace.final_answer == "The sum is 5." and trace.tool_calls == [ToolCall("add", {"a": 2, "b": 3})]
    (p1, b1), (p2, b2) = [r for r in stub.requests if r[0] == "/v1/completions"]
    assert b1["model"] == "m" and b1["stop"] == ["<|im_end|>"]
    assert b1["prompt"].endswith("<|im_start|>assistant\n<think>\n")
    assert b2["prompt"].startswith(b1["prompt"]) and '{"result": 5}' in b2["prompt"]  # append-only history
    assert trace.timings[0].generated_tokens == 7


def test_chat_mode_fallback_round_trips_messages_and_tools(serve):
    stub = Stub(
        chats=[
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "Use the tool.",
                "tool_calls": [
                    {
                        "id": "x",
                        "type": "function",
                        "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                    }
                ],
            },
            {"role": "assistant", "content": "The sum is 5.", "reasoning_content": "Got it."},
        ],
        routes=("chat",),
    )
    engine = OpenAIHTTPEngine(serve(stub))
    trace = Agent(engine, Env(), "Be brief.").send("What is 2+3?")
    assert trace.final_answer == "The sum is 5." and engine.mode == "chat"
    chats = [b for p, b in stub.requests if p == "/v1/chat/completions"]
    assert chats[0]["tools"][0]["function"]["name"] == "add"
    assert chats[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2+3?"},
    ]
    second = chats[1]["messages"]
    assert second[2]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'}
    assert second[3] == {
        "role": "tool",
        "tool_call_id": second[2]["tool_calls"][0]["id"],
        "content": '{"result": 5}',
    }


def test_against_botpsy_serve():
    """The backend evaluates a model served by `botpsy serve` (chat completions only)."""
    from botpsy.engine.oracle import ScriptedEngine
    from botpsy.serve import make_server

    srv = make_server(ScriptedEngine([CALL, ANSWER]), port=0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        engine = OpenAIHTTPEngine(f"http://127.0.0.1:{srv.server_address[1]}/v1")
        trace = Agent(engine, Env(), "").send("What is 2+3?")
        assert trace.final_answer == "The sum is 5." and trace.tool_calls == [
            ToolCall("add", {"a": 2, "b": 3})
        ]
    finally:
        srv.shutdown()
        srv.server_close()


def test_server_errors_become_engine_errors(serve):
    engine = OpenAIHTTPEngine(serve(Stub(chats=["500"], routes=("chat",))), mode="chat")
    with pytest.raises(EngineError, match="answered 500"):
        engine.generate(engine.tokenize("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"))
    dead = OpenAIHTTPEngine("http://127.0.0.1:9/v1", timeout_s=2)
    with pytest.raises(EngineError, match="cannot reach"):
        dead.generate(dead.tokenize("x"))
    # in the agent loop a dead backend ends the episode as an error, not a crash
    trace = Agent(dead, Env(), "").send("hi")
    assert trace.stopped == "error"


def test_count_tokens_uses_the_server_or_estimates(serve):
    engine = OpenAIHTTPEngine(serve(Stub(tokenize=True)))
    assert engine.count_tokens("one two three") == 3
    engine = OpenAIHTTPEngine(serve(Stub(tokenize=False)))
    assert engine.count_tokens("x" * 40) == 10


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
def test_prompt_to_messages_reads_back_what_chatformat_rendered(fmt):
    f = ChatFormat(fmt)
    msgs = [
        Message("system", "Be brief."),
        Message("user", "What is 2+3?"),
        Message("assistant", "", "think", [ToolCall("add", {"a": 2, "b": 3})]),
        Message("tool", '{"result": 5}', name="add"),
        Message("assistant", "The sum is 5.", "done"),
        Message("user", "Thanks"),
    ]
    prompt = f.render(msgs, [ADD.schema()], add_generation_prompt=True)
    got, tools = prompt_to_messages(prompt, f)
    assert tools == [ADD.schema()]
    assert [m["role"] for m in got] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert json.loads(got[2]["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}
    assert got[4]["content"] == "The sum is 5." and got[4]["reasoning_content"] == "done"


def test_reply_to_text_is_what_the_parser_reads():
    f = ChatFormat("qwen35")
    text = reply_to_text(
        {"content": "ok", "tool_calls": [{"function": {"name": "add", "arguments": {"a": 1, "b": 2}}}]},
        f,
        True,
    )
    parsed = f.parse(text, {"add": ADD.parameters})
    assert parsed.content == "ok" and parsed.calls == [ToolCall("add", {"a": 1, "b": 2})]
    # a server that leaves the think block in the content
    text = reply_to_text({"content": "<think>\nhmm\n</think>\n\nHello"}, f, True)
    assert f.parse(text).reasoning == "hmm" and f.parse(text).content == "Hello"
