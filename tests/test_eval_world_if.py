"""Instruction-following tasks of the worlds: a world task plus one held-out IFBench constraint."""

from __future__ import annotations

from dataclasses import replace

import pytest

from botpsy.agent.loop import AgentConfig
from botpsy.engine.oracle import OracleEngine
from botpsy.eval.world_items import (
    INSTRUCTED_FROM,
    evaluate_worlds_items,
    instructed_task,
    instructed_tasks,
    run_world_item,
)
from botpsy.protocol.messages import Message
from botpsy.worlds import get_domain

pytest.importorskip("ifbench")

CAL = get_domain("calendar")
TITLE_CASE = ("format:title_case", None)


def _task(kind: str, mutating: bool = False):
    acting = {t.name for t in CAL.tools if t.labels.mutates}
    return next(
        t
        for t in CAL.generate(40, 1000, "eval")
        if t.kind == kind and (not mutating or any(c.name in acting for c in t.gold_calls))
    )


def _title(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split(" "))


def _gold_with_answer(task, shape) -> list[Message]:
    gold = task.gold_messages()
    last = gold[-1]
    assert last.role == "assistant" and not last.tool_calls
    return [*gold[:-1], Message("assistant", shape(last.content))]


def test_instructed_task_appends_a_held_out_constraint():
    from botpsy.data.verifiable import if_instruction_ids

    base = _task("single")
    task, iid, _ = instructed_task(base, seed=3)
    assert task.id == base.id + "-if" and task.user.startswith(base.user) and len(task.user) > len(base.user)
    assert iid in if_instruction_ids(held_out=True)
    assert instructed_task(base, seed=3)[1:] == (iid, _)  # deterministic
    assert (task.kind, task.expected_hash) == (base.kind, base.expected_hash)


def test_instructed_tasks_come_from_kinds_whose_answer_is_the_models_own():
    drawn = instructed_tasks(CAL, 5, 1000)
    assert len(drawn) == 5 and {t.kind for t, _, _ in drawn} <= set(INSTRUCTED_FROM)
    assert instructed_tasks(CAL, 0, 1000) == []


def test_success_needs_the_world_check_and_the_constraint():
    task = _task("single", mutating=True)
    cfg = AgentConfig(max_tokens=512)
    followed = run_world_item(CAL, task, OracleEngine(_gold_with_answer(task, _title)), "m", cfg, TITLE_CASE)
    assert followed.ok and followed.detail["kind"] == "instruction"
    assert followed.detail["instruction_followed"] and followed.detail["task_kind"] == "single"

    ignored = run_world_item(
        CAL, task, OracleEngine(_gold_with_answer(task, str.lower)), "m", cfg, TITLE_CASE
    )
    assert not ignored.ok and ignored.reason == "instruction not followed"

    # The constraint alone is not enough: no calls made, so the world check fails first.
    lazy = OracleEngine([Message("assistant", _title(task.gold_messages()[-1].content))])
    # (no phantom retry: the claim without a call would be nudged and the oracle has no second reply)
    world_fails = run_world_item(CAL, task, lazy, "m", replace(cfg, phantom_retry=False), TITLE_CASE)
    assert not world_fails.ok and world_fails.reason != "instruction not followed"
    assert world_fails.detail["instruction_followed"]


def test_the_report_path_adds_instruction_items(tmp_path):
    from botpsy.data.verifiable import check_instruction

    results = evaluate_worlds_items(
        [CAL], 2, "oracle", lambda t: OracleEngine(t.gold_messages()), out=tmp_path, instructed_per_domain=2
    )
    plain = [r for r in results if r.detail.get("kind") != "instruction"]
    instr = [r for r in results if r.detail.get("kind") == "instruction"]
    assert len(plain) == 2 and all(r.ok for r in plain)
    assert len(instr) == 2 and all(r.id.endswith("-if") for r in instr)
    for r in instr:  # the oracle's gold answer is judged by IFBench's own verifier, nothing else
        task, iid, kwargs = next(x for x in instructed_tasks(CAL, 2, 1000) if x[0].id == r.id)
        gold_answer = task.gold_messages()[-1].content
        assert r.detail["instruction"] == iid
        assert r.detail["instruction_followed"] == (check_instruction(gold_answer, iid, kwargs) > 0)
        assert r.ok == r.detail["instruction_followed"]
