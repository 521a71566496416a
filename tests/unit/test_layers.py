"""The shape of the code: one-way dependencies between the sub-packages, a pure core inside each, and nothing in
the library importing the server.

Order (each may import only from its own level and those left of it; `errors`, `limits`, `config` and `privacy`
(the gate every writer of session text calls) are the base):
    files <- index <- store <- recall <- identity <- importers <- sleep <- cortex, notes <- cli   (then server/)
"""

from __future__ import annotations

import ast
from pathlib import Path

import vault_cortex

PACKAGE = Path(vault_cortex.__file__).parent
BASE = {"errors": 0, "limits": 1, "config": 1, "clock": 1, "privacy": 1}
LEVELS = {"files": 2, "index": 3, "store": 4, "recall": 5, "identity": 6, "importers": 7, "sleep": 8, "cortex": 9,
          "notes": 9, "__init__": 9, "cli": 10}
# Pure core: values in, values out. No disk, clock, environment, network, database or model.
PURE = {"files.note", "files.frontmatter", "files.properties", "files.links", "files.chunk", "files.noise",
        "files.edit", "files.yamltext", "files.sections", "files.relink", "files.paths", "files.relations",
        "index.fts", "index.schema", "index.rows", "index.progress",
        "recall.rank", "recall.edges", "recall.nodes", "recall.pairs", "recall.note_links", "recall.graph",
        "recall.proximity", "recall.health", "recall.pack", "recall.company", "recall.question", "recall.supersession",
        "recall.signals", "recall.brief",
        "sleep.merge", "sleep.tiers", "sleep.dream", "sleep.agree", "sleep.distinct",
        "errors", "limits", "privacy"}
IMPURE = {"os", "sqlite3", "pathlib", "shutil", "tempfile", "socket", "subprocess", "time", "usearch",
          "onnxruntime", "tokenizers", "watchfiles", "litestar", "httpx", "urllib.request", "fcntl", "threading"}


def imports(path: Path) -> set[str]:
    """Every module a file imports, TYPE_CHECKING blocks included; `from pkg import mod` counts as pkg.mod."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            if node.module.startswith("vault_cortex"):
                out |= {f"{node.module}.{a.name}" for a in node.names
                        if (PACKAGE / Path(*node.module.split(".")[1:]) / a.name).with_suffix(".py").exists()
                        or (PACKAGE / Path(*node.module.split(".")[1:]) / a.name).is_dir()}
    return out


def modules() -> dict[str, Path]:
    """vault_cortex's modules by dotted name relative to the package ("files.note", "cortex")."""
    return {".".join(p.relative_to(PACKAGE).with_suffix("").parts): p for p in PACKAGE.rglob("*.py")}


def level(name: str) -> int:
    """A module's place in the order; a sub-package's modules share its level."""
    head = name.split(".")[0]
    return BASE[head] if head in BASE else LEVELS[head]


def test_every_module_has_a_place_in_the_order() -> None:
    unplaced = sorted(n for n in modules() if n.split(".")[0] not in BASE | LEVELS)
    assert not unplaced, f"{unplaced}: put each module in a sub-package (or add it to the order here, with a reason)"


def test_dependencies_point_one_way() -> None:
    """files <- index <- recall <- identity <- sleep <- cortex <- cli: an import that points back up fails."""
    wrong = []
    for name, path in sorted(modules().items()):
        for dep in imports(path):
            if dep == "vault_cortex" or not dep.startswith("vault_cortex."):
                continue
            target = dep.removeprefix("vault_cortex.")
            if level(target) > level(name) and not target.startswith(name.split(".")[0] + "."):
                wrong.append(f"vault_cortex.{name} imports {dep}")
    assert not wrong, "imports pointing back up the order:\n" + "\n".join(wrong)


def does_io(found: set[str]) -> set[str]:
    return {m for m in found if m in IMPURE or m.split(".")[0] in IMPURE}


def test_core_modules_are_pure() -> None:
    """A pure module imports no IO library, and no vault_cortex module that imports one itself."""
    found_modules = modules()
    adapters = {f"vault_cortex.{n}" for n, p in found_modules.items() if does_io(imports(p))}
    for name in sorted(PURE):
        assert name in found_modules, f"{name} is listed as pure but does not exist"
        found = imports(found_modules[name])
        bad = does_io(found) | (found & adapters)
        assert not bad, f"vault_cortex/{name.replace('.', '/')}.py is core and must not import {sorted(bad)}"


def test_each_sub_package_says_what_lives_there_and_what_it_may_import() -> None:
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "Lives here" in doc and "may import" in doc.lower(), f"{init.parent.name}/__init__.py: say what lives"


