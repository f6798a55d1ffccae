"""Worlds: the tools over seeded in-memory state, with generated tasks and a checker."""

from botpsy.worlds.base import Domain, Task, World, check_trace, make_world, replay_gold, state_hash
from botpsy.worlds.calendar import CalendarDomain

DOMAINS: dict[str, Domain] = {"calendar": CalendarDomain()}


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
