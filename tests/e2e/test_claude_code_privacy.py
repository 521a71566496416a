"""The privacy gate with the real Claude Code CLI (tests/e2e/claude_code.py): five `claude -p` sessions on a
git-versioned starter vault, with the hooks `vault-cortex install claude-code` writes into the session's HOME (four
posting to `vault-cortex serve`, the fifth with serve stopped: the stdio MCP server answers, or the hook opens the
vault). Secrets of each class the redactor handles (tests/unit/test_privacy.py's corpus) and `<private>` spans
(nested, unclosed, upper case) are in the prompts, the scripted answers, the Bash calls the scripted model makes
(their commands and what they print) and a failing command's error.

After the sessions, `vault-cortex activity flush` and a sleep plan: no byte of any secret or private text is under
the vault (its index folder `.cortex/index` included: every file, each SQLite database's rows and its full-text
vocabulary), under the HOME (the user cache, Claude Code's MCP logs, whatever vault-cortex keeps there; Claude
Code's own `.claude` files left out: they are the client's transcript, not ours), in the project folder or in the
server's log, in plain, lower-case, JSON-escaped or percent-encoded form; `git status` names no prompt text and the
diff of every versioned file but the captures in raw/ holds none. The sessions were captured (raw notes hold their
words) and the hooks were asked (the server's log names each event), so nothing passes for want of data.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from claude_code import MessagesAPI, Reply, Text, bash, find_claude, run_claude

from server.bearer import TOKEN_ENV, read_token
from tests.integration.serving import serve
from vault_cortex.index.schema import TOKENIZE

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PROJECT = "greenhouse-sensor"
# One value per class the redactor handles.
S = {
    "password": "Hunter2Secret!",
    "url": "p4ss/w#rd9Zq",
    "bearer": "eyQ9vR7tLmW2xK5pN8sJ3hB6",
    "bearer2": "tK3mW9qZ7vB1xN5cR8jL2pF4",
    "basic": "dXNlcjpwYXNzd29yZDEyMw",
    "curl": "curlPw9!xq",
    "mysql": "MyPw7731zz",
    "sshpass": "SshPw5521yy",
    "pgpass": "PgPw8830ww",
    "mongo": "MongoPw44qq",
    "hex32": "9f2c7d4e1a6b8c3f5e0d2a7b4c9e1f3a",
    "hex40": "3b8e1f9c2d7a4e6b0c5f8a1d3e9b7c2f4a6d8e0b",
    "client": "e7a1c9d3f5b2084a6c8e0d2f4b6a8c1e",
    "aws": "AKIAQ7W3E9R2T4Y6U8P5",
    "aws_secret": "wJq7Lm2Xp9Rt4Vb8Nz3Kc6Hd1Fg5Sy0Ta8Ue2Wi",
    "github": "ghp_Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL7zX9cV0b",
}
# The text of each `<private>` span: made-up words, so a stray one cannot come from anywhere else.
PRIVATE = {
    "prompt1": "marzipan zorblat tally",
    "answer1": "wombat plinkodust diary",
    "outer2": "quokkaplan offer vextrum",
    "inner2": "krakmoth lantern",
    "answer2": "obelisk frindle confession",
    "answer3": "gossamex rumour trundlewick",  # never closed: runs to the answer's end
    "answer4": "juniplax whisper",
    "prompt5": "snorkelvane tattoo",
}


@dataclass(frozen=True)
class Scripted:
    """One session: the prompt, the model's scripted replies, and words of it that must be captured (no secret)."""

    prompt: str
    script: list[Reply]
    words: tuple[str, ...]  # of the prompt, then of the answer


