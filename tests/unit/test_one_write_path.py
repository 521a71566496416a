"""One write path: nothing but `store/change.py` calls the atomic write or takes the vault's write lock.

Every writer of a note (remember, link, edit, move, archive, importers, capture, sleep, habits, resonance,
curiosities) goes through `Vault.change()`, which holds the lock, checks ETags, logs the edit events and
indexes what it touched; a module that wrote around it would skip all four.
"""

from __future__ import annotations

import ast
from pathlib import Path

import vault_cortex

PACKAGE = Path(vault_cortex.__file__).parent
SERVER = PACKAGE.parent / "server"
DOOR = PACKAGE / "store" / "change.py"


def _sources() -> dict[Path, ast.Module]:
    files = [*PACKAGE.rglob("*.py"), *SERVER.rglob("*.py")]
    return {p: ast.parse(p.read_text(encoding="utf-8")) for p in files}


def test_only_the_write_path_calls_the_atomic_write() -> None:
    users = set()
    for path, tree in _sources().items():
        for node in ast.walk(tree):
            named = (isinstance(node, ast.Name) and node.id == "atomic_write") or (
                isinstance(node, ast.Attribute) and node.attr == "atomic_write") or (
                isinstance(node, ast.alias) and node.name == "atomic_write")
            if named:
                users.add(path.relative_to(PACKAGE.parent).as_posix())
    assert users == {"vault_cortex/store/change.py"}, users  # files/vault.py defines it


def test_only_the_index_and_the_write_path_take_the_write_lock() -> None:
    takers = set()
    for path, tree in _sources().items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "writing"
                    and not ast.unparse(node.func.value).endswith("lock")):  # the live graph's read/write lock
                takers.add(path.relative_to(PACKAGE.parent).as_posix())
    assert takers <= {"vault_cortex/store/change.py", "vault_cortex/index/upkeep.py"}, takers
    assert "vault_cortex/store/change.py" in takers


def test_the_write_path_holds_the_lock_around_every_write() -> None:
    """Inside store/change.py the atomic write is only reached from a `Change`, which `Vault.change` makes under
    the lock: no module-level function or `Vault` method calls it directly."""
    tree = ast.parse(DOOR.read_text(encoding="utf-8"))
    holders = set()
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "atomic_write":
                holders.add(cls.name)
    assert holders == {"Change"}
    change = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "change")
    assert "self.index.writing()" in ast.unparse(change)
