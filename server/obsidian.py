"""`vault-cortex install obsidian`: the built plugin into the vault's `.obsidian/plugins/vault-cortex/`, with its
settings (the server's URL and the API token) and a .gitignore that keeps those settings out of git.

The plugin's three files come from the installed package (`vault_cortex.plugin`: the wheel carries them; in a
checkout, plugin_bridge/ after `npm run build`). `data.json` is the plugin's saved settings (plugin_bridge/src/
settings.ts reads `serverUrl` and `token`; any other setting the user chose is kept). The plugin is not switched
on: Obsidian asks the user to turn community plugins on (leaving Restricted mode) and to enable each one, and
that choice stays theirs. `uninstall obsidian` removes exactly the files install writes, and the folder once
empty; nothing else in the vault is touched. A plugin folder that is a link (a plugin developer's checkout), that
resolves outside the vault (`.obsidian` or its `plugins` shared by a link), or that holds one of these files as a
link is refused by both: the plugin and the token go only into the vault's own folder, and nothing is deleted
through a link.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from server.bearer import TOKEN_FILE, load_or_create_token, read_token
from server.hooks import server_url
from vault_cortex.errors import ConfigError, UnsafePath, VaultNotFound
from vault_cortex.files.vault import is_vault

PLUGIN_ID = "vault-cortex"
FOLDER = f".obsidian/plugins/{PLUGIN_ID}"
BUILT = ("main.js", "manifest.json", "styles.css")
SETTINGS = "data.json"
GITIGNORE = ".gitignore"
IGNORE_LINES = "# The plugin's settings hold the vault-cortex API token: never commit them.\ndata.json\n"
OURS = (*BUILT, SETTINGS, GITIGNORE)


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """One file of the plugin folder: its vault path and what install or uninstall does to it."""

    path: str
    action: str  # "create", "update", "unchanged" or "remove"
    shown: str | None = None  # data.json as it will be written, the token masked (for --dry-run)


def plugin_files() -> dict[str, bytes]:
    """The built plugin this installation carries: main.js, manifest.json and styles.css."""
    source = resources.files("vault_cortex.plugin")
    out: dict[str, bytes] = {}
    for name in BUILT:
        item = source / name
        if not item.is_file():
            raise ConfigError(f"this installation has no built Obsidian plugin ({name} is missing): in a checkout, "
                              "run `cd plugin_bridge && npm ci && npm run build`; otherwise reinstall vault-cortex "
                              "from its wheel")
        out[name] = item.read_bytes()
    return out


def settings(folder: Path, url: str, token: str) -> bytes:
    """data.json with the server's URL and the token, keeping every other setting already saved there."""
    try:
        saved = json.loads((folder / SETTINGS).read_text(encoding="utf-8"))
    except FileNotFoundError:
        saved = {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{folder / SETTINGS} is not readable JSON ({exc}); fix or delete it, then install "
                          "again — nothing was changed") from exc
    if not isinstance(saved, dict):
        raise ConfigError(f"{folder / SETTINGS} holds no settings object; fix or delete it — nothing was changed")
    data: dict[str, Any] = {**saved, "serverUrl": url, "token": token}
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _vault(vault: Path) -> Path:
    vault = vault.expanduser()
    if not is_vault(vault):
        raise VaultNotFound(f"{vault} is not a vault (no .cortex/): `vault-cortex init {vault}` first")
    return vault.resolve()


def plugin_folder(vault: Path) -> Path:
    """The vault's own plugin folder; UnsafePath (nothing changed) when it, or a file of ours in it, is a link or
    it resolves outside the vault. `vault` is resolved."""
    folder = vault / FOLDER
    refusal = "vault-cortex writes the plugin and its token only into the vault's own folder; nothing was changed"
    for path in (vault / ".obsidian", vault / ".obsidian" / "plugins"):
        target = Path(os.path.realpath(path))
        if path.is_symlink() and not target.is_relative_to(vault):
            raise UnsafePath(f"{path} is a link to {target}, outside the vault: {refusal}")
    for path in (folder, *(folder / name for name in OURS)):
        if path.is_symlink():
            raise UnsafePath(f"{path} is a link to {os.path.realpath(path)}: {refusal} (remove the link, or "
                             "install into the vault it points to)")
    where = Path(os.path.realpath(folder))
    if not where.is_relative_to(vault):
        raise UnsafePath(f"{folder} resolves to {where}, outside the vault: {refusal}")
    return folder


def install(vault: Path, *, url: str | None = None, dry_run: bool = False,
            env: Mapping[str, str] | None = None) -> list[Step]:
    """Put the plugin and its settings in the vault (or with dry_run, say what would be written)."""
    vault = _vault(vault)
    folder = plugin_folder(vault)
    env = os.environ if env is None else env
    token = (read_token(vault, env) or "") if dry_run else load_or_create_token(vault, env)
    wanted = {**plugin_files(), SETTINGS: settings(folder, url or server_url(vault, env), token),
              GITIGNORE: IGNORE_LINES.encode("utf-8")}
    steps: list[Step] = []
    for name, data in wanted.items():
        path = folder / name
        old = path.read_bytes() if path.is_file() else None
        action = "create" if old is None else "unchanged" if old == data else "update"
        shown = None
        if name == SETTINGS:
            masked = {**json.loads(data), "token": f"<the token in {TOKEN_FILE}>" if token else
                      f"<created in {TOKEN_FILE} when installed>"}
            shown = json.dumps(masked, indent=2, ensure_ascii=False) + "\n"
        steps.append(Step(path=f"{FOLDER}/{name}", action=action, shown=shown))
        if not dry_run and action != "unchanged":
            write_bytes(path, data)
    return steps


def uninstall(vault: Path, *, dry_run: bool = False) -> list[Step]:
    """Remove the files install writes (and the plugin folder once it is empty)."""
    vault = _vault(vault)
    folder = plugin_folder(vault)
    steps = [Step(path=f"{FOLDER}/{name}", action="remove") for name in OURS if (folder / name).is_file()]
    if not dry_run:
        for name in OURS:
            (folder / name).unlink(missing_ok=True)
        for empty in (folder, folder.parent):  # .obsidian/plugins/ too, when the plugin was its only one
            if empty.is_dir() and not any(empty.iterdir()):
                empty.rmdir()
    return steps


def write_bytes(path: Path, data: bytes) -> None:
    """Atomically: a temp file beside it, fsync, rename (the plugin's files are Obsidian's, not notes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600 if path.name == SETTINGS else 0o644)  # data.json holds the token, as .cortex/token
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
