"""API-Bank's level-3 training steps and Schema-Guided Dialogue's train dialogues load into botpsy
conversations (`data.public_apibank`, `data.public_sgd`).

Every fixture is written here in the published layout (nothing is downloaded): API-Bank's
Alpaca-style step rows, where each row repeats the dialogue so far as ``API-Request: […]->result``
lines, and SGD's ``schema.json`` plus ``dialogues_NNN.json`` shards.
"""

from __future__ import annotations

import json

import pytest

from botpsy.data import public_sgd
from botpsy.data.public import load
from botpsy.protocol.messages import ToolCall

# ---- API-Bank ----------------------------------------------------------------------------------
SEARCHER = (
    '{"apiCode": "ToolSearcher", "description": "Searches for relevant tools in library based on the '
    'keywords.", "parameters": {"keywords": {"type": "str", "description": "The keyword to search for."}}}'
)
FOUND = (
    "{'name': 'ClinicFinder', 'description': 'API for finding clinics.', 'input_parameters': "
    "{'specialty': {'type': 'str', 'description': 'The specialty.'}, 'city': {'type': 'str', "
    "'description': 'The city.'}}, 'output_parameters': {'clinics': {'type': 'list', 'description': 'Clinics.'}}}"
)
USER = "User: Find a dermatologist in Boston.TIME: 2034-04-15 10:00:00\n"
SEARCH = "API-Request: [ToolSearcher(keywords='clinic finder')]->" + FOUND + "\n"
CALL = (
    "API-Request: [ClinicFinder(specialty='dermatology', city='Boston')]->{'clinics': ['Skin Care Boston']}\n"
)


def apibank_row(steps: str, output: str, final: bool) -> dict:
    ask = "Generate AI Response: " if final else "Generate API Request: "
    return {
        "instruction": "\nGenerate an API request in the format of [ApiName(key1='value1', ...)] ...\n",
        "input": SEARCHER + "\n" + USER + steps + ask,
        "output": output,
    }


STEP_ROW = apibank_row(SEARCH, "API-Request: [ClinicFinder(specialty='dermatology', city='Boston')]", False)
FINAL_ROW = apibank_row(SEARCH + CALL, "AI: Skin Care Boston treats skin conditions in Boston.", True)


def write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def quiet(*_):
    pass


def test_apibank_final_row_is_the_whole_dialogue_without_the_tool_search(tmp_path):
    res = load(write_json(tmp_path / "lv3-train.json", [STEP_ROW, FINAL_ROW]), log=quiet)
    assert res.shape == "apibank" and len(res.conversations) == 1 and res.skipped == 1
    assert "row 1:" in res.reasons[0] and "step of a dialogue" in res.reasons[0]
    msgs, tools = res.conversations[0]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[0].content == "Find a dermatologist in Boston."  # API-Bank's TIME suffix cut
    assert msgs[1].tool_calls == [ToolCall("ClinicFinder", {"specialty": "dermatology", "city": "Boston"})]
    assert json.loads(msgs[2].content) == {"clinics": ["Skin Care Boston"]} and msgs[2].name == "ClinicFinder"
    assert msgs[3].content == "Skin Care Boston treats skin conditions in Boston."
    # the searcher is gone; the tool it found is listed, with both arguments required
    assert [t["function"]["name"] for t in tools] == ["ClinicFinder"]
    params = tools[0]["function"]["parameters"]
    assert params["required"] == ["specialty", "city"] and params["properties"]["city"]["type"] == "string"


def apibank_bad_rows():
    unquoted = apibank_row(SEARCH + CALL.replace("'Boston'", "Boston"), FINAL_ROW["output"], True)
    unlisted = apibank_row(SEARCH + CALL.replace("[ClinicFinder(", "[BookClinic("), FINAL_ROW["output"], True)
    not_a_tool = apibank_row(SEARCH.replace(FOUND, "No tool found."), FINAL_ROW["output"], True)
    return [
        ("unquoted value", unquoted, "is not a literal"),
        ("tool the search did not return", unlisted, "not among the row's tools"),
        ("search result is not a tool", not_a_tool, "not a tool description"),
    ]


@pytest.mark.parametrize("what, bad, reason", apibank_bad_rows(), ids=[b[0] for b in apibank_bad_rows()])
def test_apibank_rows_that_do_not_fit_are_skipped_with_the_reason(tmp_path, what, bad, reason):
    res = load(write_json(tmp_path / "lv3-train.json", [FINAL_ROW, bad]), "apibank", log=quiet)
    assert len(res.conversations) == 1 and res.skipped == 1, what
    assert res.reasons[0].startswith("row 2:") and reason in res.reasons[0]


