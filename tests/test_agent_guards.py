"""The agent's runtime guards: loop / budget cuts of the reasoning, and the phantom-action retry."""

import pytest

from botpsy.agent.detectors import reasoning_loop
from botpsy.agent.guards import FORCED_CLOSE, merge_timings, resolve_budget
from botpsy.agent.loop import Agent, AgentConfig, approve_all, decline_all
from botpsy.engine.base import Generation
from botpsy.engine.oracle import ScriptedEngine
from botpsy.protocol.formats import IM_END, THINK_CLOSE
from botpsy.protocol.messages import StepTiming
from botpsy.stores import ics
from botpsy.stores.workspace import Workspace

CALL = (
    "<tool_call>\n<function=create_event>\n<parameter=title>\nDentist\n</parameter>\n"
    "<parameter=start>\n2026-12-03T10:00\n</parameter>\n</function>\n</tool_call>"
)
CREATE = "Add it.\n</think>\n\n" + CALL
LOOPING = "I should check the calendar first and then decide which day works for the dentist. " * 40
# Long and never repeating a 10-word span: not a loop, only long.
VARIED = " ".join(
    f"option {i} starts at hour {i % 9 + 8} minute {i * 7 % 60} so compare it;" for i in range(60)
)
NORMAL = (
    "The user wants a dentist appointment on December 3 2026 at 10am. So the answer is to create "
    "an event. I will call create_event with the title Dentist and the start 2026-12-03T10:00; "
    "the duration defaults to an hour, so the answer is one call."
)


class PausingEngine(ScriptedEngine):
    """A scripted model that honours `max_tokens` (one byte, one token) and can be paused.

    A reply is consumed over as many calls as the caps make: a call that stops at the cap
    returns its piece with stop "length" and the end marker appended (the engine contract); the
    next call goes on where its prompt ends (a prompt that kept only part of the last piece gets
    the rest of that piece again, as a model generating from that prompt would). When the prompt ends with the guard's forced </think>,
    the model drops the rest of its reasoning and continues after its own </think> (nothing if
    the reply has none): a model that answers once its reasoning is closed.
    """

    def __init__(self, replies):
        super().__init__([])
        self.replies = list(replies)
        self.rest: str | None = None
        self.paused_at = -1  # prompt length a continuation of the paused reply would have
        self.calls = 0

    def generate(self, prompt_ids, max_tokens=512, temperature=0.0, on_text=None):
        prompt = self.detokenize(prompt_ids)
        self.prompts.append(prompt)
        self.calls += 1
        if self.rest is None:
            self.rest = self.replies.pop(0) if self.replies else "ok\n</think>\n\nNothing more."
        elif len(prompt) == self.paused_at + len(FORCED_CLOSE) and prompt.endswith(FORCED_CLOSE):
            self.rest = self.rest.partition(THINK_CLOSE)[2].lstrip("\n")
        elif len(prompt) < self.paused_at:  # the agent kept only part of the last piece: redo the rest
            self.rest = self.piece[len(self.piece) - (self.paused_at - len(prompt)) :] + self.rest
        piece, self.rest = self.rest[:max_tokens], self.rest[max_tokens:]
        self.piece = piece
        stop = "length" if self.rest else "eos"
        if stop == "eos":
            self.rest = None
        self.paused_at = len(prompt) + len(piece)
        if on_text:
            on_text(piece)
        ids = self.tokenize(piece)
        return Generation(ids + self.tokenize(IM_END), piece, stop, StepTiming(generated_tokens=len(ids)))


def run(tmp_path, replies, request="Add a dentist appointment on December 3 2026 at 10am", **config):
    tmp_path.mkdir(parents=True, exist_ok=True)
    eng = PausingEngine(replies)
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys", AgentConfig(**config))
    return eng, agent, agent.send(request)


def guard_events(trace, kind="loop_guard"):
    return [e for e in trace.events if e.kind == kind]


# ---- loop guard ------------------------------------------------------------------------------


def test_the_looping_fixture_loops_and_the_others_do_not():
    assert reasoning_loop(LOOPING) and not reasoning_loop(VARIED) and not reasoning_loop(NORMAL)


def test_a_looping_reasoning_is_cut_and_the_agent_still_answers(tmp_path):
    eng, agent, trace = run(
        tmp_path,
        [LOOPING + "\n</think>\n\n" + CALL, "Done.\n</think>\n\nAdded the dentist."],
        max_tokens=8000,
        reasoning_budget=None,
    )
    (ev,) = guard_events(trace)
    assert ev.data["reason"] == "loop" and ev.data["reasoning_tokens"] < len(LOOPING) // 4
    assert trace.stopped == "answer" and trace.final_answer == "Added the dentist."
    assert [e.title for e in ics.load(tmp_path / "calendar.ics").events] == ["Dentist"]
    assert len(trace.timings) == 2  # one timing per model step, however many chunks it took