def test_the_library_never_imports_the_server() -> None:
    for path in PACKAGE.rglob("*.py"):
        bad = {m for m in imports(path) if m == "server" or m.startswith("server.")}
        assert not bad, f"{path.name} imports {sorted(bad)}: dependencies point server → vault_cortex only"


def test_no_grab_bag_modules() -> None:
    for name in ("utils", "helpers", "misc", "common"):
        assert not list(PACKAGE.rglob(f"{name}.py"))


def test_public_surface_matches_all() -> None:
    exported = {n for n in dir(vault_cortex) if not n.startswith("_")}
    # Sub-modules become attributes once imported; `template` (package data mapped from vault_template/) only
    # after init_vault ran in the same test session, so it is told apart by being a module, not by a file.
    modules = {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if p.is_dir()}
    modules |= {n for n in exported if isinstance(getattr(vault_cortex, n), type(vault_cortex))}
    assert set(vault_cortex.__all__) - {"__version__"} == exported - modules


def test_one_module_is_the_command() -> None:
    """`vault-cortex` has one entry point (server/cli.py:main); the library's command modules are groups it adds."""
    server_cli = PACKAGE.parent / "server" / "cli.py"
    mains = [n for n, p in modules().items()
             if any(isinstance(f, ast.FunctionDef) and f.name == "main" for f in ast.parse(p.read_text("utf-8")).body)]
    assert not mains, f"{mains}: the library defines no command entry point; server/cli.py:main is the one"
    assert any(isinstance(f, ast.FunctionDef) and f.name == "main" for f in ast.parse(server_cli.read_text()).body)
    assert "SUBCOMMANDS_ATTR" not in "".join(p.read_text("utf-8") for p in modules().values())


def test_every_sub_package_is_installed() -> None:
    """A sub-package missing from pyproject's package list works in a checkout and is absent from a wheel."""
    import tomllib

    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text("utf-8"))
    listed = set(pyproject["tool"]["setuptools"]["packages"])
    found = {"vault_cortex" + "".join(f".{p}" for p in init.parent.relative_to(PACKAGE).parts)
             for init in PACKAGE.rglob("__init__.py")}
    assert found - listed == set(), f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"


def handed_the_facade(source: str, facade: str = "Cortex") -> list[str]:
    """Where the facade class hands a feature itself: `self`, a lambda reading `self`, or one of its own methods
    (`self.log`) as an argument of a call, by line."""
    cls = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == facade)
    methods = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)
               and not any(isinstance(d, ast.Name) and d.id == "property" for d in f.decorator_list)}
    found = []
    for call in (n for n in ast.walk(cls) if isinstance(n, ast.Call)):
        for arg in [*call.args, *(kw.value for kw in call.keywords)]:
            is_self = isinstance(arg, ast.Name) and arg.id == "self"
            reads_self = isinstance(arg, ast.Lambda) and any(
                isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(arg))
            own_method = isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) \
                and arg.value.id == "self" and arg.attr in methods
            if is_self or reads_self or own_method:
                found.append(f"line {call.lineno}: {ast.unparse(call)[:100]}")
                break
    return found


def test_no_feature_receives_the_cortex() -> None:
    """Calls go one way at run time too: the Cortex hands each part it builds and each feature it calls the parts
    they use (the index, the vault, the recaller), never itself, a lambda reading it or one of its methods; and no
    module below it names the Cortex in a signature (a Protocol would hide the call back up from the imports)."""
    wrong = handed_the_facade((PACKAGE / "cortex.py").read_text("utf-8"))
    assert not wrong, "the Cortex hands itself to a part or feature:\n" + "\n".join(wrong)
    below = [(n, p) for n, p in modules().items() if level(n) < LEVELS["cortex"]]
    named = [f"vault_cortex/{n.replace('.', '/')}.py:{a.lineno}" for n, p in below
             for a in ast.walk(ast.parse(p.read_text("utf-8"))) if isinstance(a, ast.arg) and a.annotation
             and "Cortex" in ast.unparse(a.annotation)]
    assert not named, "a feature below the facade takes the Cortex:\n" + "\n".join(named)


def test_the_facade_check_sees_a_feature_handed_the_cortex() -> None:
    """The check above, on the shapes it must catch and the ones it must let through."""
    source = '''
class Cortex:
    def __init__(self, root):
        self.index = Index(root)
        self.recaller = Recaller(self.index, lambda: self.settings, log=self.log)
    def log(self, event): ...
    @property
    def settings(self): ...
    def context(self):
        return build_context(self, self.recaller, self.settings)
'''
    found = handed_the_facade(source)
    assert [line.split(":")[0] for line in sorted(found)] == ["line 10", "line 5"]
    assert any("lambda: self.settings" in f for f in found) and any("build_context(self," in f for f in found)
