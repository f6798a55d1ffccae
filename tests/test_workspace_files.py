"""The files sandbox on disk: traversal and absolute paths refused, links never followed out,
a link planted between load and save cannot redirect a write, binary files move intact."""

import json
import os

import pytest

from botpsy.stores.common import StoreError
from botpsy.stores.folder import FolderStore
from botpsy.stores.workspace import Workspace
from botpsy.tools.files import write_file


@pytest.fixture
def sandbox(tmp_path):
    root = tmp_path / "ws" / "files"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.txt").write_text("alpha")
    (root / "photo.jpg").write_bytes(b"\xff\xd8\xff" + bytes(range(256)) * 4)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    return Workspace(tmp_path / "ws", suites=["files"]), root, outside


def call(ws, name, **args):
    return json.loads(ws.call(name, args))


def test_read_write_move_delete_on_disk(sandbox):
    ws, root, _ = sandbox
    assert call(ws, "read_file", path="docs/a.txt") == {"path": "docs/a.txt", "text": "alpha"}
    assert call(ws, "write_file", path="docs/b.txt", text="beta")["written"] == "docs/b.txt"
    assert (root / "docs" / "b.txt").read_text() == "beta"
    assert call(ws, "make_folder", path="archive/2026")["created"] == "archive/2026"
    assert (root / "archive" / "2026").is_dir()
    call(ws, "move_file", path="docs", new_path="archive/2026/docs")
    assert (root / "archive" / "2026" / "docs" / "b.txt").read_text() == "beta" and not (
        root / "docs"
    ).exists()
    jpg = (root / "photo.jpg").read_bytes()
    assert "binary" in call(ws, "read_file", path="photo.jpg")["error"]
    call(ws, "move_file", path="photo.jpg", new_path="archive/photo.jpg")
    assert (root / "archive" / "photo.jpg").read_bytes() == jpg  # renamed, never rewritten
    call(ws, "delete_file", path="archive/2026/docs/a.txt")
    assert not (root / "archive" / "2026" / "docs" / "a.txt").exists()
    assert "not empty" in call(ws, "delete_file", path="archive/2026")["error"]
    assert not [p for p in root.rglob("*.tmp")]


@pytest.mark.parametrize(
    "bad",
    [
        "../outside/secret.txt",
        "/etc/passwd",
        "docs/../../outside/secret.txt",
        "~/.bashrc",
        "C:\\\\Windows",
        "docs/\x00.txt",
    ],
)
def test_traversal_and_absolute_paths_are_refused(sandbox, bad):
    ws, _, outside = sandbox
    for name, args in [
        ("read_file", {"path": bad}),
        ("write_file", {"path": bad, "text": "pwned"}),
        ("delete_file", {"path": bad}),
        ("move_file", {"path": "docs/a.txt", "new_path": bad}),
    ]:
        assert "error" in call(ws, name, **args)
    assert (outside / "secret.txt").read_text() == "top secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlink_leading_out_is_listed_but_never_followed(sandbox):
    ws, root, outside = sandbox
    os.symlink(outside, root / "escape")
    os.symlink(outside / "secret.txt", root / "docs" / "secret-link.txt")
    listing = call(ws, "list_files")["entries"]
    assert {"path": "escape", "type": "link", "target": str(outside)} in listing
    for name, args in [
        ("read_file", {"path": "escape/secret.txt"}),
        ("read_file", {"path": "docs/secret-link.txt"}),
        ("write_file", {"path": "escape/new.txt", "text": "x"}),
        ("list_files", {"folder": "escape"}),
        ("write_file", {"path": "docs/secret-link.txt", "text": "x", "overwrite": True}),
    ]:
        assert "link" in call(ws, name, **args)["error"], name
    assert "secret" not in json.dumps(
        call(ws, "search_files", query="secret")
    )  # contents behind links are not indexed
    call(ws, "delete_file", path="escape")  # removing the link leaves its target alone
    assert not (root / "escape").is_symlink() and (outside / "secret.txt").read_text() == "top secret"


def test_link_planted_between_load_and_save_cannot_redirect_a_write(sandbox):
    _, root, outside = sandbox
    store = FolderStore(root)
    with pytest.raises(StoreError, match="link"):
        with store.transaction(write=True) as state:
            write_file(state, path="docs/planted.txt", text="pwned")
            # An attacker swaps the real folder for a link while the tool runs.
            os.rename(root / "docs", root / "docs-real")
            os.symlink(outside, root / "docs")
    assert not (outside / "planted.txt").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_sandbox_root_must_be_a_real_folder(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, tmp_path / "files")
    ws = Workspace(tmp_path, suites=["files"])
    assert "not a folder (or is a link)" in call(ws, "list_files")["error"]
