"""The `vault-cortex` command, its one entry point (`main`): the library's commands (vault_cortex/cli/) plus the
server's group, `serve`, `mcp` (stdio), `hook`, `install` and `uninstall`."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from server import clients, hooks
from server.cli_install import cmd_install, cmd_uninstall
from server.serve_lock import recorded_url, sole_server

if TYPE_CHECKING:
    from types import FrameType

    import uvicorn

    from vault_cortex.cli.main import AddCommand
    from vault_cortex.cortex import Cortex
    from vault_cortex.index.sync import SyncReport

log = logging.getLogger("server")
MAX_PORT = 65535


def _hook_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("event", metavar="EVENT", help=f"one of: {', '.join(hooks.HOOK_EVENTS)}")
    p.add_argument("--vault", default=None, help=f"the vault folder (default: ${hooks.VAULT_ENV})")
    p.add_argument("--client", default=clients.DEFAULT, metavar="NAME",
                   help=f"the agent running the hook: {', '.join(clients.CLIENTS)} (default: {clients.DEFAULT})")
    p.add_argument("--url", default=None,
                   help=f"the server's URL (default: ${hooks.URL_ENV}, else the vault's [server] host and port)")


def _vault_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vault", default=os.environ.get(hooks.VAULT_ENV, "."),
                   help=f"the vault folder (default: ${hooks.VAULT_ENV} or the current folder)")


def prepare_vault(root: Path) -> bool:
    """Create the vault from the template if the folder is missing or empty; True if it was created."""
    from vault_cortex.errors import VaultNotFound
    from vault_cortex.files.vault import init_vault, is_vault

    if not root.exists() or (root.is_dir() and not any(root.iterdir())):
        init_vault(root)
        return True
    if not is_vault(root):
        raise VaultNotFound(f"{root} holds files but is not a vault (no .cortex/). To use these notes, adopt the "
                            f"folder first: `vault-cortex init {root}` (adds .cortex/ only; no note is written)")
    return False


def _announce(report: SyncReport) -> None:
    """Say once that the start-up sync is done (the server answers meanwhile; recall sees what is indexed)."""
    print(f"indexed {report.notes} notes in {report.seconds:.1f}s ({report.added} added, {report.updated} updated, "
          f"{report.deleted} deleted, {report.skipped} skipped); watching for changes", file=sys.stderr)


def _filled(seconds: float) -> None:
    """Say once that the vectors a words-first start left out are all in (recall matches by meaning everywhere)."""
    print(f"every chunk has its vector ({seconds:.0f}s after start): recall now matches by meaning everywhere",
          file=sys.stderr)


def cmd_serve(args: argparse.Namespace) -> int:
    from server.app import LOOPBACK_HOSTS
    from server.auth import is_loopback
    from vault_cortex.cortex import Cortex

    if args.port is not None and not 1 <= args.port <= MAX_PORT:
        print(f"error: --port must be a port number from 1 to {MAX_PORT}, not {args.port}", file=sys.stderr)
        return 2
    root = Path(args.vault).expanduser()
    if prepare_vault(root):
        print(f"created a vault at {root} from the template", file=sys.stderr)
    with Cortex.open(root, index_dir=args.index_dir) as cx:
        cx.index.check_index()  # once, before serving: a damaged index is set aside and rebuilt by the first sync
        settings = cx.settings.server
        host = args.host or settings.host
        port = args.port if args.port is not None else settings.port
        allowed_hosts: Sequence[str] | None = LOOPBACK_HOSTS
        if not is_loopback(host):
            if not args.allow_remote:
                print(f"error: refusing to bind {host}, which other machines can reach; the API serves your "
                      "notes. Pass --allow-remote if you mean it.", file=sys.stderr)
                return 2
            log.warning("binding %s: other machines can reach the API (the bearer token still guards it)", host)
            allowed_hosts = None if host in ("0.0.0.0", "::") else [*LOOPBACK_HOSTS, f"{host}:*"]
        where = f"[{host}]" if ":" in host else host
        with sole_server(cx.index.index_dir, f"http://{where}:{port}") as other:
            if other is not None:
                print(f"error: another `vault-cortex serve` already serves {cx.root} ({other}); two servers on one "
                      "vault race on its index. Stop it first, or point clients at it.", file=sys.stderr)
                return 1
            try:
                sock = bind(host, port)
            except OSError as exc:
                print(f"error: cannot listen on {where}:{port}: {_bind_problem(exc)}; stop what holds it, or pass "
                      "--port N (or set port in [server] of .cortex/config.toml)", file=sys.stderr)
                return 1
            with sock:
                _serve(cx, args, sock, allowed_hosts)
    print(f"stopped serving {root}", file=sys.stderr)
    return 0


def bind(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound before anything says "serving" (as uvicorn binds it).

    Its protocol is named (IPPROTO_TCP, not 0) because the connections it accepts inherit it, and asyncio turns
    Nagle's algorithm off (TCP_NODELAY) only on sockets that say TCP: without it, a response's body waited for
    the client's delayed ACK of its headers, 40 ms on every request of a kept-alive connection after the first.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _bind_problem(exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return "the port is already in use (another program, or a serve of another vault)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return "this machine has no such address"
    if exc.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges)"
    return exc.strerror or str(exc)


def _serve(cx: Cortex, args: argparse.Namespace, sock: socket.socket,
           allowed_hosts: Sequence[str] | None) -> None:
    """Serve the vault's API and MCP with its watcher and nightly sleep until Ctrl-C or SIGTERM."""
    import uvicorn

    from server.app import create_app
    from server.bearer import TOKEN_ENV, TOKEN_FILE, load_or_create_token
    from server.guard import OncePerWhile, guarded, max_connections, raise_fd_limit
    from server.nightly import Nightly
    from server.watch import DEBOUNCE_MS, Watcher
    from vault_cortex.cli.output import ProgressBar

    # A read-only vault keeps its token beside its index, and sleeps no nightly sleep (it would write notes).
    token_file = cx.index.index_dir / "token" if cx.read_only else cx.root / TOKEN_FILE
    token = load_or_create_token(cx.root, os.environ, path=token_file)
    watcher = Watcher(cx, debounce_ms=DEBOUNCE_MS, progress=ProgressBar(), announce=_announce, filled=_filled)
    nightly = Nightly(cx, schedule=lambda _s, _now: None) if cx.read_only else Nightly(cx)
    app = create_app(cx, token=token, watcher=watcher, nightly=nightly, allowed_hosts=allowed_hosts)
    host, port = sock.getsockname()[:2]
    where = f"[{host}]" if ":" in host else host
    token_at = "$" + TOKEN_ENV if os.environ.get(TOKEN_ENV, "").strip() else str(token_file)
    print(f"serving {cx.root} at http://{where}:{port}/v1 and /mcp; token in {token_at}", file=sys.stderr)
    if cx.read_only:
        print("read-only vault: recall, read and status work; writes answer 403 VaultReadOnly, no nightly sleep",
              file=sys.stderr)
    limit = max_connections(raise_fd_limit())
    for name in ("asyncio", "uvicorn.error"):  # a flood repeats one line: say it once per while, with a count
        logging.getLogger(name).addFilter(OncePerWhile())
    # Requests still running a second after Ctrl-C or SIGTERM are dropped: stopping never waits on them.
    # proxy_headers off: a client on loopback must not rename itself with X-Forwarded-For (the proof names it).
    _serve_until_stopped(uvicorn.Config(app, host=host, port=port, ws="none", lifespan="on", proxy_headers=False,
                                        timeout_graceful_shutdown=1, http=guarded(limit),
                                        backlog=min(2048, max(16, limit // 4)),  # accepted in one go, at most
                                        log_level="info" if args.verbose else "warning"), sock)


def _serve_until_stopped(config: uvicorn.Config, sock: socket.socket) -> None:
    """uvicorn's server, except that SIGINT/SIGTERM end it quietly: uvicorn re-raises the signal after its own
    graceful shutdown, which turned every Ctrl-C into a KeyboardInterrupt and a logged lifespan traceback; and
    a second Ctrl-C while stopping does not force-exit (which cancelled the lifespan mid-shutdown and logged a
    CancelledError traceback): the shutdown is bounded to about 2 s, so it just says it is on its way."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if self.should_exit:
                log.warning("already stopping (this takes at most a few seconds)")
                return
            super().handle_exit(sig, frame)

        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            handled = (signal.SIGINT, signal.SIGTERM)
            original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    Server(config).run(sockets=[sock])


def cmd_mcp(args: argparse.Namespace) -> int:
    import anyio

    from server.mcp_stdio import serve
    from vault_cortex.errors import VaultNotFound
    from vault_cortex.files.vault import is_vault

    root = Path(args.vault).expanduser()
    if not is_vault(root):
        raise VaultNotFound(f"no vault at {root}: run `vault-cortex init {root}` or `vault-cortex serve` first")
    url = recorded_url(root, args.index_dir, os.environ)
    if url is not None:
        log.warning("a server already serves this vault at %s: this process indexes beside it (each takes in "
                    "what the other wrote); `vault-cortex install claude-code --transport http` points Claude Code "
                    "at %s/mcp instead, sharing one index", url, url)
    anyio.run(serve, root, args.index_dir)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    import msgspec

    from server import status
    from vault_cortex.errors import VaultNotFound
    from vault_cortex.files.vault import is_vault

    root = Path(args.vault).expanduser()
    if not is_vault(root):
        raise VaultNotFound(f"{root} is not a vault (no .cortex/): `vault-cortex init {root}` makes it one")
    found = status.gather(root, index_dir=args.index_dir)
    print(msgspec.json.encode(found).decode() if args.json else status.render(found), end="\n" if args.json else "")
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    return hooks.main(args.event, args.vault, args.url, agent=args.client)


def build_parser() -> argparse.ArgumentParser:
    """The whole `vault-cortex` command line: the library's commands and the server's."""
    from vault_cortex.cli.main import build_parser as library_parser

    return library_parser(add_server_commands)


def add_server_commands(add: AddCommand) -> None:
    """serve, mcp (stdio), hook, install and uninstall."""
    from vault_cortex.cli.main import index_dir_arg

    p = add("serve", cmd_serve, "serve the vault over HTTP and MCP, re-indexing on every save",
            description="Create the vault if the folder is missing or empty, sync, then serve the HTTP API (/v1) "
                        "and MCP (/mcp) while watching the files; with [sleep] nightly = true, also run a light "
                        "sleep every night at nightly_at.")
    _vault_arg(p)
    index_dir_arg(p)
    p.add_argument("--host", default=None, help="address to bind (default: [server] host in .cortex/config.toml)")
    p.add_argument("--port", type=int, default=None, help="port (default: [server] port in .cortex/config.toml)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow binding an address other machines can reach")

    p = add("status", cmd_status, "what runs and is installed for a vault: index, server, watcher, indexing, installs",
            description="Show the vault's index (counts, last sync, indexing progress), whether a `serve` runs for "
                        "it (its pid and URL, its watcher), and where vault-cortex is installed for it (Claude "
                        "Code's settings, the Obsidian plugin). Changes nothing.")
    _vault_arg(p)
    index_dir_arg(p)
    p.add_argument("--json", action="store_true", help="print it as JSON")

    p = add("mcp", cmd_mcp, "serve MCP over stdio (for agents that launch their tools)",
            description="Serve the MCP tools over stdin/stdout, syncing and watching the vault.")
    _vault_arg(p)
    index_dir_arg(p)

    p = add("hook", cmd_hook, f"Claude Code hook: {', '.join(hooks.HOOK_EVENTS)} (JSON on stdin/stdout)",
            description="Run a Claude Code hook: read its JSON input on stdin, print its output. Always exits 0, "
                        "printing valid JSON or nothing.")
    _hook_args(p)

    for name in ("install", "uninstall"):
        verb = "write" if name == "install" else "remove"
        p = add(name, cmd_install if name == "install" else cmd_uninstall,
                f"{verb} vault-cortex in Claude Code, Codex CLI or Gemini CLI (MCP server and hooks) or Obsidian "
                "(the plugin)",
                description=f"claude-code: {verb} the MCP server entry and the hook entries of every event "
                            "vault-cortex supports in Claude Code's settings, merging with what is there (other "
                            f"hooks and servers are never touched). gemini: the same in Gemini CLI's settings.json. "
                            f"obsidian: {verb} the plugin in the vault's "
                            ".obsidian/plugins/vault-cortex/ (with install, its settings: the server's URL and the "
                            "token, git-ignored). codex: the same in Codex CLI's hooks.json (user: ~/.codex, project: "
                            "the project's .codex) and ~/.codex/config.toml (the MCP server, each hook's trust, the "
                            "project's trust), in a block of its own.")
        p.add_argument("agent", choices=("claude-code", "codex", "gemini", "obsidian"))
        _vault_arg(p)
        if name == "install":
            p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                           help="claude-code, gemini: stdio: the agent starts `vault-cortex mcp` itself (works "
                                "with no server); http: it talks to the running `vault-cortex serve` over HTTP with "
                                "the bearer token (default: stdio)")
        p.add_argument("--scope", choices=("user", "project"), default="user",
                       help="claude-code: user: ~/.claude/settings.json and ~/.claude.json; project: "
                            ".claude/settings.json and .mcp.json in the project folder; gemini: "
                            "~/.gemini/settings.json or the project's .gemini/settings.json (default: user)")
        p.add_argument("--project", default=None, metavar="DIR",
                       help="claude-code, gemini: the project folder (default: the current one)")
        p.add_argument("--command", default=None, metavar="CMD",
                       help="claude-code, gemini: how to run vault-cortex (default: this installation's executable, "
                            "absolute)")
        if name == "install":
            p.add_argument("--url", default=None,
                           help="obsidian: the server's URL for the plugin (default: the vault's [server] host and "
                                "port)")
        p.add_argument("--dry-run", action="store_true", help="print what would be written; write nothing")
        if name == "install":
            p.add_argument("--no-index", action="store_true",
                           help="claude-code, gemini: write the settings only; leave the vault's first index to "
                                "`serve`, the MCP server or `vault-cortex sync` (by default install indexes it, so "
                                "the first session has its memories)")


def _hook_fast(argv: Sequence[str]) -> int:
    """`vault-cortex hook ...` without importing the library (it loads numpy and ONNX) until it must."""
    p = argparse.ArgumentParser(prog="vault-cortex hook", add_help=True)
    _hook_args(p)
    try:
        args = p.parse_args(argv)
    except SystemExit:  # argparse exits 2 on a usage error, which would block the prompt: a hook exits 0
        return 0
    return hooks.main(args.event, args.vault, args.url, agent=args.client)


def _mcp_front(argv: Sequence[str]) -> None:
    """Start the stdio server's front (server/mcp_front.py), which answers the client's handshake while the SDK and
    the library are imported, when `vault-cortex mcp` is about to serve a vault (else the command says why not)."""
    from server import mcp_front
    from vault_cortex.files.vault import is_vault

    if {"-h", "--help"} & set(argv):
        return
    vault = os.environ.get(hooks.VAULT_ENV, ".")
    for i, arg in enumerate(argv):
        if arg.startswith("--vault="):
            vault = arg.removeprefix("--vault=")
        elif arg == "--vault" and i + 1 < len(argv):
            vault = argv[i + 1]
    if is_vault(Path(vault).expanduser()):
        mcp_front.start()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        return _hook_fast(args[1:])
    if args[:1] == ["mcp"]:
        _mcp_front(args[1:])
    if args in (["--version"], ["-V"]):  # what the parser's --version prints, without importing the library
        from importlib.metadata import version

        print(f"vault-cortex {version('vault-cortex')}")
        return 0
    from vault_cortex.cli.main import run

    return run(build_parser(), args)


if __name__ == "__main__":
    sys.exit(main())
