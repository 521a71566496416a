"""`vault-cortex install gemini`: merged into a real Gemini CLI settings.json, idempotent, and undone exactly."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from server import hooks, install, install_gemini
from server.cli import main
from vault_cortex.files.vault import init_vault

OWN = Path(__file__).resolve().parents[1] / "fixtures" / "gemini_settings" / "settings_own.json"
CMD = "/opt/vc/bin/vault-cortex"
EVENTS = ["SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd"]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "my vault"  # a space: commands must quote it
    init_vault(root)
    return root


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv(install_gemini.HOME_ENV, raising=False)
    return tmp_path / "home"


def ours(settings: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """This command's handlers in a settings object, by event."""
    return {event: [h for g in groups if isinstance(g, dict) for h in g["hooks"] if install.is_ours(h)]
            for event, groups in settings.get("hooks", {}).items() if isinstance(groups, list)}


def gemini(*args: str) -> int:
    return main([*args[:1], "gemini", *args[1:]])


def test_the_hooks_run_the_core_events_for_gemini(vault: Path, home: Path) -> None:
    """One handler per registered Gemini event, running `vault-cortex hook CORE-EVENT --vault V --client gemini`;
    AfterTool for every tool; each named so that hooksConfig.disabled can turn it off; the stdio MCP server."""
    settings_file = home / ".gemini" / "settings.json"
    change = install_gemini.apply("user", vault, install_=True, command=CMD)
    assert change.created and change.path == str(settings_file)
    settings = json.loads(settings_file.read_text())
    handlers = ours(settings)
    assert list(handlers) == EVENTS
    core = {"SessionStart": "session-start", "BeforeAgent": "prompt", "AfterTool": "tool-result",
            "AfterAgent": "stop", "SessionEnd": "session-end"}
    assert {e: [h["command"] for h in hs] for e, hs in handlers.items()} == {
        e: [f"{CMD} hook {c} --vault '{vault.resolve()}' --client gemini"] for e, c in core.items()}
    assert set(core.values()) <= set(hooks.HOOK_EVENTS)
    assert {e: [h["name"] for h in hs] for e, hs in handlers.items()} == {
        e: [f"vault-cortex-{c}"] for e, c in core.items()}
    assert all(h["type"] == "command" and "timeout" not in h for hs in handlers.values() for h in hs)
    assert settings["hooks"]["AfterTool"][0]["matcher"] == "*" and "matcher" not in settings["hooks"]["SessionEnd"][0]
    entry = {"command": CMD, "args": ["mcp", "--vault", str(vault.resolve())]}
    assert settings["mcpServers"] == {"vault-cortex": entry}
    assert not install_gemini.apply("user", vault, install_=True, command=CMD).changed  # twice = once
    gone = install_gemini.apply("user", None, install_=False)
    assert gone.removed and not settings_file.exists()


def test_the_installed_hooks_point_at_this_installation(vault: Path, home: Path) -> None:
    """Without --command, the hooks and the MCP server run this installation's own `vault-cortex`, by its absolute
    path, so they work without an activated virtual environment."""
    assert gemini("install", "--vault", str(vault), "--no-index") == 0
    settings = json.loads((home / ".gemini" / "settings.json").read_text())
    programs = {shlex.split(h["command"])[0] for hs in ours(settings).values() for h in hs}
    expected = Path(sys.executable).with_name("vault-cortex")
    assert programs == {settings["mcpServers"]["vault-cortex"]["command"]} == {str(expected)}
    assert expected.is_file() and os.access(expected, os.X_OK)


STYLES = {  # how the file was written: Gemini CLI's own writer, and by hand or other tools
    "gemini's own": {"indent": 2},
    "compact": {"separators": (",", ":")},
    "one line spaced": {},
    "four spaces, final newline": {"indent": 4, "end": "\n"},
    "tabs, CRLF": {"indent": "\t", "end": "\n", "crlf": True},
    "ascii escapes": {"indent": 2, "ensure_ascii": True, "end": "\n"},
}


