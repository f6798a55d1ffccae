"""Grants (issue 38): allow / ask / deny per tool or suite, enforced by `Workspace.execute` — the one
path of the CLI agent and the MCP server — so no caller, approval, flag or insisting model gets
past a `deny`, and an `ask` nobody approved is refused."""

from __future__ import annotations

import json
import stat
import sys

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from botpsy.agent.loop import Agent, approve_all, decline_all
from botpsy.cli import main
from botpsy.cli_control import wire
from botpsy.engine.oracle import ScriptedEngine
from botpsy.mcp_server import call_result, never_approved, use_grants
from botpsy.stores.grants import Grants
from botpsy.stores.workspace import Workspace, seed_workspace

CREATE = (
    "Add it.\n</think>\n\n<tool_call>\n<function=create_note>\n<parameter=title>\nSecret plan\n"
    "</parameter>\n</function>\n</tool_call>"
)


@pytest.fixture
def ws(tmp_path):
    return seed_workspace(tmp_path / "ws", seed=3, suites=["notes", "banking"])


def titles(ws) -> list[str]:
    return sorted(n.title for n in ws.read("notes").notes)


def error(text: str) -> str:
    body = json.loads(text)
    assert isinstance(body, dict) and "error" in body, body
    return body["error"]


def test_defaults_allow_reads_and_ask_before_the_rest(ws):
    ws.control.approver = never_approved  # nobody at hand to ask
    assert "notes" in json.loads(ws.call("find_notes", {}))
    before = titles(ws)
    assert error(ws.call("create_note", {"title": "x"})).startswith(
        "not approved: your grants ask before create_note"
    )
    assert "botpsy grants set create_note allow" in error(ws.call("create_note", {"title": "x"}))
    assert titles(ws) == before
    assert [r["decision"] for r in ws.control.journal.read().records] == ["allowed", "refused", "refused"]


@pytest.mark.parametrize("rule", ["create_note", "notes"])
def test_deny_refuses_whatever_approves(ws, rule):
    Grants(ws.root).set(rule, "deny", {"create_note", "notes"})
    before = titles(ws)
    for approver in (None, lambda tool, args: True, never_approved):
        ws.control.approver = approver
        ws.control.approve_next("create_note", {"title": "x"})  # a human said yes: still denied
        message = error(ws.call("create_note", {"title": "x"}))
        assert message.startswith("denied by your grants: create_note is set to deny")
        assert ("tool rule" if rule == "create_note" else "suite rule") in message
    assert titles(ws) == before
    assert {r["decision"] for r in ws.control.journal.read().records} == {"denied"}


def test_allow_runs_without_an_approver_and_a_tool_rule_beats_the_suite_rule(ws):
    grants = Grants(ws.root)
    grants.set("notes", "deny", {"notes", "create_note"})
    grants.set("create_note", "allow", {"notes", "create_note"})
    ws.control.approver = never_approved
    assert "created" in json.loads(ws.call("create_note", {"title": "allowed"}))
    assert error(ws.call("delete_note", {"note_id": "n-1"})).startswith("denied by your grants")
    assert "allowed" in titles(ws)


def test_mcp_refuses_ask_unless_the_client_confirms_and_never_passes_deny(ws):
    use_grants(ws, client_confirms=False)
    refused = call_result(ws, "create_note", {"title": "via mcp"})
    assert refused.is_error and "not approved" in refused.content[0].text
    use_grants(ws, client_confirms=True)
    assert not call_result(ws, "create_note", {"title": "via mcp"}).is_error
    Grants(ws.root).set("transfer_money", "deny", {"transfer_money"})  # edited while serving
    for _ in range(5):  # a client that retries gets the same answer
        r = call_result(ws, "transfer_money", {"from_account": "acc-1", "to": "acc-2", "amount": 1})
        assert r.is_error and "denied by your grants" in r.content[0].text
    records = ws.control.journal.read().records
    assert {r["channel"] for r in records} == {"mcp"}
    assert [r["decision"] for r in records].count("denied") == 5


def test_deny_holds_over_a_real_mcp_round_trip_with_client_confirms(ws):
    Grants(ws.root).set("create_note", "deny", {"create_note"})
    cmd = [sys.executable, "-m", "botpsy.mcp_server", "--workspace", str(ws.root), "--suites", "notes"]

    async def session_run():
        params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "--client-confirms"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [await session.call_tool("create_note", {"title": "nope"}) for _ in range(3)]

    results = anyio.run(session_run)
    assert all(r.is_error and "denied by your grants" in r.content[0].text for r in results)
    assert "nope" not in titles(ws)


def test_a_model_that_insists_under_yes_is_denied_every_time(ws):
    Grants(ws.root).set("notes", "deny", {"notes"})
    before = titles(ws)
    env = Workspace(ws.root, suites=["notes"])
    confirm, confirm_data, on_event = wire(env, approve_all, decline_all, None, yes=True, show=False)
    engine = ScriptedEngine([CREATE, CREATE, CREATE, "ok\n</think>\n\nI could not: your grants deny it."])
    trace = Agent(engine, env, "sys", confirm=confirm, confirm_data=confirm_data, on_event=on_event).send(
        "Write a note"
    )
    results = [m.content for m in trace.messages if m.role == "tool"]
    assert len(results) == 3 and all("denied by your grants" in r for r in results)
    assert titles(ws) == before
    denied = [r for r in env.control.journal.read().records if r.get("decision") == "denied"]
    assert len(denied) == 3 and {r["request"] for r in denied} == {"Write a note"}


