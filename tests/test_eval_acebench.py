"""`eval acebench` end to end on a checkout the tests write: the oracle scores 100% through botpsy's
agent, parser and ACEBench's rules; scripted models that err are caught; the simulated APIs hold
ACEBench's preconditions; the CLI prints one JSON line and one-line errors."""

from __future__ import annotations

import json

import pytest

from botpsy import cli
from botpsy.engine.oracle import ScriptedEngine
from botpsy.eval import acebench as ace
from botpsy.eval.acebench_apis import Phone, execute, load_seeds
from botpsy.eval.acebench_data import CATEGORIES, resolve_data
from botpsy.eval.acebench_oracle import call_text, oracle_engine_for, parse_call_text
from botpsy.eval.acebench_travel import Travel
from botpsy.eval.acebench_user import FINISH, ScriptedUser
from botpsy.protocol.messages import ToolCall
from test_eval_acebench_data import SEEDS, items, write


@pytest.fixture
def checkout(tmp_path):
    return resolve_data(write(tmp_path))


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
def test_the_oracle_scores_100_percent_on_every_category(checkout, fmt):
    d, root = checkout
    rep = ace.evaluate_acebench(
        d,
        root,
        CATEGORIES,
        "oracle",
        oracle_engine_for(fmt),
        ace.AceConfig(grounding_guard=False),
        user=ScriptedUser(),
    )
    assert not rep.not_run and set(rep.categories) == set(CATEGORIES)
    assert [r.id for r in rep.results if not r.ok] == []
    s = rep.to_dict()
    assert s["overall"] == 1.0 and s["overall_official"] == pytest.approx(
        1.0, abs=2e-4
    )  # ACEBench's weights sum to 1.0001
    assert s["categories"]["normal_multi_turn_user_adjust"] == {
        **s["categories"]["normal_multi_turn_user_adjust"],
        "conversations": 1,
        "total": 2,
    }
    assert s["categories"]["agent_multi_turn"]["process_accuracy"] == 1.0


def _scripted(category, item, text):
    return ScriptedEngine([text])


def _one(checkout, category, text, **kw):
    d, root = checkout
    item = items()[category][0][0]
    truth = dict(items()[category][0][1])
    item = {**item, "truth": truth["ground_truth"], "mile_stone": truth.get("mile_stone", [])}
    return ace.run_single(category, item, ScriptedEngine([text]), "scripted", ace.AceConfig(**kw))


CALL = "<tool_call>\n<function=weather_get>\n<parameter=city>\n{city}\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"


@pytest.mark.parametrize(
    "text, ok, reason",
    [
        ("ok\n</think>\n\n" + CALL.format(city="Paris"), True, ""),
        ("ok\n</think>\n\n" + CALL.format(city="Rome"), False, "value_error"),
        (
            "ok\n</think>\n\n" + CALL.replace("weather_get", "report_build").format(city="Paris"),
            False,
            "function_mismatch",
        ),
        ("ok\n</think>\n\nThe weather in Paris will be fine.", False, "wrong_functions_number"),
        (
            "ok\n</think>\n\n<tool_call>\n<function=weather_get>\n<parameter=city>\nPar",
            False,
            "wrong_functions_number",
        ),
    ],
)
def test_a_model_step_is_judged_by_acebench_rules(checkout, text, ok, reason):
    r = _one(checkout, "normal_single_turn_single_function", text, grounding_guard=False)
    assert (r.ok, r.reason) == (ok, reason)


def test_the_items_stated_time_is_the_agents_clock_for_relative_dates(checkout):
    d, root = checkout
    item = dict(items()["normal_single_turn_single_function"][0][0])
    item.update(question="user: Weather in Paris tomorrow, for 3 days.", time="Today is 2020-08-11, Tuesday.")
    engine = ScriptedEngine(["ok\n</think>\n\n" + CALL.format(city="Paris")])
    ace.run_single(
        "normal_single_turn_single_function", {**item, "truth": [{}]}, engine, "m", ace.AceConfig()
    )
    prompt = engine.prompts[-1]
    assert "tomorrow = Wednesday 2020-08-12" in prompt
    # without a stated time the agent has no clock: "tomorrow" stays unresolved
    engine = ScriptedEngine(["ok\n</think>\n\n" + CALL.format(city="Paris")])
    ace.run_single(
        "normal_single_turn_single_function",
        {**item, "time": "", "truth": [{}]},
        engine,
        "m",
        ace.AceConfig(),
    )
    assert "(resolved:" not in engine.prompts[-1]


