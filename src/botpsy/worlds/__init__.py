"""Worlds: the tools over seeded in-memory state, with generated tasks and a checker.

Every suite of `tools.registry.SUITES` has exactly one world over it alone, whose name, tools and
state type come from the suite's record (`kit.SuiteDomain.suite`); `suite_world(name)` gives it.
The cross-suite worlds (`cross.py`) combine several suites. `DOMAINS` holds them all, the
single-suite worlds in `SUITES` order first: generated data walks `DOMAINS` in order, so that
order is part of every task stream.
"""

from botpsy.worlds.banking import BankingDomain
from botpsy.worlds.base import Domain, Task, World, check_trace, make_world, replay_gold, state_hash
from botpsy.worlds.calendar import CalendarDomain
from botpsy.worlds.contacts import ContactsDomain
from botpsy.worlds.cross import CROSS_DOMAINS
from botpsy.worlds.device import DeviceDomain, VehicleDomain
from botpsy.worlds.files import FilesDomain
from botpsy.worlds.kit import SuiteDomain
from botpsy.worlds.mail import EmailDomain
from botpsy.worlds.messages import MessagesDomain
from botpsy.worlds.notes import NotesDomain
from botpsy.worlds.retail import RetailDomain
from botpsy.worlds.shopping import ShoppingDomain
from botpsy.worlds.telecom import TelecomDomain
from botpsy.worlds.travel import TravelDomain
from botpsy.worlds.web import WebDomain

# One world per suite, in `SUITES` order (tests/test_suites_worlds.py pins both).
SUITE_WORLDS: dict[str, SuiteDomain] = {
    d.name: d
    for d in [
        CalendarDomain(),
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
    ]
}
DOMAINS: dict[str, Domain] = {**SUITE_WORLDS, **{d.name: d for d in (cls() for cls in CROSS_DOMAINS)}}


def get_domain(name: str) -> Domain:
    if name not in DOMAINS:
        raise KeyError(f"unknown domain {name!r}; known: {', '.join(sorted(DOMAINS))}")
    return DOMAINS[name]


def suite_world(suite: str) -> SuiteDomain:
    """The world over suite `suite` alone (its seed fills a workspace; its tasks train and test it)."""
    if suite not in SUITE_WORLDS:
        raise KeyError(f"unknown suite {suite!r}; known: {', '.join(SUITE_WORLDS)}")
    return SUITE_WORLDS[suite]


__all__ = [
    "DOMAINS",
    "SUITE_WORLDS",
    "Domain",
    "Task",
    "World",
    "check_trace",
    "get_domain",
    "make_world",
    "replay_gold",
    "state_hash",
    "suite_world",
]
