"""How the SFT conversations are drawn: the one home of the mix's knobs, with their help.

`data.mix` draws conversations with a `MixConfig`; the SFT stage's config (`train.sft_config`)
is a `MixConfig` with the training knobs added, so a mix knob is written once — here — and reaches
`--set sft.FIELD=…`, the presets and `field_help` from the same field (issue 34: the SFT config
repeated these 12 fields and `train.sft` copied them across by hand).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class MixConfig:
    """How the SFT conversations are drawn; defaults are the tiny preset's."""

    domains: tuple[str, ...] = field(
        default=("all",),
        metadata={
            "help": "worlds to draw gold conversations from: world names, 'all' (every world), or "
            "'world=W' to give one W turns of the round-robin (e.g. all,calendar=3)"
        },
    )
    per_conversation: int = field(
        default=3, metadata={"help": "requests per world conversation (amortises the system prompt)"}
    )
    retrieval_share: float = field(
        default=0.25,
        metadata={"help": "share of conversations shown the CLI's top-k retrieved tools over all suites"},
    )
    tool_top_k: int = field(
        default=12,
        metadata={"help": "k of that retrieval (the README's `chat --suites all --tool-top-k 12`)"},
    )
    declined_share: float = field(
        default=0.08,
        metadata={"help": "share of requests turned into a declined-confirmation turn where they can be"},
    )
    completed_share: float = field(
        default=0.0,
        metadata={"help": "share of missing-info requests given the user's answer up front (no ask)"},
    )
    synthetic_share: float = field(
        default=0.15, metadata={"help": "share of conversations over procedurally generated unseen tools"}
    )
    synthetic_unlisted: float = field(
        default=0.0,
        metadata={"help": "share of unseen-tool requests that ask for an API no listed tool serves"},
    )
    synthetic_near_miss: float = field(
        default=0.0,
        metadata={
            "help": "share of unseen-tool requests that ask a listed tool's field for something it does "
            "not do, or a listed calculator without its values"
        },
    )
    synthetic_rich: float = field(
        default=0.0,
        metadata={
            "help": "share of unseen-tool conversations over the catalogue's richer APIs (data.synthetic_rich): "
            "list and object parameters, defaults, varied descriptions, parallel calls, near-miss tool "
            "lists; 0 leaves the stream as it was"
        },
    )
    synthetic_rich_near_miss: float = field(
        default=0.2,
        metadata={
            "help": "share of those conversations' requests that want what only an unlisted sibling of "
            "a listed tool does (reserve, where only a hotel search is listed): a plain answer, no call"
        },
    )
    synthetic_rich_parallel: float = field(
        default=0.3,
        metadata={
            "help": "share of those conversations' requests that need several calls in one turn "
            "(one API for several values, or two APIs)"
        },
    )
    synthetic_restate: bool = field(
        default=False,
        metadata={
            "help": "generated tools return facts (a status, values, names, a short list; a tenth of "
            "them an error) and the gold answer restates them, one clause per call (issue 35); off "
            "keeps the opaque 'Done: NAME answered (result R…)' line the shipped adapter learned"
        },
    )
    vary_share: float = field(
        default=0.5,
        metadata={"help": "share of requests given a surface variation (lead, tail, case, typo)"},
    )
    resolve_dates: bool = field(
        default=True,
        metadata={"help": "append the agent's '(resolved: …)' line to user turns, as at run time"},
    )
    task_weights: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "reweight the worlds' tasks by kind, and 'writes' for those whose first gold call "
            "changes data or sends, e.g. parallel=2,no_call=0.5,writes=3; unnamed keys weigh 1"
        },
    )
    pool: int = field(
        default=8,
        metadata={"help": "with task weights, each conversation picks from pool × per_conversation tasks"},
    )


def mix_of(cfg: MixConfig) -> MixConfig:
    """Only the mix knobs of `cfg` (an SFT config is a MixConfig too), lists made tuples."""
    values = {f.name: getattr(cfg, f.name) for f in fields(MixConfig)}
    return MixConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})
