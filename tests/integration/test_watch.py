"""The watcher on a real vault and index: saves, atomic renames, moves and deletes re-index; dot-folders don't."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import pytest

from server.watch import Watcher, in_dot_folder
from vault_cortex.cortex import Cortex
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest

NOTES = {
    "scientific/Ferrite beads.md": "# Ferrite beads\n\nA ferrite bead on the sensor cable stopped the I2C glitches.\n",
    "long_term/Backups.md": "# Backups\n\nThe Pi's SD card is imaged weekly to the NAS with dd and gzip.\n",
    "short_term/Pot three.md": "# Pot three\n\nThe third pot dries out a day faster than the others.\n",
}


@pytest.fixture
def cx(tmp_path: Path, embedder: Embedder) -> Iterator[Cortex]:
    root = tmp_path / "vault"
    (root / ".cortex").mkdir(parents=True)
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with Cortex.open(root, embedder=embedder) as cortex:
        yield cortex


def indexed(cx: Cortex) -> set[str]:
    return set(cx.db.note_paths())


def atomic_save(path: Path, text: str) -> None:
    """Save as editors do: write a temp file in the same folder, then rename it over the note."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(text)
    os.replace(tmp, path)


def watching(cx: Cortex, scenario: Callable[[Watcher], Awaitable[None]], debounce_ms: int = 100) -> Watcher:
    watcher = Watcher(cx, debounce_ms=debounce_ms)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.run)
            await until(lambda: watcher.status().syncs >= 1 and not watcher.status().pending)
            await scenario(watcher)
            tg.cancel_scope.cancel()

    anyio.run(main)
    return watcher


