"""MCP round trip through the official SDK: botpsy's server over stdio, the SDK's client, and
botpsy's own client helper for external servers (labels from annotations, errors as ToolError).

Each test starts one server subprocess (≈1-2 s: interpreter and imports); that is the cost of a
real round trip.
"""

import json
import sys

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from botpsy.stores.workspace import Workspace, seed_workspace
from botpsy.tools.base import ToolError
from botpsy.tools.mcp_client import McpConnection, McpStartError, labels_for


@pytest.fixture
def workspace(tmp_path):
    return seed_workspace(tmp_path / "ws", seed=3, suites=["notes", "email", "banking"])


def server_cmd(ws: Workspace, suites: str = "notes,email,banking") -> list[str]:
    # The test's client stands for the user's own app, which confirms calls (grants' "ask").
    return [
        sys.executable,
        "-m",
        "botpsy.mcp_server",
        "--workspace",
        str(ws.root),
        "--suites",
        suites,
        "--client-confirms",
    ]


def test_round_trip_with_the_official_client(workspace):
    cmd = server_cmd(workspace)

    async def session_run():
        params = StdioServerParameters(command=cmd[0], args=cmd[1:])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                listed = await session.list_tools()
                created = await session.call_tool("create_note", {"title": "Via MCP", "body": "round trip"})
                found = await session.call_tool("find_notes", {"query": "round trip"})
                refused = await session.call_tool(
                    "transfer_money", {"from_account": "acc-1", "to": "acc-2", "amount": 99_999}
                )
                return init, listed, created, found, refused

    init, listed, created, found, refused = anyio.run(session_run)
    assert init.server_info.name == "botpsy"
    tools = {t.name: t for t in listed.tools}
    assert {"create_note", "send_email", "transfer_money"} <= set(tools)
    assert tools["find_notes"].annotations.read_only_hint is True
    assert tools["send_email"].annotations.open_world_hint is True
    assert tools["transfer_money"].annotations.destructive_hint is True
    assert tools["create_note"].input_schema["required"] == ["title"]
    assert not created.is_error and created.structured_content["created"]["title"] == "Via MCP"
    assert json.loads(found.content[0].text)["notes"][0]["body"] == "round trip"
    assert refused.is_error and "insufficient funds" in refused.content[0].text
    # The call went through the real store: the note is in the workspace database.
    assert [n.title for n in workspace.read("notes").notes if n.title == "Via MCP"] == ["Via MCP"]


def test_client_helper_imports_external_tools(workspace, tmp_path):
    with McpConnection(server_cmd(workspace, "notes")) as conn:
        tools = {t.name: t for t in conn.tools(prefix="ext_")}
        assert tools["ext_find_notes"].labels.as_dict() == {
            "mutates": False,
            "egress": False,
            "sensitive": False,
        }
        assert tools["ext_delete_note"].labels.sensitive and tools["ext_delete_note"].suite.startswith("mcp:")
        # Usable from a workspace toolbox next to local tools: same call path as everything else.
        ws = Workspace(tmp_path / "local", suites=["calendar"], extra_tools=list(tools.values()))
        out = json.loads(ws.call("ext_create_note", {"title": "Remote"}))
        assert out["created"]["title"] == "Remote"
        assert "no note with id" in json.loads(ws.call("ext_delete_note", {"note_id": "n-999"}))["error"]
        assert "missing required" in json.loads(ws.call("ext_create_note", {}))["error"]
        with pytest.raises(ToolError):
            tools["ext_complete_reminder"](None, reminder_id="r-404")


def _spec(**annotations) -> types.Tool:
    return types.Tool(
        name="t",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(**annotations) if annotations else None,
    )


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (_spec(), (True, True, True)),  # nothing said: mutating, egress, and sensitive per the MCP default
        (_spec(read_only_hint=True), (False, True, False)),
        (_spec(read_only_hint=True, open_world_hint=False), (False, False, False)),
        (_spec(read_only_hint=False, destructive_hint=False), (True, True, False)),
        (_spec(open_world_hint=False), (True, False, True)),
    ],
)
def test_external_labels_default_to_the_cautious_side(spec, expected):
    labels = labels_for(spec)
    assert (labels.mutates, labels.egress, labels.sensitive) == expected


def test_botpsy_meta_labels_win():
    spec = types.Tool(
        name="t",
        input_schema={"type": "object"},
        _meta={"botpsy/labels": {"mutates": True, "egress": False, "sensitive": False}},
    )
    assert labels_for(spec).as_dict() == {"mutates": True, "egress": False, "sensitive": False}


def test_a_server_that_cannot_start_is_a_clear_error():
    with pytest.raises(McpStartError, match="could not start MCP server"):
        McpConnection([sys.executable, "-c", "import sys; sys.exit(3)"], timeout=20)
    with pytest.raises(McpStartError, match="No such file"):
        McpConnection(["/nonexistent/mcp-server"], timeout=20)


