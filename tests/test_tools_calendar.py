"""The @tool decorator and the calendar suite."""

import pytest

from botpsy.tools.base import Labels, ToolError, tool
from botpsy.tools.calendar import (
    TOOLS,
    CalendarState,
    create_event,
    delete_event,
    find_free_slots,
    update_event,
)


def test_schema_is_derived_from_hints_and_docstring():
    s = create_event.schema()["function"]
    assert s["name"] == "create_event"
    props = s["parameters"]["properties"]
    assert props["duration_minutes"]["type"] == "integer"
    assert props["attendees"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "people invited",
    }
    assert s["parameters"]["required"] == ["title", "start"]
    assert create_event.defaults["duration_minutes"] == 60


def test_labels():
    labels = {t.name: t.labels for t in TOOLS}
    assert labels["list_events"] == Labels()
    assert labels["create_event"].mutates and not labels["create_event"].sensitive
    assert labels["delete_event"].sensitive and labels["delete_event"].needs_confirmation
    assert {t.suite for t in TOOLS} == {"calendar"}


def test_decorator_refuses_undocumented_parameters():
    with pytest.raises(TypeError, match="not described"):

        @tool()
        def f(state, x: int) -> None:
            """Does a thing."""


@pytest.mark.parametrize(
    "args,match",
    [
        ({"title": "x"}, "missing required"),
        ({"title": "x", "start": "tomorrow"}, "expected a date and time"),
        ({"title": "x", "start": "2026-12-03T10:00", "duration_minutes": "long"}, "expected integer"),
        ({"title": "x", "start": "2026-12-03T10:00", "colour": "red"}, "unknown argument"),
        ({"title": " ", "start": "2026-12-03T10:00"}, "must not be empty"),
        ({"title": "x", "start": "2026-12-03T10:00", "end": "2026-12-03T09:00"}, "must be after"),
        ({"title": "x", "start": "2026-12-03T10:00", "attendees": "Ann"}, "expected array"),
    ],
)
def test_bad_arguments_give_clear_errors(args, match):
    with pytest.raises(ToolError, match=match):
        create_event(CalendarState(), **args)


def test_create_update_delete_and_free_slots():
    st = CalendarState()
    out = create_event(st, title="Dentist", start="2026-12-03 10:00", duration_minutes="30")
    assert out["created"]["end"] == "2026-12-03T10:30"
    eid = out["created"]["id"]
    update_event(st, event_id=eid, start="2026-12-03T14:00")
    assert st.events[0].end == "2026-12-03T14:30"  # length kept
    free = find_free_slots(st, date="2026-12-03", duration_minutes=60)["free"]
    assert free == [
        {"start": "2026-12-03T09:00", "end": "2026-12-03T14:00"},
        {"start": "2026-12-03T14:30", "end": "2026-12-03T18:00"},
    ]
    with pytest.raises(ToolError, match="no event with id"):
        delete_event(st, event_id="evt-99")
    delete_event(st, event_id=eid)
    assert st.events == []


def test_canonical_state_ignores_case_spacing_and_order():
    a, b = CalendarState(), CalendarState()
    create_event(a, title="Team  Lunch", start="2026-12-03T12:00")
    create_event(a, title="Gym", start="2026-12-02T07:00")
    create_event(b, title="team lunch", start="2026-12-03T12:00")
    b.events[0].id = "evt-1"
    create_event(b, title="gym", start="2026-12-02T07:00")
    assert a.canonical() == b.canonical()
