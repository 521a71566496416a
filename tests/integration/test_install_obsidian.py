"""`vault-cortex install obsidian`: the built plugin and its settings in the vault, the token never committed;
`--dry-run` writes nothing; `uninstall obsidian` leaves the vault as it was."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from versioned import committed, git

from server.bearer import load_or_create_token
from server.cli import main
from server.obsidian import FOLDER, plugin_files
from vault_cortex.files.vault import init_vault

PLUGIN_ROOT = Path(__file__).resolve().parents[2] / "plugin_bridge"


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts}


@pytest.fixture(params=["starter", "adopted"])
def vault(request: pytest.FixtureRequest, tmp_path: Path, fixture_vault: Callable[[str], Path]) -> Path:
    """A versioned vault: the starter vault, or a real Obsidian vault adopted with `init` (whose own .gitignore
    knows nothing of vault-cortex)."""
    if request.param == "starter":
        root = tmp_path / "vault"
        init_vault(root)
    else:
        root = fixture_vault("obsidian_sample")
        assert main(["init", str(root)]) == 0
    return committed(root)


def test_install_then_git_add_commits_no_token(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["install", "obsidian", "--vault", str(vault)]) == 0
    assert "enable \"Vault Cortex\"" in capsys.readouterr().err
    folder = vault / FOLDER
    for name, data in plugin_files().items():
        assert (folder / name).read_bytes() == data  # the built plugin this installation carries
    token = (vault / ".cortex/token").read_text(encoding="utf-8").strip()
    settings = json.loads((folder / "data.json").read_text(encoding="utf-8"))
    assert settings == {"serverUrl": "http://127.0.0.1:8765", "token": token}  # the keys settings.ts reads
    assert (folder / "data.json").stat().st_mode & 0o077 == 0

    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "plugin")
    committed = git(vault, "ls-files").splitlines()
    assert f"{FOLDER}/main.js" in committed and f"{FOLDER}/.gitignore" in committed
    assert f"{FOLDER}/data.json" not in committed and ".cortex/token" not in committed
    found = subprocess.run(["git", "grep", "-F", "-e", token, "HEAD"], cwd=vault, capture_output=True, text=True)
    assert found.returncode == 1 and found.stdout == ""  # the token is in no committed file


def test_uninstall_leaves_the_vault_as_it_was(vault: Path) -> None:
    load_or_create_token(vault, {})  # the token `serve` made before: install uses it, uninstall leaves it
    before = tree(vault)
    assert main(["install", "obsidian", "--vault", str(vault)]) == 0
    assert main(["install", "obsidian", "--vault", str(vault)]) == 0  # twice: the same files, nothing else
    assert tree(vault) != before
    assert main(["uninstall", "obsidian", "--vault", str(vault)]) == 0
    assert tree(vault) == before
    assert git(vault, "status", "--porcelain", "--ignored", "-uall") == "!! .cortex/token\n"  # as before install
    assert not (vault / FOLDER).exists() and not (vault / ".obsidian/plugins").exists()


def test_dry_run_shows_the_settings_without_the_token_and_writes_nothing(vault: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    token = load_or_create_token(vault, {})
    before = tree(vault)
    assert main(["install", "obsidian", "--vault", str(vault), "--dry-run", "--url", "http://127.0.0.1:9000"]) == 0
    out = capsys.readouterr()
    assert tree(vault) == before
    assert f"{FOLDER}/main.js: would be created" in out.err and "dry run: nothing written" in out.err
    shown = json.loads(out.out)
    assert shown == {"serverUrl": "http://127.0.0.1:9000", "token": "<the token in .cortex/token>"}
    assert token not in out.out + out.err


def test_install_keeps_the_users_other_plugin_settings(vault: Path) -> None:
    folder = vault / FOLDER
    folder.mkdir(parents=True)
    (folder / "data.json").write_text(json.dumps({"serverUrl": "http://127.0.0.1:1", "token": "old",
                                                  "budgetTokens": 3000, "defaultMode": "focus"}), encoding="utf-8")
    assert main(["install", "obsidian", "--vault", str(vault), "--url", "http://127.0.0.1:9001"]) == 0
    settings = json.loads((folder / "data.json").read_text(encoding="utf-8"))
    assert settings["budgetTokens"] == 3000 and settings["defaultMode"] == "focus"
    assert settings["serverUrl"] == "http://127.0.0.1:9001" and settings["token"] != "old"


def test_the_plugin_says_it_needs_the_desktop() -> None:
    """It talks to a server on the same machine: Obsidian on a phone cannot reach one."""
    assert json.loads((PLUGIN_ROOT / "manifest.json").read_text(encoding="utf-8"))["isDesktopOnly"] is True


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("link", [FOLDER, ".obsidian"])
def test_a_plugin_folder_that_links_elsewhere_is_refused_and_nothing_is_written_or_deleted_through_it(
        tmp_path: Path, link: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The plugin folder (or `.obsidian` itself) links to a checkout of the plugin, as a plugin developer keeps
    it: install and uninstall each refuse in one line naming where it points (exit 2), and no file there changes."""
    vault = tmp_path / "vault"
    init_vault(vault)
    elsewhere = tmp_path / "elsewhere"
    checkout = elsewhere / "plugins" / "vault-cortex" if link == ".obsidian" else elsewhere
    checkout.mkdir(parents=True)
    for name in ("main.js", "manifest.json", "styles.css", "data.json", ".gitignore"):
        (checkout / name).write_text(f"// the developer's own {name}\n", encoding="utf-8")
    (checkout / "data.json").write_text('{"serverUrl": "http://127.0.0.1:9999", "token": "dev"}', encoding="utf-8")
    (vault / link).parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(vault / link, ignore_errors=True)  # the starter vault's own .obsidian, replaced by the link
    (vault / link).symlink_to(elsewhere, target_is_directory=True)
    before = files_under(elsewhere)
    for verb in ("install", "uninstall"):
        assert main([verb, "obsidian", "--vault", str(vault)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"is a link to {elsewhere}" in err and "nothing was changed" in err, err
        assert files_under(elsewhere) == before
    assert not (vault / ".cortex" / "token").exists()  # refused before the token was made


def test_a_plugin_folder_resolving_outside_the_vault_through_its_plugins_folder_is_refused(tmp_path: Path) -> None:
    """`.obsidian/plugins` shared between vaults by a link: the plugin folder is no link, but it is not the vault's."""
    from server import obsidian
    from vault_cortex.errors import UnsafePath

    vault = tmp_path / "vault"
    init_vault(vault)
    shared = tmp_path / "shared plugins"
    shared.mkdir()
    (vault / ".obsidian").mkdir(exist_ok=True)
    (vault / ".obsidian" / "plugins").symlink_to(shared, target_is_directory=True)
    with pytest.raises(UnsafePath, match="outside the vault"):
        obsidian.install(vault, env={})
    assert list(shared.iterdir()) == []
