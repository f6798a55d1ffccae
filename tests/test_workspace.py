"""The workspace on real stores: round trips, corrupt stores, read-only folders, full disks, two writers.

Read-only is tested for real: as a non-root user the workspace is chmod-ed read-only; as root
(who ignores permissions) a forked child drops to the `nobody` user before touching it.
"""

import errno
import json
import mailbox
import multiprocessing as mp
import os
import shutil
import sqlite3
import stat
import tempfile
from datetime import datetime
from email.message import EmailMessage
from pathlib import Path

import pytest

from botpsy.stores.common import StoreError
from botpsy.stores.maildir import MaildirStore
from botpsy.stores.workspace import Workspace, seed_workspace

CLOCK = lambda: datetime(2026, 12, 2, 8, 30)  # noqa: E731


def ok(text: str) -> dict:
    out = json.loads(text)
    assert "error" not in out, out
    return out


def err(text: str) -> str:
    out = json.loads(text)
    assert "error" in out, out
    return out["error"]


@pytest.fixture(scope="module")
def seeded_template(tmp_path_factory) -> Path:
    """A workspace seeded from every world (≈0.4 s once per module); tests get a copy."""
    root = tmp_path_factory.mktemp("template") / "ws"
    seed_workspace(root, seed=1)
    return root


@pytest.fixture
def ws(tmp_path, seeded_template) -> Workspace:
    shutil.copytree(seeded_template, tmp_path / "ws", symlinks=True)
    return Workspace(tmp_path / "ws", clock=CLOCK, me="alex.doe@example.com")


def test_layout_is_one_ics_one_maildir_one_db_one_folder(ws):
    names = {p.name for p in ws.root.iterdir()}
    assert {"calendar.ics", "mail", "botpsy.db", "files"} <= names
    assert (ws.root / "calendar.ics").read_bytes().startswith(b"BEGIN:VCALENDAR")
    assert {"cur", "new", "tmp"} <= {p.name for p in (ws.root / "mail").iterdir()}
    tables = {r[0] for r in sqlite3.connect(ws.db_path).execute("SELECT name FROM sqlite_master")}
    assert {
        "notes_notes",
        "notes_reminders",
        "contacts_contacts",
        "messages_messages",
        "banking_accounts",
        "web_pages",
        "device_settings",
        "telecom_lines",
    } <= tables


def test_calls_are_executed_against_the_stores(ws):
    ok(ws.call("create_event", {"title": "Dentist", "start": "2026-12-03T10:00"}))
    assert "Dentist" in ws.calendar_path.read_text()
    note = ok(ws.call("create_note", {"title": "Groceries", "body": "eggs"}))["created"]
    assert note["updated"] == "2026-12-02T08:30"  # the store stamps the device clock
    rows = (
        sqlite3.connect(ws.db_path).execute("SELECT title, body FROM notes_notes ORDER BY rowid").fetchall()
    )
    assert rows[-1] == ("Groceries", "eggs")
    ok(ws.call("set_volume", {"level": 35}))
    (value,) = (
        sqlite3.connect(ws.db_path).execute("SELECT value FROM device_settings WHERE key='volume'").fetchone()
    )
    assert json.loads(value) == 35
    assert ok(ws.call("get_device_status", {}))["volume"] == 35


def test_updates_keep_row_order(ws):
    first = ok(ws.call("find_notes", {}))["notes"]
    target = first[-1]["id"]
    ok(ws.call("append_to_note", {"note_id": target, "text": "more"}))
    ids = [r[0] for r in sqlite3.connect(ws.db_path).execute("SELECT id FROM notes_notes ORDER BY rowid")]
    assert ids == sorted(ids, key=lambda i: int(i.split("-")[1]))


def test_web_corpus_is_fts5_and_ranked_the_same_as_in_a_world(ws):
    con = sqlite3.connect(ws.db_path)
    (sql,) = con.execute("SELECT sql FROM sqlite_master WHERE name='web_pages'").fetchone()
    assert "fts5" in sql.lower()
    assert con.execute("SELECT count(*) FROM web_pages WHERE web_pages MATCH 'opening'").fetchone()[0] >= 1
    from botpsy.tools.web import search_web

    state = ws.read("web")
    assert ok(ws.call("search_web", {"query": "opening hours"})) == search_web(state, query="opening hours")


