"""A turn's end in vocabularies without an <|im_end|> token (`engine.base.TurnEnd`).

A Gemma or Llama vocabulary run in botpsy's format writes <|im_end|> as several ordinary tokens,
some merged with the text before it; generation must still stop there and hand back the content.
"""

from __future__ import annotations

import pytest

from botpsy.engine.base import TurnEnd
from botpsy.protocol.formats import IM_END

TEXTS = [f"Done {i}.{IM_END} Moved it to 14:00.{IM_END}\nSure, added.{IM_END}" for i in range(200)]


@pytest.fixture(scope="module")
def plain_tok():
    """A byte-level BPE with no added tokens, trained so that '.<' and '|>' are merges (≈0.1 s)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(TEXTS, trainer=trainer)
    return tok


def _fns(tok):
    return (lambda ids: tok.decode(ids)), (lambda text: tok.encode(text).ids)


def test_a_single_marker_token_is_a_stop_id_and_is_appended():
    end = TurnEnd([7], [2, None])
    assert end.stop_ids == {7, 2} and not end.textual
    assert not end.reached([5, 6], lambda ids: IM_END)  # a stop id ends it, not the text
    ids, text = end.cut([5, 6], lambda ids: "ab", lambda text: [])
    assert ids == [5, 6, 7] and text == "ab"


def test_a_marker_of_several_tokens_ends_the_turn_once_complete(plain_tok):
    detok, tok = _fns(plain_tok)
    marker = tok(IM_END)
    assert len(marker) > 1
    end = TurnEnd(marker, [0])
    out = tok("Sure, added." + IM_END + " and more")
    stops = [k for k in range(1, len(out) + 1) if end.reached(out[:k], detok)]
    assert stops, "the complete marker was never seen"
    first = stops[0]
    assert IM_END in detok(out[:first]) and IM_END not in detok(out[: first - 1])
    ids, text = end.cut(out[:first], detok, tok)
    assert text == "Sure, added."
    assert ids == out[:first] and detok(ids) == "Sure, added." + IM_END  # the model's own ids


def test_tokens_past_the_marker_are_dropped(plain_tok):
    detok, tok = _fns(plain_tok)
    marker = tok(IM_END)
    out = tok("Sure, added." + IM_END + "\nSure")
    ids, text = TurnEnd(marker, [0]).cut(out, detok, tok)
    assert text == "Sure, added." and ids[-len(marker) :] == marker
    assert detok(ids) == "Sure, added." + IM_END


def test_content_a_merged_token_carried_is_kept(plain_tok):
    detok, tok = _fns(plain_tok)
    out = tok("Done 3." + IM_END)
    # The period and the marker's first character are one token here: dropping it must not lose ".".
    assert any(detok([i]).startswith(".") and len(detok([i])) > 1 for i in out)
    ids, text = TurnEnd(tok(IM_END), [0]).cut(out, detok, tok)
    assert text == "Done 3." and detok(ids) == "Done 3." + IM_END


def test_a_capped_turn_keeps_its_text_and_gets_the_marker(plain_tok):
    detok, tok = _fns(plain_tok)
    marker = tok(IM_END)
    out = tok("Moved it to 14")
    ids, text = TurnEnd(marker, [0]).cut(out, detok, tok)
    assert text == "Moved it to 14" and ids == out + marker


def test_the_transformers_engine_stops_on_a_written_marker(plain_tok, tmp_path, one_torch_thread):
    """A real engine on a vocabulary without <|im_end|>: the scripted tokens after the marker are
    never generated, and the text ends before it."""
    pytest.importorskip("transformers")
    from transformers import PreTrainedTokenizerFast

    from botpsy.engine.transformers_engine import TransformersEngine
    from botpsy.train.distill import tiny_random_teacher

    hf_tok = PreTrainedTokenizerFast(tokenizer_object=plain_tok, eos_token=None, pad_token=None)
    tiny_random_teacher(hf_tok, seed=0, max_positions=256).save_pretrained(tmp_path)
    hf_tok.save_pretrained(tmp_path)
    engine = TransformersEngine(tmp_path)
    assert engine.turn_end.textual
    scripted = plain_tok.encode("Sure, added." + IM_END + " then rambling on").ids
    script = iter(scripted)
    engine._pick = lambda logits, temperature: next(script)
    gen = engine.generate(plain_tok.encode("Add it").ids, max_tokens=50)
    assert gen.stop == "eos" and gen.text == "Sure, added."
    assert engine.detokenize(gen.ids) == "Sure, added." + IM_END
    assert next(script, None) is not None  # the scripted tokens after the marker were never picked
