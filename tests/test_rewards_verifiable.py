"""Table tests for the RL2 verifiable domains: checkers on right, wrong, malformed and adversarial answers."""

import pytest

from botpsy.data import verifiable as v
from botpsy.protocol.formats import ChatFormat


def done(answer: str) -> str:
    return f"some thought\n</think>\n\n{answer}"


@pytest.mark.parametrize(
    "answer,expected,score",
    [
        ("The answer is 42", 42, 1.0),
        ("6 * 7 = 42", 42, 1.0),
        ("42.0", 42, 1.0),
        ("1,234", 1234, 1.0),
        ("-5", -5, 1.0),
        ("42 ... no wait, 41", 42, 0.0),  # the last number counts
        ("forty-two", 42, 0.0),
        ("", 42, 0.0),
        (None, 42, 0.0),  # reasoning never closed
    ],
)
def test_check_number(answer, expected, score):
    assert v.check_number(answer, expected) == score


@pytest.mark.parametrize(
    "answer,letter,score",
    [
        ("Answer: B", "B", 1.0),
        ("The answer is (C).", "C", 1.0),
        ("B", "B", 1.0),
        ("A) 37", "A", 1.0),
        ("Answer: A", "B", 0.0),
        ("A or B", "B", 0.0),  # hedging over letters is no answer
        ("A B C D", "A", 0.0),
        ("", "A", 0.0),
        (None, "A", 0.0),
    ],
)
def test_check_choice(answer, letter, score):
    assert v.check_choice(answer, letter) == score


SUM_EVEN_TESTS = [[[[1, 2, 3, 4]], 6], [[[]], 0], [[[-2, 5, 8]], 6]]


@pytest.mark.parametrize(
    "code,score",
    [
        ("def sum_even(xs):\n    return sum(x for x in xs if x % 2 == 0)\n", 1.0),
        ("def sum_even(xs):\n    return sum(xs)\n", 1 / 3),  # only the empty list passes
        ("def sum_even(xs) return 0", 0.0),  # syntax error
        ("def other(xs):\n    return 0\n", 0.0),  # wrong name
        ("def sum_even(xs):\n    while True: pass\n", 0.0),  # killed at the timeout
        (
            "import sys\nprint('{\"passed\": 3}')\nsys.exit(0)\n",
            0.0,
        ),  # forging the verdict ends the child early
        ("raise SystemExit(0)", 0.0),
        ("x = 'a' * (10**10)\n", 0.0),  # memory limit
        ("", 0.0),
    ],
    ids=["right", "partly", "syntax", "name", "loop", "forged", "exit", "memory", "empty"],
)
def test_run_sandboxed(code, score):
    assert v.run_sandboxed(code, "sum_even", SUM_EVEN_TESTS, timeout_s=2.0) == pytest.approx(score)


def test_sandbox_has_an_empty_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTPSY_SECRET", "x")
    code = "import os\ndef sum_even(xs):\n    return 6 if 'BOTPSY_SECRET' in os.environ else 0\n"
    assert v.run_sandboxed(code, "sum_even", [[[[2, 4]], 0]]) == 1.0


def test_extract_code_prefers_a_fenced_block():
    assert v.extract_code("Here:\n```python\ndef f():\n    pass\n```\nDone") == "def f():\n    pass\n"
    assert v.extract_code("def f(): pass") == "def f(): pass"
    assert v.extract_code(None) == ""


@pytest.mark.parametrize(
    "answer,score",
    [
        ('{"name": "Ana", "age": 30, "city": "Oslo"}', 1.0),
        ('```json\n{"name": "Ana", "age": 30, "city": "Oslo"}\n```', 1.0),
        ('{"name": "Ana", "age": 31, "city": "Oslo"}', 0.5),  # valid but wrong value
        ('{"name": "Ana", "age": "30", "city": "Oslo"}', 0.0),  # wrong type
        ('{"name": "Ana", "age": 30}', 0.0),  # missing field
        ('{"name": "Ana", "age": 30, "city": "Oslo", "admin": true}', 0.0),  # extra field
        ("Sure! {name: Ana}", 0.0),
        ("", 0.0),
    ],
)
def test_check_json(answer, score):
    expected = {"name": "Ana", "age": 30, "city": "Oslo"}
    assert v.check_json(answer, expected, v.JSON_SCHEMA) == score


@pytest.mark.parametrize("domain", ["arithmetic", "mcq", "code", "json", "tools"])
def test_generators_are_deterministic_and_split(domain):
    a, b = v.generate(domain, 4, 0, "train"), v.generate(domain, 4, 0, "train")
    assert [i.to_json() for i in a] == [i.to_json() for i in b]
    assert {i.user for i in v.generate(domain, 4, 0, "eval")} != {i.user for i in a}
    fmt = ChatFormat("qwen35")
    for item in a:
        assert v.Item.from_json(item.to_json()) == item
        assert item.prompt(fmt).endswith("<|im_start|>assistant\n<think>\n")


def test_reference_answers_score_one():
    for item in v.generate("arithmetic", 10, 1, "train"):
        assert v.score(item, done(str(item.spec["answer"]))) == 1.0
        assert v.score(item, "no closing tag " + str(item.spec["answer"])) == 0.0
    for item in v.generate("mcq", 10, 1, "train"):
        assert v.score(item, done(f"Answer: {item.spec['letter']}")) == 1.0
    for item in v.generate("json", 3, 1, "train"):
        import json

        assert v.score(item, done(json.dumps(item.spec["expected"]))) == 1.0


def test_tool_items_score_gold_as_one():
    from botpsy.data.turns import TurnItem

    fmt = ChatFormat("qwen35")
    for item in v.generate("tools", 6, 2, "train"):
        turn = TurnItem.from_json(item.spec["turn_item"])
        assert v.score(item, fmt.completion(turn.gold_message())) == pytest.approx(1.0), item.id


def test_ifeval_uses_the_official_verifiers_with_held_out_types():
    pytest.importorskip("ifbench")
    try:
        train_ids, held = v.if_instruction_ids(False), v.if_instruction_ids(True)
    except ValueError as e:
        pytest.skip(str(e))
    assert train_ids and held and not set(train_ids) & set(held)
    items = v.generate("ifeval", 6, 0, "train")
    assert items and all(i.spec["instruction_id"] in train_ids for i in items)
    assert all(i.spec["instruction_id"] in held for i in v.generate("ifeval", 6, 0, "eval"))
    assert v.check_instruction(None, items[0].spec["instruction_id"], items[0].spec["kwargs"]) == 0.0
    # title case: a verifier whose verdict is easy to construct both ways
    assert v.check_instruction("This Is Title Case Text", "format:title_case", {}) == 1.0
    assert v.check_instruction("this is not title case", "format:title_case", {}) == 0.0