def test_maildir_round_trip_with_a_foreign_mail(ws):
    md = mailbox.Maildir(ws.mail_path)
    msg = EmailMessage()
    msg["From"] = "Zoë <zoe@example.net>"
    msg["To"] = "alex.doe@example.com"
    msg["Subject"] = "=?utf-8?q?Gr=C3=BC=C3=9Fe?="
    msg["Date"] = "Mon, 30 Nov 2026 10:00:00 +0000"
    msg["Message-ID"] = "<abc@example.net>"
    msg.set_content("Plain text body")
    msg.add_alternative("<p>Html <b>body</b></p>", subtype="html")
    msg.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="plan.pdf")
    md.add(mailbox.MaildirMessage(msg))
    hits = ok(ws.call("search_emails", {"query": "zoe"}))["emails"]
    assert len(hits) == 1 and hits[0]["subject"] == "Grüße"
    mail_id = hits[0]["id"]
    full = ok(ws.call("read_email", {"email_id": mail_id}))
    assert full["body"] == "Plain text body" and full["attachments"] == ["plan.pdf"]
    assert ok(ws.call("search_emails", {"query": "zoe"}))["emails"][0]["id"] == mail_id  # stable id

    ok(ws.call("forward_email", {"email_id": mail_id, "to": ["sam@example.org"], "note": "FYI"}))
    sent = [m for m in mailbox.Maildir(ws.mail_path).get_folder("Sent") if m["To"] == "sam@example.org"]
    assert len(sent) == 1 and sent[0]["X-Botpsy-Id"]
    parts = [p for p in sent[0].walk() if p.get_filename() == "plan.pdf"]
    assert parts and parts[0].get_payload(decode=True) == b"%PDF-1.4 fake"

    ok(ws.call("move_email", {"email_id": mail_id, "folder": "archive"}))
    assert ok(ws.call("list_emails", {"folder": "archive"}))["emails"][0]["id"] == mail_id
    assert len(mailbox.Maildir(ws.mail_path).get_folder("Archive")) == 1
    ok(ws.call("delete_email", {"email_id": mail_id}))
    ok(ws.call("delete_email", {"email_id": mail_id}))  # from trash: for good
    assert "no email" in err(ws.call("read_email", {"email_id": mail_id}))
    assert len(mailbox.Maildir(ws.mail_path).get_folder("Trash")) == 0


def test_send_email_files_the_mail_in_sent(ws):
    out = ok(ws.call("send_email", {"to": ["bob@example.com"], "subject": "Hi", "body": "Hello Bob"}))
    sent = mailbox.Maildir(ws.mail_path).get_folder("Sent")
    mine = [m for m in sent if m["X-Botpsy-Id"] == out["sent"]["id"]]
    assert len(mine) == 1 and mine[0]["From"] == "alex.doe@example.com" and "S" in mine[0].get_flags()


def test_refused_call_writes_nothing(ws):
    before = ws.db_path.read_bytes(), ws.calendar_path.read_bytes()
    assert "insufficient funds" in err(
        ws.call("transfer_money", {"from_account": "acc-1", "to": "acc-2", "amount": 99_999})
    )
    assert "expected a date" in err(ws.call("create_event", {"title": "x", "start": "soon"}))
    assert (ws.db_path.read_bytes(), ws.calendar_path.read_bytes()) == before


def test_unknown_tool_and_suites(tmp_path):
    ws = Workspace(tmp_path, suites=["notes"])
    assert "there is no tool" in err(ws.call("send_email", {"to": ["a@b.cc"], "subject": "s", "body": "b"}))
    with pytest.raises(ValueError, match="unknown suite"):
        Workspace(tmp_path, suites=["nope"])


def test_empty_workspace_reads_without_creating_anything(tmp_path):
    ws = Workspace(tmp_path / "fresh")
    assert ok(ws.call("find_notes", {})) == {"notes": []}
    assert ok(ws.call("list_emails", {})) == {"folder": "inbox", "emails": []}
    assert ok(ws.call("list_events", {"date": "2026-12-01"})) == {"events": []}
    assert not (tmp_path / "fresh").exists()


