""" "What can you do?" is answered by code from the installed suites (agent.capabilities).

Pins the bug of issue 13: with only the calendar installed, the embedded model answered the
question with the email-and-banking world's capability line.
"""

import pytest

from botpsy.agent.capabilities import is_capability_question
from botpsy.agent.loop import Agent, AgentConfig
from botpsy.engine.oracle import ScriptedEngine
from botpsy.stores.workspace import Workspace
from botpsy.tools.base import tool
from botpsy.tools.registry import CAPABILITY_REASONING, SUITES, capability_answer
from botpsy.worlds import DOMAINS, get_domain
from botpsy.worlds.kit import CAPABILITY_ASKED, CAPABILITY_QUESTIONS, SuiteDomain

CALENDAR_LINE = f"I can {SUITES['calendar'].capability}."


@pytest.mark.parametrize(
    "text",
    [
        "Hi! What can you do?",
        "What can you help me with?",
        "hey botpsy, what are you able to do?",
        "Good morning! How can you help me today?",
        "What are your capabilities",
        "what can I ask you?",
        "  WHAT ELSE CAN YOU DO ?? ",
        "help",
        *CAPABILITY_QUESTIONS,
    ],
)
def test_capability_questions_are_recognised(text):
    assert is_capability_question(text)


@pytest.mark.parametrize(
    "text",
    [
        "What can you do about my 3pm meeting?",  # a request: the model's
        "Help me move my meeting to Friday",
        "What did I do yesterday?",
        "Hi!",
        "Who are you?",
        "",
        "?",
        "Can you book flights?",  # answered by the model from its tools, yes or no
    ],
)
def test_requests_and_other_small_talk_are_not(text):
    assert not is_capability_question(text)


def test_every_suite_says_what_it_does_as_a_phrase_after_i_can():
    for s in SUITES.values():
        assert s.capability and s.capability == s.capability.strip()
        assert not s.capability.endswith(".") and s.capability[0].islower()


def test_the_answer_names_the_installed_suites_only_in_installed_order():
    assert capability_answer(SUITES["calendar"].tools) == CALENDAR_LINE
    both = capability_answer([*SUITES["email"].tools, *SUITES["calendar"].tools])
    assert both == f"I can:\n- {SUITES['email'].capability}\n- {SUITES['calendar'].capability}"
    every = capability_answer([t for s in SUITES.values() for t in s.tools])
    assert every.count("\n- ") == len(SUITES)


def _weather(state, city: str) -> str:
    """Look up the weather forecast.

    Args:
        city: the city.
    """
    return city


def test_no_answer_when_code_cannot_say_what_a_tool_does():
    outside = tool(name="weather")(_weather)
    assert capability_answer([*SUITES["calendar"].tools, outside]) is None
    assert capability_answer([]) is None


def test_the_agent_answers_without_a_model_step_and_the_next_turn_sees_the_answer(tmp_path):
    eng = ScriptedEngine(["ok\n</think>\n\nYou have nothing today."])
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys")
    trace = agent.send("Hi! What can you do?")
    assert trace.final_answer == CALENDAR_LINE and trace.stopped == "answer"
    assert eng.prompts == [] and trace.timings == []  # no model step
    assert [e.data for e in trace.events if e.kind == "capabilities"] == [{"text": CALENDAR_LINE}]
    assert sum(trace.generated_mask) == 0  # code's words: no gradient, never counted as generated
    text = eng.detokenize(trace.token_ids)
    assert text.endswith(
        f"<|im_start|>assistant\n<think>\n{CAPABILITY_REASONING}\n</think>\n\n{CALENDAR_LINE}<|im_end|>"
    )
    agent.send("What do I have today?")
    assert len(eng.prompts) == 1 and eng.prompts[0].startswith(text)  # one growing history
    assert agent.trace.final_answer == "You have nothing today."


def test_under_retrieval_the_answer_covers_every_installed_suite(tmp_path):
    agent = Agent(ScriptedEngine([]), Workspace(tmp_path), "sys", AgentConfig(tool_top_k=6))
    answer = agent.send("What can you do?").final_answer
    assert all(s.capability in answer for s in SUITES.values())


@pytest.mark.parametrize("why", ["an unknown tool", "switched off"])
def test_otherwise_the_model_answers(tmp_path, why):
    extra = [tool(name="weather")(_weather)] if why == "an unknown tool" else []
    cfg = AgentConfig(capabilities_by_code=why != "switched off")
    eng = ScriptedEngine(["ok\n</think>\n\nI can tell the weather."])
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"], extra_tools=extra), "sys", cfg)
    assert agent.send("What can you do?").final_answer == "I can tell the weather."
    assert len(eng.prompts) == 1


@pytest.mark.parametrize("name", DOMAINS)
def test_worlds_train_on_the_answer_the_runtime_gives(name):
    """Training conversations answer the question with the agent's own words for the world's tools."""
    world = get_domain(name)
    answers = {
        m.content
        for t in world.generate(200, seed=3, split="train")
        if t.user in CAPABILITY_ASKED  # the train split's own phrasing too (worlds.kit.TRAIN_PHRASINGS)
        for m in t.gold_messages()
        if m.role == "assistant"
    }
    assert answers == {capability_answer(world.tools)}


def test_a_suites_world_cannot_restate_its_capability():
    with pytest.raises(TypeError, match="capability"):

        class Restating(SuiteDomain):  # noqa: F841
            suite = SUITES["notes"]
            capability = "do anything"