def styled(data: dict[str, Any], style: dict[str, Any]) -> bytes:
    kw = {k: v for k, v in style.items() if k in ("indent", "separators", "ensure_ascii")}
    text = json.dumps(data, **{"ensure_ascii": False, **kw}) + style.get("end", "")
    return (text.replace("\n", "\r\n") if style.get("crlf") else text).encode()


@pytest.mark.parametrize("style", STYLES)
def test_uninstall_gives_back_the_users_file_byte_for_byte(vault: Path, home: Path, style: str) -> None:
    """The user's own settings, hooks (on AfterTool too) and MCP server are kept; ours are added after theirs, the
    file keeps its format, installing again does not even rewrite it, and uninstall gives back its exact bytes."""
    data = json.loads(OWN.read_text(encoding="utf-8"))
    data["ui"]["name"] = "Renée"  # escaped or not, as the style writes it
    settings_file = home / ".gemini" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    before = styled(data, STYLES[style])
    settings_file.write_bytes(before)
    install_gemini.apply("user", vault, install_=True, command=CMD)
    text = settings_file.read_bytes()
    after = json.loads(text)
    assert (b"\r\n" in text) == (b"\r\n" in before) and text.endswith(b"}") == before.endswith(b"}")
    assert after["hooksConfig"] == {"disabled": ["lint-on-write"]} and after["ui"] == data["ui"]
    assert after["hooks"]["BeforeTool"] == data["hooks"]["BeforeTool"]  # an event we do not register: untouched
    assert after["hooks"]["AfterTool"][0] == data["hooks"]["AfterTool"][0] and len(after["hooks"]["AfterTool"]) == 2
    assert set(after["mcpServers"]) == {"github", "vault-cortex"}
    mtime = settings_file.stat().st_mtime_ns
    assert not install_gemini.apply("user", vault, install_=True, command=CMD).changed
    assert settings_file.stat().st_mtime_ns == mtime
    install_gemini.apply("user", None, install_=False)
    assert settings_file.read_bytes() == before