SESSIONS = [
    Scripted(
        f"Why does the vermilion probe drop readings at night? <private>{PRIVATE['prompt1']}</private> I log in "
        f"with password={S['password']} and the db is postgres://app:{S['url']}@db.local/greenhouse",
        [bash(f"printf 'Authorization: Bearer {S['bearer']}\\nPGPASSWORD={S['pgpass']}\\n'"),
         Text(f"Reseat the vermilion probe connector; the night drops come from a loose pin. "
              f"<private>{PRIVATE['answer1']}</private> Keep PGPASSWORD={S['pgpass']} out of the cron script.")],
        ("vermilion probe drop readings", "Reseat the vermilion probe connector")),
    Scripted(
        f"The tangerine collector cannot reach mysql. <private>{PRIVATE['outer2']} <private>{PRIVATE['inner2']}"
        f"</private> {PRIVATE['outer2']}</private> It ran mysql -u root -p{S['mysql']} greenhouse",
        [bash(f"echo 'ERROR 1045: access denied; token: {S['hex40']}' >&2; exit 1"),
         Text(f"Grant the tangerine collector its own database user, and keep the AWS key {S['aws']} out of it. "
              f"<private note=\"mine\">{PRIVATE['answer2']}</private>")],
        ("tangerine collector cannot reach mysql", "Grant the tangerine collector its own database user")),
    Scripted(
        f"curl -u admin:{S['curl']} https://api.local/v1/readings returns 401 for the cerulean dashboard",
        [bash(f"echo 'FAILED test_dashboard.py::test_login - the api key {S['hex32']} was rejected'; "
              "echo '1 failed, 3 passed in 0.2s'"),
         Text(f"The cerulean dashboard sends a stale key, rotate it before the demo. <private>{PRIVATE['answer3']}")],
        ("returns 401 for the cerulean dashboard", "cerulean dashboard sends a stale key")),
    Scripted(
        f"Deploy the saffron probe with sshpass -p {S['sshpass']} ssh pi@probe.local and my token is {S['github']}",
        [bash(f"echo 'mongo --username app --password={S['mongo']} db'; "
              f"echo 'AWS_SECRET_ACCESS_KEY={S['aws_secret']}'"),
         bash(f"echo 'client_secret={S['client']} refused by the saffron gateway' >&2; exit 2"),
         Text(f"The saffron probe deploys once its gateway key is rotated. <PRIVATE>{PRIVATE['answer4']}</PRIVATE>")],
        ("Deploy the saffron probe", "saffron probe deploys once its gateway key is rotated")),
    Scripted(
        f"<private>{PRIVATE['prompt5']}</private> Why does the chartreuse export fail with "
        f"Authorization: Basic {S['basic']} set?",
        [bash(f"echo 'curl -H \"Authorization: Bearer {S['bearer2']}\" https://api.local/export'"),
         Text(f"The chartreuse export needs a fresh token; the old login was password={S['password']} and it "
              "expired.")],
        ("Why does the chartreuse export fail", "chartreuse export needs a fresh token")),
]
NEEDLES = [*S.values(), *PRIVATE.values(), *(w for p in PRIVATE.values() for w in p.split() if len(w) > 6)]
HOOK_EVENTS = ("session-start", "prompt", "tool-result", "tool-failure", "stop")  # posted to serve
START_MARK = "SessionStart hook additional context"


def forms(needle: str) -> set[bytes]:
    """The ways a text may be written to a file: as is, lower-cased (a tokenizer's), JSON-escaped, percent-encoded."""
    return {f.encode() for f in (needle, needle.lower(), json.dumps(needle)[1:-1], urllib.parse.quote(needle, safe=""),
                                 urllib.parse.quote_plus(needle))}


def terms(conn: sqlite3.Connection, table: str) -> set[str]:
    """The full-text vocabulary of an FTS5 table (what its index holds, whether or not it keeps the text)."""
    conn.execute(f"CREATE VIRTUAL TABLE temp.v_{table} USING fts5vocab(main, {table}, row)")
    try:
        return {t for (t,) in conn.execute(f"SELECT term FROM temp.v_{table}")}
    finally:
        conn.execute(f"DROP TABLE temp.v_{table}")


def needle_terms() -> set[str]:
    """The terms FTS5, tokenising as the index does, makes of the needles."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{TOKENIZE}')")
        conn.executemany("INSERT INTO t(x) VALUES (?)", [(n,) for n in NEEDLES])
        return {t for t in terms(conn, "t") if len(t) >= 5}
    finally:
        conn.close()


def db_leaks(path: Path, baseline: set[str]) -> list[str]:
    """Needles in a SQLite database's rows (a text split over pages is whole here) and its FTS5 vocabularies
    (terms the starter vault's index already held left out)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        dump = "\n".join(conn.iterdump()).encode()
        found = [f"{path.name} (rows): {n}" for n in NEEDLES if any(f in dump for f in forms(n))]
        fts = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE "
                                                "'%USING fts5(%'")]
        vocab = set().union(*(terms(conn, t) for t in fts)) - baseline
        return found + [f"{path.name} (FTS terms): {t}" for t in sorted(vocab & needle_terms())]
    finally:
        conn.close()


def leaks(folder: Path, baseline: set[str], skip: Iterable[str] = ()) -> list[str]:
    """`file: needle` for every needle in the bytes of a file under folder (paths starting with `skip` left out)."""
    skip = tuple(skip)
    found: list[str] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(folder).as_posix()
        if rel.startswith(skip):
            continue
        data = path.read_bytes()
        lower = data.lower()
        found += [f"{rel}: {n}" for n in NEEDLES if any(f in data or f.lower() in lower for f in forms(n))]
        if data.startswith(b"SQLite format 3\x00"):
            found += [f"{rel}: {hit}" for hit in db_leaks(path, baseline)]
        found += [f"{rel} (its name): {n}" for n in NEEDLES if n.lower() in rel.lower()]
    return found


def index_terms(vault: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{vault / '.cortex/index/index.db'}?mode=ro", uri=True)
    try:
        return terms(conn, "chunks_fts")
    finally:
        conn.close()


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault), "-c", "user.name=test", "-c", "user.email=test@example.com",
                           *args], capture_output=True, text=True, check=True).stdout


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=180)


def install(vault: Path, project: Path, transport: str, env: dict[str, str]) -> None:
    """`vault-cortex install claude-code` into the HOME's ~/.claude (user scope), as a user runs it."""
    done = cli("install", "claude-code", "--vault", str(vault), "--scope", "user", "--transport", transport,
               "--project", str(project), env=env)
    assert done.returncode == 0, done.stderr


