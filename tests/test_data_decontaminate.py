"""Decontamination: training requests that repeat a BFCL, τ² or ACEBench item are found.

The evaluation files are written here in each suite's published layout (BFCL's JSON lines with
`question` as turns of messages, τ²'s `tasks.json` with a user scenario, ACEBench's `data_en`
JSON lines with `user:`/`system:` dialogue text); nothing is read from the installed suites.
"""

from __future__ import annotations

import json

import pytest

from botpsy.data.decontaminate import (
    EvalIndex,
    EvalItem,
    acebench_items,
    acebench_requests,
    bfcl_items,
    jaccard,
    ngrams,
    normalize,
    tau2_items,
    words,
)

BFCL_REQUEST = "Find the area of a triangle with a base of 10 units and height of 5 units."
TAU2_REASON = "You want to return the water bottle you ordered last week because it leaks."
ACE_REQUEST = "I need to create a new press release for our upcoming product launch next week."


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Find the AREA of a triangle!", "find the area of a triangle"),
        ("  spaced\tout\n\ntext ", "spaced out text"),
        ("ｆｕｌｌｗｉｄｔｈ", "fullwidth"),  # NFKC
        ("snake_case and dash-word", "snake case and dash word"),
        ("Straße", "strasse"),  # casefold, not lower
        ("…!?", ""),
    ],
)
def test_normalize(text, expected):
    assert normalize(text) == expected


def test_ngrams_of_short_and_long_texts():
    assert ngrams("What is my first name?") == {
        ("what", "is", "my"),
        ("is", "my", "first"),
        ("my", "first", "name"),
    }
    assert ngrams("Hello there") == {("hello", "there")}  # fewer words than n: one whole n-gram
    assert ngrams("?!") == frozenset()
    # Chinese has no spaces: each character is a word, so one changed character keeps most trigrams
    assert words("我需要分析 log001 文件") == ["我", "需", "要", "分", "析", "log001", "文", "件"]
    a, b = (
        ngrams("我需要分析一个文件访问日志，以评估是否有可疑访问行为。"),
        ngrams("我需要分析一个文件访问日志，以评估是否有异常访问行为。"),
    )
    assert 0.5 < jaccard(a, b) < 1
    assert jaccard(frozenset(), frozenset({("a",)})) == 0.0
    assert jaccard(frozenset({1, 2}), frozenset({2, 3})) == pytest.approx(1 / 3)


def index(threshold=0.5):
    return EvalIndex(
        [
            EvalItem("bfcl", "simple_python_0", BFCL_REQUEST),
            EvalItem("bfcl", "live_simple_1", "What's the weather in Boston today?"),
            EvalItem("tau2", "retail/3:reason_for_call", TAU2_REASON),
            EvalItem("acebench", "normal_multi_turn_user_adjust_0_0", ACE_REQUEST),
            EvalItem("bfcl", "empty", "  ?  "),  # normalises to nothing: never indexed
        ],
        threshold=threshold,
    )


@pytest.mark.parametrize(
    "request_, kind, suite, item",
    [
        # the same request up to case, punctuation and spacing
        (
            "find the area of a TRIANGLE with a base of 10 units, and height of 5 units",
            "exact",
            "bfcl",
            "simple_python_0",
        ),
        ("What's the weather in Boston today", "exact", "bfcl", "live_simple_1"),
        # one number changed in a long request: most trigrams survive (J = 0.6)
        (
            "Find the area of a triangle with a base of 12 units and height of 5 units.",
            "near",
            "bfcl",
            "simple_python_0",
        ),
        # τ² scenario text pasted with a lead
        ("Hi! " + TAU2_REASON, "near", "tau2", "retail/3:reason_for_call"),
        # an ACEBench request with a tail added
        (ACE_REQUEST + " Thanks", "near", "acebench", "normal_multi_turn_user_adjust_0_0"),
        # the value swapped in a short templated request: a different request (J = 0.43)
        ("What's the weather in Paris today?", None, None, None),
        ("Book a table for two at 7pm.", None, None, None),
        ("", None, None, None),
        ("?", None, None, None),
    ],
)
def test_match_finds_exact_and_near_copies_only(request_, kind, suite, item):
    m = index().match(request_)
    if kind is None:
        assert m is None
    else:
        assert (m.kind, m.item.suite, m.item.item, m.request) == (kind, suite, item, request_)
        assert (m.score == 1.0) == (kind == "exact") and m.score >= 0.5


def test_threshold_moves_the_near_test_and_is_checked():
    text = "What's the weather in Paris today?"
    assert index(0.5).match(text) is None
    m = index(0.4).match(text)
    assert m.kind == "near" and m.item.item == "live_simple_1" and m.score == pytest.approx(3 / 7, abs=1e-4)
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="threshold"):
            index(bad)


def test_first_match_checks_every_request_and_counts_items():
    idx = index()
    assert len(idx) == 4 and idx.suites() == {"bfcl": 2, "tau2": 1, "acebench": 1}
    assert idx.first_match(["Book a table", BFCL_REQUEST]).item.item == "simple_python_0"
    assert idx.first_match(["Book a table", "Send mail"]) is None


