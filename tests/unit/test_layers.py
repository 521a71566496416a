"""The shape of the code: a pure core, adapters around it, and nothing in the library importing the server."""

from __future__ import annotations

import ast
from pathlib import Path

import vault_cortex

PACKAGE = Path(vault_cortex.__file__).parent
# Pure core: values in, values out. No disk, clock, environment, network, database or model.
CORE = {"files/note", "files/frontmatter", "files/links", "files/chunk", "files/noise", "recall/rank", "recall/graph",
        "recall/pack", "files/edit", "files/yamltext", "errors", "sleep/merge", "sleep/tiers", "sleep/dream"}
IMPURE = {"os", "sqlite3", "pathlib", "shutil", "tempfile", "socket", "subprocess", "time", "usearch",
          "onnxruntime", "tokenizers", "watchfiles", "litestar", "httpx", "urllib.request"}
ADAPTERS = {"files.vault", "index.db", "index.vectors", "index.embed", "index.sync", "index.activity",
            "recall.pipeline", "identity.context", "cortex", "cli.main", "cli.more", "index.doctor", "notes",
            "sleep.journal", "sleep.consolidate", "sleep.cycle", "sleep.transcript", "identity.habits",
            "identity.resonance", "identity.curiosity"}


def imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_core_modules_are_pure() -> None:
    for name in sorted(CORE):
        path = PACKAGE / f"{name}.py"
        if not path.exists():
            continue
        found = imports(path)
        bad = {m for m in found if m in IMPURE or m.split(".")[0] in IMPURE}
        bad |= {m for m in found if m.startswith("vault_cortex.") and m.removeprefix("vault_cortex.") in ADAPTERS}
        assert not bad, f"vault_cortex/{name}.py is core and must not import {sorted(bad)}"


def test_the_library_never_imports_the_server() -> None:
    for path in PACKAGE.rglob("*.py"):
        bad = {m for m in imports(path) if m == "server" or m.startswith("server.")}
        assert not bad, f"{path.name} imports {sorted(bad)}: dependencies point server → vault_cortex only"


def test_no_grab_bag_modules() -> None:
    for name in ("utils", "helpers", "misc", "common"):
        assert not (PACKAGE / f"{name}.py").exists()


def test_public_surface_matches_all() -> None:
    exported = {n for n in dir(vault_cortex) if not n.startswith("_")}
    # Sub-modules become attributes once imported; `template` (package data mapped from vault_template/) only
    # after init_vault ran in the same test session, so it is told apart by being a module, not by a file.
    modules = {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if p.is_dir()}
    modules |= {n for n in exported if isinstance(getattr(vault_cortex, n), type(vault_cortex))}
    assert set(vault_cortex.__all__) - {"__version__"} == exported - modules
