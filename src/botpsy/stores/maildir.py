"""Email's real store: a Maildir (read and written with the standard library's `mailbox`).

Layout: the Maildir root is the inbox; other folders are Maildir++ subfolders (`.Sent`,
`.Archive`, `.Trash`, and any the user's mail program made), matched case-insensitively to the
suite's lower-case folder names. Other mail programs can share the folder.

Ids: a mail botpsy wrote carries its id in an `X-Botpsy-Id` header; any other mail gets
`m` + 8 hex digits of a hash of its Message-ID (or, lacking one, its Maildir key), so ids are short
for the model and stable across loads.

Writes: Maildir delivery is atomic per message (written in `tmp/`, then renamed). A move is
"add to the new folder, then remove from the old", so a crash in between leaves a duplicate,
never a lost mail. A file lock beside the Maildir serialises botpsy writers. Nothing here sends
mail over the network: `send_email` files the message in Sent; handing it to an SMTP relay is a
transport's job, outside the store.
"""

from __future__ import annotations

import email
import email.policy
import hashlib
import html
import mailbox
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from email.header import decode_header, make_header
from email.message import EmailMessage
from email.utils import format_datetime, getaddresses, make_msgid, parsedate_to_datetime
from pathlib import Path

from botpsy.stores.common import StoreError, file_lock, os_error, set_clock
from botpsy.tools.mail import BASE_FOLDERS, EmailState, Mail

DT = "%Y-%m-%dT%H:%M"


def _unfold(text: str) -> str:
    """One header line: RFC 5322 folding (CRLF + whitespace) and any stray CR/LF become one space.

    A long Subject arrives folded over several lines; kept as it is, it reaches a reply's or a
    forward's Subject, which the email package refuses to write ("may not contain linefeed").
    """
    return re.sub(r"[ \t]*[\r\n]+[ \t]*", " ", text).strip()


def _header(msg: mailbox.MaildirMessage, name: str) -> str:
    raw = msg.get(name)
    if raw is None:
        return ""
    try:
        return _unfold(str(make_header(decode_header(str(raw)))))
    except (UnicodeError, LookupError, ValueError):
        return _unfold(str(raw))


def _addresses(msg: mailbox.MaildirMessage, name: str) -> list[str]:
    values = msg.get_all(name) or []
    return [addr.lower() for _, addr in getaddresses([_header_str(v) for v in values]) if addr]


def _header_str(value: object) -> str:
    try:
        return _unfold(str(make_header(decode_header(str(value)))))
    except (UnicodeError, LookupError, ValueError):
        return _unfold(str(value))


def _body(msg: mailbox.MaildirMessage) -> tuple[str, list[str]]:
    """The first text/plain part (or text/html stripped of tags), and attachment file names."""
    plain = html_text = None
    attachments = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        filename = part.get_filename()
        if filename or part.get_content_disposition() == "attachment":
            attachments.append(_header_str(filename or "attachment"))
            continue
        ctype = part.get_content_type()
        if ctype not in ("text/plain", "text/html"):
            continue
        payload = part.get_payload(decode=True) or b""
        charset = part.get_content_charset() or "utf-8"
        try:
            text = payload.decode(charset, errors="replace")
        except LookupError:
            text = payload.decode("utf-8", errors="replace")
        if ctype == "text/plain" and plain is None:
            plain = text
        elif ctype == "text/html" and html_text is None:
            html_text = html.unescape(
                re.sub(r"<[^>]+>", " ", re.sub(r"(?is)<(script|style).*?</\1>", "", text))
            )
    body = plain if plain is not None else (html_text or "")
    return body.strip(), attachments


