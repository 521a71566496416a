"""Nobody outside the graph's own modules reads a private field of a `Graph` or of its parts: they read its
accessors, so the graph's inside can change without its readers."""

from __future__ import annotations

import ast
from pathlib import Path

import server
import vault_cortex

PACKAGE = Path(vault_cortex.__file__).parent
SERVER = Path(server.__file__).parent
OWNERS = {PACKAGE / "recall" / name for name in ("graph.py", "note_links.py", "pairs.py")}
GRAPH_TYPES = {"Graph", "Nodes", "NoteLinks", "PairSlots"}


def _is_private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def _names_graph(node: ast.expr, bound: set[str]) -> bool:
    """Whether an expression is, by its name, a graph: `graph`, `g`, `self.graph`, `cx.graph()`, `live_graph`, or a
    name annotated with a graph type."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id == "g" or "graph" in node.id.lower() or node.id in bound
    if isinstance(node, ast.Attribute):
        return "graph" in node.attr.lower()
    return False


def _annotated_graphs(tree: ast.AST) -> set[str]:
    """Names annotated (as an argument or a variable) with one of the graph's types."""
    found: set[str] = set()
    for node in ast.walk(tree):
        annotation, name = None, None
        if isinstance(node, ast.arg):
            annotation, name = node.annotation, node.arg
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            annotation, name = node.annotation, node.target.id
        if annotation is not None and name is not None and GRAPH_TYPES & {
                n.id if isinstance(n, ast.Name) else getattr(n, "value", "") for n in ast.walk(annotation)}:
            found.add(name)
    return found


def private_graph_reads(source: str) -> list[str]:
    """`graph._x`-style reads in a module's source, as `line: code`."""
    tree = ast.parse(source)
    bound = _annotated_graphs(tree)
    hits = [node for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and _is_private(node.attr) and _names_graph(node.value, bound)]
    return [f"{node.lineno}: {ast.unparse(node)}" for node in sorted(hits, key=lambda n: (n.lineno, n.col_offset))]


def test_the_rule_catches_private_reads_of_a_graph() -> None:
    code = ("def f(graph, g, other: Graph, cx):\n"
            "    return graph._id, g._w, other._notes, cx.graph()._prior, cx.live.graph._by_id, graph.names\n")
    assert [r.split(": ", 1)[1] for r in private_graph_reads(code)] == [
        "graph._id", "g._w", "other._notes", "cx.graph()._prior", "cx.live.graph._by_id"]
    assert private_graph_reads("def f(cx):\n    return cx._live, graph.__class__, self._graph_cache\n") == []


def test_no_module_outside_the_graph_reads_its_private_fields() -> None:
    found = []
    for path in sorted([*PACKAGE.rglob("*.py"), *SERVER.rglob("*.py")]):
        if path in OWNERS:
            continue
        found += [f"{path.relative_to(PACKAGE.parent)}:{hit}" for hit in private_graph_reads(path.read_text("utf-8"))]
    assert not found, "private fields of the graph read outside recall/graph.py, note_links.py, pairs.py " \
                      "(add an accessor to Graph):\n" + "\n".join(found)