async def until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    """Wait for `predicate`; the deadline only fails a watcher that never gets there (each step is well under a
    second idle)."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


async def synced_after(watcher: Watcher, syncs: int) -> None:
    """Wait for a sync after the `syncs`-th, and for nothing left pending."""
    await until(lambda: watcher.status().syncs > syncs and not watcher.status().pending)


def test_start_up_sync_catches_changes_made_while_down(cx: Cortex) -> None:
    cx.sync()
    (cx.root / "long_term/Backups.md").unlink()
    atomic_save(cx.root / "scientific/Offline.md", "# Offline\n\nWritten while the server was down.\n")

    async def scenario(w: Watcher) -> None:
        assert indexed(cx) == set(NOTES) - {"long_term/Backups.md"} | {"scientific/Offline.md"}

    watching(cx, scenario)


def test_atomic_save_move_and_delete_are_indexed(cx: Cortex) -> None:
    async def scenario(w: Watcher) -> None:
        n = w.status().syncs
        atomic_save(cx.root / "scientific/Soldering.md", "# Soldering\n\nUse leaded solder for the probes.\n")
        await synced_after(w, n)
        assert "scientific/Soldering.md" in indexed(cx)
        hits = cx.recall(RecallRequest(query="leaded solder probes", k=1)).hits
        assert hits[0].path == "scientific/Soldering.md"

        n = w.status().syncs
        atomic_save(cx.root / "scientific/Soldering.md", "# Soldering\n\nUse lead-free solder, with more flux.\n")
        await synced_after(w, n)
        assert "flux" in cx.recall(RecallRequest(query="lead-free solder flux", k=1)).hits[0].snippet

        n = w.status().syncs
        os.rename(cx.root / "short_term/Pot three.md", cx.root / "long_term/Pot three.md")
        await synced_after(w, n)
        assert "long_term/Pot three.md" in indexed(cx)
        assert "short_term/Pot three.md" not in indexed(cx)

        n = w.status().syncs
        (cx.root / "scientific/Ferrite beads.md").unlink()
        await synced_after(w, n)
        assert "scientific/Ferrite beads.md" not in indexed(cx)

    watching(cx, scenario)


def test_a_saved_note_syncs_just_its_path_and_an_api_write_is_not_indexed_twice(cx: Cortex) -> None:
    """Issue 13: a watcher event for a few notes goes through the one-file path, and the event of a note the
    API already indexed finds it unchanged (nothing re-parsed, nothing re-embedded)."""
    async def scenario(w: Watcher) -> None:
        n, targeted = w.status().syncs, w.targeted
        atomic_save(cx.root / "scientific/Soldering.md", "# Soldering\n\nSee [[Flux]]. Leaded solder.\n")
        await synced_after(w, n)
        assert w.targeted == targeted + 1
        assert "scientific/Soldering.md" in indexed(cx)
        report = w.status().last_report
        assert report is not None and report.added == 1

        n, targeted = w.status().syncs, w.targeted
        cx.write_note("long_term/Flux.md", "# Flux\n\nRosin flux for the probes.\n", None)
        [link] = cx.db.links(src="scientific/Soldering.md")
        assert link.dst == "long_term/Flux.md"  # the API write resolved the dangling link naming it
        await synced_after(w, n)
        assert w.targeted == targeted + 1
        report = w.status().last_report
        assert report is not None
        assert (report.added, report.updated, report.chunks_embedded, report.unchanged) == (0, 0, 0, 1)

    watching(cx, scenario)


def test_an_obsidian_rename_of_a_note_linked_from_150_notes_is_one_targeted_sync(cx: Cortex) -> None:
    """Issue 13: Obsidian renames a note and rewrites the links in every note linking to it; the watcher syncs
    just those paths (no walk of the vault) and every link resolves to the new name, none dangles."""
    linking = [f"short_term/Log {i}.md" for i in range(150)]
    for rel in linking:
        (cx.root / rel).write_text(f"# Log {rel}\n\nThe probe drifted again; see [[Ferrite beads]].\n")

    async def scenario(w: Watcher) -> None:
        assert {ln.dst for rel in linking for ln in cx.db.links(src=rel)} == {"scientific/Ferrite beads.md"}
        full, n = w.full, w.status().syncs
        os.rename(cx.root / "scientific/Ferrite beads.md", cx.root / "scientific/Ferrite chokes.md")
        for rel in linking:
            path = cx.root / rel
            path.write_text(path.read_text().replace("[[Ferrite beads]]", "[[Ferrite chokes]]"))
        await until(lambda: w.status().syncs > n and not w.status().pending
                    and "scientific/Ferrite chokes.md" in indexed(cx)
                    and not cx.db.links(dangling_only=True))
        assert w.full == full  # targeted syncs only
        assert "scientific/Ferrite beads.md" not in indexed(cx)
        assert {ln.dst for rel in linking for ln in cx.db.links(src=rel)} == {"scientific/Ferrite chokes.md"}

    watching(cx, scenario)


def test_folder_move_reindexes_its_notes(cx: Cortex) -> None:
    async def scenario(w: Watcher) -> None:
        n = w.status().syncs
        os.rename(cx.root / "scientific", cx.root / "lab")
        await synced_after(w, n)
        assert "lab/Ferrite beads.md" in indexed(cx)
        assert "scientific/Ferrite beads.md" not in indexed(cx)

    watching(cx, scenario)


def test_dot_folders_never_trigger_a_sync(cx: Cortex) -> None:
    async def scenario(w: Watcher) -> None:
        n = w.status().syncs
        for rel in (".cortex/activity/2026-11.jsonl", ".cortex/index/scratch", ".obsidian/workspace.json",
                    ".git/objects/ab/cdef", ".trash/Old note.md", "scientific/.Ferrite beads.md.swp", ".hidden.md"):
            (cx.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (cx.root / rel).write_text("noise\n")
        await anyio.sleep(0.6)  # time for a sync they would wrongly trigger (the note below shows the watcher was up)
        assert w.status().syncs == n
        assert not w.status().pending
        atomic_save(cx.root / "scientific/After the noise.md", "# After the noise\n\nA real note.\n")
        # the note is in the index before the watcher counts its sync done: wait for both
        await until(lambda: "scientific/After the noise.md" in indexed(cx) and not w.status().pending)
        assert w.status().syncs == n + 1  # that note's sync alone, then as before

    watching(cx, scenario)


def test_a_burst_of_saves_is_debounced(cx: Cortex) -> None:
    async def scenario(w: Watcher) -> None:
        n = w.status().syncs
        for i in range(30):
            atomic_save(cx.root / f"short_term/Burst {i}.md", f"# Burst {i}\n\nReading number {i} of the burst.\n")
        await synced_after(w, n)
        await until(lambda: {f"short_term/Burst {i}.md" for i in range(30)} <= indexed(cx))
        assert w.status().syncs - n <= 3

    watching(cx, scenario, debounce_ms=300)


def test_status_reports_lag_while_changes_wait(cx: Cortex) -> None:
    async def scenario(w: Watcher) -> None:
        assert w.status().lag_ms == 0.0 and w.status().watching
        n = w.status().syncs
        atomic_save(cx.root / "scientific/Lag.md", "# Lag\n\nA change waiting for the index.\n")
        await until(lambda: w.status().pending or w.status().syncs > n)
        await synced_after(w, n)  # a debounce and one small sync
        assert w.status().last_report is not None and w.status().last_error is None

    watching(cx, scenario)


def test_in_dot_folder() -> None:
    root = "/v"
    assert in_dot_folder(root, "/v/.cortex/index/index.db-wal")
    assert in_dot_folder(root, "/v/soul/.note.md.tmp")
    assert in_dot_folder(root, "/v")
    assert in_dot_folder(root, "/elsewhere/x.md")
    assert not in_dot_folder(root, "/v/soul/Values.md")
    assert not in_dot_folder(root, "/v/soul")


def test_a_failed_sync_is_retried_without_waiting_for_another_change(cx: Cortex,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A defect found by the 100k bench: a sync that failed (there: SQLite refusing a statement) was retried
    only when another file changed, so a vault whose writes stopped kept a stale index. Now the watcher retries
    (a full sync) after 2 s, then 4, 8, … up to 5 minutes, and stays pending until it succeeds."""
    failures = [RuntimeError("disk hiccup")]
    original = cx.sync_paths

    def flaky(paths: list[str]) -> object:
        if failures:
            raise failures.pop()
        return original(paths)

    monkeypatch.setattr(cx, "sync_paths", flaky)

    async def scenario(w: Watcher) -> None:
        n = w.status().syncs
        atomic_save(cx.root / "scientific/Soldering.md", "# Soldering\n\nUse leaded solder for the probes.\n")
        await until(lambda: w.status().last_error is not None)
        assert w.status().pending and "scientific/Soldering.md" not in indexed(cx)
        await until(lambda: w.status().syncs > n and not w.status().pending)
        assert "scientific/Soldering.md" in indexed(cx) and w.status().last_error is None

    watching(cx, scenario)


def test_a_save_the_watcher_syncs_leaves_the_vector_file_alone(cx: Cortex) -> None:
    """A write, then the watcher's sync of it and its vector fill (nothing to fill): the whole vector file is not
    saved again (at 100k notes that save took ~0.5 s under the write lock, after every write). The vectors are
    in memory, the cache and SQLite hold the truth, and a targeted sync saves the file at most once a minute."""
    cx.sync()

    async def scenario(w: Watcher) -> None:
        stamp = cx.vectors.stamp()
        before = w.status().syncs
        cx.write_note("scientific/Soil probes.md", "# Soil probes\n\nCapacitive probes drift when the soil "
                      "warms; recalibrate them each spring.\n", None)
        atomic_save(cx.root / "short_term/Pot four.md", "# Pot four\n\nThe fourth pot needs a bigger saucer.\n")
        await synced_after(w, before)
        assert cx.vectors.stamp() == stamp, "the vector file was saved again"
        assert cx.vectors.dirty
        hits = cx.recall(RecallRequest(query="calibrating capacitive soil sensors", k=1), log_activity=False).hits
        assert hits[0].path == "scientific/Soil probes.md" and hits[0].vector

    watching(cx, scenario)
