"""The Maildir under hostile mail (issue 36 item 3), and its index.

Before: one Subject like `=?utf-8?B?!!!notbase64===?=` made `decode_header` raise, and every
email tool failed with an error that blamed the model's arguments; raw UTF-8 headers came out as
U+FFFD pairs; a FIFO in `cur/` hung every call; every call parsed every message.
"""

from __future__ import annotations

import json
import mailbox
import os
import shutil
import signal
import sqlite3
from email.message import EmailMessage

import pytest

from botpsy.stores import mailindex
from botpsy.stores.maildir import MaildirStore
from botpsy.stores.workspace import Workspace

HOSTILE = {
    "bad-base64": b"From: eve@example.org\nSubject: =?utf-8?B?!!!notbase64===?=\n"
    b"Message-ID: <1@x>\nDate: Mon, 30 Nov 2026 10:00:00 +0000\n\nhello",
    "raw-utf8": "From: Zoë Müller <zoe@example.org>\nSubject: Grüße aus Köln\nMessage-ID: <2@x>\n"
    "Date: Mon, 30 Nov 2026 11:00:00 +0000\nContent-Type: text/plain; charset=utf-8\n\nSchöne Grüße".encode(),
    "latin1": b"From: jo@example.org\nSubject: Caf\xe9 cr\xe8me\nMessage-ID: <3@x>\n\nna\xefve",
    "rot13-charset": b"From: r@example.org\nSubject: =?rot13?q?abc?= =?x-unknown?B?SGk=?=\nMessage-ID: <4@x>\n"
    b"Content-Type: text/plain; charset=rot13\n\nbody",
    "odd-date": b"From: d@example.org\nSubject: Old\nDate: Mon, 1 Jan 0001 00:00:00 +1400\nMessage-ID: <5@x>\n\nx",
    "split-word": b"From: s@example.org\nSubject: =?utf-8?B?R3LDvMOf?= =?utf-8?B?w6k=?=\nMessage-ID: <6@x>\n\nx",
    "junk": bytes(range(256)) * 8,
    "bad-id": b"From: i@example.org\nX-Botpsy-Id: m1 evil\nSubject: Spoof\nMessage-ID: <7@x>\n\nx",
}


def call(ws, name, **args) -> dict:
    out = json.loads(ws.call(name, args))
    assert "error" not in out, (name, out)
    return out


@pytest.fixture
def ws(tmp_path):
    mailindex._MEMO.clear()
    (tmp_path / "ws").mkdir()
    md = mailbox.Maildir(tmp_path / "ws" / "mail", create=True)
    for raw in HOSTILE.values():
        md.add(raw)
    good = EmailMessage()
    good["From"] = "ann@example.org"
    good["To"] = "me@localhost"
    good["Subject"] = "Lunch on Friday"
    good["Date"] = "Tue, 1 Dec 2026 09:00:00 +0000"
    good.set_content("Shall we?")
    md.add(good)
    return Workspace(tmp_path / "ws", suites=["email"])


def test_one_bad_mail_does_not_disable_the_suite(ws):
    listed = call(ws, "list_emails", limit=50)["emails"]
    assert len(listed) == len(HOSTILE) + 1
    subjects = {m["subject"] for m in listed}
    assert "=?utf-8?B?!!!notbase64===?=" in subjects  # shown as written
    assert {"Grüße aus Köln", "Café crème", "Old", "Grüßé", "Lunch on Friday", "Spoof"} <= subjects
    for m in listed:
        assert call(ws, "read_email", email_id=m["id"])["id"] == m["id"]
    hit = call(ws, "search_emails", query="Köln")["emails"]
    assert [h["from"] for h in hit] == ["zoe@example.org"]
    assert call(ws, "read_email", email_id=hit[0]["id"])["body"] == "Schöne Grüße"
    lunch = next(m for m in listed if m["subject"] == "Lunch on Friday")
    call(ws, "reply_to_email", email_id=lunch["id"], body="Yes!")
    call(ws, "send_email", to=["bob@example.com"], subject="Hi", body="Hello")
    bad = next(m for m in listed if m["subject"].startswith("=?utf-8?B?!!!"))
    call(ws, "reply_to_email", email_id=bad["id"], body="What?")
    call(ws, "move_email", email_id=bad["id"], folder="archive")
    assert len(call(ws, "list_emails", folder="sent")["emails"]) == 3
    assert "m1 evil" not in {m["id"] for m in listed}  # an id header that is not an id is ignored


def test_a_fifo_in_the_maildir_cannot_hang_a_call(ws):
    os.mkfifo(ws.mail_path / "cur" / "123.fifo:2,S")
    old = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(TimeoutError("hung on a FIFO")))
    signal.alarm(10)
    try:
        assert len(call(ws, "list_emails", limit=50)["emails"]) == len(HOSTILE) + 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _count_parses(monkeypatch) -> list:
    seen = []
    real = mailindex.parse

    def counting(data, mtime):
        seen.append(1)
        return real(data, mtime)

    monkeypatch.setattr(mailindex, "parse", counting)
    return seen


