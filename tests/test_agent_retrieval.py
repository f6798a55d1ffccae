"""Tool retrieval: BM25 picks the relevant tools, and the prompt shows only those, once per conversation."""

import json
import re

import pytest

from botpsy.agent.loop import AUTO_TOP_K, Agent, AgentConfig
from botpsy.agent.retrieval import BM25, query_terms, rank_tools, select_tools, stem
from botpsy.cli import build_parser
from botpsy.engine.oracle import ScriptedEngine
from botpsy.stores import ics
from botpsy.stores.workspace import Workspace
from botpsy.tools.base import tool
from botpsy.tools.registry import all_tools, suite_of

TOOLS = all_tools()


def suites(tools):
    return {suite_of(t.name).name for t in tools}


@pytest.mark.parametrize(
    "request_,wanted,suite",
    [
        ("Send an email to Anna about the quarterly report", "send_email", "email"),
        ("Did Anna reply to my mail?", "reply_to_email", "email"),
        ("Add a dentist appointment on December 3 2026 at 10am", "create_event", "calendar"),
        ("Move my dentist appointment to December 4 at 2pm", "update_event", "calendar"),
        ("What do I have on Friday?", "list_events", "calendar"),
        ("Text Bob that I'm running late", "send_message", None),
        ("Remind me to water the plants", "add_reminder", "notes"),
        ("Book a flight to Paris on May 3", "book_flight", "travel"),
        ("Pay my electricity bill", "pay_bill", None),
        ("Set an alarm for 7am", "set_alarm", "device"),
    ],
)
def test_retrieval_picks_the_relevant_tools_across_all_suites(request_, wanted, suite):
    chosen = select_tools(request_, TOOLS, 5)
    assert len(chosen) == 5 and wanted in [t.name for t in chosen]
    if suite:  # a clear request draws mostly on its suite, and its best tool comes from it
        assert sum(suite_of(t.name).name == suite for t in chosen) >= 3
        assert suite_of(rank_tools(request_, TOOLS)[0][0].name).name == suite


def test_mail_and_calendar_requests_get_different_tools():
    mail = select_tools("Send an email to Anna", TOOLS, 5)
    cal = select_tools("Add a dentist appointment on December 3", TOOLS, 5)
    assert "calendar" not in suites(mail) and "email" not in suites(cal)
    assert "send_email" in [t.name for t in mail] and suites(cal) == {"calendar"}


@pytest.mark.parametrize("query", ["", "   ", "zzzz qqq", "?!", "3 4 5"])
def test_a_request_that_matches_nothing_gets_the_first_k_in_installed_order(query):
    assert [t.name for t in select_tools(query, TOOLS, 3)] == [t.name for t in TOOLS[:3]]


def _twin(name):
    def fn(state, city: str) -> str:
        """Look up the weather forecast.

        Args:
            city: the city.
        """
        return city

    return tool(name=name)(fn)


def test_ties_keep_the_installed_order():
    twins = [_twin("weather_y"), _twin("weather_x"), _twin("weather_z")]
    other = _stocks()
    ranked = rank_tools("weather forecast", [other, *twins])
    assert [t.name for t, _ in ranked] == ["weather_y", "weather_x", "weather_z", "stocks"]
    assert ranked[0][1] == ranked[1][1] == ranked[2][1] > ranked[3][1] == 0
    assert [t.name for t in select_tools("weather", [other, *twins], 2)] == ["weather_y", "weather_x"]


def _stocks():
    def stocks(state, symbol: str) -> str:
        """Quote a share price.

        Args:
            symbol: ticker symbol.
        """
        return symbol

    return tool()(stocks)


@pytest.mark.parametrize("k", [0, -1, len(TOOLS), len(TOOLS) + 5])
def test_k_at_or_above_the_number_of_tools_or_zero_means_all(k):
    assert select_tools("Send an email", TOOLS, k) == TOOLS


def test_selection_keeps_installed_order_not_score_order():
    chosen = [t.name for t in select_tools("Send an email to Anna", TOOLS, 6)]
    installed = [t.name for t in TOOLS if t.name in chosen]
    assert chosen == installed


def test_bm25_rarer_words_weigh_more():
    bm = BM25([["email", "send"], ["email", "read"], ["email", "delete"], ["message", "send"]])
    s = bm.scores(["email", "read"])
    assert s[1] > s[0] == s[2] > s[3] == 0


@pytest.mark.parametrize(
    "a,b",
    [
        ("emails", "email"),
        ("booked", "book"),
        ("booking", "book"),
        ("replies", "reply"),
        ("schedule", "scheduled"),
    ],
)
def test_stem_makes_forms_meet(a, b):
    assert stem(a) == stem(b)


def test_synonyms_bridge_request_words_to_tool_words():
    assert {"event", "calendar"} <= set(query_terms("my appointment"))
    assert "email" in query_terms("check my mail")


# ---- in the agent ------------------------------------------------------------------------------


def prompt_tools(prompt: str) -> list[str]:
    block = re.search(r"<tools>\n(.*?)\n</tools>", prompt, re.S).group(1)
    return [json.loads(line)["function"]["name"] for line in block.splitlines()]


CREATE = (
    "Add it.\n</think>\n\n<tool_call>\n<function=create_event>\n<parameter=title>\nDentist\n</parameter>\n"
    "<parameter=start>\n2026-12-03T10:00\n</parameter>\n</function>\n</tool_call>"
)