TRANSCRIPT = (
    "user: I need the weather.\n"
    "system: Which city, and for how many days?\n"
    "user: Paris, 3 days.\n"
    "system: [weather_get(city='Paris', days=3)]\n"
    "system: Sunny all three days.\n"
    "- Highs: 24C\n"
    "user: And Rome?\n"
)


def test_an_items_transcript_becomes_turns_and_its_last_user_message():
    turns, last = ace.transcript_turns(TRANSCRIPT, {"weather_get"})
    assert last == "And Rome?"
    assert [(m.role, m.content) for m in turns] == [
        ("user", "I need the weather."),
        ("assistant", "Which city, and for how many days?"),
        ("user", "Paris, 3 days."),
        ("assistant", ""),
        ("tool", "Sunny all three days.\n- Highs: 24C"),
        ("assistant", "Sunny all three days.\n- Highs: 24C"),
    ]
    assert turns[3].tool_calls == [ToolCall("weather_get", {"city": "Paris", "days": 3})]
    # a call list to a function the item lacks is the assistant's words, not a call
    turns, _ = ace.transcript_turns(TRANSCRIPT, {"report_build"})
    assert [m.role for m in turns] == ["user", "assistant", "user", "assistant"]
    assert turns[-1].content.startswith("[weather_get(city='Paris', days=3)]\nSunny")
    # a lone user line has no earlier turns
    assert ace.transcript_turns("user: Weather in Paris?\n", set()) == ([], "Weather in Paris?")
    with pytest.raises(ValueError, match="must end with the user's message"):
        ace.transcript_turns("user: Hi\nsystem: Hello.\n", set())


def test_a_multi_turn_item_reaches_the_model_as_turns(checkout):
    """The model reads the earlier turns as the runtime renders a conversation (its own earlier
    call and result included), not as a block of text inside one user message; only the item's
    own step is judged and counted."""
    item = dict(items()["normal_single_turn_single_function"][0][0])
    item.update(question=TRANSCRIPT, time="")
    engine = ScriptedEngine(["ok\n</think>\n\n" + CALL.format(city="Rome")])
    truth = [{"weather_get": {"city": ["Rome"], "days": [3]}}]
    r = ace.run_single(
        "normal_multi_turn_user_adjust", {**item, "truth": truth}, engine, "m", ace.AceConfig()
    )
    assert r.ok, r.detail
    prompt = engine.prompts[-1]
    assert "The conversation so far" not in prompt
    assert "<|im_start|>user\nParis, 3 days.<|im_end|>" in prompt
    assert "<function=weather_get>\n<parameter=city>\nParis\n</parameter>" in prompt
    assert "<tool_response>\nSunny all three days." in prompt
    assert prompt.endswith("<|im_start|>user\nAnd Rome?<|im_end|>\n<|im_start|>assistant\n<think>\n")
    assert r.assistant_turns == 1 and r.steps == 1


def test_the_grounding_guard_holds_an_invented_number_and_keeps_the_model_alone_verdict(checkout):
    invented = CALL.format(city="Paris").replace("\n3\n", "\n4999\n")  # the question says 3 days
    item = items()["normal_single_turn_single_function"][0][0]
    assert "4999" not in item["question"] + item["time"]
    r = _one(checkout, "normal_single_turn_single_function", "ok\n</think>\n\n" + invented)
    assert r.detail.get("held") and not r.ok and r.detail["model_ok"]  # numbers: type-checked only


def test_special_items_read_the_reply_and_calls_as_acebench_text(checkout):
    good = "ok\n</think>\n\nMissing necessary parameters (city, days) for the api (weather_get)"
    assert _one(checkout, "special_incomplete", good).ok
    called = _one(
        checkout, "special_incomplete", "ok\n</think>\n\n" + CALL.format(city="Paris"), grounding_guard=False
    )
    assert not called.ok and called.detail["output"] == "[weather_get(city='Paris', days=3)]"
    assert (
        called.detail["model_called"]
        and not _one(checkout, "special_incomplete", good).detail["model_called"]
    )


