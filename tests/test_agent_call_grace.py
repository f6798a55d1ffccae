"""A generation the token cap cuts inside a tool call is made again with room to close the call."""

from __future__ import annotations

from botpsy.agent.loop import Agent, AgentConfig, open_call, skip_shown
from botpsy.engine.base import Generation
from botpsy.engine.oracle import ScriptedEngine
from botpsy.protocol.formats import IM_END
from botpsy.protocol.messages import StepTiming
from botpsy.stores import ics
from botpsy.stores.workspace import Workspace

CALL = (
    "<tool_call>\n<function=create_event>\n<parameter=title>\nDentist\n</parameter>\n"
    "<parameter=start>\n2026-12-03T10:00\n</parameter>\n</function>\n</tool_call>"
)
REPLIES = ["I'll add it.\n</think>\n\n" + CALL, "Added.\n</think>\n\nIt is on your calendar."]


class GreedyEngine(ScriptedEngine):
    """A temperature-0 model (one byte, one token): the same prompt gives the same text, cut at `max_tokens`.

    Its reply to a prompt is the next scripted reply after as many as the prompt's finished
    assistant turns, continued from what of it the prompt already holds, so generating again
    from the same prompt repeats the same text.
    """

    def __init__(self, replies):
        super().__init__([])
        self.replies = list(replies)
        self.caps: list[int] = []
        self.turn, self.start = -1, 0

    def generate(self, prompt_ids, max_tokens=512, temperature=0.0, on_text=None):
        prompt = self.detokenize(prompt_ids)
        self.caps.append(max_tokens)
        self.prompts.append(prompt)
        turn = prompt.count("<|im_start|>assistant") - 1
        if turn != self.turn:  # a new assistant turn starts at the end of this prompt
            self.turn, self.start = turn, len(prompt)
        reply = self.replies[turn] if turn < len(self.replies) else "ok\n</think>\n\nDone."
        done = len(prompt) - self.start  # this turn's text already in the prompt (a paused chunk)
        text = reply[done : done + max_tokens]
        stop = "length" if done + max_tokens < len(reply) else "eos"
        for i in range(0, len(text), 7):  # streamed in pieces, as engines do
            if on_text:
                on_text(text[i : i + 7])
        ids = self.tokenize(text)
        return Generation(ids + self.tokenize(IM_END), text, stop, StepTiming(generated_tokens=len(ids)))


def run(tmp_path, **config):
    eng = GreedyEngine(REPLIES)
    shown: list[str] = []
    events = []
    ws = Workspace(tmp_path, suites=["calendar"])
    cfg = AgentConfig(**{"max_tokens": 100, "reasoning_budget": None, "loop_check_every": 0, **config})
    agent = Agent(eng, ws, "sys", cfg, on_event=events.append, on_text=shown.append)
    trace = agent.send("Add a dentist appointment on December 3 2026 at 10am")
    return eng, trace, events, "".join(shown), ws


def test_a_call_cut_by_the_cap_is_generated_again_and_runs(tmp_path):
    eng, trace, events, shown, ws = run(tmp_path)
    assert len(REPLIES[0]) > 100  # the cap cuts the call
    assert eng.caps[:2] == [100, 228]  # cut at 100, then again with the default 128 more
    assert trace.parse_errors == 0 and trace.stopped == "answer"
    assert [e.data for e in events if e.kind == "call_grace"] == [{"tokens": 100, "grace": 128}]
    assert [e.title for e in ics.load(ws.calendar_path).events] == ["Dentist"]
    # the stream shows each reply once: the repeated prefix of the second attempt is not re-sent
    assert shown == REPLIES[0] + REPLIES[1]


def test_without_grace_the_cut_call_is_a_parse_error(tmp_path):
    eng, trace, events, _, ws = run(tmp_path, call_grace=0, max_steps=1)
    assert eng.caps == [100]
    assert trace.parse_errors == 1 and not any(e.kind == "call_grace" for e in events)
    assert not ws.calendar_path.exists() or ics.load(ws.calendar_path).events == []


def test_grace_is_given_once_and_only_to_open_calls(tmp_path):
    # 20 more tokens are not enough: the call stays cut and goes to the parser, no third attempt
    eng, trace, _, _, _ = run(tmp_path / "a", call_grace=20, max_steps=1)
    assert eng.caps == [100, 120] and trace.parse_errors == 1
    # a reasoning cut by the cap (no call opened) is not generated again
    eng = GreedyEngine(["x" * 300])
    agent = Agent(eng, Workspace(tmp_path / "b", suites=["calendar"]), "sys", AgentConfig(max_tokens=100))
    agent.send("hi")
    assert 100 + 128 not in eng.caps


def test_a_chunk_that_closes_the_reasoning_is_kept_through_think_close(tmp_path):
    # chunks of 16: the first reply's `</think>` and the start of its call fall in the second chunk
    eng, trace, events, shown, ws = run(tmp_path, loop_check_every=16, max_tokens=400)
    assert eng.caps[:3] == [16, 16, 400 - len("I'll add it.\n</think>")]
    assert trace.parse_errors == 0 and not any(e.kind == "call_grace" for e in events)
    # the call is generated in one engine call, from its `<tool_call>` on (as the grammar needs)
    assert eng.prompts[2].endswith("I'll add it.\n</think>")
    assert [e.title for e in ics.load(ws.calendar_path).events] == ["Dentist"]
    assert shown == REPLIES[0] + REPLIES[1]


def test_open_call():
    assert open_call("x <tool_call>\n<function=a>")
    assert not open_call("x <tool_call>a</tool_call> done")
    assert open_call("<tool_call>a</tool_call>\n<tool_call>\n<fun")
    assert not open_call("no call at all")


def test_skip_shown_passes_what_is_new_or_different():
    out: list[str] = []
    emit = skip_shown(out.append, "abcdef")
    for piece in ("ab", "cd", "efgh", "ij"):
        emit(piece)
    assert "".join(out) == "ghij"
    out.clear()
    emit = skip_shown(out.append, "abcdef")
    for piece in ("ab", "xy", "z"):  # a sampled repeat that differs: shown from the differing piece
        emit(piece)
    assert "".join(out) == "xyz"
    assert skip_shown(None, "abc") is None


class HybridEngine(GreedyEngine):
    """A model that cannot drop generated tokens cheaply (a hybrid llama.cpp model)."""

    cheap_rollback = False


def test_without_cheap_rollback_a_cut_call_continues_instead(tmp_path):
    eng = HybridEngine(REPLIES)
    shown: list[str] = []
    ws = Workspace(tmp_path, suites=["calendar"])
    cfg = AgentConfig(max_tokens=100, reasoning_budget=None, loop_check_every=16)
    trace = Agent(eng, ws, "sys", cfg, on_text=shown.append).send("Add a dentist appointment")
    assert trace.parse_errors == 0
    # every prompt extends the one before within a turn: nothing was dropped
    first_turn = [p for p in eng.prompts if p.count("<|im_start|>assistant") == 1]
    assert all(b.startswith(a) for a, b in zip(first_turn, first_turn[1:], strict=False))
    assert 128 in eng.caps  # the cut call continued with the grace tokens
    assert [e.title for e in ics.load(ws.calendar_path).events] == ["Dentist"]
    assert "".join(shown) == REPLIES[0] + REPLIES[1]
