"""Undo cases the gold tasks do not reach: tools no gold task uses, and the files suite's moves,
overwrites and binary files, on a seeded workspace (`seed_workspace`)."""

from __future__ import annotations

import json

import pytest

from botpsy.stores.undo import UndoError, undo
from botpsy.stores.workspace import Workspace, seed_workspace
from test_undo import parsed, raw


def first_id(ws: Workspace, suite: str, field: str) -> str:
    return getattr(ws.read(suite), field)[0].id


def _setup_cart(ws):
    product = next(p for p in ws.read("shopping").products if p.stock > 0).id
    assert "error" not in json.loads(ws.call("add_to_cart", {"product_id": product, "quantity": 1}))
    return {"product_id": product}


def _flight_change(ws):
    travel = ws.read("travel")
    for b in travel.bookings:
        if b.kind == "flight" and b.status == "confirmed":
            old = next(f for f in travel.flights if f.id == b.item_id)
            for f in travel.flights:
                if (
                    (f.origin, f.destination) == (old.origin, old.destination)
                    and f.id != old.id
                    and f.seats >= b.units
                ):
                    return {"booking_id": b.id, "new_flight_id": f.id}
    pytest.skip("the seeded travel state has no changeable flight booking")


# name -> (suite, arguments from the seeded workspace, undoable)
EXTRA = {
    "forward_email": (
        "email",
        lambda ws: {"email_id": first_id(ws, "email", "mails"), "to": ["x@y.zz"]},
        False,
    ),
    "remove_from_cart": ("shopping", _setup_cart, True),
    "book_hotel": (
        "travel",
        lambda ws: {
            "hotel_id": ws.read("travel").hotels[0].id,
            "check_in": "2026-12-10",
            "check_out": "2026-12-12",
        },
        False,
    ),
    "change_flight": ("travel", _flight_change, False),
    "transfer_to_human": ("retail", lambda ws: {"summary": "wants a refund"}, True),
    "hand_off_to_technician": ("telecom", lambda ws: {"summary": "no signal"}, True),
}


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_tools_no_gold_task_uses(tmp_path, name):
    suite, make_args, undoable = EXTRA[name]
    ws = seed_workspace(tmp_path / "ws", seed=4, suites=[suite])
    arguments = make_args(ws)
    before = parsed(ws, suite)
    body = json.loads(ws.call(name, arguments))
    assert "error" not in body, body
    assert parsed(ws, suite) != before
    if not undoable:
        with pytest.raises(UndoError, match="sent data off the device"):
            undo(ws)
        return
    undo(ws)
    assert parsed(ws, suite) == before


@pytest.fixture
def files_ws(tmp_path):
    ws = seed_workspace(tmp_path / "ws", seed=5, suites=["files"])
    (ws.files_path / "photo.bin").write_bytes(bytes(range(256)) * 4)
    return ws


@pytest.mark.parametrize(
    "name,arguments",
    [
        ("write_file", {"path": "new-notes.txt", "text": "hello"}),
        ("move_file", {"path": "photo.bin", "new_path": "archive/photo.bin"}),
        ("make_folder", {"path": "Projects/2027"}),
    ],
)
def test_files_undo_restores_bytes(files_ws, name, arguments):
    ws = files_ws
    before_raw, before = raw(ws, "files"), parsed(ws, "files")
    if name == "move_file":
        ws.call("make_folder", {"path": "archive"})
        before_raw, before = raw(ws, "files"), parsed(ws, "files")
    body = json.loads(ws.call(name, arguments))
    assert "error" not in body, body
    undo(ws)
    assert raw(ws, "files") == before_raw and parsed(ws, "files") == before


def test_an_overwritten_text_file_comes_back_byte_for_byte(files_ws):
    ws = files_ws
    path = next(p for p, e in ws.read("files").entries.items() if e.kind == "file" and e.content)
    before = raw(ws, "files")
    assert "error" not in json.loads(
        ws.call("write_file", {"path": path, "text": "replaced", "overwrite": True})
    )
    undo(ws)
    assert raw(ws, "files") == before


def test_a_deleted_binary_file_cannot_be_undone_and_says_so(files_ws):
    ws = files_ws
    assert "error" not in json.loads(ws.call("delete_file", {"path": "photo.bin"}))
    rec = ws.control.journal.read().records[-1]
    assert rec["undo"] == {"possible": False, "why_not": rec["undo"]["why_not"]}
    assert "photo.bin" in rec["undo"]["why_not"] and "bytes were not kept" in rec["undo"]["why_not"]
    with pytest.raises(UndoError, match="photo.bin is a binary or large file"):
        undo(ws)
