"""Captures as evidence: after ten captured sessions, how many captures the second look, the pushes and the pane offer.

On the starter vault and on an adopted Obsidian vault (tests/fixtures/vaults/obsidian_sample), ten Claude Code
sessions are written as JSONL transcripts and captured through the real path (`hook session-end`, in-process);
in each the user asks about a curated note and the agent answers with the note's claim turned wrong (a figure
changed, or "not" added). Then, in new sessions, the agent makes the same claims again:
  second look   memories the stop hook offers for each claim, and how many are captures
  prompt push   memories the prompt hook pushes for each session's prompt, and how many are captures
  failure push  memories the tool-failure hook pushes for an error naming each note, and how many are captures
  pane top 5    related(curated note, k=5) as the pane asks it, and how many are captures
Runs on whatever code is first on sys.path (the repository this script is in), so the same script gives the
figures before and after a change.

    python tests/bench/captures.py
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from server import hooks  # noqa: E402
from vault_cortex import Cortex  # noqa: E402
from vault_cortex.files.adopt import adopt_vault  # noqa: E402
from vault_cortex.files.vault import init_vault  # noqa: E402

DEAD_URL = "http://127.0.0.1:9"
SESSIONS = 10
SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "vaults" / "obsidian_sample"
_FIGURE = re.compile(r"\d+(?:[.,]\d+)?")
_MEMORY = re.compile(r"^## (.+?\.md)", re.M)


def curated(root: Path) -> list[tuple[str, str, str]]:
    """(path, title, first sentence) of the vault's notes with a sentence to claim, outside raw/."""
    out = []
    for p in sorted(root.rglob("*.md")):
        rel = p.relative_to(root).as_posix()
        if rel.startswith((".", "raw/", "_templates/", "archive/")):
            continue
        body = p.read_text(encoding="utf-8").split("\n---\n", 1)[-1]
        lines = [ln.strip() for ln in body.splitlines()
                 if len(ln.strip()) > 60 and not ln.lstrip().startswith(("#", "-", "|", "`", "!", ">"))]
        if lines:
            out.append((rel, p.stem, re.split(r"(?<=[.!?])\s", lines[0])[0]))
    return out


def wrong(sentence: str) -> str:
    """The sentence with its claim turned: its first figure doubled, else a `not` after its first verb-ish word."""
    m = _FIGURE.search(sentence)
    if m:
        return sentence[:m.start()] + str(int(float(m.group().replace(",", "")) * 2)) + sentence[m.end():]
    words = sentence.split()
    for i, w in enumerate(words[1:], 1):
        if w.lower() in ("is", "are", "was", "were", "runs", "keeps", "makes", "has", "can", "should", "does"):
            return " ".join([*words[: i + 1], "not", *words[i + 1:]])
    return "It is not true that " + sentence[:1].lower() + sentence[1:]


def rec(kind: str, text: str, sid: str, ts: str) -> str:
    content: Any = text if kind == "user" else [{"type": "text", "text": text}]
    return json.dumps({"type": kind, "sessionId": sid, "timestamp": ts, "uuid": f"{sid}{ts}{kind}",
                       "message": {"role": kind, "content": content}}) + "\n"


def run(event: str, vault: Path, payload: dict[str, Any]) -> dict[str, Any]:
    out = io.StringIO()
    hooks.main(event, str(vault), DEAD_URL, stdin=io.StringIO(json.dumps(payload)), stdout=out, env={})
    text = out.getvalue().strip()
    return json.loads(text) if text else {}


def memories(out: dict[str, Any]) -> list[str]:
    if out.get("decision") == "block":
        return [ln[2:].split(" (")[0] for ln in str(out["reason"]).splitlines() if ln.startswith("- ")]
    return _MEMORY.findall(str(out.get("hookSpecificOutput", {}).get("additionalContext", "")))


def bench(name: str, vault: Path, home: Path) -> dict[str, tuple[int, int]]:
    """Capture ten sessions into the vault, then count (memories offered, captures among them) per surface."""
    folder = home / ".claude/projects/-home-me-project"
    folder.mkdir(parents=True, exist_ok=True)
    found = curated(vault)
    notes = [found[i % len(found)] for i in range(SESSIONS)]  # a small vault: a note asked about again
    claims = []
    for n, (_, title, sentence) in enumerate(notes):
        sid = f"{n:08x}-1111-4222-8333-444455556666"
        prompt = f"What do my notes say about {title}?" + (" Again, please." if n >= len(found) else "")
        said = wrong(sentence)
        claims.append((prompt, said))
        day = f"2026-11-{n + 10:02d}"
        transcript = folder / f"{sid}.jsonl"
        transcript.write_text(rec("user", prompt, sid, f"{day}T09:00:00Z")
                              + rec("assistant", said, sid, f"{day}T09:00:30Z"), encoding="utf-8")
        run("session-end", vault, {"session_id": sid, "transcript_path": str(transcript), "cwd": "/home/me/project",
                                   "hook_event_name": "SessionEnd", "reason": "exit"})
    with Cortex.open(vault) as cx:
        cx.sync()
        captured = sum(1 for _ in (vault / "raw").glob("*.md"))
        pane = [[h.path for h in cx.related(path, k=5).hits] for path, _, _ in notes]
    counts: dict[str, list[int]] = {k: [0, 0] for k in ("second look", "prompt push", "failure push", "pane top 5")}

    def count(surface: str, paths: list[str]) -> None:
        counts[surface][0] += len(paths)
        counts[surface][1] += sum(p.startswith("raw/") for p in paths)

    for n, ((prompt, said), (_, title, _)) in enumerate(zip(claims, notes, strict=True)):
        transcript = folder / f"again-{n}.jsonl"
        transcript.write_text(rec("user", prompt, f"again-{n}", "2026-12-01T09:00:00Z")
                              + rec("assistant", said, f"again-{n}", "2026-12-01T09:00:30Z"), encoding="utf-8")
        count("second look", memories(run("stop", vault, {
            "session_id": f"again-{n}", "transcript_path": str(transcript), "cwd": "/home/me/project",
            "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": said})))
        count("prompt push", memories(run("prompt", vault, {
            "session_id": f"prompt-{n}", "cwd": "/home/me/project", "hook_event_name": "UserPromptSubmit",
            "prompt": prompt, "transcript_path": str(transcript)})))
        count("failure push", memories(run("tool-failure", vault, {
            "session_id": f"failure-{n}", "cwd": "/home/me/project", "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash", "tool_input": {"command": "make check"}, "is_interrupt": False,
            "error": f"Exit code 1\nRuntimeError: {title}: {said}"})))
    for paths in pane:
        count("pane top 5", paths)
    print(f"{name}: {len(notes)} sessions captured ({len(found)} notes asked about), {captured} captures in raw/")
    return {k: (v[0], v[1]) for k, v in counts.items()}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        os.environ["HOME"] = str(home)  # the hooks read transcripts under Claude Code's folder in HOME
        starter = Path(tmp) / "starter"
        init_vault(starter)
        adopted = Path(tmp) / "adopted"
        shutil.copytree(SAMPLE, adopted)
        adopt_vault(adopted)
        figures = {"starter vault": bench("starter vault", starter, home),
                   "adopted vault": bench("adopted vault", adopted, home)}
    print(f"{'':16}{'surface':14}{'memories':>10}{'captures':>10}")
    for vault, rows in figures.items():
        for surface, (offered, captures) in rows.items():
            print(f"{vault:16}{surface:14}{offered:>10}{captures:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