def test_the_cut_is_append_only_and_the_forced_close_is_not_generated(tmp_path):
    eng, agent, trace = run(tmp_path, [LOOPING + "\n</think>\n\n" + CALL], max_tokens=8000)
    for earlier, later in zip(eng.prompts, eng.prompts[1:], strict=False):
        assert later.startswith(earlier)
    text = eng.detokenize(trace.token_ids)
    at = text.index(FORCED_CLOSE)
    mask = trace.generated_mask[at : at + len(FORCED_CLOSE)]
    assert mask == [0] * len(FORCED_CLOSE) and trace.generated_mask[at - 1] == 1
    assert len(trace.token_ids) == len(trace.generated_mask)


def test_the_reasoning_budget_cuts_a_long_reasoning(tmp_path):
    eng, agent, trace = run(
        tmp_path,
        [VARIED + "\n</think>\n\n" + CALL, "Done.\n</think>\n\nAdded."],
        max_tokens=2000,
        reasoning_budget=300,
        loop_check_every=0,
    )
    (ev,) = guard_events(trace)
    assert ev.data == {"reason": "budget", "reasoning_tokens": 300, "budget": 300}
    first = next(m for m in trace.messages if m.role == "assistant")
    assert first.reasoning == VARIED[:300].strip() and first.tool_calls[0].name == "create_event"
    assert trace.stopped == "answer"


def test_auto_budget_turns_a_token_cap_into_an_answer(tmp_path):
    """Without a budget a reasoning longer than the cap ends as an unclosed-think parse error."""
    replies = [VARIED + "\n</think>\n\nYour calendar is free that day."]
    _, _, capped = run(tmp_path / "a", list(replies), max_tokens=384, reasoning_budget=None, max_steps=1)
    assert capped.parse_errors == 1 and not guard_events(capped)
    _, _, cut = run(tmp_path / "b", list(replies), max_tokens=384, max_steps=1)
    assert [e.data["reasoning_tokens"] for e in guard_events(cut)] == [384 - 128]
    assert cut.parse_errors == 0 and cut.final_answer == "Your calendar is free that day."


def test_normal_reasoning_passes_unchanged(tmp_path):
    """Checked in chunks, a normal step yields exactly the ids of one unguarded call."""
    replies = [NORMAL + "\n</think>\n\n" + CALL, "Done.\n</think>\n\nAdded."]
    eng, _, guarded = run(tmp_path / "a", list(replies), max_tokens=2000, loop_check_every=32)
    _, _, plain = run(
        tmp_path / "b", list(replies), max_tokens=2000, reasoning_budget=None, loop_check_every=0
    )
    assert eng.calls > 3  # the reasoning was really checked chunk by chunk
    assert not guard_events(guarded)
    assert guarded.token_ids == plain.token_ids and guarded.generated_mask == plain.generated_mask
    assert [m.content for m in guarded.messages] == [m.content for m in plain.messages]


def test_no_chunking_without_thinking(tmp_path):
    eng, _, trace = run(tmp_path, ["Your calendar is free."], thinking=False, max_tokens=2000)
    assert eng.calls == 1 and trace.final_answer == "Your calendar is free."


@pytest.mark.parametrize(
    "budget,max_tokens,expected",
    [("auto", 384, 256), ("auto", 200, None), (0, 384, None), (None, 384, None), (100, 384, 100)],
)
def test_resolve_budget(budget, max_tokens, expected):
    assert resolve_budget(budget, max_tokens, 128) == expected


def test_resolve_budget_rejects_nonsense():
    with pytest.raises(ValueError, match="reasoning_budget"):
        resolve_budget("lots", 384, 128)


def test_merge_timings_keeps_one_step():
    parts = [StepTiming(10, 5, 4, 0.1, 100.0, 0, 0.4), StepTiming(1, 14, 3, 0.01, 0, 0, 0.21)]
    t = merge_timings(parts)
    assert (t.prompt_tokens, t.cached_tokens, t.generated_tokens, t.ttft_s) == (11, 5, 7, 0.1)
    assert t.decode_tok_s == pytest.approx((3 + 2) / (0.3 + 0.2))
    assert t.total_s == pytest.approx(0.61)


# ---- phantom-action guard ----------------------------------------------------------------------

CLAIM = "ok\n</think>\n\nI've added the dentist appointment to your calendar."


def scripted(tmp_path, replies, **config):
    eng = ScriptedEngine(replies)
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys", AgentConfig(**config))
    return eng, agent.send("Add a dentist appointment on December 3 2026 at 10am")


