"""Vault paths as strings, pure: a note's name, the folder a path sits in, a free name beside taken ones."""

from __future__ import annotations

from collections.abc import Container


def note_name(path: str) -> str:
    """A note's name as a link names it: the last segment of its path without `.md` (in any case)."""
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def top_folder(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else ""


def unique_path(path: str, taken: Container[str]) -> str:
    """path, or `stem 2.md`, `stem 3.md`, … when a file already has it (`taken`: a set of paths, or the files on
    disk as `files.vault.Existing` sees them)."""
    stem = path.removesuffix(".md")
    n = 1
    while path in taken:
        n += 1
        path = f"{stem} {n}.md"
    return path