def test_dry_run_prints_the_change_and_writes_nothing(vault: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "proj"
    (project / ".gemini").mkdir(parents=True)
    settings_file = project / ".gemini" / "settings.json"
    settings_file.write_bytes(OWN.read_bytes())
    args = ["--scope", "project", "--project", str(project)]
    assert gemini("install", "--vault", str(vault), *args, "--dry-run") == 0
    out = capsys.readouterr()
    assert f"+++ b/{settings_file}" in out.out and '"SessionEnd"' in out.out and "--client gemini" in out.out
    assert f"{settings_file}: would be updated" in out.err and "dry run: nothing written" in out.err
    assert settings_file.read_bytes() == OWN.read_bytes()
    assert gemini("install", "--vault", str(vault), *args, "--no-index") == 0
    assert gemini("uninstall", *args, "--dry-run") == 0
    out = capsys.readouterr()
    assert f"--- a/{settings_file}" in out.out and '-    "SessionEnd": [' in out.out  # what uninstall would take out
    assert "vault-cortex" in json.loads(settings_file.read_text())["mcpServers"]  # still installed
    assert gemini("uninstall", *args) == 0
    assert settings_file.read_bytes() == OWN.read_bytes()


def test_the_install_says_what_runs_and_that_sessions_are_captured(vault: Path, home: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert gemini("install", "--vault", str(vault), "--no-index") == 0
    err = capsys.readouterr().err
    settings_file = home / ".gemini" / "settings.json"
    assert f"{settings_file}: created" in err
    assert "Gemini CLI (user scope) now runs vault-cortex on" in err
    assert "SessionStart, BeforeAgent, AfterTool, AfterAgent, SessionEnd" in err
    config = vault.resolve() / ".cortex" / "config.toml"
    assert (f"Sessions are captured into raw/ of {vault.resolve()}; turn off with [capture] enabled = false in "
            f"{config}") in err


def test_user_and_project_scope_files(vault: Path, home: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """user: ~/.gemini/settings.json (under $GEMINI_CLI_HOME when Gemini CLI's home is moved); project: the project
    folder's .gemini/settings.json, never the user's."""
    assert install_gemini.settings_file("user") == home / ".gemini" / "settings.json"
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    assert install_gemini.settings_file("project") == project / ".gemini" / "settings.json"
    assert gemini("install", "--vault", str(vault), "--scope", "project", "--no-index") == 0
    assert (project / ".gemini" / "settings.json").is_file() and not (home / ".gemini").exists()
    moved = tmp_path / "gemini-home"
    monkeypatch.setenv(install_gemini.HOME_ENV, str(moved))
    assert install_gemini.settings_file("user") == moved / ".gemini" / "settings.json"
    assert gemini("install", "--vault", str(vault), "--no-index") == 0
    assert (moved / ".gemini" / "settings.json").is_file() and not (home / ".gemini").exists()
    assert gemini("uninstall", "--scope", "project") == 0 and gemini("uninstall") == 0
    assert not (project / ".gemini" / "settings.json").exists() and not (moved / ".gemini" / "settings.json").exists()


def test_a_settings_file_kept_as_a_link_is_written_through(vault: Path, home: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """~/.gemini/settings.json links into a dotfiles repository: the entries land in the repository's file, the
    link stays, the HTTP entry names ${VAULT_CORTEX_TOKEN} (a shared file gets no secret) and uninstall gives the
    bytes back."""
    from server.bearer import TOKEN_ENV

    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "gemini-settings.json"
    target.write_bytes(OWN.read_bytes())
    settings_file = home / ".gemini" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    settings_file.symlink_to(target)
    assert gemini("install", "--vault", str(vault), "--transport", "http", "--no-index") == 0
    err = capsys.readouterr().err
    assert settings_file.is_symlink() and f"{settings_file}: updated (a link: written to {target})" in err
    entry = json.loads(target.read_text())["mcpServers"]["vault-cortex"]
    assert entry["type"] == "http" and entry["url"].endswith("/mcp")
    assert entry["headers"] == {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}
    assert f"export {TOKEN_ENV}=" in err and "where you start Gemini CLI" in err
    assert sorted(p.name for p in dotfiles.iterdir()) == [target.name]  # no temp file left beside it
    assert gemini("uninstall") == 0
    assert settings_file.is_symlink() and target.read_bytes() == OWN.read_bytes()


def test_the_http_transport_in_the_users_own_file_holds_the_token_for_its_owner_only(vault: Path, home: Path) -> None:
    settings_file = home / ".gemini" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    settings_file.write_bytes(OWN.read_bytes())
    settings_file.chmod(0o644)
    assert gemini("install", "--vault", str(vault), "--transport", "http", "--no-index") == 0
    token = (vault / ".cortex" / "token").read_text().strip()
    entry = json.loads(settings_file.read_text())["mcpServers"]["vault-cortex"]
    assert entry["headers"] == {"Authorization": f"Bearer {token}"}
    assert settings_file.stat().st_mode & 0o777 == 0o600


def test_malformed_settings_are_a_clear_error_and_nothing_is_written(vault: Path, home: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A settings.json with comments (Gemini CLI reads them; this installer does not) is refused as it is."""
    settings_file = home / ".gemini" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text('{\n  // my theme\n  "ui": {"theme": "GitHub"}\n}\n')
    before = settings_file.read_bytes()
    assert gemini("install", "--vault", str(vault), "--no-index") == 1  # as for any settings error
    err = capsys.readouterr().err
    assert "settings.json is not valid JSON (line 2" in err and "nothing was changed" in err
    assert "Gemini CLI reads comments in its settings; this installer writes JSON only" in err
    assert settings_file.read_bytes() == before