def test_a_phantom_answer_gets_one_retry_and_the_call_runs(tmp_path):
    eng, trace = scripted(tmp_path, [CLAIM, CREATE, "Done.\n</think>\n\nAdded."])
    (ev,) = guard_events(trace, "phantom_guard")
    assert "added the dentist" in ev.data["claims"][0]
    assert '"kind": "phantom_action"' in eng.prompts[1].rsplit("<tool_response>", 1)[1]
    assert [e.title for e in ics.load(tmp_path / "calendar.ics").events] == ["Dentist"]
    assert trace.stopped == "answer" and trace.final_answer == "Added."
    # The nudge is a tool result, not a user turn: evaluation reads user turns as consent.
    assert [m.role for m in trace.messages].count("user") == 1


def test_no_second_retry(tmp_path):
    second = "ok\n</think>\n\nI have scheduled it for you."
    eng, trace = scripted(tmp_path, [CLAIM, second, CREATE])
    assert len(guard_events(trace, "phantom_guard")) == 1 and len(eng.prompts) == 2
    assert trace.stopped == "answer" and trace.final_answer == "I have scheduled it for you."
    assert not (tmp_path / "calendar.ics").exists()


@pytest.mark.parametrize(
    "replies,config",
    [
        ([CREATE, "Done.\n</think>\n\nI've added it."], {}),  # the claim is backed by a call
        (["ok\n</think>\n\nShall I add it for 10am?"], {}),  # no claim
        ([CLAIM], {"phantom_retry": False}),  # switched off
        ([CLAIM], {"max_steps": 1}),  # no step left for a retry
    ],
)
def test_no_retry(tmp_path, replies, config):
    eng, trace = scripted(tmp_path, [*replies, CREATE], **config)
    assert not guard_events(trace, "phantom_guard")
    assert trace.stopped == "answer" and len(eng.prompts) == len(replies)


def test_a_read_only_call_does_not_back_an_action_claim(tmp_path):
    look = "Look.\n</think>\n\n<tool_call>\n<function=list_events>\n<parameter=date>\n2026-12-03\n</parameter>\n</function>\n</tool_call>"
    eng, trace = scripted(tmp_path, [look, CLAIM, CREATE, "Done.\n</think>\n\nAdded."])
    assert len(guard_events(trace, "phantom_guard")) == 1 and trace.final_answer == "Added."


# ---- declined and failed calls never back a claim (issue 14, item 1) ----------------------------

DONE = "ok\n</think>\n\nDone: the dentist appointment is on your calendar."


def declining(tmp_path, replies, confirm=decline_all):
    eng = ScriptedEngine(replies)
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys", AgentConfig(), confirm)
    return eng, agent.send("Add a dentist appointment on December 3 2026 at 10am")


def test_a_declined_call_followed_by_done_is_nudged_then_replaced(tmp_path):
    """Regression: `run ... </dev/null` declined the call and still printed "Done: ..." and exit 0."""
    eng, trace = declining(tmp_path, [CREATE, DONE, DONE])
    (ev,) = guard_events(trace, "phantom_guard")
    assert "create_event was declined" in eng.prompts[2].rsplit("<tool_response>", 1)[1]
    (rep,) = guard_events(trace, "claim_replaced")
    assert rep.data["not_done"] == ["create_event"]
    assert "not done" in trace.final_answer and "Done:" not in trace.final_answer
    assert trace.not_done == ["create_event"] and not (tmp_path / "calendar.ics").exists()


def test_a_truthful_answer_after_a_decline_stands(tmp_path):
    honest = "ok\n</think>\n\nI didn't add it, since you declined."
    eng, trace = declining(tmp_path, [CREATE, honest])
    assert not guard_events(trace, "phantom_guard") and not guard_events(trace, "claim_replaced")
    assert trace.final_answer == "I didn't add it, since you declined." and trace.not_done == ["create_event"]


def test_a_failed_call_does_not_back_a_claim(tmp_path):
    bad = CALL.replace("2026-12-03T10:00", "not a time")
    eng, trace = declining(tmp_path, ["Add.\n</think>\n\n" + bad, DONE, DONE], confirm=approve_all)
    assert guard_events(trace, "claim_replaced") and "Done:" not in trace.final_answer
    assert trace.not_done == ["create_event"]


def test_a_failed_call_made_good_by_a_retry_backs_the_claim(tmp_path):
    bad = "Add.\n</think>\n\n" + CALL.replace("2026-12-03T10:00", "not a time")
    eng, trace = declining(tmp_path, [bad, CREATE, DONE], confirm=approve_all)
    assert not guard_events(trace, "phantom_guard") and trace.not_done == []
    assert trace.final_answer.startswith("Done:")