@pytest.mark.parametrize(
    "category, text, form",
    [
        # the grounding guard holds a call whose required values nobody gave: "Missing …"
        (
            "special_incomplete",
            'ok\n</think>\n\n<tool_call>\n{"name": "weather_get", "arguments": {"city": "", "days": 47}}\n</tool_call>',
            "Missing necessary parameters (city, days) for the api (weather_get)",
        ),
        # the limits guard holds the user's -3 (days: at least 1): "There is incorrect value …"
        (
            "special_error_param",
            "ok\n</think>\n\n" + CALL.format(city="Paris").replace("\n3\n", "\n-3\n"),
            "There is incorrect value (-3) for the parameters (days) in the conversation history.",
        ),
        # both at once: the user's wrong value first, then what nobody gave
        (
            "special_error_param",
            'ok\n</think>\n\n<tool_call>\n{"name": "weather_get", "arguments": {"city": "", "days": -3}}\n</tool_call>',
            "There is incorrect value (-3) for the parameters (days) in the conversation history. "
            "Missing necessary parameters (city) for the api (weather_get)",
        ),
        # a decline as botpsy's training data reasons one: "… the limitations of the function …"
        (
            "special_irrelevant",
            "No listed tool fits this request.\n</think>\n\nSorry, I can't do that: none of my tools serves this request.",
            "Due to the limitations of the function, I cannot solve this problem.",
        ),
    ],
)
def test_the_agents_outcomes_are_written_in_acebench_reply_forms(checkout, category, text, form):
    r = _one(checkout, category, text)
    assert r.ok and r.detail["form"] and r.detail["output"] == form
    assert not r.detail["words_ok"]  # the agent's own words would not pass ACEBench's phrase test


def test_an_answer_in_the_models_words_gets_no_reply_form(checkout):
    r = _one(checkout, "special_incomplete", "Which city?\n</think>\n\nWhich city and how many days?")
    assert not r.ok and not r.detail["form"] and r.detail["output"] == "Which city and how many days?"
    # a call with a wrong value of the model's own is not the user's incorrect value
    r = _one(
        checkout,
        "special_error_param",
        "ok\n</think>\n\n" + CALL.format(city="Paris").replace("\n3\n", "\n9\n"),
    )
    assert not r.ok and not r.detail["form"]


def test_special_categories_count_the_items_the_model_declined_without_a_call(checkout):
    d, root = checkout
    own_words = "ok\n</think>\n\nSorry, none of my tools can book a taxi."
    rep = ace.evaluate_acebench(
        d, root, ["special_irrelevant"], "m", lambda c, i: ScriptedEngine([own_words])
    )
    cat = rep.categories["special_irrelevant"]
    assert cat["accuracy"] == 0.0 and cat["model_no_call"] == 1.0  # declined, but not in ACEBench's words


def test_a_dead_backend_fails_the_item_with_its_reason(checkout):
    d, root = checkout
    rep = ace.evaluate_acebench(d, root, ["special_irrelevant"], "dead", lambda c, i: ScriptedEngine([None]))
    (r,) = rep.results
    assert not r.ok and r.error and r.reason.startswith("error:")


def test_agent_categories_are_reported_not_run_without_seeds_or_a_user(checkout, tmp_path):
    d, _ = checkout
    rep = ace.evaluate_acebench(
        d, None, ["agent_multi_step", "special_irrelevant"], "oracle", oracle_engine_for()
    )
    assert "model_inference" in rep.not_run["agent_multi_step"] and "agent_multi_step" not in rep.categories
    d, root = checkout
    rep = ace.evaluate_acebench(d, root, ["agent_multi_turn"], "m", oracle_engine_for())
    assert "--user-model" in rep.not_run["agent_multi_turn"] and rep.to_dict()["n"] == 0


def test_an_agent_that_skips_the_wifi_step_fails_the_end_state(checkout):
    d, root = checkout
    item = items()["agent_multi_step"][0][0]
    row = items()["agent_multi_step"][0][1]
    item = {**item, "truth": row["ground_truth"], "mile_stone": row["mile_stone"]}
    login = "<tool_call>\n<function=login_food_platform>\n<parameter=username>\nAnn\n</parameter>\n<parameter=password>\npw1\n</parameter>\n</function>\n</tool_call>"
    eng = ScriptedEngine(["a\n</think>\n\n" + login, "b\n</think>\n\nI could not log in."])
    r = ace.run_agent(
        "agent_multi_step", item, eng, "m", ace.AceConfig(grounding_guard=False), load_seeds(root)
    )
    # ACEBench's in-order search: the first milestone (turn_on_wifi) never comes, and looking for it
    # uses up every later call, so the process score is 0, not 1/3.
    assert not r.ok and r.detail["process"] == 0.0
    assert r.detail["calls"] == ["[login_food_platform(username='Ann', password='pw1')]"]