@pytest.mark.parametrize(
    "name,arguments,expected",
    [
        ("create_note", {"title": "x", "unknown": 1}, "unknown argument"),
        ("transfer_money", {"from_account": "acc-1", "to": "acc-2", "amount": 1e308}, "at most"),
        ("send_email", {"to": [None], "subject": "s", "body": "b"}, "null"),
        ("no_such_tool", {}, "there is no tool"),
    ],
)
def test_tool_failures_are_results_with_is_error_not_protocol_errors(workspace, name, arguments, expected):
    """Issue 14 item 3: what the tools refuse or raise comes back as `is_error` results."""
    from botpsy.mcp_server import call_result

    result = call_result(workspace, name, arguments)
    assert result.is_error and expected in json.loads(result.content[0].text)["error"]


def test_an_unforeseen_exception_is_a_result_with_is_error(workspace, monkeypatch):
    from botpsy.mcp_server import call_result

    def broken(name, arguments):
        return {"n": 10**5000}  # what JSON cannot write

    monkeypatch.setattr(workspace, "execute", broken)
    result = call_result(workspace, "find_notes", {})
    assert result.is_error and "find_notes could not run" in result.content[0].text


# ---- issue 36 item 13: the server gets the user's environment --------------------------------

KEYED_SERVER = '''
import os, sys
key = os.environ.get("BOTPSY_TEST_WEATHER_KEY")
if not key:
    sys.exit("BOTPSY_TEST_WEATHER_KEY is not set: this server needs its API key")
from mcp.server import MCPServer
app = MCPServer("keyed")

@app.tool()
def key_tail() -> str:
    """The last four characters of the API key this server started with."""
    return key[-4:]

app.run()
'''


@pytest.fixture
def keyed_server(tmp_path, monkeypatch):
    """A tiny MCP server that exits at start unless its API key is in the environment."""
    script = tmp_path / "keyed_server.py"
    script.write_text(KEYED_SERVER)
    monkeypatch.setenv("BOTPSY_TEST_WEATHER_KEY", "sk-test-1234")
    return [sys.executable, str(script)]


def test_a_server_that_reads_its_api_key_from_the_environment_starts(keyed_server):
    """Before, the SDK's minimal environment reached the server: it exited, and `chat --mcp`
    failed with 'could not start MCP server'."""
    with McpConnection(keyed_server, timeout=20) as conn:
        (tool,) = conn.tools()
        assert tool.name == "key_tail" and tool(None) == {"result": "1234"}


def test_named_variables_only_or_none(keyed_server, monkeypatch):
    monkeypatch.setenv("BOTPSY_TEST_UNRELATED", "x")
    with McpConnection(keyed_server, timeout=20, pass_env=["BOTPSY_TEST_WEATHER_KEY"]) as conn:
        assert [t.name for t in conn.tools()] == ["key_tail"]
    with pytest.raises(McpStartError, match="could not start MCP server"):
        McpConnection(keyed_server, timeout=20, pass_env=False)


def test_server_env_composition(monkeypatch):
    from botpsy.tools.mcp_client import server_env

    monkeypatch.setenv("BOTPSY_TEST_A", "1")
    monkeypatch.delenv("BOTPSY_TEST_MISSING", raising=False)
    assert server_env(True)["BOTPSY_TEST_A"] == "1"
    assert server_env(["BOTPSY_TEST_A", "BOTPSY_TEST_MISSING"]) == {"BOTPSY_TEST_A": "1"}
    assert server_env(False, {"K": "v"}) == {"K": "v"}
    assert server_env(["BOTPSY_TEST_A"], {"BOTPSY_TEST_A": "2"}) == {"BOTPSY_TEST_A": "2"}


def test_chat_mcp_passes_the_users_environment(keyed_server, monkeypatch):
    """`botpsy chat --mcp CMD` wires the same connection: the keyed server's tool is offered."""
    import botpsy.cli_agent as cli_agent
    import botpsy.tools.mcp_client as mcp_client

    seen = {}
    real_connect = mcp_client.connect

    def spy(command, **kw):
        conn, tools = real_connect(command, timeout=20, **kw)
        seen["tools"] = [t.name for t in tools]
        conn.close()
        raise SystemExit(0)  # stop before the chat loop needs a model

    monkeypatch.setattr(mcp_client, "connect", spy)
    monkeypatch.setattr(cli_agent, "open_engine", lambda *a, **k: None)

    class Args:
        model, n_ctx, threads = None, 4096, 1
        mcp = " ".join(keyed_server)

    with pytest.raises(SystemExit):
        cli_agent.cmd_chat(Args())
    assert seen["tools"] == ["key_tail"]
