"""Dates and times by code (agent/dates.py): the phrases a request uses, resolved against today."""

from datetime import date

import pytest

from botpsy.agent.dates import (
    annotate,
    answered_turn,
    find_dates,
    find_durations,
    find_times,
    resolve,
    stated_date,
)

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
    assert annotate("at 2pm tomorrow", None) == "at 2pm tomorrow"  # no clock: "tomorrow" is unknown
    out = annotate("Add gym at 6pm tomorrow", TUESDAY)
    assert out.splitlines() == [
        "Add gym at 6pm tomorrow",
        "(resolved: tomorrow = Wednesday 2026-12-02; 6pm = 18:00 = 2026-12-02T18:00)",
    ]


def test_without_a_clock_only_what_no_clock_changes_is_resolved():
    # A date that states its year, a clock time, a duration: the same line on any day.
    assert annotate("Weather in Fremont on March 1st 2023.", None).splitlines()[1] == (
        "(resolved: March 1st 2023 = Wednesday 2023-03-01; no time given)"
    )
    assert annotate("Book it for the 12th of March 2023 at 3pm", None).splitlines()[1] == (
        "(resolved: the 12th of March 2023 = Sunday 2023-03-12; 3pm = 15:00 = 2023-03-12T15:00)"
    )
    assert annotate("A 2 hour slot at 9am", None).endswith(
        "(resolved: 9am = 09:00; 2 hour = 120 minutes; no date given)"
    )
    # Anything a clock would change leaves the request as it is, the rest of it too.
    for text in ["today, April 25th 2023", "on March 1st", "next Friday at 2pm", "in 3 days", "Hi!"]:
        assert annotate(text, None) == text, text


def test_the_agent_shows_the_model_the_resolved_line(tmp_path):
    from botpsy.agent.loop import Agent
    from botpsy.engine.oracle import ScriptedEngine
    from botpsy.stores.workspace import Workspace

    eng = ScriptedEngine(["ok\n</think>\n\nSure."])
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys", today=TUESDAY)
    trace = agent.send("What do I have next Friday?")
    assert "(resolved: next Friday = Friday 2026-12-04; no time given)" in eng.prompts[0]
    assert trace.messages[-2].content.endswith("(resolved: next Friday = Friday 2026-12-04; no time given)")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("lasting 2 hours", [("2 hours", 120)]),
        ("an hour and a half", [("an hour and a half", 90)]),
        ("half an hour", [("half an hour", 30)]),
        ("a 3-hour hike", [("3-hour", 180)]),
        ("1.5 hrs", [("1.5 hrs", 90)]),
        ("90 minutes", []),  # already in the tools' unit
    ],
)
def test_find_durations(text, expected):
    assert find_durations(text) == expected


def test_what_a_request_lacks_is_stated():
    assert resolve("Put a date night on December 11", TUESDAY)[-1] == "no time given"
    assert resolve("Put a piano lesson at 8:15am", TUESDAY) == ["8:15am = 08:15", "no date given"]
    assert "no" not in " ".join(resolve("Dentist December 3 at 10am", TUESDAY))
    assert annotate("Cancel the piano lesson", TUESDAY) == "Cancel the piano lesson"


def test_a_reply_to_a_question_combines_with_the_turn_it_answers():
    asked = "Put a date night on December 11"
    assert answered_turn(asked, "What time should it start?") == asked
    assert answered_turn(asked, "Done: it is on your calendar.") == ""
    assert resolve("At 4 pm, please", TUESDAY, asked) == ["4 pm = 16:00 = 2026-12-11T16:00"]
    assert resolve("On 10 December.", TUESDAY, "Add a piano lesson at 8:15am") == [
        "10 December = Thursday 2026-12-10",
        "8:15am = 08:15 = 2026-12-10T08:15",
    ]
    assert resolve("At 4 pm, please", TUESDAY) == ["4 pm = 16:00", "no date given"]


def test_the_agent_reads_a_reply_with_the_turn_it_answers(tmp_path):
    from botpsy.agent.loop import Agent
    from botpsy.engine.oracle import ScriptedEngine
    from botpsy.stores.workspace import Workspace

    eng = ScriptedEngine(["ok\n</think>\n\nWhat time should it start?", "ok\n</think>\n\nNoted."])
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys", today=TUESDAY)
    agent.send("Put a date night on December 11")
    agent.send("At 4 pm, please")
    users = [m.content for m in agent.trace.messages if m.role == "user"]
    assert users[0].endswith("no time given)")
    assert users[1].endswith("(resolved: 4 pm = 16:00 = 2026-12-11T16:00)")


@pytest.mark.parametrize(
    "text, day",
    [
        ("The current time is August 20, 2021, Friday。", date(2021, 8, 20)),
        ("Today is Saturday, March 12, 2022.", date(2022, 3, 12)),
        ("Today is 2020-08-11, Tuesday.", date(2020, 8, 11)),
        ("Today is Friday.", None),  # a weekday alone depends on the clock
        ("See you on March 12.", None),  # no year: no date is stated in full
        ("", None),
    ],
)
def test_stated_date_reads_a_full_date_and_nothing_a_clock_would_change(text, day):
    assert stated_date(text) == day
