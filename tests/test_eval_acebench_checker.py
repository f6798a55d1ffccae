"""ACEBench's scoring rules as restated in `acebench_checker`: table tests, the lenient rules included.

Each lenient row pins a rule of ACEBench's own checker that a stricter reimplementation would
break (a substring match, numbers judged by type only), so botpsy's figures stay comparable.
"""

from __future__ import annotations

import pytest

from botpsy.eval import acebench_checker as ck
from test_eval_acebench_data import FUNCS

PARIS = {"weather_get": {"city": "Paris", "days": 3}}
JAN = {
    "report_build": {"range": {"start": "2024-01-01", "end": "2024-01-31"}, "sections": ["Sales", "Costs"]}
}
CAT = "normal_single_turn_single_function"


@pytest.mark.parametrize(
    "output, truth, ok, kind",
    [
        ([{"weather_get": {"city": "Paris", "days": 3}}], PARIS, True, ""),
        ([{"weather_get": {"city": "paris", "days": 3}}], PARIS, True, ""),  # case and ' ,./-_*^' ignored
        (
            [{"weather_get": {"city": "Paris, France", "days": 3}}],
            PARIS,
            True,
            "",
        ),  # the answer as a substring
        ([{"weather_get": {"city": "Rome", "days": 3}}], PARIS, False, "value_error"),
        (
            [{"weather_get": {"city": "Paris", "days": 4}}],
            PARIS,
            True,
            "",
        ),  # ACEBench checks numbers' type only
        ([{"weather_get": {"city": "Paris", "days": "3"}}], PARIS, False, "type_error"),
        ([{"weather_get": {"city": "Paris"}}], PARIS, False, "lack_args"),
        ([{"weather_get": {"city": "Paris", "days": 3, "units": "metric"}}], PARIS, False, "addition_args"),
        ([{"report_build": {"range": {"start": "x", "end": "y"}}}], PARIS, False, "function_mismatch"),
        ([], PARIS, False, "wrong_functions_number"),
        ([PARIS, PARIS], PARIS, False, "wrong_functions_number"),
        ("[weather_get(city='Paris')", PARIS, False, "wrong_output_format"),
        (["weather_get"], PARIS, False, "wrong_output_format"),
        ([{"weather_get": {}, "x": {}}], PARIS, False, "wrong_output_format"),
        ([JAN], JAN, True, ""),
        (
            [{"report_build": {**JAN["report_build"], "sections": ["Costs", "Sales"]}}],
            JAN,
            False,
            "value_error",
        ),
        (
            [{"report_build": {**JAN["report_build"], "range": {"start": "2024-01-01"}}}],
            JAN,
            False,
            "value_error",
        ),
        ([{"report_build": {**JAN["report_build"], "range": "January"}}], JAN, False, "type_error"),
        (
            [{"report_build": {"range": {"start": "2024-01-01", "end": "2024-01-31"}}}],
            [PARIS, JAN],
            True,  # an optional parameter of the answer left out: ACEBench checks what was written
            "",
        ),
        ([JAN], [PARIS, JAN], True, ""),  # any one of several possible answers
    ],
)
def test_normal_checker_table(output, truth, ok, kind):
    v = ck.check_normal(FUNCS, output, truth, CAT)
    assert v["valid"] is ok and v["error_type"] == kind


def test_two_calls_of_one_function_are_answered_by_suffixed_keys():
    truth = {"weather_get_1": {"city": "Paris", "days": 3}, "weather_get_2": {"city": "Rome", "days": 2}}
    both = [{"weather_get": {"city": "Rome", "days": 2}}, {"weather_get": {"city": "Paris", "days": 3}}]
    assert ck.check_normal(FUNCS, both, truth, CAT)["valid"]
    assert not ck.check_normal(FUNCS, [both[0], both[0]], truth, CAT)["valid"]


def test_multi_turn_rows_are_judged_without_whitespace_as_acebench_decodes_them():
    """ACEBench strips all whitespace before decoding a multi-turn row: a string compares fine
    (normalised either way), a list inside an object no longer matches its spaced answer."""
    spaced = {
        "report_build": {"range": {"start": "2024-01-01", "end": "2024-01-31"}, "sections": ["Net Sales"]}
    }
    out = [
        {"report_build": {"range": {"start": "2024-01-01", "end": "2024-01-31"}, "sections": ["Net Sales"]}}
    ]
    assert ck.check_normal(FUNCS, out, spaced, CAT)["valid"]
    assert ck.check_normal(FUNCS, out, spaced, "normal_multi_turn_user_adjust")[
        "valid"
    ]  # top-level list: normalised
    nested = dict(REPORT_NESTED)
    out_nested = [{"report_nested": {"opts": {"tags": ["a b"]}}}]
    truth = {"report_nested": {"opts": {"tags": ["a b"]}}}
    assert ck.check_normal([nested], out_nested, truth, CAT)["valid"]
    assert not ck.check_normal([nested], out_nested, truth, "normal_multi_turn_user_switch")["valid"]


