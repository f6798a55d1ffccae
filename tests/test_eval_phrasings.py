"""New users' phrasings (issue 36's "also seen as a new user", held-out checks for the model issue)."""

from botpsy.engine.oracle import ScriptedEngine
from botpsy.eval.phrasings import ITEMS, evaluate_phrasings

LIST = "ok\n</think>\n\n<tool_call>\n<function=list_events>\n<parameter=date>\n2026-12-03\n</parameter>\n</function>\n</tool_call>"


def test_the_first_call_decides_and_no_call_is_right_where_no_tool_fits():
    # every request gets list_events first, then an answer
    engine = ScriptedEngine([LIST, "ok\n</think>\n\nDone looking."] * len(ITEMS))
    s = evaluate_phrasings(engine)
    right = {r for r, expected in ITEMS if "list_events" in expected}
    assert {i["request"] for i in s["items"] if i["ok"]} == right
    assert s["n"] == len(ITEMS) and s["passed"] == len(right)
    # a model that never calls passes only the request no installed tool serves
    quiet = evaluate_phrasings(ScriptedEngine(["ok\n</think>\n\nI can't help."] * len(ITEMS)))
    assert [i["request"] for i in quiet["items"] if i["ok"]] == [r for r, e in ITEMS if not e]


def test_the_issue_s_phrasings_are_in_the_set():
    requests = {r for r, _ in ITEMS}
    assert {"What do I have tomorrow?", "What is on my calendar tomorrow?"} <= requests
