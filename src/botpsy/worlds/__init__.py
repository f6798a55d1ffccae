"""Worlds: the tools over seeded in-memory state, with generated tasks and a checker."""

from botpsy.worlds.banking import BankingDomain
from botpsy.worlds.base import Domain, Task, World, check_trace, make_world, replay_gold, state_hash
from botpsy.worlds.calendar import CalendarDomain
from botpsy.worlds.contacts import ContactsDomain
from botpsy.worlds.cross import CROSS_DOMAINS
from botpsy.worlds.device import DeviceDomain, VehicleDomain
from botpsy.worlds.files import FilesDomain
from botpsy.worlds.mail import EmailDomain
from botpsy.worlds.messages import MessagesDomain
from botpsy.worlds.notes import NotesDomain
from botpsy.worlds.retail import RetailDomain
from botpsy.worlds.shopping import ShoppingDomain
from botpsy.worlds.telecom import TelecomDomain
from botpsy.worlds.travel import TravelDomain
from botpsy.worlds.web import WebDomain

DOMAINS: dict[str, Domain] = {"calendar": CalendarDomain()}
for _domain in [
    EmailDomain(),
    MessagesDomain(),
    ContactsDomain(),
    FilesDomain(),
    NotesDomain(),
    DeviceDomain(),
    VehicleDomain(),
    ShoppingDomain(),
    BankingDomain(),
    TravelDomain(),
    WebDomain(),
    RetailDomain(),
    TelecomDomain(),
    *(cls() for cls in CROSS_DOMAINS),
]:
    DOMAINS[_domain.name] = _domain


def get_domain(name: str) -> Domain:
    if name not in DOMAINS:
        raise KeyError(f"unknown domain {name!r}; known: {', '.join(sorted(DOMAINS))}")
    return DOMAINS[name]


__all__ = [
    "DOMAINS",
    "Domain",
    "Task",
    "World",
    "check_trace",
    "get_domain",
    "make_world",
    "replay_gold",
    "state_hash",
]
