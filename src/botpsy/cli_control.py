"""`botpsy grants | log | undo`, and how `run` and `chat` honour the user's controls.

* `grants list [--json]`, `grants set TOOL_OR_SUITE allow|ask|deny`, `grants unset NAME`,
  `grants reset`: the standing choices in WORKSPACE/grants.json (`botpsy.stores.grants`).
* `log [--suite S] [--since DATE] [--until DATE] [--outcome O] [--limit N] [--json]`: the journal.
* `undo [ID]`: take back the last action, or journal entry ID (`botpsy.stores.undo`).

`wire` hooks the agent commands in without touching the agent: it wraps the confirmation
functions (a `deny` is not asked — the workspace refuses the call with "denied by your grants",
which the model reads and the answer reports; `allow` skips the prompt, except for a call that
text inside a tool result asked for, which the injection guard always asks about; `ask` shows
the preview — what will change and whether it can be undone — then asks as before, `--yes`
approving), and it wraps the event printer to journal what never reaches the workspace (a call
the user declined, one a guard held) and the request each call serves.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from botpsy.term import UsageError, console, out, say


def _grant_of(env, tool):
    try:
        return env.control.grants.decide(tool, env._suite_of.get(tool.name)).choice
    except Exception:  # an unreadable grants file: the workspace reports it on the call itself
        return "deny"


def wire(
    env, confirm, confirm_data, on_event=None, yes: bool = False, dry_run: bool = False, show: bool = True
):
    """The agent's (confirm, confirm_data, on_event) for a CLI command, with grants, preview and
    journal hooked in; sets the workspace's channel, dry-run mode and approver."""
    control = env.control
    control.channel = "cli"
    control.dry_run = dry_run
    # An "ask" on a tool the agent does not confirm itself (a read the user set to ask): the
    # same confirmation (--yes approves, a terminal is asked, anything else declines).
    control.approver = lambda tool, args: bool(yes) or bool(confirm(_Call(tool.name, args), tool))

    def show_preview(call) -> None:
        if show:
            for line in control.preview(call.name, call.arguments).lines():
                say(console, "    ", (line, "dim"))

    def guarded(inner, injection_guard: bool):
        def fn(call, tool) -> bool:
            choice = _grant_of(env, tool)
            if choice == "deny":
                return True  # nothing to ask: the workspace refuses it and the model reads why
            show_preview(call)
            if dry_run:  # nothing will be applied: no one needs to approve it
                control.approve_next(call.name, call.arguments)
                return True
            if choice == "allow" and not injection_guard:
                control.approve_next(call.name, call.arguments)
                return True
            approved = inner(call, tool)
            if approved:
                control.approve_next(call.name, call.arguments)
            return approved

        fn.__name__ = getattr(inner, "__name__", "confirm")
        return fn

    data_driven: dict[str, str] = {}  # call -> why text in a tool result asked for it

    def event(ev) -> None:
        if ev.kind == "user":
            control.request = ev.data.get("text", "")
        elif ev.kind == "data_driven":
            data_driven[ev.data.get("call")] = ev.data.get("reason")
        elif ev.kind == "confirm" and not ev.data.get("approved"):
            why = data_driven.pop(ev.data.get("call"), None)
            if why:  # held by the prompt-injection guard, not declined by the user
                control.journal_event("data_driven", {**ev.data, "reason": why})
            else:
                control.journal_event("confirm", ev.data)
        elif ev.kind == "grounding_guard":
            control.journal_event(
                "grounding_guard", {"calls": ev.data.get("calls"), "held": ev.data.get("held")}
            )
        elif ev.kind == "limits_guard":
            control.journal_event(
                "limits_guard", {"calls": ev.data.get("calls"), "held": ev.data.get("broken")}
            )
        if on_event is not None:
            on_event(ev)

    return guarded(confirm, False), guarded(confirm_data, True), event


class _Call:
    def __init__(self, name, arguments):
        self.name, self.arguments = name, arguments


# ---- commands -----------------------------------------------------------------------------------


def _ws(a):
    from botpsy.stores.workspace import Workspace

    return Workspace(a.workspace)


def cmd_grants(a) -> int:
    from botpsy.stores.grants import CHOICES, default_choice

    ws = _ws(a)
    grants = ws.control.grants
    if a.sub == "set":
        if a.choice not in CHOICES:
            raise UsageError(f"expected one of {', '.join(CHOICES)}, got {a.choice!r}")
        known = set(ws._suite_of) | set(ws.suites)
        try:
            grants.set(a.name, a.choice, known)
        except ValueError as e:
            raise UsageError(str(e)) from None
        say(out, f"{a.name}: {a.choice}")
        return 0
    if a.sub == "unset":
        say(out, f"{a.name}: back to its default" if grants.unset(a.name) else f"{a.name} had no rule")
        return 0
    if a.sub == "reset":
        grants.reset()
        say(out, "grants reset: reads allowed; mutating, egress and sensitive tools asked")
        return 0
    rules = grants.rules()
    rows = []
    for tool in ws.toolbox:
        suite = ws._suite_of.get(tool.name)
        g = grants.decide(tool, suite)
        rows.append(
            {
                "tool": tool.name,
                "suite": suite,
                "grant": g.choice,
                "source": g.source,
                "default": default_choice(tool),
            }
        )
    if a.json:
        say(out, json.dumps({"rules": rules, "tools": rows}, ensure_ascii=False))
        return 0
    for r in rows:
        mark = "" if r["source"] == "default" else f" ({r['source']})"
        say(out, f"{r['suite'] or '-':10} {r['tool']:24} {r['grant']}{mark}")
    say(console, (f"rules in {grants.path}: {len(rules)}", "dim"))
    return 0