def test_the_index_parses_each_message_once(ws, monkeypatch):
    parses = _count_parses(monkeypatch)
    first = call(ws, "list_emails", limit=50)
    assert len(parses) == len(HOSTILE) + 1
    assert call(ws, "list_emails", limit=50) == first and len(parses) == len(HOSTILE) + 1  # the memo
    mailindex._MEMO.clear()  # a new process: the index file beside the Maildir
    assert call(ws, "list_emails", limit=50) == first and len(parses) == len(HOSTILE) + 1
    assert (ws.root / "mail.index").is_file()
    mail = next(m for m in first["emails"] if m["subject"] == "Lunch on Friday")
    call(ws, "move_email", email_id=mail["id"], folder="archive")  # a rename: still one parse each
    assert call(ws, "list_emails", folder="archive")["emails"][0]["id"] == mail["id"]
    assert len(parses) <= len(HOSTILE) + 2


def test_a_changed_message_is_parsed_again(ws):
    listed = call(ws, "list_emails", limit=50)["emails"]
    lunch = next(m for m in listed if m["subject"] == "Lunch on Friday")
    (path,) = [p for p in (ws.mail_path / "new").iterdir() if b"Lunch on Friday" in p.read_bytes()]
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"Lunch on Friday", b"Dinner on Friday"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime, other size: still seen
    assert call(ws, "read_email", email_id=lunch["id"])["subject"] == "Dinner on Friday"


@pytest.mark.parametrize("damage", ["garbage", "wrong-shape", "old-version", "directory"])
def test_a_damaged_index_is_rebuilt_never_trusted(ws, damage):
    first = call(ws, "list_emails", limit=50)
    mailindex._MEMO.clear()
    index = ws.root / "mail.index"
    if damage == "garbage":
        index.write_bytes(b"not a database" * 100)
    elif damage == "wrong-shape":
        con = sqlite3.connect(index)
        con.execute("UPDATE mails SET record = '{\"subject\": 1}'")
        con.execute("UPDATE mails SET record = '[' WHERE rowid = 1")
        con.commit()
        con.close()
    elif damage == "old-version":
        con = sqlite3.connect(index)
        con.execute("UPDATE mails SET record = replace(record, 'Lunch', 'Forged')")
        con.execute("PRAGMA user_version = 999")
        con.commit()
        con.close()
    else:
        index.unlink()
        index.mkdir()  # cannot be a database at all: the calls work without one
    assert call(ws, "list_emails", limit=50) == first
    if damage != "directory":
        con = sqlite3.connect(index)
        assert con.execute("PRAGMA user_version").fetchone()[0] == mailindex.VERSION
        assert con.execute("SELECT count(*) FROM mails").fetchone()[0] == len(HOSTILE) + 1
        con.close()
    else:
        shutil.rmtree(index)


def test_a_read_only_workspace_gets_no_index(tmp_path):
    mailindex._MEMO.clear()
    (tmp_path / "ws").mkdir()
    md = mailbox.Maildir(tmp_path / "ws" / "mail", create=True)
    md.add(b"From: a@b.c\nSubject: x\n\nbody")
    (tmp_path / "ws").chmod(0o555)
    try:
        state, _ = MaildirStore(tmp_path / "ws" / "mail")._load()
        assert [m.subject for m in state.mails] == ["x"]
        assert sorted(os.listdir(tmp_path / "ws")) == ["mail"]
    finally:
        (tmp_path / "ws").chmod(0o755)


def test_a_mail_without_message_id_keeps_its_id_across_moves(ws):
    listed = call(ws, "list_emails", limit=50)["emails"]
    junk = next(m for m in listed if m["subject"] in ("", "(unreadable message)"))
    call(ws, "move_email", email_id=junk["id"], folder="archive")
    assert call(ws, "read_email", email_id=junk["id"])["folder"] == "archive"


def test_every_hostile_mail_can_be_replied_to_forwarded_and_deleted(ws):
    listed = call(ws, "list_emails", limit=50)["emails"]
    for m in listed:
        call(ws, "forward_email", email_id=m["id"], to=["bob@example.com"], note="FYI")
        if m.get("from"):
            call(ws, "reply_to_email", email_id=m["id"], body="Thanks")
        call(ws, "delete_email", email_id=m["id"])
    sent = call(ws, "list_emails", folder="sent", limit=50)["emails"]
    assert len(sent) >= len(listed) and len(
        call(ws, "list_emails", folder="trash", limit=50)["emails"]
    ) == len(listed)
