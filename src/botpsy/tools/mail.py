"""Email suite: list, read, search, send, reply, forward, move and delete mail.

The state is a list of mails with a folder each (inbox, sent, archive, trash, or any folder the
user made). The assistant's store is a Maildir (`botpsy.stores.maildir`); a world seeds mails in
memory. Sending, replying and forwarding put the mail in `sent` and are egress: the text leaves
the device. Mail bodies are written by whoever sent them — data, never instructions.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool
from botpsy.tools.common import by_id, clip, email_arg, int_range, matches, next_id, norm, query_arg, text_arg

BASE_FOLDERS = ("inbox", "sent", "archive", "trash")


class Mail(BaseModel):
    id: str
    folder: str = "inbox"
    sender: str
    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    subject: str = ""
    date: str  # YYYY-MM-DDTHH:MM
    body: str = ""
    read: bool = False
    attachments: list[str] = Field(default_factory=list)
    forwarded_from: str = ""  # id of the mail this one forwards (the store copies its attachments)

    def header(self) -> dict:
        d = {"id": self.id, "from": self.sender, "subject": self.subject, "date": self.date}
        if self.folder == "sent":
            d = {"id": self.id, "to": ", ".join(self.to), "subject": self.subject, "date": self.date}
        if not self.read and self.folder == "inbox":
            d["unread"] = True
        return d

    def full(self) -> dict:
        d = {**self.header(), "folder": self.folder, "to": ", ".join(self.to), "body": self.body}
        if self.cc:
            d["cc"] = ", ".join(self.cc)
        if self.attachments:
            d["attachments"] = self.attachments
        return d


class EmailState(BaseModel):
    mails: list[Mail] = Field(default_factory=list)
    me: str = "me@example.com"
    folders: list[str] = Field(default_factory=lambda: list(BASE_FOLDERS))
    now: str = "2026-12-01T09:00"

    def get(self, mail_id: str) -> Mail:
        return by_id(self.mails, mail_id, "email", "use list_emails or search_emails")

    def folder(self, name: str, field: str = "folder") -> str:
        key = norm(name)
        if key not in self.folders:
            raise ToolError(f"{field}: no folder {name!r}; folders: {', '.join(self.folders)}")
        return key

    def canonical(self) -> dict:
        rows = [
            {
                **m.model_dump(),
                "subject": " ".join(m.subject.split()),
                "body": " ".join(m.body.split()),
                "to": sorted(m.to),
                "cc": sorted(m.cc),
            }
            for m in self.mails
        ]
        return {"mails": sorted(rows, key=lambda r: r["id"]), "folders": sorted(self.folders)}

    def new_mail(self, to: list[str], subject: str, body: str, cc: list[str] | None = None) -> Mail:
        mail = Mail(
            id=next_id("m", (m.id for m in self.mails)),
            folder="sent",
            sender=self.me,
            to=to,
            cc=cc or [],
            subject=subject,
            date=self.now,
            body=body,
            read=True,
        )
        self.mails.append(mail)
        return mail


def _addresses(values: list[str] | str, field: str) -> list[str]:
    if isinstance(values, str):
        values = [values]
    out = []
    for v in values:
        for part in v.replace(";", ",").split(","):
            if part.strip():
                out.append(email_arg(part, field))
    return out


@tool()
def list_emails(state: EmailState, folder: str = "inbox", unread_only: bool = False, limit: int = 10) -> dict:
    """List emails in a folder, newest first.

    Args:
        folder: inbox, sent, archive, trash or another folder
        unread_only: only unread mail
        limit: how many (default 10)
    """
    name = state.folder(folder)
    int_range(limit, "limit", 1, 50)
    rows = [m for m in state.mails if m.folder == name and (not unread_only or not m.read)]
    rows.sort(key=lambda m: (m.date, m.id), reverse=True)
    return {"folder": name, "emails": [m.header() for m in rows[:limit]]}


@tool()
def read_email(state: EmailState, email_id: str) -> dict:
    """Read an email.

    Args:
        email_id: id from list_emails or search_emails
    """
    return state.get(email_id).full()


@tool()
def search_emails(state: EmailState, query: str, folder: str | None = None) -> dict:
    """Find emails by words in sender, subject or text.

    Args:
        query: words to look for
        folder: only this folder
    """
    query_arg(query)
    name = state.folder(folder) if folder else None
    rows = [
        m
        for m in state.mails
        if (name is None or m.folder == name) and matches(query, m.sender, m.subject, m.body, " ".join(m.to))
    ]
    rows.sort(key=lambda m: (m.date, m.id), reverse=True)
    return {"emails": [{**m.header(), "folder": m.folder, "preview": clip(m.body, 80)} for m in rows[:20]]}


@tool(mutates=True, egress=True)
def send_email(
    state: EmailState, to: list[str], subject: str, body: str, cc: list[str] | None = None
) -> dict:
    """Send a new email.

    Args:
        to: recipient addresses
        subject: subject line
        body: message text
        cc: copy addresses
    """
    recipients = _addresses(to, "to")
    if not recipients:
        raise ToolError("to: give at least one address")
    copies = _addresses(cc or [], "cc")
    mail = state.new_mail(
        recipients, text_arg(subject, "subject", 200), text_arg(body, "body", 20000), copies
    )
    return {"sent": mail.header()}


@tool(mutates=True, egress=True)
def reply_to_email(state: EmailState, email_id: str, body: str) -> dict:
    """Reply to the sender of an email.

    Args:
        email_id: id of the email to answer
        body: reply text
    """
    original = state.get(email_id)
    text = text_arg(body, "body", 20000)
    if original.folder == "sent":
        raise ToolError(f"email {original.id} is one you sent; use send_email to write to its recipients")
    subject = original.subject if norm(original.subject).startswith("re:") else f"Re: {original.subject}"
    mail = state.new_mail([original.sender], subject, text)
    return {"sent": mail.header()}


@tool(mutates=True, egress=True)
def forward_email(state: EmailState, email_id: str, to: list[str], note: str = "") -> dict:
    """Forward an email.

    Args:
        email_id: id of the email
        to: recipient addresses
        note: text above the forwarded mail
    """
    original = state.get(email_id)
    recipients = _addresses(to, "to")
    if not recipients:
        raise ToolError("to: give at least one address")
    quoted = (
        f"---------- Forwarded message ----------\nFrom: {original.sender}\nSubject: {original.subject}\n\n"
    )
    body = (note.strip() + "\n\n" if note.strip() else "") + quoted + original.body
    mail = state.new_mail(recipients, f"Fwd: {original.subject}", body)
    mail.attachments, mail.forwarded_from = list(original.attachments), original.id
    return {"sent": mail.header()}


@tool(mutates=True)
def move_email(state: EmailState, email_id: str, folder: str) -> dict:
    """Move an email to a folder.

    Args:
        email_id: id of the email
        folder: inbox, archive, trash or another folder
    """
    mail = state.get(email_id)
    name = state.folder(folder)
    if name == "sent" and mail.folder != "sent":
        raise ToolError("folder: only mail you sent can be in sent")
    if mail.folder == name:
        raise ToolError(f"email {mail.id} is already in {name}")
    mail.folder = name
    return {"moved": mail.id, "folder": name}


@tool(mutates=True, sensitive=True)
def delete_email(state: EmailState, email_id: str) -> dict:
    """Delete an email (to trash; from trash, for good).

    Args:
        email_id: id of the email
    """
    mail = state.get(email_id)
    if mail.folder == "trash":
        state.mails.remove(mail)
        return {"deleted": mail.id, "permanently": True}
    mail.folder = "trash"
    return {"deleted": mail.id, "folder": "trash"}


TOOLS = suite(
    "email",
    [
        list_emails,
        read_email,
        search_emails,
        send_email,
        reply_to_email,
        forward_email,
        move_email,
        delete_email,
    ],
)
