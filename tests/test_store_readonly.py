"""Read-only files stay as they are (issue 36 item 6), for root too.

Before: every store replaced a 0444 `calendar.ics` or `files/*.txt` (a rename needs only the
folder to be writable, and root ignores modes anyway), and a Maildir flag change rewrote the
message file into a new 0644 one. Now a file without write bits is refused with an error that
says so, and nothing is written.
"""

from __future__ import annotations

import json
import mailbox
import os
from email.message import EmailMessage

import pytest

from botpsy.stores.workspace import seed_workspace


def call(ws, name, **args) -> dict:
    return json.loads(ws.call(name, args))


@pytest.fixture
def ws(tmp_path):
    return seed_workspace(tmp_path / "ws", seed=3, suites=["calendar", "files", "email"])


def _snapshot(root):
    return {
        p: (p.read_bytes(), p.stat().st_mode)
        for p in root.rglob("*")
        if p.is_file() and "lock" not in p.name and p.name != "journal.jsonl"
    }


def test_a_read_only_calendar_is_not_replaced(ws):
    ws.calendar_path.chmod(0o444)
    before = _snapshot(ws.root)
    out = call(ws, "create_event", title="Dentist", start="2026-12-03T10:00")
    assert "read-only" in out["error"] and "chmod" in out["error"], out
    assert _snapshot(ws.root) == before
    assert ws.calendar_path.stat().st_mode & 0o777 == 0o444


def test_a_read_only_text_file_is_neither_overwritten_nor_deleted(ws):
    path = next(p for p in ws.files_path.rglob("*.txt"))
    rel = path.relative_to(ws.files_path).as_posix()
    path.chmod(0o444)
    before = _snapshot(ws.root)
    out = call(ws, "write_file", path=rel, text="pwned", overwrite=True)
    assert "read-only" in out["error"], out
    out = call(ws, "delete_file", path=rel)
    assert "read-only" in out["error"], out
    assert _snapshot(ws.root) == before
    assert call(ws, "read_file", path=rel)["text"] == path.read_text()  # reading still works


def test_a_read_only_folder_gets_no_new_file(ws):
    folder = next(p for p in ws.files_path.iterdir() if p.is_dir())
    folder.chmod(0o555)
    try:
        out = call(ws, "write_file", path=f"{folder.name}/new.txt", text="x")
        assert "read-only" in out["error"], out
        assert not (folder / "new.txt").exists()
    finally:
        folder.chmod(0o755)


def _foreign_mail(ws) -> str:
    msg = EmailMessage()
    msg["From"] = "ann@example.org"
    msg["To"] = "me@localhost"
    msg["Subject"] = "Keep me as I am"
    msg["Message-ID"] = "<keep@example.org>"
    msg["Date"] = "Mon, 30 Nov 2026 10:00:00 +0000"
    msg.set_content("Body text")
    key = mailbox.Maildir(ws.mail_path).add(msg)
    (path,) = (ws.mail_path / "new").glob(f"{key}*")
    path.chmod(0o444)
    return next(m["id"] for m in call(ws, "search_emails", query="Keep me")["emails"])


def test_a_read_only_message_is_renamed_never_rewritten_and_never_deleted(ws):
    mail_id = _foreign_mail(ws)
    (path,) = (ws.mail_path / "new").glob("*")
    original, inode = path.read_bytes(), path.stat().st_ino
    assert "error" not in call(ws, "move_email", email_id=mail_id, folder="archive")
    assert "error" not in call(ws, "delete_email", email_id=mail_id)  # to trash: a rename
    (moved,) = [p for p in (ws.mail_path / ".Trash").rglob("*") if p.is_file() and p.stat().st_ino == inode]
    assert moved.read_bytes() == original and moved.stat().st_mode & 0o777 == 0o444
    out = call(ws, "delete_email", email_id=mail_id)  # for good: refused
    assert "read-only" in out["error"], out
    assert moved.read_bytes() == original
    assert call(ws, "read_email", email_id=mail_id)["subject"] == "Keep me as I am"


def test_marking_a_read_only_message_read_keeps_its_bytes_and_mode(ws):
    mail_id = _foreign_mail(ws)
    (path,) = (ws.mail_path / "new").glob("*")
    original, inode = path.read_bytes(), path.stat().st_ino
    from botpsy.stores.maildir import MaildirStore

    with MaildirStore(ws.mail_path).transaction(write=True) as st:
        st.get(mail_id).read = True
    (now,) = [p for p in (ws.mail_path / "cur").glob("*") if p.read_bytes() == original]
    assert now.name.endswith(":2,S") and now.stat().st_ino == inode
    assert now.stat().st_mode & 0o777 == 0o444
    assert os.listdir(ws.mail_path / "new") == []
