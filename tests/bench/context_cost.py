"""What every token the agent is handed costs: start context, recall hits, tool schemas, stdio start-up, pushed gists.

Tokens are characters / 4 throughout (the same yardstick for every output form, whatever the tokenizer).
On a fresh copy of the starter vault (`vault_template/`, initialised and synced as `vault-cortex init` makes it):
1. start context: `vault-cortex hook session-start` run as the real command with a SessionStart payload whose
   `cwd` is /some/where/PROJECT, for an unrelated project (`tax-website`) and for the starter vault's own
   (`greenhouse-sensor`): the tokens of the hook's additionalContext (what reaches the model) and the notes it
   holds, in the order they first appear (a note counts where its vault path, with or without `.md`, appears);
2. MCP recall through the real `mcp` client against `vault-cortex mcp` over stdio: the `recall` tool called with
   only the arguments its inputSchema has that the bench fills (`query`), a few questions about the starter vault
   and a nonsense query; tokens of the result's text (every content item's text), per hit, and of its structured
   JSON beside it. Hits: the structured result's `hits` when it has them, else the vault notes the text names
   (by path, else by title);
3. tool schemas: tools/list as JSON (name, description and inputSchema of every tool, compact separators), the
   output schemas beside them (a client that shows them pays those too), and the server's instructions;
4. stdio time to tools: seconds from spawning `vault-cortex mcp --vault COPY` to tools/list answered, median of
   `--runs`;
5. gist hit rate, whether the pushed passage holds the evidence, with the hook's own code in-process (`run_hook`;
   each pushed memory's block as the hook's renderer, `server.hooks.render_memory`, made it, and found in the
   hook's output; without that renderer the output is cut at each pushed note's path):
   (a) LoCoMo dev questions (`--data`, categories 1-4, `--questions N` sampled, seeded) through the prompt hook in
       each conversation's vault (one note per dialog turn, as tests/bench/locomo.py builds it). Among pushed
       memories that are an evidence turn: the share whose block holds >= 60% of the turn's content words (words
       of 3+ letters, not stop words); and, for questions whose answer is short (<= 6 words) and literally in
       that turn, the share whose block holds every word of the answer;
   (b) failure fixtures (tests/fixtures/failures/*.json: a failing command's `error`, the vault note with the
       fix, symptom first and the fix a line or two later, and the fix's key string) through the tool-failure
       hook (PostToolUseFailure payload) on a starter vault with every fixture note added: the share whose fix
       note was pushed, and the share whose pushed block of it holds the fix string.

Run: `python tests/bench/context_cost.py [--data DIR] [--work DIR] [--questions N] [--runs N] [--seed N]`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import server.hooks as hooks  # noqa: E402
from tests.bench import locomo  # noqa: E402
from vault_cortex import Cortex  # noqa: E402
from vault_cortex.files.vault import init_vault  # noqa: E402

FAILURES = ROOT / "tests" / "fixtures" / "failures"
CHARS_PER_TOKEN = 4
UNRELATED = "tax-website"
PROJECT = "greenhouse-sensor"  # the project the starter vault's notes carry
QUERIES = (
    "why did the greenhouse dashboard freeze",
    "how long does a sensor node last on one battery",
    "how do I calibrate the capacitive soil moisture probe",
    "why does the SQLite WAL file keep growing",
    "how should I write commit messages",
)
NONSENSE = "qwzx nonsense flibber"
KEY_WORD_SHARE = 0.6  # a block "holds the turn" when it has this share of the turn's content words
SHORT_ANSWER_WORDS = 6
STOP = frozenset("""a about above after again all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having he her
here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or other
our out over own same she should so some such than that the their them then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you your yeah yes oh
really so gonna got get like well thanks thank""".split())


def tokens(text: str) -> float:
    return len(text) / CHARS_PER_TOKEN


def quiet_env(vault: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    return env | ({hooks.VAULT_ENV: str(vault)} if vault else {})


# -- the starter vault ---------------------------------------------------------------------------------------
def starter(dest: Path, extra: Mapping[str, str] | None = None) -> Path:
    """The starter vault at `dest` as `init` makes it, its files aged ten minutes (recency as a user sees it on the
    day), `extra` notes (vault path → text) added, synced."""
    init_vault(dest)
    for name, text in (extra or {}).items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(text, encoding="utf-8")
    when = time.time() - 600
    for path in dest.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, (when, when))
    with Cortex.open(dest) as cx:
        cx.sync()
    return dest


def note_paths(vault: Path) -> list[str]:
    return sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md")
                  if not p.relative_to(vault).parts[0].startswith((".", "_")))


def mentioned(text: str, paths: Sequence[str]) -> list[tuple[int, str]]:
    """(position, path) of every note whose vault path (with or without `.md`) the text names, by first position."""
    found = []
    for path in paths:
        m = re.search(r"(?<![\w/.-])" + re.escape(path.removesuffix(".md")) + r"(?:\.md)?(?![\w-])", text)
        if m:
            found.append((m.start(), path))
    return sorted(found)


# -- 1. the start context ------------------------------------------------------------------------------------
def start_context(vault: Path, project: str) -> tuple[str, float]:
    """The SessionStart hook's additionalContext as the real command prints it (no server: it opens the vault),
    and the command's seconds."""
    payload = {"session_id": f"bench-start-{project}", "hook_event_name": "SessionStart", "source": "startup",
               "cwd": f"/some/where/{project}"}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "server.cli", "hook", "session-start"], input=json.dumps(payload),
                          text=True, capture_output=True, env=quiet_env(vault), cwd=ROOT, check=True, timeout=300)
    seconds = time.perf_counter() - t0
    out = json.loads(done.stdout) if done.stdout.strip() else {}
    return str(out.get("hookSpecificOutput", {}).get("additionalContext", "")), seconds


