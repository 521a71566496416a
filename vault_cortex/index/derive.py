"""What the index derives from a changed note's file: the parsed note, its region, its chunks within the cap, their
vectors (from the cache, else the model), and the fingerprint of the settings all of that depends on."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence

import msgspec

from vault_cortex.config import Settings
from vault_cortex.files.chunk import Chunked, chunk_note
from vault_cortex.files.note import Note, decode, parse_note
from vault_cortex.files.vault import content_hash
from vault_cortex.files.walk import VaultFile
from vault_cortex.index.embed import Embedder
from vault_cortex.index.restore import cached_vectors, embed_batches
from vault_cortex.index.rows import FileState
from vault_cortex.index.vectors import EmbeddingCache, Vector

CHUNK_CAP_PROBLEM = "too many chunks"


def region_of(note: Note, settings: Settings) -> tuple[str, str | None]:
    """The note's region: its `cortex:`, else its top folder if that is a region, else the default."""
    known = settings.regions.order
    problem = None
    if note.cortex:
        if note.cortex in known:
            return note.cortex, None
        problem = f"cortex {note.cortex!r} is not a configured region ({', '.join(known)})"
    top, sep, _ = note.path.partition("/")
    if sep and top in known:
        return top, problem
    return settings.regions.default, problem


def derivation(settings: Settings) -> str:
    """A fingerprint of the settings the index derives from the files with (regions, exclusions, chunking,
    relation types): when it changes, a full sync re-derives every note (the embeddings stay cached)."""
    idx = settings.index
    return content_hash(msgspec.json.encode([settings.regions.order, settings.regions.default, sorted(idx.exclude),
                                             idx.max_file_mb, idx.chunk_tokens, idx.max_chunks_per_note,
                                             sorted(settings.relations)]))


class Derived(msgspec.Struct, kw_only=True):
    """A changed note file as the index writes it."""

    file: VaultFile
    state: FileState
    note: Note
    region: str
    chunked: Chunked


def derive(
    f: VaultFile,
    data: bytes,
    state: FileState,
    settings: Settings,
    relation_types: frozenset[str],
    embedder: Callable[[], Embedder],
) -> Derived:
    text, problems = decode(data)
    note = parse_note(f.path, text, relation_types)
    region, region_problem = region_of(note, settings)
    extra = problems + ((region_problem,) if region_problem else ())
    chunked = chunk_note(note, embedder().count_tokens, settings.index.chunk_tokens)
    cap = settings.index.max_chunks_per_note
    if len(chunked.chunks) > cap:
        extra += (f"{CHUNK_CAP_PROBLEM}: {len(chunked.chunks)} chunks, only the first {cap} are indexed "
                  "(index.max_chunks_per_note)",)
        chunked = msgspec.structs.replace(chunked, chunks=chunked.chunks[:cap])
    if extra:
        note = msgspec.structs.replace(note, problems=tuple(note.problems) + extra)
    return Derived(file=f, state=state, note=note, region=region, chunked=chunked)


def vectors_for(
    batch: Sequence[Derived], cache: EmbeddingCache, embedder: Callable[[], Embedder], counts: dict[str, int],
    stop: threading.Event | None = None, tick: Callable[[int], None] | None = None,
) -> dict[str, Vector]:
    """Vectors for the chunks of the batch: from the cache, and with `tick` (a targeted sync) the rest from the
    model, told how many chunks each step gave a vector (each EMBED_BATCH embedded is cached at once: a kill loses
    at most one batch; a set `stop` is obeyed between)."""
    model = embedder()
    texts = {c.hash: c.embed_text for item in batch for c in item.chunked.chunks}
    found = cached_vectors(cache, model, texts)
    counts["cached"] += len(found)
    if tick is not None:
        def chunks_of(hashes: Collection[str]) -> None:
            if hashes:
                tick(sum(1 for item in batch for c in item.chunked.chunks if c.hash in hashes))

        chunks_of(found)
        missing = [h for h in texts if h not in found]
        found.update(embed_batches(model, cache, {h: texts[h] for h in missing}, counts, stop, chunks_of))
    return found