def test_load_seeds_reads_literals_only(tmp_path):
    seeds = load_seeds(write(tmp_path))
    assert seeds["MessageApi"]["max_capacity"] == 2 and "helper" not in seeds["MessageApi"]
    assert seeds["Travel"]["flights"][0]["flight_no"] == "AB1"
    (tmp_path / "model_inference/multi_turn/scenariosen/travel.py").unlink()
    with pytest.raises(FileNotFoundError, match="repository root"):
        load_seeds(tmp_path)


def _phone(tmp_path, involved=("BaseApi", "MessageApi", "FoodPlatform"), **base):
    return Phone(
        load_seeds(write(tmp_path)), list(involved), {"BaseApi": {"wifi": False, "logged_in": True, **base}}
    )


def test_phone_preconditions_and_capacity(tmp_path):
    p = _phone(tmp_path)
    send = {"sender_name": "Ann", "receiver_name": "Bob", "message": "hi"}
    assert "Wi-Fi is off" in execute(p, "send_message", send)
    execute(p, "turn_on_wifi", {})
    assert "full" in execute(p, "send_message", send)  # two messages, capacity two
    assert json.loads(execute(p, "get_earliest_message_id", {}))["message_id"] == 2
    execute(p, "delete_message", {"message_id": 2})
    assert json.loads(execute(p, "send_message", send))["status"] is True
    assert list(p.inbox) == [1, 3] and "time" not in p.inbox[3]
    assert execute(p, "get_latest_message_id", {}).startswith(
        "Error during execution"
    )  # no time on a sent message
    assert "not logged in" in execute(
        p, "add_food_delivery_order", {"username": "Ann", "merchant_name": "Tea Shop", "items": []}
    )
    assert "Error during execution" in execute(
        p, "add_reminder", {"title": "t", "description": "d", "time": "x"}
    )


def test_food_orders_charge_the_menu_price_and_refuse_overdrafts(tmp_path):
    p = _phone(tmp_path, wifi=True)
    assert "Wrong password" in execute(p, "login_food_platform", {"username": "Ann", "password": "nope"})
    execute(p, "login_food_platform", {"username": "Ann", "password": "pw1"})
    order = {
        "username": "Ann",
        "merchant_name": "Tea Shop",
        "items": [{"product": "Green Tea", "quantity": 4}],
    }
    assert json.loads(execute(p, "add_food_delivery_order", order))["status"] is True
    assert p.accounts["Ann"]["balance"] == 2.0 and p.orders[0]["total_price"] == 48.0
    assert "Insufficient balance" in execute(p, "add_food_delivery_order", order)
    assert execute(p, "check_balance", {"user_name": "Ann"}) == "2.0"


def test_travel_booking_fees_changes_and_cancellation(tmp_path):
    t = Travel(load_seeds(write(tmp_path)), ["Travel"], {})
    out = execute(
        t,
        "reserve_flight",
        {
            "user_id": "u1",
            "password": "pw1",
            "flight_no": "AB1",
            "cabin": "Economy Class",
            "payment_method": "bank",
            "baggage_count": 3,
        },
    )
    assert "res_1" in out and t.users["u1"]["bank_balance"] == 5000.0 - 300 - 50  # silver: 2 bags free
    assert execute(
        t,
        "reserve_flight",
        {
            "user_id": "u1",
            "password": "x",
            "flight_no": "AB1",
            "cabin": "Economy Class",
            "payment_method": "bank",
            "baggage_count": 0,
        },
    ).startswith("Error")
    execute(t, "modify_flight", {"user_id": "u1", "reservation_id": "res_1", "new_cabin": "Business Class"})
    assert t.users["u1"]["bank_balance"] == 4650.0 - 600
    execute(
        t, "cancel_reservation", {"user_id": "u1", "reservation_id": "res_1", "reason": "change of plans"}
    )
    assert (
        t.users["u1"]["cash_balance"] == 1000.0 + 900 and len(t.reservations) == 1
    )  # kept on file, as in ACEBench
    assert execute(t, "turn_on_wifi", {}).startswith("Error during execution")  # not a travel API
    assert (
        execute(
            t,
            "find_transfer_flights",
            {"origin_city": "Oslo", "transfer_city": "Rome", "destination_city": "Nice"},
        )
        == "No connecting flights match."
    )
    t.flights.append(
        {
            **t.flights[0],
            "flight_no": "CD2",
            "origin": "Rome",
            "destination": "Nice",
            "depart_time": "2024-07-20 12:00:00",
        }
    )
    assert "'second_leg': {'flight_no': 'CD2'" in execute(
        t,
        "find_transfer_flights",
        {"origin_city": "Oslo", "transfer_city": "Rome", "destination_city": "Nice"},
    )


