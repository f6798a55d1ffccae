"""No training request repeats an evaluation request word for word (issue 35).

The worlds' chit-chat asked "Who are you?", "What can you do?", "How are you today?" and "Hi!",
which BFCL's irrelevance items ask too (the embedded model's card, section Decontamination, found
18 such turns in 300 training conversations). The train split now asks its own phrasings
(`worlds.kit.TRAIN_PHRASINGS`); the eval split keeps the originals. The check uses BFCL's own
files, from `bfcl-eval` (the `eval` extra), and is skipped where that is not installed.
"""

from __future__ import annotations

import random

import pytest

from botpsy.agent.capabilities import is_capability_question
from botpsy.data.decontaminate import EvalIndex, bfcl_data_dir, bfcl_items
from botpsy.data.mix import mix_conversations
from botpsy.data.mix_config import MixConfig
from botpsy.data.synthetic_rich import rich_conversation
from botpsy.worlds import DOMAINS, get_domain
from botpsy.worlds.kit import CAPABILITY_ASKED, CAPABILITY_QUESTIONS, TRAIN_PHRASINGS, phrased


@pytest.fixture(scope="module")
def bfcl() -> EvalIndex:
    try:
        return EvalIndex(bfcl_items(bfcl_data_dir()))
    except (ImportError, ValueError) as e:  # bfcl-eval absent: nothing to compare with
        pytest.skip(f"BFCL's data is not installed ({e}); install the eval extra")


def _exact(index: EvalIndex, text: str) -> str | None:
    m = index.match(text)
    return f"{text!r} is BFCL {m.item.item}" if m and m.kind == "exact" else None


def test_the_train_phrasings_are_no_bfcl_request_and_the_originals_were(bfcl):
    assert all(_exact(bfcl, original) for original in TRAIN_PHRASINGS)  # why each one is replaced
    assert not [hit for p in TRAIN_PHRASINGS.values() if (hit := _exact(bfcl, p))]


@pytest.mark.parametrize("name", DOMAINS)
def test_no_world_train_request_is_a_bfcl_request(bfcl, name):
    tasks = get_domain(name).generate(150, seed=7, split="train")
    assert not [hit for t in tasks if (hit := _exact(bfcl, t.user))]


def test_the_default_sft_mix_holds_no_bfcl_request(bfcl):
    """The stream the card measured (seed 7) held 18 exact matches before the change."""
    convs = mix_conversations(120, seed=7, cfg=MixConfig(synthetic_share=0.3, synthetic_rich=0.5))
    users = [m.content.split("\n")[0] for c in convs for m in c.messages if m.role == "user"]
    assert len(users) > 300
    assert not [hit for u in users if (hit := _exact(bfcl, u))]


def test_only_the_train_split_is_rephrased_and_capability_questions_stay_recognised():
    for original, train in TRAIN_PHRASINGS.items():
        assert phrased(original, "eval") == original and phrased(original, "train") == train
    assert phrased("Add lunch at noon.", "train") == "Add lunch at noon."
    assert set(CAPABILITY_QUESTIONS) < set(CAPABILITY_ASKED)
    assert all(is_capability_question(q) for q in CAPABILITY_ASKED)  # the runtime answers them by code


def test_generated_tool_requests_are_not_even_near_a_bfcl_request(bfcl):
    """The catalogue's openings are its own: none is within the card's near-duplicate threshold of a
    BFCL request ("How many calories are in…" was, of irrelevance_222, and was rewritten)."""
    near = []
    for seed in range(200):
        _, msgs = rich_conversation(random.Random(seed), requests=3, near_miss=0.2, parallel=0.35)
        near += [
            (m.content, hit.item.item) for m in msgs if m.role == "user" and (hit := bfcl.match(m.content))
        ]
    assert not near
