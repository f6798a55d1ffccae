"""SFT examples from world gold conversations, tokenized the way the agent will see them.

Each example is `input_ids` plus `assistant_masks` (1 on tokens the model must produce: its
reasoning, text, calls and end-of-turn marker; 0 on system, user and tool-response tokens), the
columns TRL's `SFTTrainer` turns into labels. The text is tokenized block by block by the same
`protocol.transcript.Transcript` the agent appends to at run time, so training and inference agree
token for token — re-tokenizing a whole rendered conversation could merge tokens across block borders.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable
from pathlib import Path

from botpsy.protocol.formats import ChatFormat
from botpsy.protocol.messages import Message
from botpsy.protocol.transcript import Transcript
from botpsy.worlds.base import Task

Tokenize = Callable[[str], list[int]]


def conversation_messages(tasks: list[Task]) -> list[Message]:
    """System, then each task's user request and gold conversation, one after the other."""
    if not tasks:
        raise ValueError("a conversation needs at least one task")
    msgs = [Message("system", tasks[0].system)]
    for t in tasks:
        msgs.append(Message("user", t.user))
        msgs.extend(t.gold_messages())
    return msgs


def tokenize_conversation(
    messages: list[Message], tools: list[dict], fmt: ChatFormat, tokenize: Tokenize
) -> dict[str, list[int]]:
    """The SFT row of a conversation: its `Transcript`, built block by block as the agent builds it."""
    return Transcript.of_messages(messages, tools, fmt, tokenize).example()


def build_examples(
    conversations: Iterable[list[Task]], tools: list[dict], fmt: ChatFormat, tokenize: Tokenize
) -> list[dict[str, list[int]]]:
    return [tokenize_conversation(conversation_messages(c), tools, fmt, tokenize) for c in conversations]


def mix_examples(conversations: Iterable, fmt: ChatFormat, tokenize: Tokenize) -> list[dict[str, list[int]]]:
    """Examples from `data.mix.Conversation`s, each with the tools its own system block shows."""
    return [tokenize_conversation(c.messages, c.tools, fmt, tokenize) for c in conversations]


def prepend_bos(examples: list[dict[str, list[int]]], bos: list[int]) -> None:
    """Open every example with `bos` (untrained), as the agent opens a conversation on a vocabulary
    that asks for it (Gemma's <bos>: `Engine.bos_ids`); nothing for an empty `bos`."""
    for e in examples if bos else ():
        e["input_ids"][:0], e["assistant_masks"][:0] = bos, [0] * len(bos)


def _open(path: Path, mode: str):
    """A text file, gzip-compressed when its name ends in .gz (token-id examples shrink about 10x)."""
    return gzip.open(path, mode + "t") if Path(path).suffix == ".gz" else open(path, mode)


def write_jsonl(rows: Iterable[dict], path: Path) -> int:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with _open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
            n += 1
    return n


def read_jsonl(path: Path) -> tuple[list[dict], int]:
    """Rows of a JSONL file, and how many lines could not be parsed (reported, skipped)."""
    rows, bad = [], 0
    with _open(path, "r") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                bad += 1
    return rows, bad


def read_examples(path: Path) -> list[dict[str, list[int]]]:
    """The tokenized examples a run wrote (`train.jsonl`, or `train.jsonl.gz`), checked row by row,
    so that data built on one machine (the worlds, here) trains on another (a GPU with none of them).

    A row must hold `input_ids` and `assistant_masks`, lists of integers of one length with at least
    one 1 in the mask. A file that cannot be read, or holds no usable row, is an error that names it;
    rows that are not JSON or break these rules are also an error, with the first one's line number:
    a data file that changed on the way is not trained on in part.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"sft.examples={path}: no such file (give the train.jsonl[.gz] an SFT run wrote)")
    out = []
    try:
        with _open(path, "r") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    ids, mask = row["input_ids"], row["assistant_masks"]
                    ok = (
                        len(ids) == len(mask)
                        and all(type(i) is int and i >= 0 for i in ids)
                        and set(mask) <= {0, 1}
                        and 1 in mask
                    )
                except (json.JSONDecodeError, KeyError, TypeError):
                    ok = False
                if not ok:
                    raise ValueError(
                        f"sft.examples={path}: line {n} is not an example (expected input_ids and "
                        "assistant_masks, integer lists of one length with a 1 in the mask)"
                    )
                out.append({"input_ids": ids, "assistant_masks": mask})
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise ValueError(f"sft.examples={path}: cannot be read ({e}); write it again") from None
    if not out:
        raise ValueError(f"sft.examples={path}: holds no examples")
    return out
