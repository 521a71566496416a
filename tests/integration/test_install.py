"""`vault-cortex install claude-code`: merged into real settings files, idempotent, and undone exactly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from server import hooks, install
from server.cli import main
from vault_cortex.errors import ConfigError
from vault_cortex.files.vault import init_vault

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "claude_settings"
REPO = Path(__file__).resolve().parents[2]
CMD = "/opt/vc/bin/vault-cortex"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "my vault"  # a space: commands must quote it
    init_vault(root)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def place(home: Path, settings: str | None = None, claude_json: str | None = None) -> tuple[Path, Path]:
    s_file, m_file = install.files("user", home=home)
    for name, dest in ((settings, s_file), (claude_json, m_file)):
        if name is not None:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(FIX / name, dest)
    return s_file, m_file


def run(vault: Path | None, home: Path, *, uninstall: bool = False, **kw: object) -> list[install.Change]:
    return install.apply("user", vault, install=not uninstall, command=CMD, home=home, **kw)  # type: ignore[arg-type]


def commands(settings: dict[str, object]) -> dict[str, list[str]]:
    hooks_ = settings.get("hooks", {})
    assert isinstance(hooks_, dict)
    return {event: [h["command"] for g in groups for h in g["hooks"]] for event, groups in hooks_.items()}


def test_every_hook_the_project_supports_is_installed() -> None:
    installed = {event for event, _ in install.HOOKS.values()}
    assert set(hooks.HOOK_EVENTS) <= installed
    assert {k: v for k, v in hooks.EVENT_NAMES.items()} == {
        v[0]: k for k, v in install.HOOKS.items() if v[0] in hooks.EVENT_NAMES}


def test_missing_files_are_created_and_uninstall_removes_them(vault: Path, home: Path) -> None:
    s_file, m_file = install.files("user", home=home)
    changes = run(vault, home)
    assert [c.created for c in changes] == [True, True]
    settings = json.loads(s_file.read_text())
    vault_q = f"'{vault.resolve()}'"
    assert commands(settings) == {event: [f"{CMD} hook {ours} --vault {vault_q}"]
                                  for event, (ours, _) in install.HOOKS.items()}
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == "*"
    assert "matcher" not in settings["hooks"]["SessionEnd"][0]
    assert json.loads(m_file.read_text())["mcpServers"]["vault-cortex"] == {
        "type": "stdio", "command": CMD, "args": ["mcp", "--vault", str(vault.resolve())], "env": {}}
    assert not any(c.changed for c in run(vault, home))  # install twice = once
    changes = run(None, home, uninstall=True)
    assert [c.removed for c in changes] == [True, True]
    assert not s_file.exists() and not m_file.exists()


def test_other_tools_are_kept_and_uninstall_restores_the_files_byte_for_byte(vault: Path, home: Path) -> None:
    s_file, m_file = place(home, "settings_other_tools.json", "claude_json_other_servers.json")
    before = s_file.read_bytes(), m_file.read_bytes()
    run(vault, home)
    settings, claude = json.loads(s_file.read_text()), json.loads(m_file.read_text())
    old = json.loads(before[0])
    assert settings["permissions"] == old["permissions"] and settings["model"] == "sonnet"
    cmds = commands(settings)
    assert cmds["PreToolUse"][0] == "/home/me/bin/check-bash-command.sh" and len(cmds["PreToolUse"]) == 2
    assert cmds["PostToolUse"][0].startswith("npx prettier") and cmds["Notification"] == [
        "notify-send 'Claude Code' 'needs you'"]
    assert set(claude["mcpServers"]) == {"github", "vault-cortex"} and claude["numStartups"] == 42
    mtimes = s_file.stat().st_mtime_ns, m_file.stat().st_mtime_ns
    assert not any(c.changed for c in run(vault, home))
    assert (s_file.stat().st_mtime_ns, m_file.stat().st_mtime_ns) == mtimes  # not even rewritten
    run(None, home, uninstall=True)
    assert (s_file.read_bytes(), m_file.read_bytes()) == before


def test_hand_copied_entries_and_another_vault_are_replaced_in_place(vault: Path, home: Path, tmp_path: Path) -> None:
    s_file, _ = place(home, "settings_readme_copy.json")
    run(vault, home)
    cmds = commands(json.loads(s_file.read_text()))
    assert all(len([c for c in cs if "vault-cortex hook" in c]) == 1 for cs in cmds.values())
    assert cmds["PreToolUse"] == [f"{CMD} hook tool --vault '{vault.resolve()}'", "/home/me/bin/guard.sh"]
    other = tmp_path / "other"
    init_vault(other)
    run(other, home)
    cmds = commands(json.loads(s_file.read_text()))
    assert cmds["PreToolUse"] == [f"{CMD} hook tool --vault {other.resolve()}", "/home/me/bin/guard.sh"]
    run(None, home, uninstall=True)
    assert commands(json.loads(s_file.read_text())) == {"PreToolUse": ["/home/me/bin/guard.sh"]}


@pytest.mark.parametrize("uninstall", [False, True])
def test_malformed_json_is_a_clear_error_and_no_file_is_touched(vault: Path, home: Path, uninstall: bool) -> None:
    s_file, m_file = place(home, "settings_malformed.json", "claude_json_other_servers.json")
    before = s_file.read_bytes(), m_file.read_bytes()
    with pytest.raises(ConfigError, match=r"settings.json is not valid JSON \(line 4.*nothing was changed"):
        run(vault, home, uninstall=uninstall)
    assert (s_file.read_bytes(), m_file.read_bytes()) == before
    assert sorted(p.name for p in s_file.parent.iterdir()) == ["settings.json"]  # no temp file left


@pytest.mark.parametrize("text", ["", "[]", '{"hooks": []}'])
def test_empty_and_odd_settings(vault: Path, home: Path, text: str) -> None:
    s_file, _ = install.files("user", home=home)
    s_file.parent.mkdir(parents=True)
    s_file.write_text(text)
    if text == "":
        run(vault, home)
        assert len(commands(json.loads(s_file.read_text()))) == len(install.HOOKS)
        return
    with pytest.raises(ConfigError):
        run(vault, home)
    assert s_file.read_text() == text


def test_not_a_vault_is_refused(home: Path, tmp_path: Path) -> None:
    from vault_cortex.errors import VaultNotFound

    with pytest.raises(VaultNotFound):
        run(tmp_path, home)
    assert not (home / ".claude").exists()


def test_cli_project_scope_dry_run_then_install_and_the_installed_hook_runs(
        vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    args = ["install", "claude-code", "--vault", str(vault), "--scope", "project", "--project", str(project)]
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr()
    assert "+++ b/" in out.out and '"SessionEnd"' in out.out and "dry run: nothing written" in out.err
    assert not (project / ".claude").exists() and not (project / ".mcp.json").exists()
    assert main(args) == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["vault-cortex"]["args"][0] == "mcp"
    # the installed SessionEnd command, run by a shell as Claude Code runs it, captures a transcript
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text(json.dumps({"type": "user", "timestamp": "2026-11-30T09:00:00Z",
                                      "message": {"content": "What did we decide about batching?"}}) + "\n" +
                          json.dumps({"type": "assistant", "message": {"content": "One transaction a second."}}) + "\n")
    command = settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")},
           "VAULT_CORTEX_HOOKS_TRANSCRIPT_DIRS": str(tmp_path)}  # where this transcript is
    if not Path(shlex_first(command)).is_file():  # no console script (not pip-installed): run the module instead
        command = command.replace(shlex_first(command), f"{sys.executable} -m server.cli", 1)
    done = subprocess.run(["sh", "-c", command], input=json.dumps({"transcript_path": str(transcript), "cwd": "/x/p"}),
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert len(list((vault / "raw").glob("2026-11-30 p s1 01.md"))) == 1
    assert main(["uninstall", "claude-code", "--scope", "project", "--project", str(project)]) == 0
    assert not (project / ".mcp.json").exists() and not (project / ".claude" / "settings.json").exists()


def shlex_first(command: str) -> str:
    import shlex

    return shlex.split(command)[0]


def test_an_old_install_is_upgraded_in_place_and_uninstall_removes_every_event(vault: Path, home: Path) -> None:
    """The previous installer wrote six events and no timeouts: installing again adds PostToolUseFailure (and Stop)
    and the capture hooks' timeout, replaces each old handler where it was, and uninstall removes them all."""
    s_file, m_file = place(home, "settings_previous_install.json", "claude_json_previous_install.json")
    old = json.loads(s_file.read_text())
    assert "PostToolUseFailure" not in old["hooks"]
    run(vault, home)
    settings = json.loads(s_file.read_text())
    assert set(settings["hooks"]) == {*old["hooks"], "PostToolUseFailure", "Stop"} == set(install.HOOKS)
    assert commands(settings)["PostToolUseFailure"] == [f"{CMD} hook tool-failure --vault '{vault.resolve()}'"]
    assert settings["hooks"]["PostToolUseFailure"][0]["matcher"] == "*"
    assert all(len(cmds) == 1 and "/home/me/old-vault" not in cmds[0] for cmds in commands(settings).values())
    handlers = {event: groups[0]["hooks"][0] for event, groups in settings["hooks"].items()}
    assert {e: h.get("timeout") for e, h in handlers.items() if "timeout" in h} == install.TIMEOUTS
    server = json.loads(m_file.read_text())["mcpServers"]["vault-cortex"]
    assert server["args"] == ["mcp", "--vault", str(vault.resolve())]
    assert not any(c.changed for c in run(vault, home))
    run(None, home, uninstall=True)
    assert not s_file.exists() and not m_file.exists()


