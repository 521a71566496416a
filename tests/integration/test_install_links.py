"""A probe of the installers against links where they write: plugin folders, `.obsidian` and Claude Code's dotfiles
kept as links (inside the vault, outside it, dangling, looping). Each case installs and uninstalls through the real
CLI; none may end in a traceback, write or delete through a link it refuses, or leave a file outside changed.
The next round of cases starts here."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from server import install
from server.cli import main
from server.obsidian import FOLDER
from vault_cortex.files.vault import init_vault


def state(root: Path) -> dict[str, str]:
    """Every entry under root: a file by its bytes, a link by where it points."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        key = p.relative_to(root).as_posix()
        out[key] = f"-> {os.readlink(p)}" if p.is_symlink() else p.read_text("utf-8") if p.is_file() else "/"
    return out


def link(path: Path, target: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target, target_is_directory=target.is_dir())


# The Obsidian plugin: (how the vault is linked, exit code of install and of uninstall).
OBSIDIAN: dict[str, tuple[Callable[[Path, Path], None], int]] = {
    "plugin folder links outside": (lambda v, o: link(v / FOLDER, o), 2),
    "plugin folder links inside the vault": (lambda v, o: (v / "dev").mkdir() or link(v / FOLDER, v / "dev"), 2),
    ".obsidian links outside": (lambda v, o: shutil.rmtree(v / ".obsidian") or link(v / ".obsidian", o), 2),
    "plugins folder links outside": (lambda v, o: link(v / ".obsidian" / "plugins", o), 2),
    "data.json links outside": (lambda v, o: (v / FOLDER).mkdir(parents=True) or link(v / FOLDER / "data.json",
                                                                                       o / "data.json"), 2),
    "main.js links outside": (lambda v, o: (v / FOLDER).mkdir(parents=True) or link(v / FOLDER / "main.js",
                                                                                     o / "main.js"), 2),
    "plugin folder is a link loop": (lambda v, o: link(v / FOLDER, v / FOLDER), 2),
    "plugin folder links to a missing folder": (lambda v, o: link(v / FOLDER, o / "gone"), 2),
}


@pytest.mark.parametrize("case", OBSIDIAN)
def test_obsidian_plugin_links(tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    init_vault(vault)
    outside.mkdir()
    (outside / "data.json").write_text('{"token": "another vault\'s"}', encoding="utf-8")
    (outside / "main.js").write_text("// a developer's build\n", encoding="utf-8")
    arrange, code = OBSIDIAN[case]
    arrange(vault, outside)
    before = state(outside)
    for verb in ("install", "uninstall"):
        assert main([verb, "obsidian", "--vault", str(vault)]) == code, capsys.readouterr().err
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and "is a link to" in err, err
        assert state(outside) == before


# Claude Code's files kept as links: (how home is linked, exit code of install and of uninstall).
CLAUDE: dict[str, tuple[Callable[[Path, Path], None], int]] = {
    "settings.json links into dotfiles": (lambda h, d: link(h / ".claude" / "settings.json", d / "settings.json"), 0),
    "~/.claude links into dotfiles": (lambda h, d: link(h / ".claude", d), 0),
    "~/.claude.json links into dotfiles": (lambda h, d: link(h / ".claude.json", d / "claude.json"), 0),
    "settings.json dangles": (lambda h, d: link(h / ".claude" / "settings.json", d / "not yet.json"), 0),
    "settings.json links into a missing folder": (lambda h, d: link(h / ".claude" / "settings.json",
                                                                    d / "gone" / "settings.json"), 1),
    "settings.json is a link loop": (lambda h, d: link(h / ".claude" / "settings.json",
                                                       h / ".claude" / "settings.json"), 1),
}


@pytest.mark.parametrize("case", CLAUDE)
def test_claude_code_dotfile_links(tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    vault, home, dotfiles = tmp_path / "vault", tmp_path / "home", tmp_path / "dotfiles"
    init_vault(vault)
    home.mkdir()
    dotfiles.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (dotfiles / "settings.json").write_text('{"model":"sonnet"}', encoding="utf-8")
    (dotfiles / "claude.json").write_text('{\n  "numStartups": 7\n}', encoding="utf-8")
    arrange, code = CLAUDE[case]
    arrange(home, dotfiles)
    before_home, before_dotfiles = state(home), state(dotfiles)
    assert main(["install", "claude-code", "--vault", str(vault), "--no-index"]) == code, capsys.readouterr().err
    err = capsys.readouterr().err
    if code:
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert (state(home), state(dotfiles)) == (before_home, before_dotfiles)
        return
    s_file, m_file = install.files("user", home=home)
    assert len(json.loads(s_file.read_text("utf-8"))["hooks"]) == len(install.HOOKS)
    assert "vault-cortex" in json.loads(m_file.read_text("utf-8"))["mcpServers"]
    assert all(state(home)[k] == v for k, v in before_home.items() if v.startswith("->"))  # links stay links
    assert main(["uninstall", "claude-code"]) == 0
    files_and_links = lambda entries: {k: v for k, v in entries.items() if v != "/"}  # noqa: E731
    assert files_and_links(state(home)) == files_and_links(before_home)  # a folder install made may stay
    assert state(dotfiles) == before_dotfiles
