"""The journal (issue 38): every decision recorded, append-only, 0600; concurrent writers and a
killed writer lose nothing that was acknowledged; a torn last line is skipped and reported."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

from botpsy.cli import main
from botpsy.stores.journal import Journal
from botpsy.stores.workspace import seed_workspace

WRITERS, EACH = 4, 75


def _writer(root: str, n: int, tag: int) -> None:
    journal = Journal(root)
    for i in range(n):
        journal.append({"kind": "test", "writer": tag, "i": i, "pad": "x" * (i * 37 % 3000)})


def test_concurrent_writers_keep_every_record_whole_with_unique_ids(tmp_path):
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), EACH, t)) for t in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    entries = Journal(tmp_path).read()
    assert entries.skipped == 0
    assert sorted(r["id"] for r in entries.records) == list(range(1, WRITERS * EACH + 1))
    for t in range(WRITERS):  # each writer's records in its own order
        assert [r["i"] for r in entries.records if r["writer"] == t] == list(range(EACH))
    assert stat.S_IMODE((tmp_path / "journal.jsonl").stat().st_mode) == 0o600


KILLED = textwrap.dedent(
    """
    import sys
    from botpsy.stores.journal import Journal
    j = Journal(sys.argv[1])
    i = 0
    while True:
        rid = j.append({"kind": "test", "i": i, "pad": "y" * 5000})
        print(rid, flush=True)  # acknowledged: append returned
        i += 1
    """
)


def test_a_killed_writer_loses_nothing_acknowledged_and_its_torn_line_is_skipped(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    acked = [int(proc.stdout.readline()) for _ in range(40)]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    with open(tmp_path / "journal.jsonl", "ab") as f:  # what a kill mid-write leaves
        f.write(b'{"id": 999999, "kind": "te')
    journal = Journal(tmp_path)
    entries = journal.read()
    assert set(acked) <= {r["id"] for r in entries.records}
    assert entries.skipped == 1
    rid = journal.append({"kind": "after"})  # the next append starts on a line of its own
    after = journal.read()
    assert after.records[-1] == {**after.records[-1], "id": rid, "kind": "after"} and after.skipped == 1
    assert rid == max(r["id"] for r in entries.records) + 1


def test_calls_are_journaled_with_labels_results_changes_and_egress(tmp_path, capsys):
    ws = seed_workspace(tmp_path / "ws", seed=2, suites=["notes", "email"])
    ws.control.request = "note and mail"
    ws.call("create_note", {"title": "Plan", "body": "b"})
    ws.call("send_email", {"to": ["ana@example.org"], "subject": "Hi", "body": "see you"})
    ws.call("delete_note", {"note_id": "n-404"})
    note, mail, failed = ws.control.journal.read().records
    assert note["tool"] == "create_note" and note["labels"]["mutates"] and note["request"] == "note and mail"
    assert note["decision"] == "approved" and note["outcome"] == "ok" and note["undo"]["possible"]
    assert [c["record"] for c in note["changes"]] == [f"notes/{json.loads(note['result'])['created']['id']}"]
    assert mail["egress"] == {"sent": mail["arguments"], "to": ["ana@example.org"]}
    assert mail["undo"]["possible"] is False and "off the device" in mail["undo"]["why_not"]
    assert failed["outcome"] == "error" and "n-404" in failed["error"] and "changes" not in failed
    root = str(ws.root)
    capsys.readouterr()
    assert main(["log", "--workspace", root, "--json", "--outcome", "error"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [r["tool"] for r in shown["entries"]] == ["delete_note"]
    assert main(["log", "--workspace", root, "--suite", "email"]) == 0
    text = capsys.readouterr().out
    assert "send_email" in text and "sent to" in text and "create_note" not in text
    assert text.startswith('— "note and mail"')
    assert main(["undo", "--workspace", root]) == 1  # the last change is an email: it cannot be
    assert "cannot be undone" in capsys.readouterr().err
    assert main(["undo", str(note["id"]), "--workspace", root]) == 0
    assert "Plan" not in [n.title for n in ws.read("notes").notes]


def test_dry_run_previews_every_mutating_call_and_applies_none(tmp_path):
    ws = seed_workspace(tmp_path / "ws", seed=2, suites=["calendar", "banking"])
    before = ws.calendar_path.read_bytes(), ws.read("banking").model_dump()
    event = ws.read("calendar").events[0]
    ws.control.dry_run = True
    moved = json.loads(ws.call("update_event", {"event_id": event.id, "title": "Renamed"}))
    assert moved["dry_run"].startswith("previewed only") and moved["result"]["updated"]["title"] == "Renamed"
    assert ws.control.journal.read().records[-1]["changes"][0]["after"]["title"] == "Renamed"
    account = ws.read("banking").accounts[0]
    paid = json.loads(ws.call("transfer_money", {"from_account": account.id, "to": "Ana", "amount": 5}))
    assert "dry_run" in paid or "error" in paid
    assert (ws.calendar_path.read_bytes(), ws.read("banking").model_dump()) == before
    assert {r["outcome"] for r in ws.control.journal.read().records if "error" not in r} == {"previewed"}


def test_the_confirmation_preview_says_what_changes_and_whether_it_can_be_undone(tmp_path):
    ws = seed_workspace(tmp_path / "ws", seed=2, suites=["calendar", "banking"])
    event = ws.read("calendar").events[0]
    lines = ws.control.preview("update_event", {"event_id": event.id, "title": "Renamed"}).lines()
    assert lines[0].startswith(f"~ events/{event.id}: title {event.title} → Renamed")
    assert lines[-1] == "can be undone (botpsy undo)"
    a, b = ws.read("banking").accounts[:2]
    lines = ws.control.preview("transfer_money", {"from_account": a.id, "to": b.id, "amount": 5}).lines()
    assert any(line.startswith(f"~ accounts/{a.id}: balance") for line in lines), lines
    assert lines[-1].startswith("cannot be undone: transfer_money sent data off the device")
    assert ws.control.preview("delete_event", {"event_id": "nope"}).lines()[0].startswith("would fail:")
    assert not ws.control.journal.path.exists()  # a preview is not an action


@pytest.mark.parametrize("bad", [b"not json\n", b"[1, 2]\n", b"\xff\xfe\n"])
def test_log_reports_unreadable_lines_and_goes_on(tmp_path, bad, capsys):
    journal = Journal(tmp_path)
    journal.append({"kind": "call", "tool": "a", "decision": "allowed", "outcome": "ok"})
    with open(journal.path, "ab") as f:
        f.write(bad)
    journal.append({"kind": "call", "tool": "b", "decision": "allowed", "outcome": "ok"})
    assert main(["log", "--workspace", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "a(" in captured.out and "b(" in captured.out and "1 torn or unreadable line" in captured.err


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--since", "yesterday"], "expected a date as YYYY-MM-DD"),
        (["--outcome", "fine"], "expected one of ok, error"),
    ],
)
def test_log_refuses_bad_filters_clearly(tmp_path, capsys, args, expected):
    assert main(["log", "--workspace", str(tmp_path), *args]) == 2
    assert expected in capsys.readouterr().err


def test_log_filters_by_date(tmp_path, capsys):
    journal = Journal(tmp_path)
    journal.append({"kind": "call", "tool": "a", "decision": "allowed", "outcome": "ok"})
    today = journal.read().records[0]["time"][:10]
    for since, until, shown in [(today, today, True), ("2000-01-01", "2000-12-31", False)]:
        assert main(["log", "--workspace", str(tmp_path), "--json", "--since", since, "--until", until]) == 0
        assert bool(json.loads(capsys.readouterr().out)["entries"]) is shown


def test_ids_stay_unique_after_a_record_bigger_than_the_tail_that_is_read(tmp_path):
    journal = Journal(tmp_path)
    first = journal.append({"kind": "test"})
    big = journal.append({"kind": "test", "pad": "z" * 200_000})
    assert [first, big, journal.append({"kind": "test"})] == [1, 2, 3]
