"""What the MCP tools cost a client before any work is done: the size of the tool list an eager client sends with
every request, and how long the stdio server (`vault-cortex mcp`) takes to list its tools after it is started.

Both through the real `mcp` client over stdio, on a copy of the starter vault (`vault_template/`):
- tools/list characters: the JSON of each tool's name, description and inputSchema (what a client puts in the
  model's request), and that divided by 4 (tokens, roughly);
- time to tools: seconds from starting `vault-cortex mcp` until tools/list has answered, on a vault never indexed
  (`cold`: the first session) and on one whose index is current (`warm`: every later session); each run a new
  copy and a new process, `--runs N` of each (default 5), median and max;
- first recall: seconds from the start until a `recall` answers (it waits for the vault to open).
With `--code DIR` (a worktree of an older commit: `git worktree add /tmp/before <commit>`) the same is measured
with that code too, the runs alternating so a busy machine weighs on both alike.

Run: `python tests/bench/mcp_surface.py [--runs 5] [--code /tmp/before]`
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

HERE = Path(__file__).resolve().parents[2]


def surface_chars(tools: list[Any]) -> int:
    """Characters of the tool list as a client sends it to the model: name, description and input schema."""
    return len(json.dumps([{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                           for t in tools]))


def fresh_vault(work: Path, code: Path, warm: bool) -> Path:
    """A new copy of the starter vault; `warm`: indexed once already (by `code`'s own `vault-cortex sync`)."""
    vault = Path(tempfile.mkdtemp(dir=work)) / "vault"
    run = [sys.executable, "-m", "server.cli"]
    subprocess.run([*run, "init", str(vault)], cwd=code, check=True, capture_output=True)
    if warm:
        subprocess.run([*run, "sync", "--vault", str(vault)], cwd=code, check=True, capture_output=True)
    return vault


def one_run(vault: Path, code: Path) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "mcp", "--vault", str(vault)],
                                   cwd=str(code))

    async def main() -> dict[str, Any]:
        start = time.monotonic()
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            listed = time.monotonic() - start
            result = await client.call_tool("recall", {"query": "how do I write commit messages", "k": 3})
            recalled = time.monotonic() - start
        return {"tools": listed, "recall": recalled, "chars": surface_chars(tools), "count": len(tools),
                "error": result.is_error}

    return anyio.run(main)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--code", type=Path, default=None, help="an older checkout to measure beside this one")
    args = ap.parse_args()
    codes = {"this": HERE} | ({"other": args.code.resolve()} if args.code else {})
    seen: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            for name, code in codes.items():
                for kind in ("cold", "warm"):
                    vault = fresh_vault(Path(tmp), code, warm=kind == "warm")
                    out = one_run(vault, code)
                    seen.setdefault((name, kind), []).append(out)
                    print(f"run {i + 1} {name} {kind}: tools {out['tools']:.2f}s, recall {out['recall']:.2f}s",
                          file=sys.stderr, flush=True)
                    shutil.rmtree(vault.parent, ignore_errors=True)
    for (name, kind), runs in seen.items():
        first = runs[0]
        tools = [r["tools"] for r in runs]
        recall = [r["recall"] for r in runs]
        print(f"{name} ({kind}): {first['count']} tools, tools/list {first['chars']} chars (~{first['chars'] // 4} "
              f"tokens); time to tools median {statistics.median(tools):.2f}s max {max(tools):.2f}s; first recall "
              f"median {statistics.median(recall):.2f}s max {max(recall):.2f}s; errors {sum(r['error'] for r in runs)}")


if __name__ == "__main__":
    main()