# -- 2-4. the MCP server over stdio --------------------------------------------------------------------------
def result_text(result: Any) -> str:
    """Every content item's text of a tool result (what a client shows the model)."""
    return "\n".join(str(getattr(item, "text", "")) for item in result.content if getattr(item, "text", None))


def hit_count(result: Any, text: str, paths: Sequence[str]) -> int:
    structured = result.structured_content
    if isinstance(structured, dict) and isinstance(structured.get("hits"), list):
        return len(structured["hits"])
    # a text form names its hits by path, else (a form without paths) by title
    return len(mentioned(text, paths)) or sum(Path(p).stem in text for p in paths)


def mcp_figures(vault: Path, runs: int) -> dict[str, Any]:
    """Tool schemas, instructions, recall results and time to tools over stdio (each run a new process)."""
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "mcp", "--vault", str(vault)],
                                   env=quiet_env(), cwd=str(ROOT))
    paths = note_paths(vault)

    async def session(first: bool) -> dict[str, Any]:
        t0 = time.perf_counter()
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            out: dict[str, Any] = {"seconds": time.perf_counter() - t0}
            if not first:
                return out
            out["tools"], out["instructions"] = tools, client.instructions or ""
            recall = next((t for t in tools if t.name == "recall"), None)
            if recall is not None:
                allowed = set((recall.input_schema or {}).get("properties", {}))
                out["recall"] = []
                for q in (*QUERIES, NONSENSE):
                    result = await client.call_tool("recall", {k: v for k, v in {"query": q}.items() if k in allowed})
                    text = result_text(result)
                    structured = result.structured_content
                    out["recall"].append((q, text, json.dumps(structured) if structured is not None else "",
                                          hit_count(result, text, paths), bool(result.is_error)))
            return out

    first = anyio.run(session, True)
    times = [first["seconds"], *(anyio.run(session, False)["seconds"] for _ in range(runs - 1))]
    return first | {"times": times}


