"""Issue 13: a write costs what it changes. Random sequences of operations (create, edit, rename, delete, link,
attachments) go through the one-file sync path (`sync_paths`, API writes) and the incremental full sync; the
index they leave must equal a rebuild from scratch: every table of `IndexDB.snapshot()` and every vector."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from fakes import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_cortex.cortex import Cortex
from vault_cortex.files.links import file_key, target_key, target_names
from vault_cortex.files.vault import content_hash, init_vault
from vault_cortex.index.db import IndexDB
from vault_cortex.recall.request import RecallRequest

FOLDERS = ["", "a/", "a/b/", "c/"]
NAMES = ["Alpha", "alpha", "Beta", "Gamma", "Über"]
TARGETS = ["Alpha", "ALPHA", "a/Alpha", "Beta", "beta.md", "./Gamma", "../Beta", "b/Gamma", "Über", "über",
           "pic.png", "Nope", "..", "", "c/Alpha"]
EMBEDDER = FakeEmbedder()

paths = st.builds(lambda f, n: f"{f}{n}.md", st.sampled_from(FOLDERS), st.sampled_from(NAMES))
bodies = st.lists(st.sampled_from(TARGETS), max_size=4).map(
    lambda ts: "".join(f"Text about [[{t}]] and more.\n" if t else "See [[#Top]].\n" for t in ts))
ops = st.one_of(
    st.tuples(st.just("write"), paths, bodies, st.booleans()),  # create or edit; via the API or a save
    st.tuples(st.just("rename"), paths, paths),
    st.tuples(st.just("delete"), paths),
    st.tuples(st.just("link"), paths, st.sampled_from(TARGETS)),
    st.tuples(st.just("attach"), st.sampled_from(["pic.png", "a/pic.png"]), st.booleans()),  # add or remove
    st.tuples(st.just("full"),),
)


def _note(path: str, body: str) -> str:
    stem = path.rsplit("/", 1)[-1][:-3]
    return f"---\naliases: [{stem} alias]\n---\n# Top\n\n{body}"


def _vault(root: Path, notes: dict[str, str]) -> Path:
    """A vault holding these notes (path -> body, each with the frontmatter of `_note`)."""
    (root / ".cortex").mkdir(parents=True)
    for path, body in notes.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(_note(path, body))
    return root


def _apply(cx: Cortex, op: tuple[object, ...]) -> None:
    root = cx.root
    kind = op[0]
    if kind == "write":
        _, path, body, api = op
        assert isinstance(path, str) and isinstance(body, str)
        if api:
            current = cx.vault.read_bytes(path) if (root / path).exists() else None
            cx.write_note(path, _note(path, body), None if current is None else content_hash(current))
            return
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(_note(path, body))
        cx.sync_paths([path])
    elif kind == "rename":
        _, old, new = op
        assert isinstance(old, str) and isinstance(new, str)
        if not (root / old).exists() or (root / new).exists():
            return
        (root / new).parent.mkdir(parents=True, exist_ok=True)
        os.rename(root / old, root / new)
        cx.sync_paths([old, new])
    elif kind == "delete":
        _, path = op
        assert isinstance(path, str)
        if (root / path).exists():
            (root / path).unlink()
            cx.sync_paths([path])
    elif kind == "link":
        _, path, target = op
        assert isinstance(path, str) and isinstance(target, str)
        if (root / path).exists():
            with open(root / path, "a", encoding="utf-8") as f:
                f.write(f"\nAlso [[{target}]].\n")
            cx.sync_paths([path])
    elif kind == "attach":
        _, path, add = op
        assert isinstance(path, str)
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        if add:
            (root / path).write_bytes(b"\x89PNG")
        elif (root / path).exists():
            (root / path).unlink()
        cx.sync()  # the watcher syncs the whole vault for a change that is not a note
    else:
        cx.sync()


def _vectors(cx: Cortex) -> dict[tuple[str, int], np.ndarray]:
    rows = cx.db.conn.execute("SELECT c.id, n.path, c.ord FROM chunks c JOIN notes n ON n.id = c.note_id").fetchall()
    got = cx.vectors.get([r[0] for r in rows])
    return {(p, o): got[i] for i, p, o in rows if i in got}


def _snapshot(db: IndexDB) -> dict[str, object]:
    return {k: v for k, v in db.snapshot().items() if k not in ("access", "co_retrieval", "co_queries", "touches")}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, min_size=1, max_size=12))
def test_the_incremental_path_leaves_the_index_a_rebuild_makes(sequence: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        _vault(root, {"Alpha.md": "Start [[Beta]].\n", "a/Beta.md": "Back to [[Alpha]] and [[pic.png]].\n"})
        with Cortex.open(root, embedder=EMBEDDER) as cx:
            cx.sync()
            for op in sequence:
                _apply(cx, op)
            incremental, vectors = _snapshot(cx.db), _vectors(cx)
            chunk_ids = {r[0] for r in cx.db.conn.execute("SELECT id FROM chunks")}
            assert cx.vectors.keys() == chunk_ids  # no vector left behind, none missing
            assert cx.db.note_count() == cx.db.conn.execute("SELECT count(*) FROM notes").fetchone()[0]
        with Cortex(root, cx.settings, EMBEDDER, index_dir=Path(tmp) / "rebuilt") as fresh:
            fresh.sync()
            assert incremental == _snapshot(fresh.db)
            rebuilt = _vectors(fresh)
            assert vectors.keys() == rebuilt.keys()
            for key, vec in rebuilt.items():
                assert np.allclose(vectors[key], vec, atol=1e-3), key


def test_target_names_are_the_file_names_a_link_can_reach() -> None:
    assert target_names("a/Alpha") == ("alpha.md", "alpha")
    assert target_names(" ../Beta.MD ") == ("beta.md",)
    assert target_names("..") is None
    assert target_names("") is None


segments = st.sampled_from(["Alpha", "alpha", "ALPHA.md", "Über", "über.MD", "pic.png", "a", ".", "..", "", " x ",
                            "b.md.md", "Ǆ", "ǆ"])


@given(st.lists(segments, min_size=1, max_size=3).map("/".join),
       st.sampled_from(["alpha.md", "alpha", "über.md", "pic.png", "x.md", "b.md.md", "b.md", "ǆ.md", "a"]))
def test_the_indexed_link_name_finds_every_link_that_can_reach_a_file(target: str, name: str) -> None:
    """Issue 13: the one-file path finds the links a file added or removed can re-resolve by the indexed
    `links.name` instead of a LIKE scan over every link; no link that can reach the file may be missed. (An
    empty target, `[[#Heading]]`, reaches its own note only: it is found as a link of the note written.)"""
    names = target_names(target)
    if target.strip() and (names is None or name in names):
        key = target_key(target)
        assert key is None or key == file_key(name), (target, name, key)


_KILLED_WRITER = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from fakes import FakeEmbedder
from vault_cortex.cortex import Cortex
cx = Cortex.open({root!r}, embedder=FakeEmbedder())
cx.write_note("Written.md", "# Written\\n\\nA capacitor bank for the pump, written just before the kill.\\n", None)
os.unlink(os.path.join({root!r}, "a/Beta.md"))
cx.sync_paths(["a/Beta.md"])
assert cx.vectors.dirty
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_write_does_not_rewrite_the_vector_file_and_a_kill_before_the_save_is_repaired(tmp_path: Path) -> None:
    """Issue 13: a write leaves the whole vector file alone (the cache and SQLite are the truth); a process
    killed before it saved leaves a stale file that the next sync brings back in line with a rebuild."""
    import signal
    import subprocess
    import sys

    root = tmp_path / "vault"
    _vault(root, {"Alpha.md": "Start [[Beta]].\n", "a/Beta.md": "Back to [[Alpha]].\n"})
    with Cortex.open(root, embedder=EMBEDDER) as cx:
        cx.sync()
        stamp = cx.vectors.stamp()
        cx.write_note("Other.md", "# Other\n\nWritten through the API.\n", None)
        assert cx.vectors.stamp() == stamp  # not rewritten by the write
        assert cx.vectors.dirty
    with Cortex.open(root, embedder=EMBEDDER) as cx:  # close saved it
        assert cx.vectors.stamp() != stamp and len(cx.vectors) == cx.db.counts()["chunks"]
        stale = cx.vectors.keys()

    tests = str(Path(__file__).parents[1])
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER.format(tests=tests, root=str(root))],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with Cortex.open(root, embedder=EMBEDDER) as cx:
        assert cx.vectors.keys() == stale  # the file this index last saved: without the write, with the delete
        assert "Written.md" in cx.db.note_paths()
        cx.sync()
        assert cx.vectors.keys() == {r[0] for r in cx.db.conn.execute("SELECT id FROM chunks")}
        assert cx.recall(RecallRequest(query="capacitor bank pump", k=1)).hits[0].path == "Written.md"
        incremental, vectors = _snapshot(cx.db), _vectors(cx)
    with Cortex(root, cx.settings, EMBEDDER, index_dir=tmp_path / "rebuilt") as fresh:
        fresh.sync()
        assert incremental == _snapshot(fresh.db)
        rebuilt = _vectors(fresh)
        assert vectors.keys() == rebuilt.keys()
        assert all(np.allclose(vectors[k], v, atol=1e-3) for k, v in rebuilt.items())


def test_the_one_file_path_never_walks_the_vault_nor_passes_over_every_link_or_vector(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13: remember / PUT / a watcher event for a note look at that note only: no walk of the vault, no
    pass over every link, no reconcile over every chunk id, no rewrite of the whole vector file."""
    import vault_cortex.index.sync as sync_module
    from vault_cortex.index.vectors import Vectors

    root = tmp_path / "vault"
    _vault(root, {"Alpha.md": "Start [[Beta]] and [[pic.png]].\n"})
    (root / "pic.png").write_bytes(b"\x89PNG")
    with Cortex.open(root, embedder=EMBEDDER) as cx:
        cx.sync()

        def forbidden(*args: object, **kwargs: object) -> None:
            raise AssertionError("a whole-vault pass on the one-file path")

        monkeypatch.setattr(sync_module, "walk", forbidden)
        monkeypatch.setattr(sync_module, "reconcile_vectors", forbidden)
        monkeypatch.setattr(IndexDB, "resolve_links", forbidden)
        monkeypatch.setattr(Vectors, "save", forbidden)
        cx.write_note("a/Beta.md", _note("a/Beta.md", "Back to [[Alpha]] and [[pic.png]].\n"), None)
        os.rename(root / "a/Beta.md", root / "Beta.md")
        cx.sync_paths(["a/Beta.md", "Beta.md"])
        links = {(ln.src, ln.target): ln.dst for ln in cx.db.links()}
        assert links == {("Alpha.md", "Beta"): "Beta.md", ("Alpha.md", "pic.png"): "pic.png",
                         ("Beta.md", "Alpha"): "Alpha.md", ("Beta.md", "pic.png"): "pic.png"}
        (root / "Beta.md").unlink()
        cx.sync_paths(["Beta.md"])
        assert cx.db.links(src="Alpha.md")[0].dst is None
        monkeypatch.undo()


