"""Email's real store: a Maildir, read leniently and indexed, written with the standard library.

Layout: the Maildir root is the inbox; other folders are Maildir++ subfolders (`.Sent`,
`.Archive`, `.Trash`, and any the user's mail program made), matched case-insensitively to the
suite's lower-case folder names. Other mail programs can share the folder.

Reading: each message file is parsed by `mailparse` (never raises: a mail it cannot read is shown
raw, so one hostile message cannot disable the suite) and cached by `mailindex` (a call parses
only new or changed files). Only regular files are read: a FIFO in `cur/` cannot hang a call.

Ids: a mail botpsy wrote carries its id in an `X-Botpsy-Id` header; any other mail gets
`m` + 8 hex digits of a hash of its Message-ID (or, lacking one, its Maildir key), so ids are short
for the model and stable across loads and moves.

Writes: a new mail is delivered by `mailbox` (written in `tmp/`, then renamed). Reading flags and
moves are renames of the message file, as mail programs do: its bytes and permission bits are
kept (rewriting it, as this store once did for a flag, replaced even a read-only file and
re-serialised what a stranger wrote). A message file without write bits is never deleted, and a
folder without write bits gets no new files (see `botpsy.atomic.read_only_reason`). A file lock
beside the Maildir serialises botpsy writers. Nothing here sends mail over the network:
`send_email` files the message in Sent; handing it to an SMTP relay is a transport's job.
"""

from __future__ import annotations

import email
import email.policy
import mailbox
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path

from botpsy.atomic import read_only_reason, rename_noreplace
from botpsy.stores.common import StoreError, file_lock, os_error, set_clock
from botpsy.stores.mailindex import Item, MailIndex, signature
from botpsy.stores.mailparse import DT, attachment_name, local_date, mail_id, unfold
from botpsy.tools.mail import BASE_FOLDERS, EmailState, Mail


@dataclass
class _File:
    """Where one message lives: folder name, folder path, `new`/`cur`, file name, Maildir key."""

    folder: str
    box: Path
    sub: str
    name: str
    key: str
    file: str  # the full path as text (a Path per message cost a second at 20,000 messages)

    @property
    def path(self) -> Path:
        return Path(self.file)

    @property
    def flags(self) -> str:
        _, sep, info = self.name.partition(":")
        return info[2:] if sep and info.startswith("2,") else ""


def _folders(root: Path) -> dict[str, Path]:
    found = {"inbox": root}
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if len(entry.name) > 1 and entry.name.startswith(".") and entry.is_dir():
            found.setdefault(entry.name[1:].casefold(), Path(entry.path))
    return found