# ---- Schema-Guided Dialogue --------------------------------------------------------------------
SCHEMA = [
    {
        "service_name": "Restaurants_1",
        "description": "Find and reserve restaurants",
        "slots": [
            {
                "name": "city",
                "description": "City of the restaurant",
                "is_categorical": False,
                "possible_values": [],
            },
            {
                "name": "price_range",
                "description": "Price range",
                "is_categorical": True,
                "possible_values": ["cheap", "moderate"],
            },
            {
                "name": "date",
                "description": "Date of the booking",
                "is_categorical": False,
                "possible_values": [],
            },
        ],
        "intents": [
            {
                "name": "FindRestaurants",
                "description": "Find a restaurant",
                "required_slots": ["city"],
                "optional_slots": {"price_range": "dontcare"},
            },
            {
                "name": "ReserveRestaurant",
                "description": "Reserve a table",
                "required_slots": ["city"],
                "optional_slots": {"date": "2019-03-01"},
            },
        ],
    }
]


def sgd_turn(speaker, text, call=None, results=()):
    frame = {"service": "Restaurants_1", "actions": [], "slots": []}
    if call:
        frame |= {
            "service_call": {"method": call[0], "parameters": call[1]},
            "service_results": list(results),
        }
    return {"speaker": speaker, "utterance": text, "frames": [frame]}


def sgd_dialogue(n, call):
    return {
        "dialogue_id": f"1_{n:05d}",
        "services": ["Restaurants_1"],
        "turns": [
            sgd_turn("USER", "I want somewhere cheap to eat."),
            sgd_turn("SYSTEM", "Which city?"),
            sgd_turn("USER", "San Jose, please."),
            sgd_turn("SYSTEM", "Sakoon is a cheap place in San Jose.", call, [{"restaurant_name": "Sakoon"}]),
            sgd_turn("USER", "Thanks, that's all."),
            sgd_turn("SYSTEM", "Enjoy your meal!"),
        ],
    }


def test_sgd_shards_join_with_their_schema_and_become_calls_with_results(tmp_path):
    train = tmp_path / "sgd" / "train"
    schema = write_json(train / "schema.json", SCHEMA)
    find = ("FindRestaurants", {"city": "San Jose", "price_range": "cheap"})
    dated = ("ReserveRestaurant", {"city": "San Jose", "date": "2019-03-01"})
    shards = [
        write_json(train / "dialogues_001.json", [sgd_dialogue(0, find)]),
        write_json(train / "dialogues_002.json", [sgd_dialogue(1, dated)]),
    ]
    out = tmp_path / "sgd-train.jsonl"
    assert public_sgd.main(["--out", str(out), str(schema), *map(str, shards)]) == 0
    joined = [json.loads(line) for line in out.read_text().splitlines()]
    assert [d["dialogue_id"] for d in joined] == ["1_00000", "1_00001"] and joined[0]["schema"] == SCHEMA

    res = load(out, log=quiet)
    assert res.shape == "sgd" and len(res.conversations) == 1 and res.skipped == 1
    # a call in SGD's own 2019 calendar would contradict the runtime's resolved-dates line
    assert res.reasons[0].startswith("line 2:") and "2019-03-01" in res.reasons[0]
    msgs, tools = res.conversations[0]
    roles = [m.role for m in msgs]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert msgs[3].tool_calls == [ToolCall(*find)] and not msgs[3].content
    assert (
        json.loads(msgs[4].content) == [{"restaurant_name": "Sakoon"}] and msgs[4].name == "FindRestaurants"
    )
    assert msgs[5].content == "Sakoon is a cheap place in San Jose."
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    assert by_name["FindRestaurants"]["required"] == ["city"]
    assert by_name["FindRestaurants"]["properties"]["price_range"]["enum"] == ["cheap", "moderate"]
    assert "default" not in by_name["ReserveRestaurant"]["properties"]["date"]  # SGD's "today", 2019


def test_sgd_join_refuses_the_evaluation_splits(tmp_path, capsys):
    dev = tmp_path / "sgd" / "dev"
    schema = write_json(dev / "schema.json", SCHEMA)
    shard = write_json(dev / "dialogues_001.json", [])
    with pytest.raises(SystemExit) as e:
        public_sgd.main(["--out", str(tmp_path / "o.jsonl"), str(schema), str(shard)])
    assert e.value.code == 2 and "evaluation sets" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()