def schema_json(tools: Sequence[Any]) -> tuple[str, str]:
    """tools/list as JSON: name, description and inputSchema of every tool; and the output schemas."""
    listed = [{"name": t.name, "description": t.description or "", "inputSchema": t.input_schema} for t in tools]
    outputs = [{"name": t.name, "outputSchema": t.output_schema} for t in tools if t.output_schema]
    compact = (",", ":")
    return json.dumps(listed, separators=compact), json.dumps(outputs, separators=compact) if outputs else ""


# -- 5. gists: does the pushed block hold the evidence? ------------------------------------------------------
@contextmanager
def pushed_blocks() -> Iterator[list[tuple[str, str]]]:
    """(path, block) of every memory the hook's renderer renders while inside (some may not fit the budget)."""
    render = getattr(hooks, "render_memory", None)
    seen: list[tuple[str, str]] = []
    if render is None:
        yield seen
        return

    def spy(hit: Any, *args: Any, **kwargs: Any) -> Any:
        block = render(hit, *args, **kwargs)
        seen.append((str(hit.path), str(block)))
        return block

    hooks.render_memory = spy
    try:
        yield seen
    finally:
        hooks.render_memory = render


def push(cx: Cortex, event: str, payload: dict[str, Any], paths: Sequence[str]) -> tuple[str, dict[str, str]]:
    """The hook's additionalContext and, per pushed note, its block in it."""
    with pushed_blocks() as rendered:
        out = hooks.run_hook(lambda: cx, event, payload)
    context = str(out.get("hookSpecificOutput", {}).get("additionalContext", ""))
    blocks = {p: b for p, b in rendered if b.strip() and b.strip() in context}
    if context and not blocks:  # the renderer is gone or not the one used: each named note's block runs to the next
        found = mentioned(context, paths)
        ends = [pos for pos, _ in found[1:]] + [len(context)]
        blocks = {p: context[pos:end] for (pos, p), end in zip(found, ends, strict=True)}
    return context, blocks


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if len(w) >= 3 and w not in STOP}


def holds_turn(block: str, turn: str) -> bool:
    want = content_words(turn)
    return bool(want) and len(want & set(words(block))) >= KEY_WORD_SHARE * len(want)


def holds_answer(block: str, answer: str) -> bool:
    got = set(words(block))
    return all(w in got for w in words(answer))


def literal_answer(answer: str, turn: str) -> bool:
    """A short answer whose words all appear in the evidence turn (a date, a paraphrase or a list does not)."""
    said = words(answer)
    return 0 < len(said) <= SHORT_ANSWER_WORDS and set(said) <= set(words(turn))


def turns(conv: Mapping[str, Any], conv_id: str) -> dict[str, str]:
    """Vault path → the dialog turn's text, as locomo.build_vault writes the notes."""
    out = {}
    for key in (k for k in conv if re.fullmatch(r"session_\d+", k)):
        for n, turn in enumerate(conv[key], 1):
            out[f"conv-{conv_id}/D{key.split('_')[1]}-{n}.md"] = str(turn["text"])
    return out


