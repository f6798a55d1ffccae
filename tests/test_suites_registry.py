"""The tool registry: what `botpsy tools list --json` prints, and invariants every suite must keep."""

import json

import pytest

from botpsy.tools.registry import SUITES, USER_SIDE, all_tools, suite_of, tools_json, tools_table


def test_at_least_13_suites_and_60_labelled_tools():
    doc = json.loads(json.dumps(tools_json()))
    assistant = [t for t in doc["tools"] if t["side"] == "assistant"]
    assert len({t["suite"] for t in assistant}) >= 13
    assert len(assistant) >= 60
    for t in doc["tools"]:
        assert set(t["labels"]) == {"mutates", "egress", "sensitive"}
        assert all(isinstance(v, bool) for v in t["labels"].values())
        assert t["parameters"]["type"] == "object" and t["name"] and t["suite"]


def test_names_are_unique_across_suites_and_user_side():
    names = [t.name for t in all_tools()] + [t.name for ts in USER_SIDE.values() for t in ts]
    assert len(names) == len(set(names))


def test_every_parameter_is_described_briefly():
    # Every schema token is prompt time on a 135M model: keep descriptions short.
    for t in all_tools():
        assert 0 < len(t.description) <= 90, t.name
        for name, p in t.parameters["properties"].items():
            assert 0 < len(p["description"]) <= 80, f"{t.name}.{name}"


@pytest.mark.parametrize(
    "name",
    [
        "transfer_money",
        "pay_bill",
        "place_order",
        "book_flight",
        "book_hotel",
        "cancel_booking",
        "change_flight",
    ],
)
def test_money_movement_is_sensitive_and_egress(name):
    t = next(t for t in all_tools() if t.name == name)
    assert t.labels.mutates and t.labels.egress and t.labels.sensitive


@pytest.mark.parametrize("name", ["send_email", "reply_to_email", "forward_email", "send_message"])
def test_sending_is_egress(name):
    t = next(t for t in all_tools() if t.name == name)
    assert t.labels.egress and t.labels.mutates


@pytest.mark.parametrize("name", ["search_web", "open_page", "read_file", "find_contacts", "list_emails"])
def test_reads_stay_on_device(name):
    t = next(t for t in all_tools() if t.name == name)
    assert t.labels.as_dict() == {"mutates": False, "egress": False, "sensitive": False}


@pytest.mark.parametrize(
    "name",
    [
        "delete_event",
        "delete_email",
        "delete_contact",
        "delete_file",
        "delete_note",
        "delete_conversation",
        "unlock_doors",
    ],
)
def test_deletion_and_unlocking_are_sensitive(name):
    assert next(t for t in all_tools() if t.name == name).labels.sensitive


def test_suite_of_and_table():
    assert suite_of("send_email").name == "email"
    with pytest.raises(KeyError):
        suite_of("no_such_tool")
    rows = {r[1]: r for r in tools_table()}
    assert len(rows) == len(all_tools())
    assert rows["search_web"][:3] == ("web", "search_web", "read")
    assert rows["transfer_money"][2] == "mutates,egress,sensitive"
    assert {s.store for s in SUITES.values()} == {"ics", "maildir", "sqlite", "folder"}


def test_support_suites_carry_written_policies():
    assert "30 days" in SUITES["retail"].policy and "explicit yes" in SUITES["retail"].policy
    assert "phone" in SUITES["telecom"].policy and SUITES["telecom"].policy != SUITES["retail"].policy