class MaildirStore:
    def __init__(self, root: Path | str, me: str = "me@localhost", timeout: float = 10.0, clock=None):
        self.root = Path(root)
        self.me, self.timeout, self.clock = me, timeout, clock
        self.lock_path = self.root.with_name(self.root.name + ".lock")

    # ---- load --------------------------------------------------------------------------------
    def _open(self, create: bool) -> mailbox.Maildir | None:
        if not self.root.exists():
            if not create:
                return None
            try:
                return mailbox.Maildir(self.root, factory=None, create=True)
            except OSError as e:
                raise os_error("create the mail folder", self.root, e) from None
        missing = [d for d in ("cur", "new", "tmp") if not (self.root / d).is_dir()]
        if missing:
            raise StoreError(
                f"{self.root} is not a Maildir (missing {', '.join(missing)}/). It was left untouched; "
                "point the workspace at a Maildir or move the folder away."
            )
        return mailbox.Maildir(self.root, factory=None, create=False)

    def _folders(self, md: mailbox.Maildir) -> dict[str, mailbox.Maildir | None]:
        found: dict[str, mailbox.Maildir | None] = {"inbox": md}
        for name in md.list_folders():
            found[name.casefold()] = md.get_folder(name)
        for name in BASE_FOLDERS:
            found.setdefault(name, None)
        return found

    def _load(self, md: mailbox.Maildir | None) -> tuple[EmailState, dict[str, tuple[str, str]]]:
        state = EmailState(me=self.me)
        keys: dict[str, tuple[str, str]] = {}
        if md is None:
            return state, keys
        folders = self._folders(md)
        state.folders = sorted(folders, key=lambda f: (f not in BASE_FOLDERS, f))
        for folder, box in folders.items():
            if box is None:
                continue
            for key in sorted(box.iterkeys()):
                try:
                    msg = box.get_message(key)
                except (OSError, KeyError):
                    continue  # removed by another mail program while we listed it
                mail_id = _header(msg, "X-Botpsy-Id")
                if not mail_id:
                    seed = _header(msg, "Message-ID") or f"{folder}/{key}"
                    mail_id = "m" + hashlib.sha1(seed.encode()).hexdigest()[:8]
                while mail_id in keys:
                    mail_id += "x"
                try:
                    when = parsedate_to_datetime(_header(msg, "Date"))
                    when = when.astimezone().replace(tzinfo=None) if when.tzinfo else when
                except (TypeError, ValueError, IndexError):
                    when = datetime.fromtimestamp(msg.get_date())
                body, attachments = _body(msg)
                senders = _addresses(msg, "From")
                state.mails.append(
                    Mail(
                        id=mail_id,
                        folder=folder,
                        sender=senders[0] if senders else _header(msg, "From"),
                        to=_addresses(msg, "To"),
                        cc=_addresses(msg, "Cc"),
                        subject=_header(msg, "Subject"),
                        date=when.strftime(DT),
                        body=body,
                        read="S" in msg.get_flags(),
                        attachments=attachments,
                    )
                )
                keys[mail_id] = (folder, key)
        return state, keys

    # ---- save --------------------------------------------------------------------------------
    def _box(self, md: mailbox.Maildir, folder: str) -> mailbox.Maildir:
        if folder == "inbox":
            return md
        for name in md.list_folders():
            if name.casefold() == folder:
                return md.get_folder(name)
        return md.add_folder(folder.capitalize())

    def _compose(self, mail: Mail, source: mailbox.MaildirMessage | None) -> mailbox.MaildirMessage:
        msg = EmailMessage(policy=email.policy.SMTP)
        # Header values come from mail on disk and from the model: one line each, whatever came.
        msg["From"] = _unfold(mail.sender)
        msg["To"] = _unfold(", ".join(mail.to))
        if mail.cc:
            msg["Cc"] = _unfold(", ".join(mail.cc))
        msg["Subject"] = _unfold(mail.subject)
        msg["Date"] = format_datetime(datetime.strptime(mail.date, DT).astimezone())
        msg["Message-ID"] = make_msgid(domain="botpsy.local")
        msg["X-Botpsy-Id"] = mail.id
        msg.set_content(mail.body)
        if source is not None:  # a forward: carry the original's attachments along
            for part in source.walk():
                if not part.is_multipart() and (
                    part.get_filename() or part.get_content_disposition() == "attachment"
                ):
                    maintype, _, subtype = part.get_content_type().partition("/")
                    msg.add_attachment(
                        part.get_payload(decode=True) or b"",
                        maintype=maintype,
                        subtype=subtype,
                        filename=_header_str(part.get_filename() or "attachment"),
                    )
        out = mailbox.MaildirMessage(email.message_from_bytes(msg.as_bytes()))
        out.set_subdir("cur")
        if mail.read:
            out.add_flag("S")
        return out

    def _save(
        self, md: mailbox.Maildir, before: EmailState, after: EmailState, keys: dict[str, tuple[str, str]]
    ) -> None:
        old = {m.id: m for m in before.mails}
        new = {m.id: m for m in after.mails}
        for folder in after.folders:
            if folder not in before.folders:
                self._box(md, folder)
        for mail_id, mail in new.items():
            prev = old.get(mail_id)
            if prev is None:
                source = None
                if mail.forwarded_from in keys:
                    folder, key = keys[mail.forwarded_from]
                    source = self._box(md, folder).get_message(key)
                self._box(md, mail.folder).add(self._compose(mail, source))
            elif prev.folder != mail.folder or prev.read != mail.read:
                folder, key = keys[mail_id]
                box = self._box(md, folder)
                msg = box.get_message(key)
                if mail.read:
                    msg.add_flag("S")
                else:
                    msg.remove_flag("S")
                if prev.folder != mail.folder:
                    if "X-Botpsy-Id" not in msg:  # keep the id stable when the Maildir key changes
                        msg["X-Botpsy-Id"] = mail_id
                    if msg.get_subdir() == "new" and mail.read:
                        msg.set_subdir("cur")
                    self._box(md, mail.folder).add(msg)
                    box.remove(key)
                else:
                    box[key] = msg
        for mail_id in old.keys() - new.keys():
            folder, key = keys[mail_id]
            self._box(md, folder).remove(key)

    # ---- the interface -----------------------------------------------------------------------
    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[EmailState]:
        if not write:
            state, _ = self._load(self._open(create=False))
            yield set_clock(state, self.clock() if self.clock else None)
            return
        if not self.root.parent.exists():
            try:
                self.root.parent.mkdir(parents=True)
            except OSError as e:
                raise os_error("create", self.root.parent, e) from None
        with file_lock(self.lock_path, self.root, self.timeout):
            md = self._open(create=False)
            state, keys = self._load(md)
            before = state.model_copy(deep=True)
            set_clock(state, self.clock() if self.clock else None)
            yield state
            if state.canonical() != before.canonical():
                try:
                    self._save(md or self._open(create=True), before, state, keys)
                except OSError as e:
                    raise os_error("save mail to", self.root, e) from None

    def replace(self, state: EmailState) -> None:
        """Write a whole mailbox state (seeding a workspace); mails keep their ids."""
        with self.transaction(write=True) as current:
            current.folders = sorted(set(current.folders) | set(state.folders))
            current.mails = [m for m in current.mails if m.id not in {x.id for x in state.mails}]
            current.mails += [m.model_copy() for m in state.mails]