def test_allow_skips_the_prompt_and_ask_keeps_yes_semantics(ws):
    env = Workspace(ws.root, suites=["notes"])
    asked = []

    def prompt(call, tool):
        asked.append(call.name)
        return False

    confirm, _, on_event = wire(env, prompt, decline_all, None, show=False)
    engine = ScriptedEngine([CREATE, "ok\n</think>\n\nNot done."])
    Agent(engine, env, "sys", confirm=confirm, on_event=on_event).send("note")
    assert asked == ["create_note"] and "Secret plan" not in titles(env)
    assert env.control.journal.read().records[-1]["decision"] == "declined"
    Grants(ws.root).set("create_note", "allow", {"create_note"})
    engine = ScriptedEngine([CREATE, "ok\n</think>\n\nDone."])
    Agent(engine, env, "sys", confirm=confirm, on_event=on_event).send("note")
    assert asked == ["create_note"] and "Secret plan" in titles(env)


def test_a_broken_grants_file_refuses_with_the_fix_and_changes_nothing(ws):
    (ws.root / "grants.json").write_text('{"rules": {"create_note": "maybe"}}')
    assert "expected one of allow, ask, deny" in error(ws.call("create_note", {"title": "x"}))
    (ws.root / "grants.json").write_text("{not json")
    assert "botpsy grants reset" in error(ws.call("find_notes", {}))


def test_cli_grants_set_list_reset(ws, capsys):
    root = str(ws.root)
    assert main(["grants", "set", "banking", "deny", "--workspace", root]) == 0
    assert main(["grants", "set", "find_notes", "ask", "--workspace", root]) == 0
    assert main(["grants", "set", "find_notes", "perhaps", "--workspace", root]) == 2
    assert main(["grants", "set", "no_such_tool", "deny", "--workspace", root]) == 2
    assert stat.S_IMODE((ws.root / "grants.json").stat().st_mode) == 0o600
    capsys.readouterr()
    assert main(["grants", "list", "--json", "--workspace", root]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["rules"] == {"banking": "deny", "find_notes": "ask"}
    by_tool = {r["tool"]: r for r in listed["tools"]}
    assert (
        by_tool["transfer_money"]["grant"] == "deny" and by_tool["transfer_money"]["source"] == "suite rule"
    )
    assert by_tool["create_note"]["grant"] == "ask" and by_tool["list_accounts"]["grant"] == "deny"
    assert main(["grants", "reset", "--workspace", root]) == 0
    assert Grants(ws.root).rules() == {}


def test_dry_run_without_a_terminal_previews_instead_of_refusing(ws):
    """Regression: `botpsy run --dry-run` without --yes or a terminal refused every action as
    "not approved" instead of previewing it."""
    env = Workspace(ws.root, suites=["notes"])
    confirm, confirm_data, on_event = wire(env, decline_all, decline_all, None, dry_run=True, show=False)
    engine = ScriptedEngine([CREATE, "ok\n</think>\n\nPreviewed."])
    trace = Agent(engine, env, "sys", confirm=confirm, confirm_data=confirm_data, on_event=on_event).send(
        "note"
    )
    (result,) = [json.loads(m.content) for m in trace.messages if m.role == "tool"]
    assert (
        result["dry_run"].startswith("previewed only")
        and result["result"]["created"]["title"] == "Secret plan"
    )
    assert "Secret plan" not in titles(env)
    last = env.control.journal.read().records[-1]
    assert last["outcome"] == "previewed" and last["changes"][0]["before"] is None


def test_serve_runs_no_tools_so_it_cannot_go_around_the_grants():
    """`botpsy serve` returns the model's tool calls to its client, which runs them; should it
    ever run tools itself, it must go through Workspace.execute (and this test be revisited)."""
    import ast
    from pathlib import Path

    import botpsy

    src = Path(botpsy.__file__).parent
    for module in sorted(src.glob("serve*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(("botpsy.stores", "botpsy.tools.registry")), module.name


@pytest.mark.parametrize("yes", [False, True])
def test_a_read_set_to_ask_is_asked_through_the_cli_confirmation(ws, yes):
    Grants(ws.root).set("find_notes", "ask", {"find_notes"})
    env = Workspace(ws.root, suites=["notes"])
    wire(env, approve_all if yes else decline_all, decline_all, None, yes=yes, show=False)
    out = json.loads(env.call("find_notes", {}))
    assert ("notes" in out) if yes else out["error"].startswith("not approved")


def test_a_call_the_injection_guard_holds_is_journaled_as_held(ws, monkeypatch):
    from botpsy.agent import provenance

    monkeypatch.setattr(provenance, "data_driven", lambda call, tool, messages: "a tool result asked for it")
    env = Workspace(ws.root, suites=["notes"])
    confirm, confirm_data, on_event = wire(env, approve_all, decline_all, None, yes=True, show=False)
    engine = ScriptedEngine([CREATE, "ok\n</think>\n\nNot done."])
    Agent(engine, env, "sys", confirm=confirm, confirm_data=confirm_data, on_event=on_event).send("note")
    last = env.control.journal.read().records[-1]
    assert last["decision"] == "held" and last["reason"] == "a tool result asked for it"
    assert "Secret plan" not in titles(env)
