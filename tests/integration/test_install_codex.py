"""`vault-cortex install codex`: hooks.json merged, the hooks and the project trusted and the MCP server registered in
a block of ~/.codex/config.toml this command owns; idempotent, and undone byte for byte around the user's own
comments and tables; a dry run writes nothing; links and contradictions refused with a clear error."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from server import install_codex
from server.cli import main
from vault_cortex.errors import ConfigError
from vault_cortex.files.vault import init_vault

CMD = "/opt/vc/bin/vault-cortex"
USER_CONFIG = """\
# Codex settings, by hand
model = "gpt-5-codex"   # the one I use
approval_policy = "on-request"

[projects."/home/me/work/site"]
trust_level = "trusted"

# my own MCP server
[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[hooks.state."/home/me/.codex/hooks.json:stop:0:0"]
trusted_hash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
"""
USER_HOOKS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/home/me/bin/notify.sh"}]}]}}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "my vault"  # a space: commands must quote it
    init_vault(root)
    return root


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


def cli(*args: str) -> int:
    return main([*args[:2], *args[2:], "--command", CMD] if args[0] == "install" else list(args))


def files(home: Path, project: Path) -> dict[str, bytes | None]:
    paths = [home / ".codex" / "config.toml", home / ".codex" / "hooks.json", project / ".codex" / "hooks.json"]
    return {str(p): p.read_bytes() if p.exists() else None for p in paths}


@pytest.mark.parametrize("variant", ["as written", "CRLF", "no final newline", "none"])
def test_install_and_uninstall_give_config_toml_back_byte_for_byte(vault: Path, home: Path, tmp_path: Path,
                                                                   variant: str) -> None:
    """User scope, then a project, then another project: one block at the end holds the MCP server and every trust;
    installing again changes nothing; uninstalling them in another order gives back the exact bytes (no file that
    was not there)."""
    config = home / ".codex" / "config.toml"
    text = {"as written": USER_CONFIG, "CRLF": USER_CONFIG.replace("\n", "\r\n"),
            "no final newline": USER_CONFIG.rstrip("\n"), "none": None}[variant]
    if text is not None:
        config.write_bytes(text.encode())
        (home / ".codex" / "hooks.json").write_text(json.dumps(USER_HOOKS, indent=4))
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    before = files(home, one) | files(home, two)
    assert cli("install", "codex", "--vault", str(vault), "--no-index") == 0
    assert cli("install", "codex", "--vault", str(vault), "--scope", "project", "--project", str(one),
               "--no-index") == 0
    assert cli("install", "codex", "--vault", str(vault), "--scope", "project", "--project", str(two),
               "--no-index") == 0
    installed = files(home, one) | files(home, two)
    assert cli("install", "codex", "--vault", str(vault), "--scope", "project", "--project", str(one),
               "--no-index") == 0
    assert files(home, one) | files(home, two) == installed  # idempotent
    written = config.read_bytes().decode()
    if text:
        assert written.startswith(text)  # the user's part untouched
    assert written.count(install_codex.BEGIN) == 1 and written.count(install_codex.END) == 1
    data = tomllib.loads(written)
    assert data["mcp_servers"]["vault-cortex"] == {"command": CMD, "args": ["mcp", "--vault", str(vault.resolve())]}
    assert {p: data["projects"][p]["trust_level"] for p in (str(one.resolve()), str(two.resolve()))} == {
        str(one.resolve()): "trusted", str(two.resolve()): "trusted"}
    for hooks_file in (home / ".codex" / "hooks.json", one / ".codex" / "hooks.json", two / ".codex" / "hooks.json"):
        hooks = json.loads(hooks_file.read_text())["hooks"]
        trust = install_codex.hook_trust(hooks_file, hooks, install_codex.install.is_ours)
        assert len(trust) == 5
        assert {k: data["hooks"]["state"][k]["trusted_hash"] for k in trust} == trust
        assert all("--client codex" in g["hooks"][-1]["command"] for gs in hooks.values() for g in gs
                   if "vault-cortex" in json.dumps(g))
    assert cli("uninstall", "codex", "--scope", "project", "--project", str(one)) == 0
    assert cli("uninstall", "codex") == 0
    assert "[mcp_servers.vault-cortex]" in config.read_text()  # the other project's hooks still use it
    assert cli("uninstall", "codex", "--scope", "project", "--project", str(two)) == 0
    assert files(home, one) | files(home, two) == before


def test_a_dry_run_prints_the_change_and_writes_nothing(vault: Path, home: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    config = home / ".codex" / "config.toml"
    config.write_text(USER_CONFIG)
    assert cli("install", "codex", "--vault", str(vault), "--dry-run") == 0
    out, err = capsys.readouterr()
    assert config.read_text() == USER_CONFIG and not (home / ".codex" / "hooks.json").exists()
    assert f"+{install_codex.BEGIN}\n+[mcp_servers.vault-cortex]\n" in out
    assert '+[hooks.state."' in out and "--client codex" in out
    assert "hooks.json: would be created" in err and "config.toml: would be updated" in err
    assert "dry run: nothing written" in err


NO_HOOKS = USER_CONFIG.split("[hooks.state")[0]


@pytest.mark.parametrize("text, message", [
    (USER_CONFIG + '[mcp_servers.vault-cortex]\ncommand = "mine"\n',
     "already has [mcp_servers.vault-cortex] of its own"),
    (USER_CONFIG + "model = \n", "is not valid TOML"),
    ("hooks = 3\n" + NO_HOOKS, "is not valid TOML"),  # valid, but no [hooks.state] table can join it
])
def test_a_config_that_contradicts_the_install_is_refused(vault: Path, home: Path, text: str, message: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A clear error and not a byte written."""
    config = home / ".codex" / "config.toml"
    config.write_text(text)
    assert cli("install", "codex", "--vault", str(vault), "--no-index") == 1
    assert message in capsys.readouterr().err
    assert config.read_text() == text and not (home / ".codex" / "hooks.json").exists()


def test_an_untrusted_project_is_not_trusted_behind_the_users_back(vault: Path, home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    text = f'[projects."{project.resolve()}"]\ntrust_level = "untrusted"\n'
    (home / ".codex" / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match="'untrusted'"):
        install_codex.apply("project", vault, install_=True, command=CMD, project=project)
    assert (home / ".codex" / "config.toml").read_text() == text and not (project / ".codex").exists()


def test_a_trusted_project_and_a_trusted_hook_already_there_are_used(vault: Path, home: Path, tmp_path: Path) -> None:
    """What the user's part already says is not written again (and so stays theirs on uninstall)."""
    project = tmp_path / "project"
    project.mkdir()
    text = f'[projects."{project.resolve()}"]\ntrust_level = "trusted"\n'
    (home / ".codex" / "config.toml").write_text(text)
    install_codex.apply("project", vault, install_=True, command=CMD, project=project)
    written = (home / ".codex" / "config.toml").read_text()
    assert written.count(f'[projects."{project.resolve()}"]') == 1
    install_codex.apply("project", None, install_=False, command=CMD, project=project)
    assert (home / ".codex" / "config.toml").read_text() == text


def test_links(vault: Path, home: Path, tmp_path: Path) -> None:
    """A config.toml kept as a link (dotfiles) is written through and the link stays; a ~/.codex that is a link is
    refused, since Codex keys each hook's trust on its path."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "config.toml").write_text(USER_CONFIG)
    (home / ".codex" / "config.toml").symlink_to(dotfiles / "config.toml")
    assert cli("install", "codex", "--vault", str(vault), "--no-index") == 0
    assert (home / ".codex" / "config.toml").is_symlink()
    assert install_codex.BEGIN in (dotfiles / "config.toml").read_text()
    assert cli("uninstall", "codex") == 0
    assert (dotfiles / "config.toml").read_text() == USER_CONFIG and (home / ".codex" / "config.toml").is_symlink()

    other = tmp_path / "other-home"
    (other / "real").mkdir(parents=True)
    os.symlink(other / "real", other / ".codex")
    with pytest.raises(ConfigError, match="is a link to"):
        install_codex.apply("user", vault, install_=True, command=CMD, home=other, env={})
    assert list((other / "real").iterdir()) == []


def test_codex_home_moves_the_files(vault: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    moved = tmp_path / "codex-home"
    moved.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(moved))
    assert cli("install", "codex", "--vault", str(vault), "--no-index") == 0
    assert (moved / "hooks.json").is_file() and (moved / "config.toml").is_file()
    assert f'[hooks.state."{moved / "hooks.json"}:stop:0:0"]' in (moved / "config.toml").read_text()
    assert not (home / ".codex" / "config.toml").exists()


def test_install_says_when_the_vault_leaves_codex_rollouts_out(vault: Path, home: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A config from an older starter vault names Claude Code's transcripts only: capture would refuse Codex's
    rollouts, so install says what to add; the current starter config names every client's, and install says
    nothing."""
    assert cli("install", "codex", "--vault", str(vault), "--no-index") == 0
    assert "transcript_dirs" not in capsys.readouterr().err
    config = vault / ".cortex" / "config.toml"
    config.write_text(config.read_text().replace(
        'transcript_dirs = ["~/.claude/projects", "~/.codex/sessions", "~/.gemini/tmp"]',
                                                 'transcript_dirs = ["~/.claude/projects"]'))
    assert cli("install", "codex", "--vault", str(vault), "--no-index") == 0
    assert f"does not name {(home / '.codex' / 'sessions').resolve()}" in capsys.readouterr().err
