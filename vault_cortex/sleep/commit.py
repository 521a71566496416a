"""A sleep's changes committed to git: exactly the files its applied steps touched, under the user's identity or,
when git has none for the vault, vault-cortex's own (said in the log and the report)."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence
from pathlib import Path

import msgspec

from vault_cortex.sleep.operations import Op, Plan

log = logging.getLogger(__name__)

OWN_IDENTITY = ("vault-cortex", "vault-cortex@localhost")  # the author of a sleep's commit when git has none


class Commit(msgspec.Struct, frozen=True):
    sha: str
    author: str | None  # set when vault-cortex named the author itself (git has no identity for the vault)


def commit_vault(root: Path, p: Plan, steps: Sequence[int], also: Sequence[str] = ()) -> Commit | None:
    """Commit exactly the files the applied steps touched (moves show as renames), and `also` (the activity
    files the sleep's flush appended to); None outside a repository.

    The commit is the user's identity's when git has one for the vault (its own config, the user's, the
    system's, or GIT_AUTHOR_*/GIT_COMMITTER_*), else OWN_IDENTITY's, said in the log and the report: a machine
    where nobody ran `git config` still gets its sleep committed."""
    author: str | None = None

    def git(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        named = ["-c", f"user.name={OWN_IDENTITY[0]}", "-c", f"user.email={OWN_IDENTITY[1]}"] if author else []
        return subprocess.run(["git", *named, *args], cwd=root, capture_output=True, text=True, check=False,
                              input=stdin)

    if git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        log.info("the vault is not a git repository; nothing committed")
        return None
    ops = [op for op in p.ops if op.step in set(steps)]
    # .cortex/sleep/.gitignore ignores itself
    wanted = sorted({x for op in ops for x in (op.path, op.dest) if x} | set(also))
    tracked = set(git("ls-files", "-z", "--", *wanted).stdout.split("\0")) if wanted else set()
    paths = [x for x in wanted if (root / x).exists() or x in tracked]
    ignored = set(git("check-ignore", "-z", "--stdin", stdin="\0".join(paths)).stdout.split("\0"))
    paths = [x for x in paths if x not in ignored]  # a folder kept out of git (raw/, say) stays out, the rest commits
    if not paths or git("add", "-A", "--", *paths).returncode:
        return None
    if git("var", "GIT_AUTHOR_IDENT").returncode or git("var", "GIT_COMMITTER_IDENT").returncode:
        author = f"{OWN_IDENTITY[0]} <{OWN_IDENTITY[1]}>"
        log.warning("git has no identity for this vault (user.name, user.email): committing as %s; set yours "
                    "with `git -C %s config user.name ...` and `... user.email ...`", author, root)
    done = git("commit", "-q", "-m", commit_message(p, ops), "--", *paths)
    if done.returncode:
        log.warning("git commit failed: %s", (done.stderr or done.stdout).strip())
        return None
    sha = git("rev-parse", "HEAD").stdout.strip()
    return Commit(sha, author) if sha else None


def commit_message(p: Plan, ops: Sequence[Op]) -> str:
    """A subject that counts what the sleep did, then one line per operation."""
    counts: dict[str, int] = {}
    for op in ops:
        if op.phase not in ("dream", "handoff", "state"):
            counts[op.phase] = counts.get(op.phase, 0) + 1
    words = {"merge": "merge steps", "decay": "decayed", "wire": "connected", "promote": "promotion steps",
             "prune": "pruned", "tier": "summaries"}
    summary = ", ".join(f"{n} {words.get(k, k)}" for k, n in counts.items()) or "handoff only"
    lines = [f"sleep ({p.mode}): {summary}", "", f"Plan {p.id}: {len(ops)} of {len(p.ops)} operations applied."]
    for op in ops[:60]:
        target = f" → {op.dest}" if op.dest else ""
        lines.append(f"- {op.phase} {op.action} {op.path}{target}: {op.reason}")
    if len(ops) > 60:
        lines.append(f"- … and {len(ops) - 60} more")
    return "\n".join(lines) + "\n"