# ---- corrupt stores: reported, backed up, never overwritten --------------------------------------
def test_corrupt_database_is_reported_backed_up_and_untouched(ws):
    junk = b"this is not sqlite" * 100
    ws.db_path.write_bytes(junk)
    message = err(ws.call("create_note", {"title": "x"}))
    assert "left untouched" in message and str(ws.db_path) in message
    assert ws.store_errors and ws.db_path.read_bytes() == junk
    err(ws.call("find_notes", {}))  # failing again does not pile up copies
    backups = list(ws.root.glob("botpsy.db.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == junk


def test_rows_that_do_not_fit_the_model_are_reported(ws):
    con = sqlite3.connect(ws.db_path)
    con.execute("UPDATE banking_accounts SET balance = 'lots' WHERE id = 'acc-1'")
    con.commit()
    con.close()
    before = ws.db_path.read_bytes()
    message = err(ws.call("list_accounts", {}))
    assert "banking" in message and "left untouched" in message
    assert ws.db_path.read_bytes() == before


def test_corrupt_maildir_and_calendar_are_left_alone(ws):
    (ws.mail_path / "cur").rename(ws.mail_path / "cur-moved")
    assert "not a Maildir" in err(ws.call("send_email", {"to": ["a@b.cc"], "subject": "s", "body": "b"}))
    assert not (ws.mail_path / "cur").exists()
    junk = b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:garbage\r\n"
    ws.calendar_path.write_bytes(junk)
    assert "left untouched" in err(ws.call("create_event", {"title": "x", "start": "2026-12-03T10:00"}))
    assert ws.calendar_path.read_bytes() == junk


# ---- full disk --------------------------------------------------------------------------------
def test_full_disk_keeps_previous_state(ws, monkeypatch):
    from botpsy import atomic

    before = {
        p: p.read_bytes() for p in [ws.calendar_path, ws.files_path / "Notes" / "todo.txt"] if p.exists()
    }

    def no_space(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", no_space)  # the bytes did not all reach the disk
    monkeypatch.setattr(mailbox.Maildir, "add", no_space)
    assert "disk is full" in err(ws.call("write_file", {"path": "Notes/new.txt", "text": "x"}))
    assert "disk is full" in err(ws.call("send_email", {"to": ["a@b.cc"], "subject": "s", "body": "b"}))
    assert not (ws.files_path / "Notes" / "new.txt").exists()
    assert not [p for p in (ws.files_path / "Notes").iterdir() if p.name.endswith(".tmp")]
    assert {p: p.read_bytes() for p in before} == before


def test_full_database_rolls_back(ws, monkeypatch):
    from botpsy.stores import sqlite as sqlite_store

    real = sqlite_store.SqliteStore._connect

    def tiny(self, write):
        conn = real(self, write)
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLITE_FULL on the first new page
        return conn

    monkeypatch.setattr(sqlite_store.SqliteStore, "_connect", tiny)
    before = ws.db_path.read_bytes()
    message = err(ws.call("create_note", {"title": "big", "body": "x" * 19_000}))
    assert "full" in message
    monkeypatch.undo()
    assert ws.db_path.read_bytes() == before
    assert ok(ws.call("find_notes", {"query": "big"})) == {"notes": []}


# ---- read-only workspace ----------------------------------------------------------------------
def _warm_up(root: str) -> None:
    """Import lazily loaded modules (codecs, email) while the stdlib is still readable: as `nobody`
    the interpreter's own files under /root may not be, which would fail for the wrong reason."""
    ws = Workspace(root, clock=CLOCK)
    for name, args in [
        ("find_notes", {}),
        ("list_emails", {}),
        ("list_files", {}),
        ("list_events", {"date": "2026-12-05"}),
    ]:
        ws.call(name, args)
    from botpsy.tools.mail import Mail

    MaildirStore(Path(root) / "mail")._compose(
        Mail(id="m-0", sender="a@b.cc", to=["c@d.ee"], date="2026-12-01T09:00"), None
    )


def _as_reader(root: str, queue) -> None:
    _warm_up(root)
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    ws = Workspace(root, clock=CLOCK)
    queue.put(
        {
            "read_notes": ws.call("find_notes", {}),
            "read_mail": ws.call("list_emails", {}),
            "read_files": ws.call("list_files", {}),
            "read_calendar": ws.call("list_events", {"date": "2026-12-05"}),
            "write_note": ws.call("create_note", {"title": "x"}),
            "write_mail": ws.call("send_email", {"to": ["a@b.cc"], "subject": "s", "body": "b"}),
            "write_file": ws.call("write_file", {"path": "Notes/x.txt", "text": "x"}),
            "write_calendar": ws.call("create_event", {"title": "x", "start": "2026-12-03T10:00"}),
        }
    )


def test_read_only_workspace_reads_fine_and_refuses_writes_clearly():
    base = Path(tempfile.mkdtemp(prefix="botpsy-ro-"))
    try:
        root = base / "ws"
        seed_workspace(root, seed=2)
        os.chmod(base, 0o755)
        for dirpath, _dirnames, filenames in os.walk(root):
            os.chmod(dirpath, 0o555)
            for f in filenames:
                os.chmod(os.path.join(dirpath, f), 0o444)
        snapshot = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
        ctx = mp.get_context("fork")
        queue = ctx.Queue()
        proc = ctx.Process(target=_as_reader, args=(str(root), queue))
        proc.start()
        out = queue.get(timeout=30)
        proc.join(10)
        for key, text in out.items():
            body = json.loads(text)
            if key.startswith("read"):
                assert "error" not in body, (key, body)
            else:
                assert "error" in body, (key, body)
                assert any(w in body["error"] for w in ("read-only", "writable")), (key, body["error"])
        assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == snapshot
    finally:
        for dirpath, _, _ in os.walk(base):
            os.chmod(dirpath, stat.S_IRWXU)
        shutil.rmtree(base, ignore_errors=True)


# ---- two processes, one workspace -------------------------------------------------------------
def _writer(root: str, tag: str, n: int) -> None:
    ws = Workspace(root, clock=CLOCK)
    for i in range(n):
        for name, args in [
            ("create_note", {"title": f"{tag}-{i}"}),
            ("create_event", {"title": f"{tag}-{i}", "start": "2026-12-03T10:00"}),
            ("send_email", {"to": ["a@b.cc"], "subject": f"{tag}-{i}", "body": "b"}),
            ("write_file", {"path": f"{tag}-{i}.txt", "text": tag}),
        ]:
            out = json.loads(ws.call(name, args))
            assert "error" not in out, out


def test_concurrent_writers_lose_nothing(tmp_path):
    root = str(tmp_path / "ws")
    n = 6
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(root, tag, n)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    ws = Workspace(root)
    want = {f"{t}-{i}" for t in "ab" for i in range(n)}
    assert {x.title for x in ws.read("notes").notes} == want
    assert {e.title for e in ws.read("calendar").events} == want
    assert {m.subject for m in ws.read("email").mails} == want
    assert {p[:-4] for p in ws.read("files").entries} == want
    assert len({n.id for n in ws.read("notes").notes}) == 2 * n  # no id handed out twice


def test_maildir_store_replace_and_clock(tmp_path):
    store = MaildirStore(tmp_path / "mail", clock=CLOCK)
    with store.transaction(write=True) as st:
        assert st.now == "2026-12-02T08:30"
    assert not (tmp_path / "mail").exists()  # nothing changed: nothing created
    with pytest.raises(StoreError):
        (tmp_path / "file-not-dir").write_text("x")
        with MaildirStore(tmp_path / "file-not-dir").transaction(write=True):
            pass


def test_import_a_folder_into_the_web_corpus(tmp_path):
    from botpsy.stores.corpus import import_folder

    docs = tmp_path / "saved"
    docs.mkdir()
    (docs / "kettle.md").write_text("# Descaling\nUse citric acid, two tablespoons per litre.")
    (docs / "page.html").write_text(
        "<html><head><title>Bike shop</title><style>x{}</style></head>"
        "<body><p>Open until 18:30 &amp; Saturdays</p><script>evil()</script></body></html>"
    )
    (docs / "photo.jpg").write_bytes(b"\xff\xd8\x00")
    ws = Workspace(tmp_path / "ws", suites=["web"])
    assert import_folder(ws, docs) == 2
    assert import_folder(ws, docs) == 2  # re-import replaces, never duplicates
    hits = ok(ws.call("search_web", {"query": "citric acid"}))["results"]
    assert hits[0]["title"] == "Descaling" and hits[0]["url"].startswith("file://")
    page = ok(ws.call("open_page", {"url": (docs / "page.html").resolve().as_uri()}))
    assert page["title"] == "Bike shop" and "18:30 & Saturdays" in page["text"] and "evil" not in page["text"]
    assert len(ws.read("web").pages) == 2
