"""The hooks find the vault's running `serve` where it recorded its URL (its serve lock), whatever port it was
started on, before the config's port; a record whose process is gone is ignored."""

from __future__ import annotations

import json
import os
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