REPORT_NESTED = {
    "name": "report_nested",
    "parameters": {"type": "object", "properties": {"opts": {"type": "object"}}, "required": ["opts"]},
}


@pytest.mark.parametrize(
    "category, text, truth, ok",
    [
        (
            "special_incomplete",
            "Missing necessary parameters (city, days) for the api (weather_get)",
            {"weather_get": ["city", "days"]},
            True,
        ),
        (
            "special_incomplete",
            "Missing necessary parameters (city) for the api (weather_get)",
            {"weather_get": ["city", "days"]},
            False,
        ),
        ("special_incomplete", "Which city do you mean?", {"weather_get": ["city"]}, False),
        (
            "special_incomplete",
            "missing necessary parameters (city) for the api (weather_get)",
            {"weather_get": ["city"]},
            False,
        ),
        (
            "special_error_param",
            "There is incorrect value (-3) for the parameters (days) in the conversation history.",
            {"days": ["-3"]},
            True,
        ),
        (
            "special_error_param",
            "There is incorrect value (3) for the parameters (days).",
            {"days": ["-3"]},
            False,
        ),
        ("special_error_param", "[weather_get(city='Paris', days=-3)]", {"days": ["-3"]}, False),
        (
            "special_irrelevant",
            "Due to the limitations of the function, I cannot solve this problem.",
            "x",
            True,
        ),
        ("special_irrelevant", "I cannot do that.", "x", False),
    ],
)
def test_special_checker_table(category, text, truth, ok):
    assert ck.special_check(category, text, truth)["valid"] is ok


STATE = [{"BaseApi": {"wifi": True, "logged_in": True}}, {"MessageApi": {"inbox": {1: {"message": "hi"}}}}]


@pytest.mark.parametrize(
    "truth, ok",
    [
        (
            [
                {"BaseApi": {"wifi": True, "logged_in": True}},
                {"MessageApi": {"inbox": {"1": {"message": "hi"}}}},
            ],
            True,
        ),
        (
            [
                {"BaseApi": {"wifi": False, "logged_in": True}},
                {"MessageApi": {"inbox": {"1": {"message": "hi"}}}},
            ],
            False,
        ),
        (
            [
                {"BaseApi": {"wifi": True, "logged_in": True}},
                {"MessageApi": {"inbox": {"2": {"message": "hi"}}}},
            ],
            False,
        ),
        ([{"BaseApi": {"wifi": True, "logged_in": True}}], False),  # class count differs
        # an answer class named unlike any output class is left unchecked, as in ACEBench
        ([{"BaseApi": {"wifi": True, "logged_in": True}}, {"MessageAPI": {"inbox": {}}}], True),
    ],
)
def test_agent_end_state_table(truth, ok):
    assert ck.agent_check(STATE, truth)["valid"] is ok


def test_no_call_ever_run_means_no_classes():
    assert ck.agent_check([], [{"BaseApi": {"wifi": True}}])["error_type"] == "wrong_number_of_classes"


@pytest.mark.parametrize(
    "calls, stones, score",
    [
        (["[a()]", "[b()]", "[c()]"], ["[a()]", "[c()]"], 1.0),
        (["[c()]", "[a()]"], ["[a()]", "[c()]"], 0.5),  # in order only
        ([" [a()] "], ["[a()]", "[b()]", "[c()]"], 0.333),
        ([], ["[a()]"], 0.0),
        (["[b()]", "[c()]"], ["[a()]", "[b()]"], 0.0),  # a missing milestone uses up the rest (ACEBench)
        (["[b()]"], [["[a()]"], ["[b()]"]], 1.0),  # best of the alternatives
        (["[a()]"], [], 1.0),
    ],
)
def test_process_accuracy_table(calls, stones, score):
    assert ck.process_accuracy(calls, stones) == score


def test_aggregate_uses_acebench_weights():
    every = {c: 1.0 for c in ("normal_atom_bool", "special_incomplete", "agent_multi_step")}
    agg = ck.aggregate(every)
    assert agg["overall"] == pytest.approx(1.0) and agg["groups"] == {
        "normal": 1.0,
        "special": 1.0,
        "agent": 1.0,
    }
    assert agg["overall_official"] == pytest.approx(0.578 / 12 + 0.2676 / 3 + 0.1545 / 2)
    half = ck.aggregate({"special_incomplete": 0.5, "special_irrelevant": 1.0})
    assert half["overall"] == pytest.approx(0.75) and "normal" not in half["groups"]