@pytest.mark.parametrize(
    "text, calls",
    [
        ("[turn_on_wifi()]", [("turn_on_wifi", {})]),
        ("[delete_message(message_id=3)]", [("delete_message", {"message_id": 3})]),
        (
            "[add_food_delivery_order(username='Eve', merchant_name='Domino's', items=[{'product': 'Pizza', 'quantity': 1}])]",
            [
                (
                    "add_food_delivery_order",
                    {
                        "username": "Eve",
                        "merchant_name": "Domino's",
                        "items": [{"product": "Pizza", "quantity": 1}],
                    },
                )
            ],
        ),
        ("[a(x='1, y=2'), b(n=2)]", [("a", {"x": "1, y=2"}), ("b", {"n": 2})]),
    ],
)
def test_milestone_text_round_trip(text, calls):
    parsed = parse_call_text(text)
    assert [(c.name, c.arguments) for c in parsed] == calls
    if "Domino" not in text:
        assert call_text(parsed) == text


def test_scripted_user_ends_the_conversation():
    u = ScriptedUser()
    assert u.start("Do it.") == "Do it." and u.reply("Done.") == FINISH


def test_cli_oracle_json_and_report_files(tmp_path, capsys):
    root = write(tmp_path / "ace")
    out = tmp_path / "out"
    rc = cli.main(
        ["eval", "acebench", "--data", str(root), "--backend", "oracle", "--out", str(out), "--json"]
    )
    d = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (
        rc == 0
        and d["overall"] == 1.0
        and d["n"] == 18
        and d["known_unpassable"] == []
        and d["passable_accuracy"] == 1.0
    )
    md = (out / "acebench-oracle.md").read_text()
    assert "| special_incomplete | 1 | 100.0% |" in md and "Weather" not in md  # ids and figures only


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--data", "/nonexistent/ace"], "git clone https://github.com/chenchen0103/ACEBench"),
        (["--categories", "normal_atom_date"], "unknown ACEBench category"),
        (["--user-model", "localhost:8080"], "OpenAI-compatible URL"),
    ],
)
def test_cli_bad_input_is_one_clear_line(tmp_path, capsys, argv, message):
    root = write(tmp_path / "ace")
    args = ["eval", "acebench", "--data", str(root), "--backend", "oracle", *argv]
    rc = cli.main(args)
    err = capsys.readouterr().err
    assert rc != 0 and message in " ".join(err.split()) and "Traceback" not in err


def test_seed_files_are_written_as_acebench_lays_them_out():
    assert set(SEEDS) == {
        "phone_platform/base_api.py",
        "phone_platform/message.py",
        "phone_platform/reminder.py",
        "phone_platform/food_services.py",
        "travel.py",
    }


class _UserServer:
    """An OpenAI-compatible /chat/completions on localhost that answers from a script."""

    def __init__(self, replies):
        import http.server
        import threading

        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                seen.append(body)
                text = replies.pop(0) if replies else FINISH
                out = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()


def test_multi_turn_runs_with_an_llm_user_behind_an_openai_endpoint(checkout):
    from botpsy.eval.acebench_user import ChatUser

    d, root = checkout
    server = _UserServer(
        ["<think>plan</think>Please tell Bob 'On my way'; delete the oldest message if needed."]
    )
    try:
        rep = ace.evaluate_acebench(
            d,
            root,
            ["agent_multi_turn"],
            "oracle",
            oracle_engine_for(),
            ace.AceConfig(grounding_guard=False),
            user=ChatUser(server.url, "sim"),
        )
    finally:
        server.close()
    assert rep.results[0].ok and rep.categories["agent_multi_turn"]["accuracy"] == 1.0
    first, second = server.seen
    assert first["model"] == "sim" and "Tell Bob 'On my way'" in first["messages"][0]["content"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["messages"][2]["content"].startswith("Please tell Bob")  # its own reasoning dropped


def test_an_unreachable_user_simulator_fails_the_item_with_its_reason(checkout):
    from botpsy.eval.acebench_user import ChatUser

    d, root = checkout
    rep = ace.evaluate_acebench(
        d,
        root,
        ["agent_multi_turn"],
        "oracle",
        oracle_engine_for(),
        user=ChatUser("http://127.0.0.1:9/v1", timeout_s=2),
    )
    (r,) = rep.results
    assert not r.ok and r.error and "user simulator" in r.detail["message"]