def _line(rec) -> str:
    rid, when = rec.get("id"), str(rec.get("time", ""))[:19].replace("T", " ")
    if rec.get("kind") == "undo":
        return f"#{rid} {when} undo of #{rec.get('of')} ({rec.get('tool')}): {', '.join(rec.get('restored', []))}"
    if rec.get("kind") == "decision":
        calls = rec.get("call") or ", ".join(rec.get("calls") or [])
        return f"#{rid} {when} {rec.get('decision')}: {calls}"
    args = json.dumps(rec.get("arguments"), ensure_ascii=False)[:80]
    tail = rec.get("error") or (
        f"{len(rec.get('changes') or [])} record(s) changed" if rec.get("changes") else ""
    )
    egress = f" → sent to {rec['egress']['to']}" if rec.get("egress") else ""
    return f"#{rid} {when} [{rec.get('channel')}] {rec.get('decision')} {rec.get('tool')}({args}) {rec.get('outcome')}{egress}: {tail}"[
        :300
    ]


OUTCOMES = (
    "ok",
    "error",
    "previewed",
    "not run",
    "allowed",
    "approved",
    "declined",
    "held",
    "denied",
    "refused",
    "undone",
)


def _day(text: str | None, flag: str) -> str | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise UsageError(f"{flag}: expected a date as YYYY-MM-DD, got {text!r}") from None


def cmd_log(a) -> int:
    from botpsy.stores.journal import matches

    if a.outcome and a.outcome not in OUTCOMES:
        raise UsageError(f"--outcome: expected one of {', '.join(OUTCOMES)}, got {a.outcome!r}")
    a.since, a.until = _day(a.since, "--since"), _day(a.until, "--until")
    ws = _ws(a)
    entries = ws.control.journal.read()
    shown = [r for r in entries.records if matches(r, a.suite, a.outcome, a.since, a.until)]
    if a.limit:
        shown = shown[-a.limit :]
    if a.json:
        say(out, json.dumps({"entries": shown, "skipped_lines": entries.skipped}, ensure_ascii=False))
    else:
        undone, request = entries.undone(), None
        for r in shown:
            if r.get("request") and r["request"] != request:  # calls grouped under what was asked
                request = r["request"]
                say(out, (f"— {json.dumps(request, ensure_ascii=False)[:200]}", "bold"))
            say(out, _line(r) + (f" (undone by #{undone[r['id']]})" if r.get("id") in undone else ""))
        if not shown:
            say(console, ("the journal has no matching entries", "dim"))
    if entries.skipped:
        say(
            console,
            ("note:", "yellow"),
            f" {entries.skipped} torn or unreadable line(s) in {ws.control.journal.path} skipped",
        )
    return 0


def cmd_undo(a) -> int:
    from botpsy.stores.undo import UndoError, undo

    ws = _ws(a)
    ws.control.channel = "cli"
    try:
        done = undo(ws, a.id)
    except UndoError as e:
        say(console, ("not undone:", "yellow"), f" {e}")
        return 1
    how = " (the file byte for byte)" if done.exact_bytes else ""
    say(out, f"undid #{done.of} {done.tool}: restored {', '.join(done.records)}{how}")
    return 0


def add_parsers(sub, default_workspace: Path) -> None:
    def workspace_arg(sp):
        sp.add_argument(
            "--workspace",
            default=str(default_workspace),
            help="workspace folder (default ~/.botpsy/workspace)",
        )

    g = sub.add_parser("grants", help="allow / ask / deny per tool or suite").add_subparsers(
        dest="sub", required=True
    )
    sp = g.add_parser("list", help="every tool's grant and where it comes from")
    sp.add_argument("--json", action="store_true")
    workspace_arg(sp)
    sp = g.add_parser("set", help="set a tool's or a suite's grant")
    sp.add_argument("name", help="a tool (create_event) or a suite (calendar)")
    sp.add_argument("choice", help="allow | ask | deny")
    workspace_arg(sp)
    sp = g.add_parser("unset", help="drop one rule (back to the default)")
    sp.add_argument("name")
    workspace_arg(sp)
    sp = g.add_parser("reset", help="drop every rule: reads allowed, the rest asked")
    workspace_arg(sp)
    for p in g.choices.values():
        p.set_defaults(fn=cmd_grants)

    sp = sub.add_parser("log", help="the journal: every tool decision botpsy made with your data")
    sp.add_argument("--suite", help="only this suite")
    sp.add_argument("--since", help="from this date (YYYY-MM-DD)")
    sp.add_argument("--until", help="up to this date (YYYY-MM-DD)")
    sp.add_argument(
        "--outcome", help="ok | error | previewed | denied | refused | declined | held | approved | allowed"
    )
    sp.add_argument("--limit", type=int, default=0, help="only the last N entries")
    sp.add_argument("--json", action="store_true")
    workspace_arg(sp)
    sp.set_defaults(fn=cmd_log)

    sp = sub.add_parser("undo", help="take back the last action, or journal entry ID")
    sp.add_argument("id", nargs="?", type=int, help="a journal id (`botpsy log`); default: the last action")
    workspace_arg(sp)
    sp.set_defaults(fn=cmd_undo)
