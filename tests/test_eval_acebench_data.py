"""ACEBench data loading, and the tiny checkout the ACEBench tests write: every English category, in
ACEBench's file layout.

The items, answers and API seeds are invented here (no ACEBench item, no fetched data): a weather
function, a calendar range, a phone with two users and two shops, a travel desk with one flight.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from botpsy.eval import acebench_data as data

WEATHER = {
    "name": "weather_get",
    "description": "The forecast for a city.",
    "parameters": {
        "type": "dict",
        "properties": {
            "city": {"type": "string", "description": "City name."},
            "days": {"type": "integer", "minimum": 1, "maximum": 7, "description": "Days ahead, 1 to 7."},
            "units": {"type": "string", "enum": ["metric", "imperial"], "description": "Units."},
        },
        "required": ["city", "days"],
    },
}
REPORT = {
    "name": "report_build",
    "description": "A report over a date range with named sections.",
    "parameters": {
        "type": "object",
        "properties": {
            "range": {
                "type": "object",
                "properties": {"start": {"type": "string"}, "end": {"type": "string"}},
                "required": ["start", "end"],
            },
            "sections": {"type": "array", "items": {"type": "string"}, "description": "Section titles."},
            "draft": {"type": "boolean", "description": "Keep it a draft."},
        },
        "required": ["range"],
    },
}
FUNCS = [WEATHER, REPORT]
TIME = "The current time is 2024-05-01 09:00."


def _item(cid: str, question: str, functions: list[dict[str, Any]] = FUNCS, **extra: Any) -> dict[str, Any]:
    return {"id": cid, "question": question, "function": functions, "time": TIME, **extra}


PHONE_FUNCS = [
    {
        "name": n,
        "description": n.replace("_", " "),
        "parameters": {"type": "dict", "properties": p, "required": list(p)},
    }
    for n, p in [
        ("turn_on_wifi", {}),
        ("login_device", {}),
        (
            "send_message",
            {
                "sender_name": {"type": "string"},
                "receiver_name": {"type": "string"},
                "message": {"type": "string"},
            },
        ),
        ("delete_message", {"message_id": {"type": "integer"}}),
        ("get_earliest_message_id", {}),
        ("login_food_platform", {"username": {"type": "string"}, "password": {"type": "string"}}),
        (
            "add_food_delivery_order",
            {
                "username": {"type": "string"},
                "merchant_name": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object"}},
            },
        ),
        (
            "add_reminder",
            {"title": {"type": "string"}, "description": {"type": "string"}, "time": {"type": "string"}},
        ),
    ]
]

INBOX = {
    1: {"sender_id": "U1", "receiver_id": "U2", "message": "Lunch?", "time": "2024-05-02"},
    2: {"sender_id": "U2", "receiver_id": "U1", "message": "Sure.", "time": "2024-04-01"},
}
SEEDS = {
    "phone_platform/base_api.py": "class BaseApi:\n    def __init__(self):\n        self.wifi = False\n        self.logged_in = True\n",
    "phone_platform/message.py": (
        "class MessageApi:\n    def __init__(self):\n"
        "        self.user_list = {'Ann': {'user_id': 'U1'}, 'Bob': {'user_id': 'U2'}}\n"
        f"        self.inbox = {INBOX!r}\n        self.message_id_counter = 2\n        self.max_capacity = 2\n"
        "        self.helper = make_helper()  # not a literal: skipped\n"
    ),
    "phone_platform/reminder.py": (
        "class ReminderApi:\n    def __init__(self):\n        self.reminder_list = {}\n        self.reminder_id_counter = 0\n"
    ),
    "phone_platform/food_services.py": (
        "class FoodPlatform:\n    def __init__(self):\n"
        "        self.users = {'Ann': {'user_id': 'F1', 'password': 'pw1', 'balance': 50.0}}\n"
        "        self.merchant_list = {'Tea Shop': {'merchant_id': 'M1', 'menu': [{'product': 'Green Tea', 'price': 12.0}]}}\n"
        "        self.logged_in_users = []\n        self.orders = []\n"
    ),
    "travel.py": (
        "class Travel:\n    def __init__(self):\n"
        "        self.users = {'u1': {'user_name': 'Ann', 'password': 'pw1', 'cash_balance': 1000.0, "
        "'bank_balance': 5000.0, 'membership_level': 'silver'}}\n"
        "        self.flights = [{'flight_no': 'AB1', 'origin': 'Oslo', 'destination': 'Rome', "
        "'depart_time': '2024-07-20 08:00:00', 'arrival_time': '2024-07-20 11:00:00', 'status': 'available', "
        "'seats_available': 3, 'economy_price': 300, 'business_price': 900}]\n"
        "        self.reservations = []\n"
    ),
}

PHONE_END = {"sender_id": "U1", "receiver_id": "U2", "message": "On my way"}


def items() -> dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]:
    """{category: [(item, answer row)]} for every English category."""
    paris = {"weather_get": {"city": "Paris", "days": 3}}
    jan = {
        "report_build": {
            "range": {"start": "2024-01-01", "end": "2024-01-31"},
            "sections": ["Sales", "Costs"],
        }
    }
    out: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}

    def add(cat: str, item: dict[str, Any], truth: Any, **extra: Any) -> None:
        out.setdefault(cat, []).append((item, {"id": item["id"], "ground_truth": truth, **extra}))

    add(
        "normal_single_turn_single_function",
        _item("normal_single_turn_single_function_0", "user: Weather in Paris for 3 days?\n"),
        paris,
    )
    add(
        "normal_single_turn_parallel_function",
        _item(
            "normal_single_turn_parallel_function_0",
            "user: Weather for 3 days in Paris and 2 days in Rome.\n",
        ),
        {"weather_get_1": {"city": "Paris", "days": 3}, "weather_get_2": {"city": "Rome", "days": 2}},
    )
    q0 = "user: I need a report.\nsystem: Which dates?\nuser: January 2024, sections Sales and Costs.\n"
    add("normal_multi_turn_user_adjust", _item("normal_multi_turn_user_adjust_0_0", q0), jan)
    add(
        "normal_multi_turn_user_adjust",
        _item(
            "normal_multi_turn_user_adjust_0_1",
            q0 + "system: Done.\nuser: And the weather in Paris for 3 days.\n",
        ),
        paris,
    )
    add(
        "normal_multi_turn_user_switch",
        _item("normal_multi_turn_user_switch_0_0", "user: Weather in Paris for 3 days?\n"),
        paris,
    )
    for cat in ("normal_similar_api", "normal_atom_bool", "normal_atom_enum", "normal_atom_number"):
        add(
            cat,
            _item(f"{cat}_0", "user: Weather in Paris for 3 days, metric please.\n"),
            {"weather_get": {**paris["weather_get"], "units": "metric"}},
        )
    for cat in ("normal_atom_list", "normal_atom_object_deep", "normal_atom_object_short"):
        add(
            cat,
            _item(f"{cat}_0", "user: A report for January 2024 with Sales and Costs.\n"),
            [{"report_build": {"range": {"start": "2024-01-02", "end": "2024-01-31"}}}, jan],
        )
    pref = {
        "id": "normal_preference_0",
        "question": "user: Weather at home for 3 days.\n",
        "function": FUNCS,
        "profile": "Lives in Paris.",
    }
    add("normal_preference", pref, paris)
    add(
        "special_incomplete",
        _item("special_incomplete_0", "user: What will the weather be?"),
        {"weather_get": ["city", "days"]},
    )
    add(
        "special_error_param",
        _item("special_error_param_0", "user: Weather in Paris for -3 days?"),
        {"days": ["-3"]},
    )
    add(
        "special_irrelevant",
        _item("special_irrelevant_0", "user: Book me a taxi.", [WEATHER]),
        "Due to the limitations of the function, I cannot solve this problem.",
    )
    base = {
        "initial_config": {"BaseApi": {"wifi": False, "logged_in": True}},
        "path": [],
        "function": PHONE_FUNCS,
    }
    inbox_after = {"1": INBOX[1], "3": PHONE_END}
    add(
        "agent_multi_step",
        {
            **base,
            "id": "agent_multi_step_0",
            "question": "I am Ann (password pw1). Order one Green Tea from Tea Shop.",
            "involved_classes": ["BaseApi", "FoodPlatform"],
        },
        [
            {"BaseApi": {"wifi": True, "logged_in": True}},
            {
                "FoodPlatform": {
                    "users": {"Ann": {"user_id": "F1", "password": "pw1", "balance": 38.0}},
                    "logged_in_users": ["Ann"],
                    "orders": [
                        {
                            "user_name": "Ann",
                            "merchant_name": "Tea Shop",
                            "items": [{"product": "Green Tea", "quantity": 1, "price_per_unit": 12.0}],
                            "total_price": 12.0,
                        }
                    ],
                }
            },
        ],
        mile_stone=[
            "[turn_on_wifi()]",
            "[login_food_platform(username='Ann', password='pw1')]",
            "[add_food_delivery_order(username='Ann', merchant_name='Tea Shop', items=[{'product': 'Green Tea', 'quantity': 1}])]",
        ],
    )
    add(
        "agent_multi_turn",
        {
            **base,
            "id": "agent_multi_turn_0",
            "question": "You are Ann. Tell Bob 'On my way'. If the inbox is full, delete the oldest message.",
            "involved_classes": ["BaseApi", "MessageApi"],
        },
        [{"BaseApi": {"wifi": True, "logged_in": True}}, {"MessageApi": {"inbox": inbox_after}}],
        mile_stone=[
            [
                "[turn_on_wifi()]",
                "[get_earliest_message_id()]",
                "[delete_message(message_id=2)]",
                "[send_message(sender_name='Ann', receiver_name='Bob', message='On my way')]",
            ]
        ],
    )
    return out


def write(root: Path) -> Path:
    """The checkout under `root` (data_all/data_en and model_inference/…); returns `root`."""
    data = root / "data_all" / "data_en"
    (data / "possible_answer").mkdir(parents=True)
    for cat, rows in items().items():
        (data / f"data_{cat}.json").write_text("".join(json.dumps(i) + "\n" for i, _ in rows))
        (data / "possible_answer" / f"data_{cat}.json").write_text(
            "".join(json.dumps(a) + "\n" for _, a in rows)
        )
    scen = root / "model_inference" / "multi_turn" / "scenariosen"
    for rel, text in SEEDS.items():
        (scen / rel).parent.mkdir(parents=True, exist_ok=True)
        (scen / rel).write_text(text)
    return root


# ---- tests of the data layer -----------------------------------------------------------------------


@pytest.mark.parametrize("sub", ["", "data_all", "data_all/data_en"])
def test_resolve_data_accepts_the_root_data_all_or_data_en(tmp_path, sub):
    write(tmp_path)
    found, root = data.resolve_data(tmp_path / sub)
    assert found == tmp_path / "data_all" / "data_en" and root == tmp_path


def test_resolve_data_says_what_it_expected_and_where_to_get_it(tmp_path):
    with pytest.raises(
        ValueError, match="possible_answer.*git clone https://github.com/chenchen0103/ACEBench"
    ):
        data.resolve_data(tmp_path)


def test_items_carry_their_answer_by_id(tmp_path):
    d, _ = data.resolve_data(write(tmp_path))
    (it,) = data.load_category(d, "agent_multi_step")
    assert it["truth"][0] == {"BaseApi": {"wifi": True, "logged_in": True}} and len(it["mile_stone"]) == 3


def test_a_missing_answer_or_a_torn_line_is_a_clear_error(tmp_path):
    d, _ = data.resolve_data(write(tmp_path))
    (d / "possible_answer" / "data_special_incomplete.json").write_text("")
    with pytest.raises(ValueError, match="no answer for special_incomplete_0"):
        data.load_category(d, "special_incomplete")
    (d / "data_special_irrelevant.json").write_text('{"id": ')
    with pytest.raises(ValueError, match="not a JSON line"):
        data.load_category(d, "special_irrelevant")


def test_categories_expand_groups_and_reject_unknown_names():
    assert data.parse_categories("special,special_incomplete") == data.SPECIAL
    assert len(data.parse_categories("all")) == 17 and len(data.parse_categories("normal")) == 12
    with pytest.raises(ValueError, match="unknown ACEBench category 'normal_atom_date'"):
        data.parse_categories("normal_atom_date")


def test_sampling_keeps_whole_conversations_in_multi_turn_categories():
    rows = [{"id": f"normal_multi_turn_user_adjust_{c}_{t}"} for c in range(10) for t in range(3)]
    picked = data.sample_items(rows, "normal_multi_turn_user_adjust", 2)
    assert [r["id"] for r in picked] == [
        f"normal_multi_turn_user_adjust_{c}_{t}" for c in (0, 5) for t in range(3)
    ]
    flat = [{"id": f"normal_atom_bool_{i}"} for i in range(10)]
    assert [r["id"] for r in data.sample_items(flat, "normal_atom_bool", 5)] == [
        f"normal_atom_bool_{i}" for i in (0, 2, 4, 6, 8)
    ]


def test_functions_that_declare_arguments_keep_their_parameters():
    # ACEBench's atom categories declare their distractors' parameters under "arguments", and its
    # inference shows the model the raw list: a distractor read as parameterless invites `f()`.
    distractor = {
        "name": "pollen_alerts",
        "description": "Pollen alerts for a region.",
        "arguments": {
            "type": "object",
            "properties": {
                "region": {"type": "string"},
                "level": {"type": "string", "enum": ["low", "high"]},
            },
            "required": ["region", "absent"],
        },
        "results": {"type": "array"},
    }
    (w, d) = data.acebench_tools([WEATHER, distractor])
    assert d.parameters["required"] == ["region"]
    assert d.parameters["properties"]["level"]["enum"] == ["low", "high"]
    assert w.parameters["required"] == ["city", "days"]
    assert data.function_parameters({"name": "f", "arguments": "oops"}) == {}


def test_acebench_types_become_json_schema():
    (w, r) = data.acebench_tools(FUNCS)
    assert w.parameters["type"] == "object" and w.parameters["required"] == ["city", "days"]
    assert r.parameters["properties"]["range"]["type"] == "object"
    assert data.to_json_schema({"type": "float"}) == {"type": "number"}
    assert data.to_json_schema({"items": {"type": "string"}}) == {
        "type": "array",
        "items": {"type": "string"},
    }
    assert data.to_json_schema({"description": "d"}) == {"description": "d", "type": "string"}
    assert data.to_json_schema({"type": "list", "items": {"type": "dict"}}) == {
        "type": "array",
        "items": {"type": "object"},
    }