def locomo_gists(data: Path, work: Path, questions: int, seed: int) -> dict[str, Any]:
    """Push each sampled question through the prompt hook in its conversation's vault (a copy: the hook logs)."""
    from vault_cortex.config import load_settings
    from vault_cortex.index.embed import load_embedder

    convs = locomo.load_conversations(data)
    asked = [(i, qa) for i, (_, conv) in enumerate(convs) for qa in conv["qa"]
             if qa.get("category") in (1, 2, 3, 4) and qa.get("evidence")]
    sample = sorted(random.Random(seed).sample(asked, min(questions, len(asked))), key=lambda x: x[0])
    embedder, tally = None, {"questions": len(sample), "fired": 0, "pushed": 0, "evidence": 0, "turn": 0,
                             "answerable": 0, "answer": 0, "block_tokens": [], "context_tokens": []}
    with tempfile.TemporaryDirectory(prefix="vault-cortex-context-cost-") as tmp:
        for i, (conv_id, conv) in enumerate(convs):
            mine = [qa for j, qa in sample if j == i]
            if not mine:
                continue
            built = work / f"conv-{conv_id}"
            if not (built / f"conv-{conv_id}").exists():
                shutil.rmtree(built, ignore_errors=True)
                locomo.build_vault(conv, conv_id, built)
            embedder = embedder or load_embedder(load_settings(built, env={}).embedding)
            # ranked at the time the vault was written, as locomo.py does: the same figures whenever it runs
            written = datetime.fromtimestamp(max(p.stat().st_mtime for p in (built / f"conv-{conv_id}").glob("*.md")),
                                             UTC)

            def clock(at: datetime = written) -> datetime:
                return at

            with Cortex.open(built, embedder=embedder, clock=clock) as cx:
                cx.sync()  # the index kept in --work; the copy below is the one the hooks write to
            root = Path(tmp) / f"conv-{conv_id}"
            shutil.copytree(built, root, symlinks=True)
            said = turns(conv, conv_id)
            with Cortex.open(root, embedder=embedder, clock=clock) as cx:
                for n, qa in enumerate(mine):
                    payload = {"session_id": f"bench-{conv_id}-{n}", "hook_event_name": "UserPromptSubmit",
                               "prompt": str(qa["question"])}
                    score(tally, *push(cx, "prompt", payload, sorted(said)),
                          locomo.evidence_paths(conv_id, qa["evidence"]), str(qa.get("answer", "")), said)
            print(f"conv-{conv_id}: {len(mine)} questions pushed", file=sys.stderr, flush=True)
    return tally


def score(tally: dict[str, Any], context: str, blocks: Mapping[str, str], evidence: set[str], answer: str,
          said: Mapping[str, str]) -> None:
    if not context:
        return
    tally["fired"] += 1
    tally["pushed"] += len(blocks)
    tally["context_tokens"].append(tokens(context))
    tally["block_tokens"] += [tokens(b) for b in blocks.values()]
    for path in evidence & set(blocks):
        tally["evidence"] += 1
        tally["turn"] += holds_turn(blocks[path], said[path])
        if literal_answer(answer, said[path]):
            tally["answerable"] += 1
            tally["answer"] += holds_answer(blocks[path], answer)


Failure = tuple[str, list[str], bool, float]  # fixture, notes pushed, the fix note's block holds the fix, tokens


def failure_gists(work: Path) -> list[Failure]:
    """Per failure fixture: the notes pushed, whether the fix note's block holds the fix string, the context's
    tokens."""
    fixtures = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(FAILURES.glob("*.json"))}
    vault = starter(work / "failures", {f["note"]: f["text"] for f in fixtures.values()})
    paths, out = note_paths(vault), []
    with Cortex.open(vault) as cx:
        for name, f in fixtures.items():
            payload = {"session_id": f"bench-failure-{name}", "hook_event_name": "PostToolUseFailure",
                       "tool_name": "Bash", "tool_input": {"command": f["command"]}, "tool_use_id": f"toolu_{name}",
                       "error": f["error"], "is_interrupt": False, "cwd": f"/home/me/{PROJECT}"}
            context, blocks = push(cx, "tool-failure", payload, paths)
            notes = ["FIX" if p == f["note"] else p.removesuffix(".md") for p in blocks]
            out.append((name, notes, f["fix"] in blocks.get(f["note"], ""), tokens(context)))
    return out


# -- the table -----------------------------------------------------------------------------------------------
def share(part: int, whole: int) -> str:
    return f"{part / whole:.2f} ({part}/{whole})" if whole else "n/a (0)"


def row(name: str, value: str) -> None:
    print(f"{name:<66}{value}")


def report_start(vault: Path, projects: Sequence[str]) -> None:
    paths = note_paths(vault)
    for project in projects:
        text, seconds = start_context(vault, project)
        listed = [p for _, p in mentioned(text, paths)]
        row(f"start context, cwd .../{project}: tokens", f"{tokens(text):.0f} ({len(listed)} notes, "
            f"the command {seconds:.1f} s)")
        print("    notes, in order: " + "; ".join(p.removesuffix(".md") for p in listed))


