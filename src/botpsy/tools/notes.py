"""Notes and reminders suite.

Notes are titled free text; reminders are short to-dos with an optional due date-time. Both are
the user's own writing, but a note may hold pasted text from anywhere: its content is data.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool
from botpsy.tools.common import by_id, clip, datetime_arg, matches, next_id, norm, text_arg


class Note(BaseModel):
    id: str
    title: str
    body: str = ""
    updated: str = ""  # YYYY-MM-DDTHH:MM

    def summary(self, full: bool = True) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "body": self.body if full else clip(self.body, 120),
            "updated": self.updated,
        }


class Reminder(BaseModel):
    id: str
    text: str
    due: str = ""  # YYYY-MM-DDTHH:MM, or empty
    done: bool = False

    def summary(self) -> dict:
        return self.model_dump(exclude_defaults=True)


class NotesState(BaseModel):
    notes: list[Note] = Field(default_factory=list)
    reminders: list[Reminder] = Field(default_factory=list)
    now: str = "2026-12-01T09:00"

    def note(self, note_id: str) -> Note:
        return by_id(self.notes, note_id, "note", "use find_notes to look it up")

    def reminder(self, reminder_id: str) -> Reminder:
        return by_id(self.reminders, reminder_id, "reminder", "use list_reminders to look it up")

    def canonical(self) -> dict:
        notes = [{"id": n.id, "title": norm(n.title), "body": " ".join(n.body.split())} for n in self.notes]
        rems = [{**r.model_dump(), "text": norm(r.text)} for r in self.reminders]
        return {
            "notes": sorted(notes, key=lambda r: r["id"]),
            "reminders": sorted(rems, key=lambda r: r["id"]),
        }


@tool()
def find_notes(state: NotesState, query: str | None = None) -> dict:
    """Find notes by words in title or text; all notes if no query.

    Args:
        query: words to look for
    """
    hits = [n for n in state.notes if not query or matches(query, n.title, n.body)]
    hits.sort(key=lambda n: n.updated, reverse=True)
    return {"notes": [n.summary(full=len(hits) <= 3) for n in hits[:20]]}


@tool(mutates=True)
def create_note(state: NotesState, title: str, body: str = "") -> dict:
    """Create a note.

    Args:
        title: note title
        body: note text
    """
    note = Note(
        id=next_id("n", (n.id for n in state.notes)),
        title=text_arg(title, "title", 200),
        body=body.strip(),
        updated=state.now,
    )
    if len(note.body) > 20000:
        raise ToolError(f"body: at most 20000 characters, got {len(note.body)}")
    state.notes.append(note)
    return {"created": note.summary()}


@tool(mutates=True)
def append_to_note(state: NotesState, note_id: str, text: str) -> dict:
    """Add text at the end of a note.

    Args:
        note_id: id from find_notes
        text: text to add
    """
    note = state.note(note_id)
    extra = text_arg(text, "text", 5000)
    note.body = f"{note.body}\n{extra}" if note.body else extra
    note.updated = state.now
    return {"updated": note.summary()}


@tool(mutates=True, sensitive=True)
def delete_note(state: NotesState, note_id: str) -> dict:
    """Delete a note.

    Args:
        note_id: id from find_notes
    """
    note = state.note(note_id)
    state.notes.remove(note)
    return {"deleted": {"id": note.id, "title": note.title}}


@tool()
def list_reminders(state: NotesState, include_done: bool = False) -> dict:
    """List reminders, soonest first.

    Args:
        include_done: also show completed ones
    """
    rows = [r for r in state.reminders if include_done or not r.done]
    rows.sort(key=lambda r: (r.due or "9999", r.id))
    return {"reminders": [r.summary() for r in rows]}


@tool(mutates=True)
def add_reminder(state: NotesState, text: str, due: str | None = None) -> dict:
    """Add a reminder.

    Args:
        text: what to remember
        due: YYYY-MM-DDTHH:MM
    """
    rem = Reminder(
        id=next_id("r", (r.id for r in state.reminders)),
        text=text_arg(text, "text", 300),
        due=datetime_arg(due, "due") if due else "",
    )
    state.reminders.append(rem)
    return {"added": rem.summary()}


@tool(mutates=True)
def complete_reminder(state: NotesState, reminder_id: str) -> dict:
    """Mark a reminder done.

    Args:
        reminder_id: id from list_reminders
    """
    rem = state.reminder(reminder_id)
    if rem.done:
        raise ToolError(f"reminder {rem.id} is already done")
    rem.done = True
    return {"done": rem.summary()}


TOOLS = suite(
    "notes",
    [find_notes, create_note, append_to_note, delete_note, list_reminders, add_reminder, complete_reminder],
)
