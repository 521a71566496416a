"""`vault-cortex install gemini --scope project`, then a real `gemini -p` session in that project (offline against
the scripted API of tests/e2e/gemini_cli.py): Gemini CLI runs the installed command for every registered event and
starts the installed MCP server, and the session completes; with the capture hook's name in `hooksConfig.disabled`
(as install's notice says), the next session runs every hook but that one.

The installed `vault-cortex` is a recording wrapper of that name (`--command`): it logs each call and its payload's
event, then runs this installation's real `vault-cortex` with the same input and hands back its output and exit.
What the hooks do for Gemini (the adapter behind `--client gemini`) is checked where that adapter is tested; here,
that Gemini runs what the installer wrote, and that the MCP entry gives the model vault-cortex's tools.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from gemini_cli import GeminiAPI, Text, find_gemini, run_gemini, shell

from server.cli import main
from server.install import default_command
from vault_cortex.files.vault import init_vault

pytestmark = pytest.mark.slow

WRAPPER = """\
#!{python}
import json, os, subprocess, sys
real, log = {real!r}, {log!r}
if sys.argv[1:2] != ["hook"]:  # the MCP server: run it in this process's place
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({{"argv": sys.argv[1:]}}) + "\\n")
    os.execv(real, [real, *sys.argv[1:]])
data = sys.stdin.buffer.read()
done = subprocess.run([real, *sys.argv[1:]], input=data, capture_output=True)
with open(log, "a", encoding="utf-8") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "event": json.loads(data).get("hook_event_name"),
                         "exit": done.returncode}}) + "\\n")
sys.stdout.buffer.write(done.stdout)
sys.stderr.buffer.write(done.stderr)
sys.exit(done.returncode)
"""


def test_a_real_gemini_session_runs_every_installed_hook_and_the_mcp_server(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gemini = find_gemini()
    vault, project, home, log = tmp_path / "vault", tmp_path / "project", tmp_path / "home", tmp_path / "calls.jsonl"
    init_vault(vault)
    project.mkdir()
    real = default_command()
    assert Path(real).is_file(), real  # this installation's entry point, which the hooks run
    wrapper = tmp_path / "bin" / "vault-cortex"
    wrapper.parent.mkdir()
    wrapper.write_text(WRAPPER.format(python=sys.executable, real=real, log=str(log)), encoding="utf-8")
    wrapper.chmod(0o755)
    assert main(["install", "gemini", "--vault", str(vault), "--scope", "project", "--project", str(project),
                 "--command", str(wrapper)]) == 0
    assert "Gemini CLI (project scope) now runs vault-cortex" in capsys.readouterr().err
    with GeminiAPI([shell("ls"), Text("The folder is empty.")]) as api:
        session = run_gemini(gemini, api, project, home, "What is in this folder?")
    assert session.done.returncode == 0, session.done.stderr
    assert session.done.stdout.strip() == "The folder is empty."
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    hook_calls = [c for c in calls if c["argv"][0] == "hook"]
    assert [(c["event"], c["argv"][1]) for c in hook_calls] == [
        ("SessionStart", "session-start"), ("BeforeAgent", "prompt"), ("AfterTool", "tool-result"),
        ("AfterAgent", "stop"), ("SessionEnd", "session-end")]
    resolved = str(vault.resolve())
    assert all(c["argv"][2:] == ["--vault", resolved, "--client", "gemini"] and c["exit"] == 0 for c in hook_calls)
    assert ["mcp", "--vault", resolved] in [c["argv"] for c in calls]
    offered = {d["name"] for tool in api.main_requests()[0].get("tools") or []
               for d in tool.get("functionDeclarations") or []}
    tools = ("recall", "context", "remember", "link", "note", "overview", "habits", "resonance", "curiosity", "sleep")
    missing = [t for t in tools if not any(name == t or name.endswith(f"_{t}") for name in offered)]
    assert not missing, sorted(offered)  # every tool of the MCP server reached the model: Gemini took each schema
    # Gemini CLI's own switch turns a hook off too: the SessionEnd hook's name in hooksConfig.disabled
    settings_file = project / ".gemini" / "settings.json"
    settings = json.loads(settings_file.read_text(encoding="utf-8"))
    settings_file.write_text(json.dumps({**settings, "hooksConfig": {"disabled": ["vault-cortex-session-end"]}}),
                             encoding="utf-8")
    log.unlink()
    with GeminiAPI([Text("Nothing to do.")]) as api:
        session = run_gemini(gemini, api, project, home, "Anything?")
    assert session.done.returncode == 0, session.done.stderr
    events = [c["event"] for c in map(json.loads, log.read_text(encoding="utf-8").splitlines()) if "event" in c]
    assert events == ["SessionStart", "BeforeAgent", "AfterAgent"]
    assert main(["uninstall", "gemini", "--scope", "project", "--project", str(project)]) == 0
    assert json.loads(settings_file.read_text()) == {"hooksConfig": {"disabled": ["vault-cortex-session-end"]}}
