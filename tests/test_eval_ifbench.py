"""IFBench offline: NLTK data built locally, every instruction judged, faults fail one item."""

from __future__ import annotations

import pytest

pytest.importorskip("ifbench")
pytest.importorskip("punkt")
pytest.importorskip("textblob")

from botpsy.data import nltk_offline  # noqa: E402
from botpsy.engine.oracle import OracleEngine, ScriptedEngine  # noqa: E402
from botpsy.eval import ifbench  # noqa: E402
from botpsy.protocol.messages import Message  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def offline_data(tmp_path_factory):
    import os

    os.environ.setdefault("BOTPSY_NLTK_DATA", str(tmp_path_factory.mktemp("nltk_data")))
    ifbench.require_ifbench()


def answer(text):
    return lambda item: OracleEngine([Message("assistant", text, "thinking")])


def test_word_tokenize_uses_the_built_punkt_model_and_matches_it():
    import nltk
    import punkt

    text = "Dr. Smith went to Washington D.C. on Jan. 5. He met Mr. Jones at 3 p.m. It rained."
    assert nltk.sent_tokenize(text) == punkt.sent_tokenize(text, "english")
    assert nltk.word_tokenize("Don't stop; it's 5.5 km.")[:3] == ["Do", "n't", "stop"]


def test_stopwords_and_downloads_are_offline():
    import nltk

    words = nltk.corpus.stopwords.words("english")
    assert len(words) == 153 and {"the", "and", "don", "t"} <= set(words)
    assert nltk.download("stopwords", quiet=True) is True  # found on disk, no network
    assert nltk.download("punkt_tab", quiet=True) is True


@pytest.mark.parametrize(
    "text, verb",
    [
        ("Write a short poem about the sea.", True),
        ("Consider the following options carefully.", True),
        ("Imagine a city without cars.", True),
        ("The sea is calm today.", False),
        ("Yesterday we walked home.", False),
    ],
)
def test_start_with_a_verb_is_judged_offline(text, verb):
    import nltk

    tags = nltk.pos_tag(nltk.word_tokenize(text))
    assert ("VB" in tags[0][1]) is verb


def test_sample_responses_are_judged_on_every_instruction_without_error():
    """The 'oracle': the package's sample responses through botpsy's path, all 294 items."""
    samples = ifbench.sample_responses()
    items = ifbench.load_items()
    rep = ifbench.evaluate_ifbench(
        "oracle", lambda d: OracleEngine([Message("assistant", samples[d["prompt"]], "s")]), items=items
    )
    assert len(rep.results) == 294 and not any(r.error for r in rep.results), rep.failures
    for r, d in zip(rep.results, items, strict=True):
        assert len(r.detail["strict_list"]) == len(d["instruction_id_list"])
    # Pinned so that a change in the offline NLTK substitutes shows up as a score change.
    assert rep.scores["prompt_strict"] == pytest.approx(81 / 294)
    assert set(rep.by_instruction) == set(ifbench.instruction_counts(items))


def _item(iid, kwargs, prompt="p", key="k"):
    return {"key": key, "prompt": prompt, "instruction_id_list": [iid], "kwargs": [kwargs]}


def test_a_followed_instruction_passes_and_an_ignored_one_fails():
    item = _item("words:start_verb", {})
    good = ifbench.evaluate_ifbench("m", answer("Write it down now."), items=[item])
    bad = ifbench.evaluate_ifbench("m", answer("The answer is here."), items=[item])
    assert good.results[0].ok and not bad.results[0].ok
    assert bad.failures == {"instruction not followed": 1}


def test_unclosed_reasoning_is_an_empty_response():
    item = _item("words:start_verb", {})
    rep = ifbench.evaluate_ifbench("m", lambda d: ScriptedEngine(["thinking forever and"]), items=[item])
    assert not rep.results[0].ok and rep.results[0].reason == "empty response"
    assert rep.results[0].parse_errors == 1


def test_faults_fail_one_item_and_the_run_goes_on():
    items = [
        {"key": "bad", "malformed": True},
        _item("words:start_verb", {}),
        _item("words:start_verb", {}, key="k2"),
    ]
    engines = iter(
        [
            ScriptedEngine([]),
            ScriptedEngine([None]),
            OracleEngine([Message("assistant", "Write it down now.", "x")]),
        ]
    )
    rep = ifbench.evaluate_ifbench("m", lambda d: next(engines), items=items)
    assert [r.ok for r in rep.results] == [False, False, True]
    assert rep.failures == {"error: ValueError": 1, "error: EngineError": 1}


def test_cache_resumes(tmp_path):
    item = _item("words:start_verb", {})
    seen = []

    def engine_for(d):
        seen.append(d["key"])
        return OracleEngine([Message("assistant", "Go.", "x")])

    ifbench.evaluate_ifbench("m", engine_for, out=tmp_path, items=[item])
    ifbench.evaluate_ifbench("m", engine_for, out=tmp_path, items=[item])
    assert seen == ["k"]


def test_data_root_is_built_once(tmp_path):
    root = nltk_offline.build(tmp_path)
    files = sorted(p.name for p in (root / "tokenizers" / "punkt_tab" / "english").iterdir())
    assert files == sorted(nltk_offline.PUNKT_FILES)
    assert nltk_offline.build(tmp_path) == root
