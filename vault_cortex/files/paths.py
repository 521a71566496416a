"""Vault paths as strings, pure: the folder a path sits in, a free name beside taken ones."""

from __future__ import annotations


def top_folder(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else ""


def unique_path(path: str, taken: set[str]) -> str:
    """path, or `stem 2.md`, `stem 3.md`, … when a file already has it."""
    stem = path.removesuffix(".md")
    n = 1
    while path in taken:
        n += 1
        path = f"{stem} {n}.md"
    return path
