"""Dates and times by code (agent/dates.py): the phrases a request uses, resolved against today."""

from datetime import date

import pytest

from botpsy.agent.dates import annotate, find_dates, find_times, resolve

TUESDAY = date(2026, 12, 1)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("lunch next Friday", [("next Friday", date(2026, 12, 4))]),
        ("on Tuesday", [("on Tuesday", TUESDAY)]),  # a bare weekday that is today is today
        ("next Tuesday", [("next Tuesday", date(2026, 12, 8))]),  # "next" never means today
        ("Friday next week", [("Friday next week", date(2026, 12, 11))]),
        ("Thursday, December 3", [("Thursday, December 3", date(2026, 12, 3))]),  # one date, not two
        ("the 3rd of December", [("the 3rd of December", date(2026, 12, 3))]),
        ("Dec 24 2027", [("Dec 24 2027", date(2027, 12, 24))]),
        ("Jan 5", [("Jan 5", date(2027, 1, 5))]),  # a month long past means next year's
        ("November 28", [("November 28", date(2026, 11, 28))]),  # a few days back stays this year
        ("tomorrow", [("tomorrow", date(2026, 12, 2))]),
        ("the day after tomorrow", [("the day after tomorrow", date(2026, 12, 3))]),
        ("in 3 days", [("in 3 days", date(2026, 12, 4))]),
        ("in two weeks", [("in two weeks", date(2026, 12, 15))]),
        ("February 30", []),  # not a date: left as words
        ("Hi there!", []),
    ],
)
def test_find_dates(text, expected):
    assert find_dates(text, TUESDAY) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("at 2pm", [("2pm", "14:00")]),
        ("at 12am", [("12am", "00:00")]),
        ("at 12pm", [("12pm", "12:00")]),
        ("7:15 p.m.", [("7:15 p.m.", "19:15")]),
        ("from 9 am to 10:30am", [("9 am", "09:00"), ("10:30am", "10:30")]),
        ("at 18:30", [("18:30", "18:30")]),
        ("at noon", [("noon", "12:00")]),
        ("ratio 3:2 games", []),  # not a clock: 2 is not a minute field
        ("version 2.5 of the app", []),
    ],
)
def test_find_times(text, expected):
    assert find_times(text) == expected


def test_a_time_combines_with_the_one_date_named():
    assert resolve("Dentist December 3 at 10am", TUESDAY) == [
        "December 3 = Thursday 2026-12-03",
        "10am = 10:00 = 2026-12-03T10:00",
    ]
    # two dates: the times stay times, the model pairs them
    assert resolve("Move it from Friday 2pm to Monday", TUESDAY)[-1] == "2pm = 14:00"
    # an ISO date needs no resolving but still anchors the time
    assert resolve("2026-12-03 at 14:00", TUESDAY) == ["14:00 = 2026-12-03T14:00"]


def test_annotate_appends_one_line_only_when_there_is_something_to_resolve():
    assert annotate("Hi!", TUESDAY) == "Hi!"
    assert annotate("at 2pm tomorrow", None) == "at 2pm tomorrow"  # no clock given: unchanged
    out = annotate("Add gym at 6pm tomorrow", TUESDAY)
    assert out.splitlines() == [
        "Add gym at 6pm tomorrow",
        "(resolved: tomorrow = Wednesday 2026-12-02; 6pm = 18:00 = 2026-12-02T18:00)",
    ]


def test_the_agent_shows_the_model_the_resolved_line(tmp_path):
    from botpsy.agent.loop import Agent
    from botpsy.engine.oracle import ScriptedEngine
    from botpsy.stores.workspace import Workspace

    eng = ScriptedEngine(["ok\n</think>\n\nSure."])
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys", today=TUESDAY)
    trace = agent.send("What do I have next Friday?")
    assert "(resolved: next Friday = Friday 2026-12-04)" in eng.prompts[0]
    assert trace.messages[-2].content.endswith("(resolved: next Friday = Friday 2026-12-04)")