def session(claude: Path, s: Scripted, project: Path, home: Path, env: dict[str, str]) -> str:
    """One real `claude -p` session; what its first request showed the model."""
    with MessagesAPI(s.script) as api:
        run = run_claude(claude, api, project, home, s.prompt, env=env)
    assert run.done.returncode == 0, run.done.stderr
    assert "hook error" not in run.done.stderr.lower(), run.done.stderr
    requests = api.main_requests()
    assert len(requests) > len([r for r in s.script if not isinstance(r, Text)])  # every scripted reply was asked
    return json.dumps(requests[0])



def test_no_secret_or_private_text_of_five_real_sessions_reaches_the_disk(synced_template: Path, short_tmp: Path,
                                                                          tmp_path: Path) -> None:
    """Sessions 1-4 with `serve` running (the hooks post to it; MCP over HTTP), session 5 with serve stopped and the
    stdio MCP server Claude Code starts (the hooks ask it on its socket, or open the vault themselves)."""
    claude = find_claude()
    vault = short_tmp / "vault"
    shutil.copytree(synced_template, vault, symlinks=True)
    baseline = index_terms(vault)
    git(vault, "init", "-q")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "vault")
    home = tmp_path / "home"
    cache = home / ".cache"
    project = tmp_path / PROJECT
    project.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")},
           "HOME": str(home), "XDG_CACHE_HOME": str(cache)}
    log = tmp_path / "serve.log"
    first_requests: list[str] = []
    *served, last = SESSIONS
    with serve(vault, log, "--verbose", env={"HOME": str(home), "XDG_CACHE_HOME": str(cache)}) as server:
        install(vault, project, "http", env)
        assert "hook prompt" in (home / ".claude" / "settings.json").read_text()
        token = read_token(vault, {})
        assert token
        for s in served:
            first_requests.append(session(claude, s, project, home, {"XDG_CACHE_HOME": str(cache), TOKEN_ENV: token}))
        served_log = log.read_text()
        for event in HOOK_EVENTS:  # the hooks were asked, by the sessions, through serve
            assert f'"POST /v1/hooks/{event} HTTP/1.1" 200' in served_log, (event, served_log[-3000:])
        assert server.stop(signal.SIGTERM) < float("inf")  # a clean stop: what serve keeps is written out
    install(vault, project, "stdio", env)
    first_requests.append(session(claude, last, project, home, {"XDG_CACHE_HOME": str(cache)}))
    assert all(START_MARK in r for r in first_requests)  # what the hooks answered reached the model
    flushed = cli("activity", "flush", "--vault", str(vault), env=env)
    assert flushed.returncode == 0 and "flushed" in flushed.stdout, flushed.stdout + flushed.stderr
    planned = cli("sleep", "--vault", str(vault), env=env)  # a sleep plan quotes notes: the captures' text
    assert planned.returncode == 0, planned.stderr
    # the sessions were captured, each with its words (the redacted exchange: the secrets and private text gone)
    raw = {p.relative_to(vault).as_posix(): p.read_text(encoding="utf-8") for p in (vault / "raw").rglob("*.md")
           if "debugging session" not in p.name}
    captured = "\n".join(raw.values())
    for s in SESSIONS:
        for words in s.words:
            assert words in captured, (words, sorted(raw))
    assert "[private]" in captured and "[redacted: " in captured
    # the hooks' recalls were logged and flushed into the versioned log, as fingerprints
    activity = b"".join(p.read_bytes() for p in (vault / ".cortex" / "activity").glob("*.jsonl"))
    assert activity.count(b'"client":"hook"') >= len(SESSIONS) and b'"query_hash":"' in activity, activity[-2000:]
    # git: what a commit would take names no prompt text; only the captures in raw/ hold (redacted) session text
    status = git(vault, "status", "--porcelain", "--untracked-files=all")
    assert ".cortex/activity/" in status and "raw/" in status, status
    git(vault, "add", "-A")
    diff = git(vault, "diff", "--cached")
    outside_raw = git(vault, "diff", "--cached", "--", ".", ":(exclude)raw")
    prompt_words = [w for s in SESSIONS for w in s.words] + [w for s in SESSIONS for w in re.findall(
        r"\b(?:vermilion|tangerine|cerulean|saffron|chartreuse)\b", s.prompt)]
    assert not [w for w in prompt_words if w in status or w in outside_raw], (status, outside_raw[-3000:])
    assert not [n for n in NEEDLES if n in status + diff]
    # no byte of a secret or private text anywhere vault-cortex writes
    found = (leaks(vault, baseline, skip=[".git/"]) + leaks(home, baseline, skip=[".claude/", ".claude.json"])
             + leaks(project, baseline)
             + [f"serve.log: {n}" for n in NEEDLES if any(f in log.read_bytes() for f in forms(n))]
             + [f"the sleep plan: {n}" for n in NEEDLES if n in planned.stdout])
    assert not found, "\n".join(found)