def test_the_http_transport_points_at_serve_and_keeps_the_token_out_of_the_project(vault: Path, home: Path,
                                                                                   tmp_path: Path) -> None:
    from server.bearer import TOKEN_ENV, read_token
    from server.serve_lock import lock_path

    project = tmp_path / "proj"
    project.mkdir()
    install.apply("project", vault, install=True, command=CMD, project=project, transport="http")
    mcp = json.loads((project / ".mcp.json").read_text())["mcpServers"]["vault-cortex"]
    assert mcp == {"type": "http", "url": "http://127.0.0.1:8765/mcp",  # the config's port: no serve runs
                   "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}}
    assert not (vault / ".cortex" / "token").exists()  # the project's file names the variable, holds no secret
    # user scope (~/.claude.json, the user's own): the token itself; and where serve recorded its URL
    lock = lock_path(vault)
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(f"pid {os.getpid()} at http://127.0.0.1:18701\n")
    dry = run(vault, home, transport="http", dry_run=True)
    assert not (vault / ".cortex" / "token").exists() and "http://127.0.0.1:18701/mcp" in dry[1].diff
    run(vault, home, transport="http")
    token = read_token(vault, {})
    assert token
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["vault-cortex"]
    assert entry["headers"] == {"Authorization": f"Bearer {token}"}
    run(vault, home)  # back to stdio: replaced in place
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["vault-cortex"]["type"] == "stdio"
    with pytest.raises(ConfigError, match="unknown transport"):
        run(vault, home, transport="carrier-pigeon")


def test_install_indexes_the_vault_and_says_what_is_left_when_it_cannot(
        vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The hooks read the index and never build it: install builds it, so the first session has its memories (the
    real client after `init` and `install`: tests/e2e/test_claude_code.py, the first session on a new vault)."""
    from vault_cortex.cortex import Cortex

    project = tmp_path / "proj"
    project.mkdir()
    args = ["install", "claude-code", "--vault", str(vault), "--scope", "project", "--project", str(project)]
    assert main(args) == 0
    assert "indexed: 23 notes" in capsys.readouterr().err
    with Cortex.open(vault) as cx:
        assert cx.db.note_count() == 23 and cx.verify().ok
    config = vault / ".cortex" / "config.toml"
    config.write_text(config.read_text().replace('model_dir = ""', f'model_dir = "{tmp_path / "no model"}"'))
    assert main([*args, "--no-index"]) == 0  # the settings only
    assert "indexing" not in capsys.readouterr().err
    assert main(args) == 1  # the model cannot load: the settings are written, and the error says what is left
    err = capsys.readouterr().err
    assert "error: installed, but the vault could not be indexed: embedding.model_dir" in err
    assert f"run `vault-cortex sync --vault {vault.resolve()}`" in err
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["vault-cortex"]["args"][0] == "mcp"


# Settings as other writers format them: json.dumps compact, JSON.stringify(obj) (what Claude Code writes
# unindented), JSON.stringify(obj, null, 2) with no final newline, four spaces, tabs, and ASCII escapes.
SETTINGS_STYLES = {
    "compact": '{"model":"sonnet","permissions":{"allow":["Bash(ls:*)"]},"env":{"EDITOR":"vi"}}\n',
    "one line spaced": '{"model": "sonnet", "permissions": {"allow": ["Bash(ls:*)"]}}',
    "stringify 2": '{\n  "model": "sonnet",\n  "permissions": {\n    "allow": [\n      "Bash(ls:*)"\n    ]\n  }\n}',
    "four spaces": '{\n    "model": "sonnet",\n    "feedbackSurveyState": {\n        "lastShown": 3\n    }\n}\n',
    "tabs, CRLF": '{\r\n\t"model": "sonnet",\r\n\t"statusLine": {\r\n\t\t"type": "command"\r\n\t}\r\n}\r\n',
    "ascii escapes": '{\n  "theme": "dark",\n  "name": "Ren\\u00e9e"\n}\n',
}


@pytest.mark.parametrize("style", SETTINGS_STYLES)
def test_uninstall_gives_back_each_files_exact_bytes_however_it_was_formatted(vault: Path, home: Path,
                                                                              style: str) -> None:
    s_file, m_file = install.files("user", home=home)
    s_file.parent.mkdir(parents=True)
    before = SETTINGS_STYLES[style].encode("utf-8")
    s_file.write_bytes(before)
    m_file.write_bytes(before.replace(b'"model"', b'"numStartups":3,"x"', 1) if style == "compact" else before)
    m_before = m_file.read_bytes()
    run(vault, home)
    assert len(commands(json.loads(s_file.read_text()))) == len(install.HOOKS)
    assert not any(c.changed for c in run(vault, home))
    run(None, home, uninstall=True)
    assert s_file.read_bytes() == before and m_file.read_bytes() == m_before


def test_the_token_is_left_in_a_file_only_its_owner_can_read(vault: Path, home: Path,
                                                            capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """~/.claude.json existed readable by all (0644): once it holds the token it is 0600, installed again too."""
    monkeypatch.setenv("HOME", str(home))
    _, m_file = place(home, claude_json="claude_json_other_servers.json")
    m_file.chmod(0o644)
    args = ["install", "claude-code", "--vault", str(vault), "--transport", "http", "--no-index"]
    assert main(args) == 0
    assert (vault / ".cortex" / "token").read_text().strip() in m_file.read_text()
    assert m_file.stat().st_mode & 0o777 == 0o600
    assert "yours only" in capsys.readouterr().err
    m_file.chmod(0o644)  # loosened by hand (or by an older install): installing again, unchanged, tightens it
    assert main(args) == 0
    assert m_file.stat().st_mode & 0o777 == 0o600


def test_dotfiles_kept_as_links_are_written_through_to_their_targets(vault: Path, home: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """~/.claude/settings.json and ~/.claude.json are links into a dotfiles repository: the entries land in the
    repository's files, the links stay links, the output names the targets, and uninstall gives the bytes back."""
    monkeypatch.setenv("HOME", str(home))
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "claude-settings.json").write_text(SETTINGS_STYLES["compact"])
    shutil.copy(FIX / "claude_json_other_servers.json", dotfiles / "claude.json")
    before = {p.name: p.read_bytes() for p in dotfiles.iterdir()}
    s_file, m_file = install.files("user", home=home)
    s_file.parent.mkdir(parents=True)
    s_file.symlink_to(dotfiles / "claude-settings.json")
    m_file.symlink_to(dotfiles / "claude.json")
    assert main(["install", "claude-code", "--vault", str(vault), "--no-index"]) == 0
    err = capsys.readouterr().err
    assert s_file.is_symlink() and m_file.is_symlink()
    assert len(commands(json.loads((dotfiles / "claude-settings.json").read_text()))) == len(install.HOOKS)
    assert "vault-cortex" in json.loads((dotfiles / "claude.json").read_text())["mcpServers"]
    assert f"{s_file}: updated (a link: written to {dotfiles / 'claude-settings.json'})" in err
    assert f"{m_file}: updated (a link: written to {dotfiles / 'claude.json'})" in err
    assert sorted(p.name for p in dotfiles.iterdir()) == sorted(before)  # no temp file left beside them
    assert main(["uninstall", "claude-code"]) == 0
    assert s_file.is_symlink() and m_file.is_symlink()
    assert {p.name: p.read_bytes() for p in dotfiles.iterdir()} == before


def test_a_linked_claude_json_gets_a_reference_to_the_token_not_the_token(vault: Path, home: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A ~/.claude.json that links into a dotfiles repository is shared (versioned, often pushed): the HTTP entry
    names ${VAULT_CORTEX_TOKEN} there, as in a project, and the notice says how to export it."""
    from server.bearer import TOKEN_ENV

    monkeypatch.setenv("HOME", str(home))
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    shutil.copy(FIX / "claude_json_other_servers.json", dotfiles / "claude.json")
    _, m_file = install.files("user", home=home)
    home.mkdir()
    m_file.symlink_to(dotfiles / "claude.json")
    assert main(["install", "claude-code", "--vault", str(vault), "--transport", "http", "--no-index"]) == 0
    entry = json.loads((dotfiles / "claude.json").read_text())["mcpServers"]["vault-cortex"]
    assert entry["headers"] == {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}
    err = capsys.readouterr().err
    assert f"export {TOKEN_ENV}=" in err and "yours only" not in err


def test_install_says_in_one_line_that_sessions_are_captured_where_and_how_to_turn_it_off(
        vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    args = ["install", "claude-code", "--vault", str(vault), "--scope", "project", "--project", str(project),
            "--no-index"]
    assert main(args) == 0
    root, config = vault.resolve(), vault.resolve() / ".cortex/config.toml"
    said = [line for line in capsys.readouterr().err.splitlines() if "captured" in line]
    assert said == [f"Sessions are captured into raw/ of {root}; turn off with [capture] enabled = false in {config}"]
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("enabled = true\n# What a captured", "enabled = false\n# What a captured"),
                      encoding="utf-8")
    assert main(args) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "captured" in line]
    assert said == [f"Sessions are not captured ([capture] in {config}); turn it on with [capture] enabled = true"]