@pytest.mark.parametrize(
    "question, requests",
    [
        ("user: Book a table.\n", ["Book a table."]),
        (
            "user: Create a press release.\nsystem: Please give the title.\nuser: The title is X.\n",
            ["Create a press release.", "The title is X."],
        ),
        (
            "Your name is Grace. You want to send a message to Frank.",
            ["Your name is Grace. You want to send a message to Frank."],
        ),
        ("USER : shouted\nassistant: ok", ["shouted"]),
        ("", []),
    ],
)
def test_acebench_requests_are_the_user_lines(question, requests):
    assert acebench_requests(question) == requests


def write_lines(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_bfcl_items_read_every_user_turn(tmp_path):
    write_lines(
        tmp_path / "BFCL_v4_simple_python.json",
        [
            {
                "id": "simple_python_0",
                "question": [[{"role": "user", "content": BFCL_REQUEST}]],
                "function": [],
            }
        ],
    )
    write_lines(
        tmp_path / "BFCL_v4_multi_turn_miss_func.json",
        [
            {
                "id": "multi_turn_miss_func_0",
                "question": [
                    [
                        {"role": "system", "content": "You are a bot."},
                        {"role": "user", "content": "Move the file."},
                    ],
                    [],  # a turn that only adds a function
                    [{"role": "user", "content": "Now grep it."}],
                ],
            }
        ],
    )
    write_lines(
        tmp_path / "possible_answer" / "BFCL_v4_simple_python.json", [{"id": "x", "ground_truth": []}]
    )
    write_lines(
        tmp_path / "memory_prereq_conversation" / "memory_notetaker.json",
        [
            {
                "id": "memory_prereq_0-notetaker-0",
                "question": [[{"role": "user", "content": "Monday: budget."}]],
            }
        ],
    )
    items = bfcl_items(tmp_path)
    assert [(i.item, i.text) for i in items] == [
        ("multi_turn_miss_func_0", "Move the file."),
        ("multi_turn_miss_func_0", "Now grep it."),
        ("simple_python_0", BFCL_REQUEST),
        ("memory_prereq_0-notetaker-0", "Monday: budget."),  # what the memory category plays first
    ]
    with pytest.raises(ValueError, match="no BFCL_v"):
        bfcl_items(tmp_path / "no-such-folder")


def test_tau2_items_read_each_scenario_field(tmp_path):
    tasks = [
        {
            "id": "3",
            "user_scenario": {
                "instructions": {
                    "domain": "retail",
                    "reason_for_call": TAU2_REASON,
                    "known_info": "You are Yusuf Rossi, zip 19122.",
                    "unknown_info": None,
                    "task_instructions": "Be polite.",
                }
            },
        },
        {"id": "4", "user_scenario": {"instructions": "Ask to cancel the order."}},  # the old string form
        {"id": "5"},
    ]
    (tmp_path / "retail").mkdir()
    (tmp_path / "retail" / "tasks.json").write_text(json.dumps(tasks))
    items = tau2_items(tmp_path)
    assert [(i.item, i.text) for i in items] == [
        ("retail/3:reason_for_call", TAU2_REASON),
        ("retail/3:known_info", "You are Yusuf Rossi, zip 19122."),
        ("retail/3:task_instructions", "Be polite."),
        ("retail/4:task_instructions", "Ask to cancel the order."),
    ]
    with pytest.raises(ValueError, match="tasks"):
        tau2_items(tmp_path / "retail")


def test_acebench_items_read_questions_in_both_languages_not_answers(tmp_path):
    en = tmp_path / "data_all" / "data_en"
    write_lines(
        en / "data_normal_multi_turn_user_adjust.json",
        [
            {
                "id": "normal_multi_turn_user_adjust_0_0",
                "question": f"user: {ACE_REQUEST}\nsystem: Title?\nuser: X.\n",
            }
        ],
    )
    write_lines(
        en / "data_agent_multi_step.json",
        [{"id": "agent_multi_step_0", "question": "I am Eve. Order a pizza."}],
    )
    write_lines(
        en / "possible_answer" / "data_agent_multi_step.json",
        [{"id": "agent_multi_step_0", "question": "no"}],
    )
    write_lines(
        tmp_path / "data_all" / "data_zh" / "data_agent_multi_step.json", [{"id": "zh", "question": "用户"}]
    )
    items = acebench_items(tmp_path)
    assert [(i.item, i.text) for i in items] == [
        ("agent_multi_step_0", "I am Eve. Order a pizza."),
        ("normal_multi_turn_user_adjust_0_0", ACE_REQUEST),
        ("normal_multi_turn_user_adjust_0_0", "X."),
        ("zh/zh", "用户"),  # the Chinese split too: never trained on in either language
    ]
    assert [i.item for i in acebench_items(en)] == [i.item for i in items[:3]]  # the data_en folder itself
    with pytest.raises(ValueError, match="ACEBench"):
        acebench_items(tmp_path / "nothing")


def test_a_broken_evaluation_file_stops_the_build_with_its_name(tmp_path):
    """Skipping a bad line of an evaluation file would let its items through: it is an error."""
    f = tmp_path / "BFCL_v4_simple_python.json"
    f.write_text(json.dumps({"id": "a", "question": [[{"role": "user", "content": "hi"}]]}) + "\n{oops\n")
    with pytest.raises(ValueError, match=r"BFCL_v4_simple_python.json: line 2 is not JSON"):
        bfcl_items(tmp_path)
