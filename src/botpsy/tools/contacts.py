"""Contacts suite: find, add, update and delete people in the address book.

Phone numbers are stored normalised (digits, optional leading '+') so "+1 (555) 010-2030" and
"+15550102030" are the same person; emails are lower-cased. The `notes` field is free text the
user (or a sync) wrote — tool results carry it, and like every tool result it is data, not orders.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool
from botpsy.tools.common import (
    by_id,
    date_arg,
    email_arg,
    matches,
    next_id,
    norm,
    phone_arg,
    query_arg,
    text_arg,
)


class Contact(BaseModel):
    id: str
    name: str
    phone: str = ""
    email: str = ""
    birthday: str = ""  # YYYY-MM-DD
    company: str = ""
    notes: str = ""

    def summary(self) -> dict:
        return self.model_dump(exclude_defaults=True)


class ContactsState(BaseModel):
    contacts: list[Contact] = Field(default_factory=list)

    def get(self, contact_id: str) -> Contact:
        return by_id(self.contacts, contact_id, "contact", "use find_contacts to look it up")

    def canonical(self) -> list[dict]:
        rows = [{**c.model_dump(), "name": norm(c.name), "company": norm(c.company)} for c in self.contacts]
        return sorted(rows, key=lambda r: r["id"])


@tool()
def find_contacts(state: ContactsState, query: str) -> dict:
    """Find contacts by name, phone, email or company.

    Args:
        query: words to look for
    """
    query_arg(query)
    hits = [c for c in state.contacts if matches(query, c.name, c.phone, c.email, c.company)]
    return {"contacts": [c.summary() for c in hits[:20]]}


@tool(mutates=True)
def add_contact(
    state: ContactsState,
    name: str,
    phone: str | None = None,
    email: str | None = None,
    birthday: str | None = None,
) -> dict:
    """Add a contact.

    Args:
        name: full name
        phone: phone number
        email: email address
        birthday: YYYY-MM-DD
    """
    name = text_arg(name, "name", 120)
    if not phone and not email:
        raise ToolError("add_contact: give a phone or an email so the contact can be reached")
    contact = Contact(
        id=next_id("c", (c.id for c in state.contacts)),
        name=name,
        phone=phone_arg(phone, "phone") if phone else "",
        email=email_arg(email, "email") if email else "",
        birthday=date_arg(birthday, "birthday") if birthday else "",
    )
    for other in state.contacts:
        if norm(other.name) == norm(name) and (
            (contact.phone and other.phone == contact.phone)
            or (contact.email and other.email == contact.email)
        ):
            raise ToolError(
                f"{other.name} is already a contact ({other.id}); use update_contact to change it"
            )
    state.contacts.append(contact)
    return {"added": contact.summary()}


@tool(mutates=True)
def update_contact(
    state: ContactsState,
    contact_id: str,
    name: str | None = None,
    phone: str | None = None,
    email: str | None = None,
    birthday: str | None = None,
) -> dict:
    """Change a contact's details.

    Args:
        contact_id: id from find_contacts
        name: new name
        phone: new phone number
        email: new email
        birthday: YYYY-MM-DD
    """
    contact = state.get(contact_id)
    if all(v is None for v in (name, phone, email, birthday)):
        raise ToolError("update_contact: give at least one of name, phone, email, birthday")
    if name is not None:
        contact.name = text_arg(name, "name", 120)
    if phone is not None:
        contact.phone = phone_arg(phone, "phone")
    if email is not None:
        contact.email = email_arg(email, "email")
    if birthday is not None:
        contact.birthday = date_arg(birthday, "birthday")
    return {"updated": contact.summary()}


@tool(mutates=True, sensitive=True)
def delete_contact(state: ContactsState, contact_id: str) -> dict:
    """Delete a contact.

    Args:
        contact_id: id from find_contacts
    """
    contact = state.get(contact_id)
    state.contacts.remove(contact)
    return {"deleted": contact.summary()}


TOOLS = suite("contacts", [find_contacts, add_contact, update_contact, delete_contact])
