"""`botpsy serve`: OpenAI-shaped answers, tool calls, streaming, and malformed requests."""

import json
import threading
import urllib.error
import urllib.request

import pytest

from botpsy.engine.oracle import ScriptedEngine
from botpsy.serve import make_server
from botpsy.tools.calendar import TOOLS

CALL = (
    "Look it up.\n</think>\n\n<tool_call>\n<function=list_events>\n<parameter=date>\n2026-12-03\n</parameter>\n"
    "</function>\n</tool_call>"
)


@pytest.fixture
def server():
    engine = ScriptedEngine(
        [CALL, "ok\n</think>\n\nHello there.", "thinking hard\n</think>\n\nStreamed answer."]
    )
    srv = make_server(engine, "127.0.0.1", 0)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}", engine
    srv.shutdown()
    srv.server_close()


def post(url, body, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(
        url + "/v1/chat/completions", data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_tool_call_then_answer_then_stream(server):
    url, engine = server
    tools = [t.schema() for t in TOOLS]
    code, body = post(url, {"messages": [{"role": "user", "content": "What's on Dec 3?"}], "tools": tools})
    out = json.loads(body)
    assert code == 200 and out["choices"][0]["finish_reason"] == "tool_calls"
    call = out["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "list_events" and json.loads(call["arguments"]) == {"date": "2026-12-03"}
    assert "<tools>" in engine.prompts[0]

    code, body = post(url, {"messages": [{"role": "user", "content": "hi"}]})
    assert json.loads(body)["choices"][0]["message"]["content"] == "Hello there."

    code, body = post(url, {"messages": [{"role": "user", "content": "hi"}], "stream": True})
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    reasoning = "".join(e["choices"][0]["delta"].get("reasoning_content", "") for e in events)
    assert reasoning == "thinking hard\n"
    assert events[-1]["choices"][0]["delta"]["content"] == "Streamed answer."
    assert body.rstrip().endswith("data: [DONE]")


@pytest.mark.parametrize(
    "body,raw,msg",
    [
        (None, b"{not json", "not valid JSON"),
        ([], None, "JSON object"),
        ({"messages": []}, None, "non-empty list"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, None, "role"),
        ({"messages": [{"role": "user", "content": "x"}], "tools": [{"nope": 1}]}, None, "tools[0]"),
        ({"messages": [{"role": "user", "content": "x"}], "max_tokens": "lots"}, None, "max_tokens"),
    ],
)
def test_malformed_requests_get_400_and_the_server_keeps_serving(server, body, raw, msg):
    url, _ = server
    code, text = post(url, body, raw)
    assert code == 400 and msg in json.loads(text)["error"]["message"]
    code, _ = post(url, {"messages": [{"role": "user", "content": "still there?"}]})
    assert code == 200
