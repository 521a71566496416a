"""File names in any Unicode normalisation: a note written `Cafe\u0301 notes.md` (NFD, as macOS and some sync
tools write names) is indexed under its NFC path; every interface then reads, edits, replaces and moves the very
file on disk — it answered 404 and a PUT made an NFC twin that the index then hid."""

from __future__ import annotations

import os
import shutil
import tempfile
import unicodedata
from collections.abc import Callable
from pathlib import Path

import anyio
from fakes import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.watch import Watcher
from vault_cortex import Cortex
from vault_cortex.files.sections import EditOp
from vault_cortex.files.vault import content_hash, init_vault

WORDS = st.sampled_from(["Café", "naïve", "Ångström", "mañana", "Über", "résumé", "plain", "ß-test", "ǅemal",
                         "x&y", "a'b", "Émile (draft)"])
FORMS = st.sampled_from(["NFC", "NFD"])


def _template(root: Path) -> Path:
    init_vault(root)
    return root


TEMPLATE = _template(Path(tempfile.mkdtemp(prefix="vc-names-")) / "vault")


def starter_with_note_named(tmp: Path, name: str, form: str, folder_form: str) -> tuple[Path, Path]:
    """A starter vault in `tmp` with a `Désign notes` folder (its name in `folder_form`), and the path of a note
    `name` in it, in `form` (not written)."""
    root = tmp / "vault"
    shutil.copytree(TEMPLATE, root)
    folder = root / unicodedata.normalize(folder_form, "Désign notes")
    folder.mkdir()
    return root, folder / (unicodedata.normalize(form, name) + ".md")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(WORDS, min_size=1, max_size=3), form=FORMS, folder_form=FORMS, upper=st.booleans())
def test_every_interface_reaches_the_note_it_found(words: list[str], form: str, folder_form: str,
                                                   upper: bool) -> None:
    name = " ".join(words).upper() if upper else " ".join(words)
    with tempfile.TemporaryDirectory() as tmp:
        root, on_disk = starter_with_note_named(Path(tmp), name, form, folder_form)
        on_disk.write_text("# Title\n\nThe first line.\n", encoding="utf-8")
        with Cortex.open(root, embedder=FakeEmbedder()) as cx:
            cx.sync()
            path = unicodedata.normalize("NFC", f"Désign notes/{name}.md")
            assert path in cx.db.note_paths()
            doc = cx.vault.read_note(path)
            assert doc.content.endswith("The first line.\n")
            assert cx.open_note(name).path == path
            cx.edit_note(path, EditOp(op="append", content="Appended."))
            assert on_disk.read_text(encoding="utf-8").endswith("Appended.\n"), "the file on disk was edited"
            again = cx.vault.read_note(path)
            cx.write_note(path, again.content + "Replaced.\n", again.etag)
            assert on_disk.read_text(encoding="utf-8").endswith("Replaced.\n")
            assert sorted(os.listdir(on_disk.parent)) == [on_disk.name], "no twin was made"
            moved = cx.move_note(path, "long_term/Moved here.md")
            assert not on_disk.exists() and (root / "long_term" / "Moved here.md").read_text(
                encoding="utf-8").endswith("Replaced.\n")
            assert moved.dest == "long_term/Moved here.md"


async def _until(predicate: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    with anyio.move_on_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)
        return
    raise AssertionError(f"the watcher did not index it within {timeout:.0f} s: {what}")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(WORDS, min_size=1, max_size=3), form=FORMS, folder_form=FORMS, upper=st.booleans())
def test_a_note_saved_under_any_normalisation_while_serve_runs_is_indexed_by_the_watcher(
        words: list[str], form: str, folder_form: str, upper: bool) -> None:
    """`sync` found a note saved `Cafe\u0301.md`; the running watcher did not (it synced the NFC path, which is
    no file): the note stayed out of the index until the next full sync. Saved, saved again and deleted here."""
    name = " ".join(words).upper() if upper else " ".join(words)
    with tempfile.TemporaryDirectory() as tmp:
        root, file = starter_with_note_named(Path(tmp), name, form, folder_form)
        path = unicodedata.normalize("NFC", f"Désign notes/{name}.md")
        with Cortex.open(root, embedder=FakeEmbedder()) as cx:
            watcher = Watcher(cx, debounce_ms=50)

            def indexed_as_on_disk() -> bool:
                state = cx.db.file_states([path]).get(path)
                return state is not None and state.fs_path == file.relative_to(root).as_posix() and (
                    state.hash == content_hash(file.read_bytes()))

            async def main() -> None:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(watcher.run)
                    await _until(lambda: watcher.status().syncs >= 1 and not watcher.status().pending, "start")
                    file.write_text("# Title\n\nA saved line about heliotropes.\n", encoding="utf-8")
                    await _until(indexed_as_on_disk, f"{file.name!a} saved")
                    with open(file, "w", encoding="utf-8") as fh:  # saved again in place
                        fh.write("# Title\n\nA saved line about marigolds, and a longer one.\n")
                    await _until(indexed_as_on_disk, f"{file.name!a} saved again")
                    file.unlink()
                    await _until(lambda: path not in cx.db.note_paths(), f"{file.name!a} deleted")
                    tg.cancel_scope.cancel()

            anyio.run(main)
