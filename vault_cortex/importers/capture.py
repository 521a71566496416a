"""Capturing a transcript into the vault: its exchanges written as raw notes within one change (the hooks'
capture, and `import` of a transcript), what a capture keeps and leaves out, and a captured session's name.

A transcript that grew since its last import is read from where its last exchange began: the notes before it
stay as they are, that exchange's note is replaced (atomically, and only if nobody edited it), and the new
exchanges are added (see `importlog`). Reading the file into exchanges and rendering each one as a note is
`transcript`'s.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import msgspec

from vault_cortex import clock
from vault_cortex.config import CaptureSettings
from vault_cortex.errors import InvalidRequest, WriteConflict
from vault_cortex.files.properties import parse_datetime
from vault_cortex.files.vault import remove_stale_temps
from vault_cortex.importers.importlog import ImportLog
from vault_cortex.importers.substance import has_substance
from vault_cortex.importers.transcript import (
    ALL,
    Exchange,
    Imported,
    Tally,
    detect,
    iter_markdown,
    left_out,
    open_transcript,
    reader,
    render_exchange,
    scrub,
    transcript_file,
)
from vault_cortex.store.change import Change, Vault

HEAD_BYTES = 1 << 16  # the start of a transcript, hashed to tell a grown transcript from a different one


def _lines(fh: IO[bytes], start: int) -> Iterator[tuple[int, bytes]]:
    fh.seek(start)
    offset = start
    for line in fh:
        yield offset, line
        offset += len(line)


def _head(fh: IO[bytes], size: int) -> str:
    fh.seek(0)
    return hashlib.sha256(fh.read(min(size, HEAD_BYTES))).hexdigest()


def capture_transcript(tx: Change, file: str | Path, session: str | None = None, *,
                       default_session: str | None = None, keep: CaptureSettings = ALL) -> Imported:
    """Write a transcript's exchanges as raw notes, within one change of the vault (which indexes them), with
    what `keep` keeps (`[capture]`: prompts, answers, tool lines) in its folder.

    The session's name is `session`, else the one used the last time this file was imported, else
    `default_session`, else the file's name. A note that exists with other content and was not written by
    this import is left alone and listed in `kept`, except on a file's first import, where it means the
    session's name is taken (WriteConflict).
    """
    path = transcript_file(file)
    log = ImportLog(tx, f"transcript:{path}")
    remove_stale_temps(tx.vault.root / keep.path)  # left by a capture killed part way; the write lock is held
    with open_transcript(path) as fh:
        stat = os.fstat(fh.fileno())
        fallback = datetime.fromtimestamp(stat.st_mtime, UTC)
        name = str(session or log.resume.get("session") or default_session or path.stem)
        fmt = detect(line for _, line in _lines(fh, 0))
        start, first = 0, 1
        r = log.resume
        if (fmt != "markdown" and r.get("session") == name and isinstance(r.get("offset"), int)
                and isinstance(r.get("n"), int) and stat.st_size >= int(r.get("size") or 0)
                and _head(fh, int(r["offset"])) == r.get("head")):
            start, first = int(r["offset"]), int(r["n"])  # read from the exchange that may have grown
        if fmt != "markdown":
            exchanges: Iterator[tuple[int, Exchange]] = reader(fmt)(_lines(fh, start))
        else:
            fh.seek(0)
            exchanges = iter_markdown(line.decode("utf-8", "replace").rstrip("\r\n") for line in fh)
        tally, tools, n, last, last_n, read = Tally(), 0, first - 1, start, first, 0
        left = Counter[str]()
        try:
            for offset, x in exchanges:
                read += 1
                last, last_n = offset, n + 1  # where a later capture resumes, and the number this one takes
                x, private, secrets = scrub(kept(x, keep))
                left.update({"private": private, "redacted": sum(secrets.values())})
                if not worth_keeping(x, keep):
                    left["left_out"] += 1  # an acknowledgement, or the tool output read back: echo, not memory
                    continue
                n += 1
                rel, text = render_exchange(name, n, x, fallback=fallback, source=path.name, keep=keep)
                outcome = log.write(rel, text)
                if outcome == "kept" and log.fresh and n == 1:
                    raise WriteConflict(f"{rel} already exists with other content; import under another --session "
                                        "name")
                tally.add(outcome, rel)
                tools += len(x.tools)
            if read < 1:
                raise InvalidRequest(f"no prompt and answer found in {path}")
            if fmt != "markdown":
                log.resume = {"session": name, "offset": last, "n": last_n, "size": stat.st_size,
                              "head": _head(fh, last)}
            else:
                log.resume = {"session": name}
        finally:  # what was written is recorded even when a later line fails; the resume point only on success
            if tally.paths["created"] or tally.paths["updated"] or read >= 1:
                log.save()
    return tally.result(name, fmt, tool_calls=tools, counts={"exchanges": n} | left_out(
        left["left_out"], left["private"], left["redacted"]))


def kept(x: Exchange, keep: CaptureSettings) -> Exchange:
    """The exchange with only the parts `keep` keeps (what is left out is never read again, nor redacted)."""
    if keep.prompts and keep.answers and keep.tools:
        return x
    return msgspec.structs.replace(x, prompt=x.prompt if keep.prompts else "",
                                   answer=x.answer if keep.answers else "", tools=x.tools if keep.tools else ())


def worth_keeping(x: Exchange, keep: CaptureSettings) -> bool:
    """Whether an exchange's kept parts hold anything to write: the prompt and answer kept have substance, or,
    keeping tool lines alone, it has some."""
    if keep.prompts or keep.answers:
        return has_substance(x.prompt, x.answer, x.output)
    return bool(x.tools)


def session_name(file: str | Path, project: str | None) -> str:
    """A captured session's name: the day it began, the project and the session id's start."""
    path = Path(file)
    day: datetime | None = None
    try:
        with open_transcript(path) as fh:
            for _, line in zip(range(200), fh, strict=False):
                day = parse_datetime(_record(line).get("timestamp"))
                if day is not None:
                    break
            day = day or datetime.fromtimestamp(os.fstat(fh.fileno()).st_mtime, UTC)
    except (OSError, InvalidRequest):
        day = clock.now()
    if path.stem.startswith("session-"):
        ident = path.stem.rsplit("-", 1)[-1]  # Gemini: its id's start
    elif path.stem.startswith("rollout-"):
        ident = path.stem.rsplit("-", 5)[-5]  # Codex: its uuid
    else:
        ident = path.stem
    parts = [day.strftime("%Y-%m-%d"), project or "", ident[:8]]
    return " ".join(p for p in parts if p)


def _record(line: bytes) -> dict[str, Any]:
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return {}
    return rec if isinstance(rec, dict) else {}


def import_transcript(vault: Vault, file: str | Path, session: str | None = None) -> Imported:
    """Write a transcript's exchanges as raw notes (never over edited ones) and index just them."""
    with vault.change("import") as tx:  # a file named on the command line: a link to it is followed
        return capture_transcript(tx, Path(file).expanduser().resolve(), session)