def test_a_sync_with_nothing_to_do_reads_no_vector_and_builds_no_graph(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13: a no-change `vault-cortex sync` at 100k notes must take seconds, not minutes: with the vector
    file the one this index saved and no note changed since, a full sync neither reads it nor checks it chunk by
    chunk, and no sync builds the note graph (the server warms it after its syncs, a CLI never needs it). A write
    after the save makes the next full sync reconcile again."""
    import vault_cortex.index.sync as sync_module

    root = tmp_path / "vault"
    _vault(root, {"Alpha.md": "Start [[Beta]].\n", "Beta.md": "Back to [[Alpha]].\n"})
    with Cortex.open(root, embedder=EMBEDDER) as cx:
        cx.sync()
        assert cx.recaller.live.graph is None
    reconciled: list[int] = []
    original = sync_module.reconcile_vectors

    def counting(*args: object, **kwargs: object) -> int:
        reconciled.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sync_module, "reconcile_vectors", counting)
    with Cortex.open(root, embedder=EMBEDDER) as cx:
        report = cx.sync()
        assert report.unchanged == 2 and not reconciled
        assert not cx.vectors.loaded and cx.recaller.live.graph is None
        cx.write_note("Gamma.md", "# Gamma\n\nA third note, about the pump's capacitor.\n", None)
    with Cortex.open(root, embedder=EMBEDDER) as cx:  # close saved the vectors with the write: still current
        cx.sync()
        assert not reconciled and not cx.vectors.loaded
        vectors_file = root / ".cortex/index/vectors.usearch"
        saved = vectors_file.read_bytes()
        cx.write_note("Delta.md", "# Delta\n\nA fourth note, about the pump's relay.\n", None)
        cx.vectors.dirty = False  # as if killed before the save: the file lacks the write
    vectors_file.write_bytes(saved)
    with Cortex.open(root, embedder=EMBEDDER) as cx:  # (a kill after a save is test_a_write_does_not_rewrite…)
        cx.sync()
        assert reconciled  # not the file this index saved last: checked, and the missing vector added
        assert cx.vectors.keys() == {r[0] for r in cx.db.conn.execute("SELECT id FROM chunks")}
        assert cx.recall(RecallRequest(query="pump relay", k=1)).hits[0].path == "Delta.md"


def test_a_sync_of_1200_changed_notes_naming_1200_targets_resolves_their_links(tmp_path: Path) -> None:
    """A defect found by the 100k bench: the links of the notes a sync wrote are resolved against the files of
    the names they give, narrowed with one `LIKE` per name OR-ed together; past 1,000 names SQLite refused the
    statement (expression tree too large) and the sync failed. The watcher now syncs up to 2,000 paths by path,
    and a full sync of a git pull does the same resolution."""
    root = tmp_path / "vault"
    (root / ".cortex").mkdir(parents=True)
    (root / "Hub.md").write_text("# Hub\n")
    (root / "pic.png").write_bytes(b"\x89PNG")
    with Cortex.open(root, embedder=EMBEDDER) as cx:
        cx.sync()
        (root / "batch").mkdir()
        for i in range(600):
            (root / f"batch/Log {i}.md").write_text(f"# Log {i}\n\nSee [[Target {i}]], [[Hub]] and [[pic.png]].\n")
        cx.sync()  # a full sync after a burst (a git pull)
        paths = []
        for i in range(600, 1200):
            (root / f"batch/Log {i}.md").write_text(f"# Log {i}\n\nSee [[Target {i}]] and [[Hub]].\n")
            paths.append(f"batch/Log {i}.md")
        cx.sync_paths(paths)  # a watcher batch of 600 paths
        links = cx.db.links()
        assert len(links) == 3 * 600 + 2 * 600
        assert {ln.dst for ln in links if ln.target == "Hub"} == {"Hub.md"}
        assert {ln.dst for ln in links if ln.target == "pic.png"} == {"pic.png"}
        assert not [ln for ln in links if ln.target.startswith("Target") and ln.dst is not None]


def test_the_note_count_is_kept_by_the_writes_and_counted_once_for_an_older_index(tmp_path: Path) -> None:
    """Issue 13: a sync's report counted every note (`count(*)`, 2 ms a write at 100k notes); the count is now
    kept by triggers on the notes table. An index made before them gets it counted once, at open."""
    root = tmp_path / "vault"
    _vault(root, {"Alpha.md": "Start [[Beta]].\n", "a/Beta.md": "Back to [[Alpha]].\n"})
    with Cortex.open(root, embedder=EMBEDDER) as cx:
        assert cx.sync().notes == 2
        (root / "Gamma.md").write_text("New.\n")
        assert cx.sync_paths(["Gamma.md"]).notes == 3
        (root / "Alpha.md").unlink()
        assert cx.sync_paths(["Alpha.md"]).notes == 2
        with cx.db.write():
            cx.db.conn.execute("DROP TRIGGER notes_count_insert")
            cx.db.conn.execute("DROP TRIGGER notes_count_delete")
            cx.db.conn.execute("DELETE FROM meta WHERE key = 'note_count'")
            cx.db.delete_note("Gamma.md")  # as an older version would, without the triggers
    with Cortex.open(root, embedder=EMBEDDER) as cx:
        assert cx.db.note_count() == 1
        assert cx.sync().notes == 2  # Gamma indexed again, counted by the trigger


def test_a_same_size_rewrite_with_its_old_mtime_is_found_by_sync_full(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """`cp -p`, `rsync -t` and tar restore a file's time: a same-size rewrite then looks untouched to a stat;
    `vault-cortex sync --full` reads and hashes every note and re-indexes it."""
    from server.cli import main

    root = tmp_path / "vault"
    init_vault(root)
    note = root / "long_term" / "Pump.md"
    note.write_text("The pump runs at dawn.\n", encoding="utf-8")
    os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns - 3600 * 10**9))  # an hour-old copy
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
    st = note.stat()
    note.write_text("The fan runs at dusk!.\n", encoding="utf-8")  # same size
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert note.stat().st_size == st.st_size
    with Cortex.open(root, embedder=embedder) as cx:
        assert cx.sync().updated == 0  # a stat cannot tell
    assert main(["sync", "--vault", str(root), "--full", "-q", "--json"]) == 0
    with Cortex.open(root, embedder=embedder) as cx:
        assert cx.recall(RecallRequest(query="when does the fan run", k=1),
                         log_activity=False).hits[0].path == "long_term/Pump.md"
        assert "dusk" in cx.db.chunks_of(cx.db.note_ids(["long_term/Pump.md"]).values()).popitem()[1][0].text


def test_a_same_size_rewrite_in_the_timestamp_tick_of_the_last_scan_is_found_by_the_next_sync(
        tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 21 F9 (git's "racily clean" files): a note saved, indexed, then saved again with the same size
    within the same timestamp tick (FAT's 2 s, or ext4's jiffy) looks untouched to a stat. A file modified
    that close to a scan is marked and hashed again by the next sync; files well older are not read at all.
    `doctor` and `verify` see no drift from the marker."""
    root = tmp_path / "vault"
    init_vault(root)
    (root / "long_term" / "Old.md").write_text("An old note about the greenhouse.\n", encoding="utf-8")
    for old in root.rglob("*.md"):  # the template's notes and Old.md: an hour old
        os.utime(old, ns=(old.stat().st_atime_ns, old.stat().st_mtime_ns - 3600 * 10**9))
    note = root / "long_term" / "Pump.md"
    note.write_text("The pump runs at dawn.\n", encoding="utf-8")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert cx.doctor().drift == []
        st = note.stat()
        note.write_text("The fan runs at dusk!.\n", encoding="utf-8")  # same size, same tick
        os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
        read: list[str] = []
        original = Path.read_bytes

        def reading(self: Path) -> bytes:
            if self.suffix == ".md":
                read.append(self.relative_to(root).as_posix())
            return original(self)

        monkeypatch.setattr(Path, "read_bytes", reading)
        report = cx.sync()
        monkeypatch.undo()
        assert report.updated == 1
        assert "dusk" in cx.db.chunks_of(cx.db.note_ids(["long_term/Pump.md"]).values()).popitem()[1][0].text
        assert read == ["long_term/Pump.md"]  # only the note saved near the scan was read, no hour-old one
        assert cx.sync_paths(["long_term/Pump.md"]).updated == 0  # still racy: hashed, found unchanged
        assert cx.doctor().drift == []
        assert cx.verify().ok


def _region(cx: Cortex, path: str) -> str:
    return next(n.region for n in cx.db.all_notes() if n.path == path)


def test_a_change_of_the_index_settings_reaches_the_index(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """`[regions] default` short_term → long_term, then `sync`: it said "unchanged" and kept the old regions,
    even after a restart; the index now re-derives every note when the settings it derives with change."""
    root = tmp_path / "vault"
    init_vault(root)
    (root / "Loose idea.md").write_text("A loose idea about solar panels.\n", encoding="utf-8")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert _region(cx, "Loose idea.md") == "short_term"
        assert cx.sync().updated == 0  # nothing changed: nothing re-derived
    config = root / ".cortex" / "config.toml"
    text = config.read_text(encoding="utf-8")
    assert 'default = "short_term"' in text
    config.write_text(text.replace('default = "short_term"', 'default = "long_term"'), encoding="utf-8")
    with Cortex.open(root, embedder=embedder) as cx:
        report = cx.sync()
        assert report.updated > 0 and report.chunks_embedded == 0  # re-derived; the embeddings were cached
        assert _region(cx, "Loose idea.md") == "long_term"
        assert cx.recall(RecallRequest(query="solar panels", regions=["long_term"]),
                         log_activity=False).hits[0].path == "Loose idea.md"
        assert cx.sync().updated == 0