def _messages(folder: str, box: Path) -> Iterator[tuple[_File, os.stat_result, str]]:
    """Each regular message file in a folder, its status, and its index key (folder/Maildir key)."""
    seen = set()
    prefix = "" if folder == "inbox" else box.name
    for sub in ("new", "cur"):
        try:
            entries = sorted(os.scandir(box / sub), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue  # a folder another program left half made
        for entry in entries:
            key = entry.name.split(":")[0]
            if entry.name.startswith(".") or key in seen:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                seen.add(key)
                yield _File(folder, box, sub, entry.name, key, entry.path), st, f"{prefix}/{key}"


class MaildirStore:
    def __init__(self, root: Path | str, me: str = "me@localhost", timeout: float = 10.0, clock=None):
        self.root = Path(root)
        self.me, self.timeout, self.clock = me, timeout, clock
        self.lock_path = self.root.with_name(self.root.name + ".lock")
        self.index = MailIndex(self.root.with_name(self.root.name + ".index"))

    # ---- load --------------------------------------------------------------------------------
    def _check(self) -> bool:
        """Whether there is a Maildir (False: none yet); StoreError if the folder is something else."""
        if not self.root.exists():
            return False
        missing = [d for d in ("cur", "new", "tmp") if not (self.root / d).is_dir()]
        if missing:
            raise StoreError(
                f"{self.root} is not a Maildir (missing {', '.join(missing)}/). It was left untouched; "
                "point the workspace at a Maildir or move the folder away."
            )
        return True

    def _load(self) -> tuple[EmailState, dict[str, _File]]:
        state = EmailState(me=self.me)
        files: dict[str, _File] = {}
        if not self._check():
            return state, files
        try:
            folders = _folders(self.root)
            found = [hit for name, box in folders.items() for hit in _messages(name, box)]
        except OSError as e:
            raise os_error("read mail in", self.root, e) from None
        state.folders = sorted(set(folders) | set(BASE_FOLDERS), key=lambda f: (f not in BASE_FOLDERS, f))
        items = [Item(key, f.file, signature(st), st.st_mtime) for f, st, key in found]
        records = self.index.records(items)
        for f, st, key in found:
            rec = records.get(key)
            if rec is None:
                continue  # removed by another mail program while we read
            mid = mail_id(rec, f.key)
            while mid in files:
                mid += "x"
            try:  # validated (pydantic's model_construct is slower still) and the lists copied
                mail = Mail(
                    id=mid,
                    folder=f.folder,
                    sender=rec["sender"],
                    to=rec["to"],
                    cc=rec["cc"],
                    subject=rec["subject"],
                    date=local_date(rec["date"], st.st_mtime),
                    body=rec["body"],
                    read="S" in f.flags,
                    attachments=rec["attachments"],
                )
            except Exception:  # records are type-checked; should one still not fit, the rest are shown
                continue
            state.mails.append(mail)
            files[mid] = f
        return state, files

    # ---- save --------------------------------------------------------------------------------
    def _box(self, md: mailbox.Maildir, folder: str) -> tuple[mailbox.Maildir, Path]:
        """The folder (made if missing) and its path."""
        if folder == "inbox":
            return md, self.root
        for name in md.list_folders():
            if name.casefold() == folder:
                return md.get_folder(name), self.root / f".{name}"
        name = folder.capitalize()
        return md.add_folder(name), self.root / f".{name}"

    def _writable(self, folder: Path, *subs: str) -> None:
        for sub in subs:
            where = folder / sub
            reason = read_only_reason(os.stat(where), str(where), what="the folder")
            if reason is not None:
                raise StoreError(
                    f"cannot save mail to {where}: {reason}; make it "
                    "writable (chmod u+w) if botpsy may change it; nothing was changed"
                )

    def _compose(self, mail: Mail, source: email.message.Message | None) -> mailbox.MaildirMessage:
        msg = EmailMessage(policy=email.policy.SMTP)
        # Header values come from mail on disk and from the model: one line each, whatever came.
        msg["From"] = unfold(mail.sender)
        msg["To"] = unfold(", ".join(mail.to))
        if mail.cc:
            msg["Cc"] = unfold(", ".join(mail.cc))
        msg["Subject"] = unfold(mail.subject)
        msg["Date"] = format_datetime(datetime.strptime(mail.date, DT).astimezone())
        msg["Message-ID"] = make_msgid(domain="botpsy.local")
        msg["X-Botpsy-Id"] = mail.id
        msg.set_content(mail.body)
        if source is not None:  # a forward: carry the original's attachments along
            for part in source.walk():
                name = None if part.is_multipart() else attachment_name(part)
                if name is not None:
                    maintype, _, subtype = part.get_content_type().partition("/")
                    payload = part.get_payload(decode=True)
                    msg.add_attachment(
                        payload if isinstance(payload, bytes) else b"",
                        maintype=maintype,
                        subtype=subtype,
                        filename=name,
                    )
        out = mailbox.MaildirMessage(email.message_from_bytes(msg.as_bytes()))
        out.set_subdir("cur")
        if mail.read:
            out.add_flag("S")
        return out

    def _relocate(self, f: _File, box: Path, read: bool) -> None:
        """Move and/or flag a message by renaming its file: bytes and mode are kept."""
        flags = set(f.flags)
        flags.discard("S")
        if read:
            flags.add("S")
        sub = "cur" if flags or f.sub == "cur" else "new"
        name = f.key + (":2," + "".join(sorted(flags)) if sub == "cur" else "")
        if box != f.box:
            self._writable(box, sub)
            self._writable(f.box, f.sub)
        src = os.open(f.box / f.sub, os.O_RDONLY | os.O_DIRECTORY)
        try:
            dst = os.open(box / sub, os.O_RDONLY | os.O_DIRECTORY)
            try:
                if (box, sub, name) != (f.box, f.sub, f.name):
                    rename_noreplace(src, f.name, dst, name)
            finally:
                os.close(dst)
        finally:
            os.close(src)

    def _remove(self, f: _File) -> None:
        self._writable(f.box, f.sub)
        reason = read_only_reason(os.stat(f.file, follow_symlinks=False), f.file)
        if reason is not None:
            raise StoreError(
                f"cannot delete {f.path}: {reason}; make it writable (chmod u+w) if botpsy may delete "
                "it; nothing was deleted"
            )
        f.path.unlink()

    def _save(
        self, md: mailbox.Maildir, before: EmailState, after: EmailState, files: dict[str, _File]
    ) -> None:
        old = {m.id: m for m in before.mails}
        new = {m.id: m for m in after.mails}
        for folder in after.folders:
            if folder not in before.folders:
                self._box(md, folder)
        for mid, mail in new.items():
            prev = old.get(mid)
            if prev is None:
                source = None
                if mail.forwarded_from in files:
                    source = email.message_from_bytes(files[mail.forwarded_from].path.read_bytes())
                box, where = self._box(md, mail.folder)
                self._writable(where, "tmp", "cur")
                box.add(self._compose(mail, source))
            elif prev.folder != mail.folder or prev.read != mail.read:
                self._relocate(files[mid], self._box(md, mail.folder)[1], mail.read)
        for mid in old.keys() - new.keys():
            self._remove(files[mid])

    # ---- the interface -----------------------------------------------------------------------
    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[EmailState]:
        if not write:
            state, _ = self._load()
            yield set_clock(state, self.clock() if self.clock else None)
            return
        if not self.root.parent.exists():
            try:
                self.root.parent.mkdir(parents=True)
            except OSError as e:
                raise os_error("create", self.root.parent, e) from None
        with file_lock(self.lock_path, self.root, self.timeout):
            state, files = self._load()
            before = state.model_copy(deep=True)
            set_clock(state, self.clock() if self.clock else None)
            yield state
            if state.canonical() != before.canonical():
                try:
                    md = mailbox.Maildir(self.root, factory=None, create=True)
                    self._save(md, before, state, files)
                except OSError as e:
                    raise os_error("save mail to", self.root, e) from None

    def replace(self, state: EmailState) -> None:
        """Write a whole mailbox state (seeding a workspace); mails keep their ids."""
        with self.transaction(write=True) as current:
            current.folders = sorted(set(current.folders) | set(state.folders))
            current.mails = [m for m in current.mails if m.id not in {x.id for x in state.mails}]
            current.mails += [m.model_copy() for m in state.mails]
