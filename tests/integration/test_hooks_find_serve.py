"""The hooks find the vault's running `serve` where it recorded its URL (its serve lock), whatever port it was
started on, before the address its settings give (read by the one settings loader, as `serve` reads them); a
record whose process is gone is ignored."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from serving import free_port, serve

from server import hooks
from server.serve_lock import lock_path, recorded_url
from vault_cortex.files.vault import init_vault

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"


def test_a_hook_posts_to_serve_on_a_port_the_config_does_not_name(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    init_vault(vault)
    config_port = free_port()
    config = vault / ".cortex" / "config.toml"
    config.write_text(config.read_text().replace("\nport = 8765\n", f"\nport = {config_port}\n"))
    assert hooks.server_url(vault) == f"http://127.0.0.1:{config_port}"
    log = tmp_path / "serve.log"
    with serve(vault, log, "--verbose") as server:
        assert server.url != f"http://127.0.0.1:{config_port}"
        assert recorded_url(vault) == server.url
        assert hooks.server_urls(vault) == [server.url, f"http://127.0.0.1:{config_port}"]
        payload = json.loads((FIXTURES / "user_prompt_submit.json").read_text())
        payload["prompt"] = "How do I calibrate the capacitive soil moisture probes?"
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
        done = subprocess.run([sys.executable, "-m", "server.cli", "hook", "prompt", "--vault", str(vault)],
                              input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "Capacitive soil moisture calibration" in json.loads(done.stdout)["hookSpecificOutput"][
            "additionalContext"]
        assert '"POST /v1/hooks/prompt HTTP/1.1" 200' in log.read_text()  # the server answered it
    assert recorded_url(vault) is None  # a serve that stopped leaves no URL behind
    assert hooks.server_urls(vault) == [f"http://127.0.0.1:{config_port}"]


def test_a_record_is_read_only_while_its_process_lives(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    lock = lock_path(root)
    lock.parent.mkdir(parents=True)
    assert recorded_url(root) is None  # no lock file
    lock.write_text(f"pid {os.getpid()} at http://127.0.0.1:18701\n")
    assert recorded_url(root) == "http://127.0.0.1:18701"
    lock.write_text(f"pid {os.getpid()} at http://0.0.0.0:18701\n")
    assert recorded_url(root) == "http://127.0.0.1:18701"  # a wildcard bind is reached on loopback
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(f"pid {dead.pid} at http://127.0.0.1:18701\n")
    assert recorded_url(root) is None  # killed without clearing its record
    for junk in ("", "garbage", "pid x at y", "\xff"):
        lock.write_text(junk)
        assert recorded_url(root) is None
    elsewhere = tmp_path / "index elsewhere"  # serve --index-dir, or $VAULT_CORTEX_INDEX_DIR
    lock_path(root, elsewhere).parent.mkdir()
    lock_path(root, elsewhere).write_text(f"pid {os.getpid()} at http://127.0.0.1:18702\n")
    assert recorded_url(root, elsewhere) == "http://127.0.0.1:18702"
    assert recorded_url(root, None, {"VAULT_CORTEX_INDEX_DIR": str(elsewhere)}) == "http://127.0.0.1:18702"
    assert recorded_url(root, None, {}) is None


# What the hook command may load besides the standard library and server/: the settings loader and what it imports
# (msgspec, which loads typing_extensions), never the library's index, model or numpy.
SETTINGS_LOADER = {"vault_cortex", "vault_cortex.config", "vault_cortex.errors", "vault_cortex.limits"}
SETTINGS_LOADER_NEEDS = {"msgspec", "typing_extensions"}


def imported(stderr: str) -> set[str]:
    """The modules `python -X importtime` listed, dotted."""
    return {m.group(1) for m in re.finditer(r"^import time:[^|]*\|[^|]*\| *([\w.]+)", stderr, re.M)}


def test_a_hook_reaches_serve_at_the_address_the_settings_give(tmp_path: Path) -> None:
    """No record to read (serve keeps its index, and so its lock, elsewhere): the hook goes where the vault's
    settings say, config.toml's `[server] port` or `$VAULT_CORTEX_SERVER_PORT` over it, as `serve` reads them; and
    the hook process loads only the standard library, server/ and the settings loader."""
    vault = tmp_path / "vault"
    init_vault(vault)
    config = vault / ".cortex" / "config.toml"
    template = config.read_text()
    payload = json.loads((FIXTURES / "user_prompt_submit.json").read_text())
    payload["prompt"] = "How do I calibrate the capacitive soil moisture probes?"
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    log = tmp_path / "serve.log"
    with serve(vault, log, "--verbose", env={"VAULT_CORTEX_INDEX_DIR": str(tmp_path / "index")}) as server:
        port = int(server.url.rsplit(":", 1)[1])
        assert recorded_url(vault) is None  # the hook cannot find it by its record
        answered = []
        for config_port, extra in ((port, {}), (free_port(), {"VAULT_CORTEX_SERVER_PORT": str(port)})):
            config.write_text(template.replace("\nport = 8765\n", f"\nport = {config_port}\n"))
            assert hooks.server_urls(vault, extra) == [server.url]
            session = {**payload, "session_id": f"settings-{len(answered)}"}  # a memory is pushed once a session
            done = subprocess.run([sys.executable, "-X", "importtime", "-m", "server.cli", "hook", "prompt", "--vault",
                                   str(vault)], input=json.dumps(session), capture_output=True, text=True,
                                  env={**env, **extra}, timeout=120)
            said = "".join(line for line in done.stderr.splitlines(True) if not line.startswith("import time:"))
            assert done.returncode == 0 and done.stdout.strip(), said
            assert "Capacitive soil moisture calibration" in json.loads(done.stdout)["hookSpecificOutput"][
                "additionalContext"]
            answered.append(log.read_text().count('"POST /v1/hooks/prompt HTTP/1.1" 200'))
            modules = imported(done.stderr)
            assert "json" in modules, done.stderr[-2000:]  # the listing was read
            assert {m for m in modules if m.split(".")[0] == "vault_cortex"} <= SETTINGS_LOADER
            others = {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names) - {"server", "vault_cortex"}
            found = {m for m in others if importlib.util.find_spec(m) is not None}  # not a failed probe (`org`)
            assert found - startup() <= SETTINGS_LOADER_NEEDS, sorted(found - startup())
    assert answered == [1, 2]  # the server answered each hook: the config's port, then the variable's


def startup() -> set[str]:
    """The top-level modules the interpreter loads before any code runs (site, an editable install's finder)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True,
                          timeout=60)
    return {m.split(".")[0] for m in imported(done.stderr)}
