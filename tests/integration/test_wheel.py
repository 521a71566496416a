"""The package: `pip wheel .` makes a wheel holding everything the product needs (the tokenizer, the starter vault,
the built Obsidian plugin, built from its sources), and that wheel, installed into a fresh virtualenv far from this
checkout, serves a new vault and an adopted copy of an Obsidian vault.

The venv gets its dependencies the way a user's does, from the wheel's metadata through pip (from the configured
indexes or pip's cache); `--no-compile` and no pip inside the venv keep it as quick as that can be.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from serving import serve

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugin_bridge"
SAMPLE = REPO / "tests" / "fixtures" / "vaults" / "obsidian_sample"

pytestmark = pytest.mark.slow


class Installed:
    """A wheel built from this checkout and the fresh venv it is installed in."""

    def __init__(self, wheel: Path, venv: Path, away: Path) -> None:
        self.wheel = wheel
        self.program = str(venv / "bin" / "vault-cortex")
        self.python = str(venv / "bin" / "python")
        self.away = away  # a folder outside the checkout, the current folder of every command

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_CORTEX_", "PYTHON"))}
        return subprocess.run([self.program, *args], cwd=self.away, env=env, capture_output=True, text=True,
                              timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    dist, venv, away = work / "dist", work / "venv", work / "elsewhere"
    away.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(dist)],
                   check=True, cwd=away)
    wheel = next(dist.glob("vault_cortex-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-compile", str(wheel)], check=True, cwd=away)
    return Installed(wheel, venv, away)


def test_the_wheel_holds_what_the_product_needs(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as whl:
        names = set(whl.namelist())
        packaged = {name: whl.read(f"vault_cortex/plugin/{name}") for name in ("main.js", "manifest.json",
                                                                                "styles.css")}
    assert {"vault_cortex/index/data/tokenizer.json", "vault_cortex/template/.cortex/config.toml",
            "vault_cortex/template/.gitignore", "vault_cortex/template/soul/Build things that last.md"} <= names
    assert not [n for n in names if n.startswith("vault_cortex/plugin/") and n.endswith((".ts", ".json"))
                and n != "vault_cortex/plugin/manifest.json"]  # the built plugin, not its sources
    # The plugin in the wheel is the one its sources build to now (esbuild's output is deterministic).
    npm = shutil.which("npm")
    assert npm, "the plugin is built with Node.js 20 and npm (plugin_bridge/ci.sh installs them in CI)"
    subprocess.run([npm, "run", "build", "--silent"], cwd=PLUGIN, check=True, capture_output=True)
    for name, data in packaged.items():
        assert data == (PLUGIN / name).read_bytes(), f"the wheel's {name} is not what plugin_bridge/ builds"


def test_the_installed_wheel_serves_a_new_vault_far_from_the_checkout(installed: Installed) -> None:
    version = installed.run("--version")
    assert version.returncode == 0 and version.stdout.startswith("vault-cortex "), version
    where = subprocess.run([installed.python, "-c", "import server, vault_cortex; print(vault_cortex.__file__); "
                            "print(server.__file__)"], cwd=installed.away, capture_output=True, text=True, check=True)
    assert all(str(REPO) not in line and "site-packages" in line for line in where.stdout.splitlines()), where

    vault = installed.away / "new-vault"
    with serve(vault, program=[installed.program], cwd=installed.away) as server:
        assert server.get("/v1/health").json()["ok"] is True
        hits = server.get("/v1/recall", q="why did the WAL file keep growing").json()["hits"]
        server.stop(signal.SIGINT)
    assert (vault / "soul").is_dir()  # the starter vault, from the wheel's template
    assert "scientific/SQLite WAL mode.md" in [h["path"] for h in hits[:3]]


def test_the_installed_wheel_adopts_and_serves_an_obsidian_vault(installed: Installed) -> None:
    vault = installed.away / "My Obsidian vault"
    shutil.copytree(SAMPLE, vault)
    refused = installed.run("serve", "--vault", str(vault))
    assert refused.returncode == 1 and f"vault-cortex init {vault}" in refused.stderr
    adopted = installed.run("init", str(vault))
    assert adopted.returncode == 0 and "no note was written" in adopted.stdout, adopted
    plugin = installed.run("install", "obsidian", "--vault", str(vault))
    assert plugin.returncode == 0, plugin
    with zipfile.ZipFile(installed.wheel) as whl:
        built = whl.read("vault_cortex/plugin/main.js")
    assert (vault / ".obsidian/plugins/vault-cortex/main.js").read_bytes() == built
    with serve(vault, program=[installed.program], cwd=installed.away) as server:
        assert server.get("/v1/health").json()["ok"] is True
        hits = server.get("/v1/recall", q="should I pay a cobbler to resole my boots").json()["hits"]
        status = installed.run("status", "--vault", str(vault))
        server.stop(signal.SIGINT)
    assert hits[0]["path"] == "Clippings/Mend before you replace.md"
    assert "running: pid" in status.stdout and "token matches" in status.stdout, status
    settings = json.loads((vault / ".obsidian/plugins/vault-cortex/data.json").read_text(encoding="utf-8"))
    assert settings["token"] == (vault / ".cortex/token").read_text(encoding="utf-8").strip()
