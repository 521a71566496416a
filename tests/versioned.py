"""A test vault as a user keeps one: a git repository with everything committed (shared by the tests that check
what git sees)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(root: Path, *args: str) -> str:
    """Run git in `root` and return what it printed; a failure fails the test."""
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def committed(root: Path, message: str = "my notes") -> Path:
    """Make `root` a repository holding everything in it in one commit; returns `root`."""
    git(root, "init", "-q")
    git(root, "config", "user.name", "Test")
    git(root, "config", "user.email", "test@example.com")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return root