def report_mcp(vault: Path, runs: int) -> None:
    got = mcp_figures(vault, runs)
    tools = got["tools"]
    listed, outputs = schema_json(tools)
    row(f"tool schemas, tools/list ({len(tools)} tools): tokens", f"{tokens(listed):.0f}")
    row("  output schemas beside them: tokens", f"{tokens(outputs):.0f}")
    row("server instructions: tokens", f"{tokens(got['instructions']):.0f}")
    if "recall" not in got:
        row("recall", "no `recall` tool")
    for q, text, structured, hits, error in got.get("recall", []):
        per = f"{tokens(text) / hits:.0f} per hit" if hits else "no hits"
        row(f"recall {q!r}{' (error)' if error else ''}",
            f"{tokens(text):.0f} tokens, {hits} hits, {per}; structured JSON {tokens(structured):.0f}")
    real = [(t, h) for q, t, _, h, _ in got.get("recall", []) if q != NONSENSE and h]
    if real:
        row("recall, realistic queries: tokens per hit (all text / all hits)",
            f"{sum(tokens(t) for t, _ in real) / sum(h for _, h in real):.0f}")
    times = got["times"]
    row(f"stdio time to tools, median of {len(times)}", f"{statistics.median(times):.2f} s "
        f"(min {min(times):.2f}, max {max(times):.2f})")


def report_gists(tally: Mapping[str, Any], failures: Sequence[Failure]) -> None:
    row("LoCoMo prompt pushes: questions fired / asked", share(tally["fired"], tally["questions"]))
    row("  pushed memories, of them evidence turns", f"{tally['pushed']}, {tally['evidence']}")
    if tally["context_tokens"]:
        row("  tokens per push (whole context) / per pushed memory",
            f"{statistics.fmean(tally['context_tokens']):.0f} / {statistics.fmean(tally['block_tokens'] or [0]):.0f}")
    row(f"  gist holds >= {KEY_WORD_SHARE:.0%} of the evidence turn's content words", share(tally["turn"],
                                                                                          tally["evidence"]))
    row("  gist holds the answer (short answers literally in the turn)", share(tally["answer"], tally["answerable"]))
    fired = [f for f in failures if f[1]]
    pushed = [f for f in fired if "FIX" in f[1]]
    row("failure fixtures: pushed anything / fix note pushed", f"{share(len(fired), len(failures))} / "
        f"{share(len(pushed), len(failures))}")
    row("  the fix note's pushed block holds the fix string", share(sum(f[2] for f in pushed), len(pushed)))
    row("  of all fixtures, the fix string reached the agent", share(sum(f[2] for f in failures), len(failures)))
    if fired:
        row("  tokens per failure push (whole context)", f"{statistics.fmean(f[3] for f in fired):.0f}")
    for name, notes, held, _ in failures:  # FIX: the fixture's own note
        print(f"    {name}: {', '.join(notes) or 'nothing pushed'}{' (fix string in it)' if held else ''}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=locomo.DATA, help="the LoCoMo development conversations")
    ap.add_argument("--work", type=Path, default=Path("/tmp/vault-cortex-context-cost"),
                    help="where the LoCoMo vaults and their index are kept between runs")
    ap.add_argument("--questions", type=int, default=200, help="LoCoMo questions sampled (seeded)")
    ap.add_argument("--runs", type=int, default=5, help="stdio start-ups timed")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vault-cortex-context-cost-") as tmp:
        master = starter(Path(tmp) / "master")
        print(f"{'figure (tokens = characters / 4)':<66}value")
        fresh = Path(tmp) / "start"
        shutil.copytree(master, fresh, symlinks=True)  # copy2 keeps mtimes: the copy's index is current
        report_start(fresh, (UNRELATED, PROJECT))
        fresh = Path(tmp) / "mcp"
        shutil.copytree(master, fresh, symlinks=True)
        report_mcp(fresh, args.runs)
        failures = failure_gists(Path(tmp))
    args.work.mkdir(parents=True, exist_ok=True)
    report_gists(locomo_gists(args.data, args.work, args.questions, args.seed), failures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