def test_the_system_prompt_holds_only_the_retrieved_tools(tmp_path):
    eng = ScriptedEngine(["ok\n</think>\n\nWhich address?", "ok\n</think>\n\nSure."])
    agent = Agent(eng, Workspace(tmp_path), "sys", AgentConfig(tool_top_k=4))
    assert agent.trace.token_ids == []  # the system block waits for the first request
    agent.send("Send an email to Anna about the report")
    shown = prompt_tools(eng.prompts[0])
    assert shown == [t.name for t in select_tools("Send an email to Anna about the report", TOOLS, 4)]
    assert "send_email" in shown and "create_event" not in shown
    (ev,) = [e for e in agent.trace.events if e.kind == "tool_retrieval"]
    assert ev.data == {"tools": shown, "installed": len(TOOLS)}
    # A later turn keeps the system block: the prompt extends the first one (prefix cache stays
    # valid), and the tools the new request needs come in its own user turn (issue 14 item 6:
    # later turns never got their suite).
    agent.send("Also add a dentist appointment on December 3")
    assert eng.prompts[1].startswith(eng.prompts[0]) and prompt_tools(eng.prompts[1]) == shown
    later = eng.prompts[1][len(eng.prompts[0]) :]
    assert "More functions you can call:" in later
    added = prompt_tools(later)
    assert "create_event" in added and not set(added) & set(shown) and len(added) <= 4
    ev = [e for e in agent.trace.events if e.kind == "tool_retrieval"][-1]
    assert ev.data == {"tools": added, "installed": len(TOOLS), "later": True}
    # a third request about the same suite adds nothing more, and one matching no tool adds nothing
    agent.send("Add another dentist appointment on December 4")
    agent.send("Thanks!")
    assert "More functions" not in eng.prompts[2][len(eng.prompts[1]) :]
    assert "More functions" not in eng.prompts[3][len(eng.prompts[2]) :]


def test_all_tools_when_k_covers_them(tmp_path):
    eng = ScriptedEngine(["ok\n</think>\n\nHi."])
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys", AgentConfig(tool_top_k=50))
    assert agent.trace.token_ids  # rendered at once, as without retrieval
    agent.send("Send an email")
    assert prompt_tools(eng.prompts[0]) == [t.name for t in Workspace(tmp_path, suites=["calendar"]).toolbox]
    assert not [e for e in agent.trace.events if e.kind == "tool_retrieval"]


def test_a_tool_outside_the_shown_set_stays_callable(tmp_path):
    eng = ScriptedEngine([CREATE, "Done.\n</think>\n\nAdded."])
    agent = Agent(eng, Workspace(tmp_path), "sys", AgentConfig(tool_top_k=3))
    trace = agent.send("Send an email to Anna")
    assert "create_event" not in prompt_tools(eng.prompts[0])
    assert trace.parse_errors == 0
    assert [e.title for e in ics.load(tmp_path / "calendar.ics").events] == ["Dentist"]


@pytest.mark.parametrize("cmd", ["run", "chat"])
def test_cli_tool_top_k(cmd, capsys):
    argv = [cmd, *(["hello"] if cmd == "run" else []), "--tool-top-k", "6"]
    assert build_parser().parse_args(argv).tool_top_k == 6
    assert build_parser().parse_args(argv[:-1] + ["0"]).tool_top_k == 0
    assert build_parser().parse_args(argv[:-1] + ["AUTO"]).tool_top_k == "auto"
    assert build_parser().parse_args(argv[:-2]).tool_top_k == "auto"
    for bad in ("-1", "six"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv[:-1] + [bad])
        assert "--tool-top-k" in capsys.readouterr().err


def _full_preamble(tmp_path) -> int:
    eng = ScriptedEngine([])
    return len(eng.tokenize(eng.chat_format.system(Workspace(tmp_path).toolbox.schemas(), "sys")))


def test_auto_shows_every_tool_while_their_preamble_fits_half_the_window(tmp_path):
    """Issue 13: `botpsy run --suites all` filled the 4,096-token window with the preamble of
    every tool before the request was read, and answered nothing."""
    full = _full_preamble(tmp_path)
    for n_ctx, k in [(None, 0), (2 * full, 0), (2 * full - 2, AUTO_TOP_K)]:
        eng = ScriptedEngine(["ok\n</think>\n\nYour balance is shown above."])
        eng.n_ctx = n_ctx
        agent = Agent(eng, Workspace(tmp_path), "sys", AgentConfig(tool_top_k="auto"))
        assert agent.top_k == k
        agent.send("What is my bank balance?")
        shown = prompt_tools(eng.prompts[0])
        if k:
            assert len(shown) == AUTO_TOP_K and "list_accounts" in shown
            assert len(eng.tokenize(eng.prompts[0])) < n_ctx / 2
        else:
            assert len(shown) == len(TOOLS)


def test_the_tool_prior_is_each_tools_score_over_the_best():
    from botpsy.agent.retrieval import tool_prior
    from botpsy.tools.base import Labels, Tool

    def tool(name, description, parameters):
        return Tool(name, lambda **_: None, description, parameters, Labels())

    tools = [
        tool("country_capital", "The capital city of a country.", {"properties": {"country": {}}}),
        tool("country_population", "The population of a country.", {"properties": {"country": {}}}),
        # a client's malformed schemas are ranked by what can be read of them, not refused
        tool("odd", "Odd.", {"properties": ["city"]}),
        tool("odder", "Odder.", {"properties": {"city": "a city"}}),
    ]
    prior = tool_prior("What is the capital of the country Peru?", tools)
    assert prior["country_capital"] == 1.0
    assert 0.0 < prior["country_population"] < 1.0  # "country" matches it too, "capital" does not
    assert prior["odd"] == prior["odder"] == 0.0
    assert tool_prior("Hello there!", tools) == {}  # nothing matched: no prior at all
