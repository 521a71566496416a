"""The one build step pyproject.toml cannot say: the wheel carries the built Obsidian plugin.

`vault-cortex install obsidian` copies the plugin (main.js, manifest.json, styles.css) from the installed package,
so a wheel without it would install a product that cannot install its own plugin. Building a wheel (`pip wheel .`,
`pipx install .`, `uv tool install .`) therefore builds plugin_bridge/ first when its main.js is missing or older
than its sources (`npm ci` once, then `npm run build`), and fails, naming the fix, when it cannot: no wheel is
ever made without the plugin. An editable install (`pip install -e .`) reads the plugin from plugin_bridge/ as it
is and builds nothing. tests/integration/test_wheel.py checks the wheel holds the plugin its sources build to.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PLUGIN = Path(__file__).resolve().parent / "plugin_bridge"
BUILT = ("main.js", "manifest.json", "styles.css")
SOURCES = ("src", "esbuild.config.mjs", "package.json", "package-lock.json", "tsconfig.json")


def stale() -> bool:
    """True when main.js is missing or any plugin source changed after it was built."""
    main_js = PLUGIN / "main.js"
    if not main_js.is_file():
        return True
    built = main_js.stat().st_mtime
    for name in SOURCES:
        path = PLUGIN / name
        files = path.rglob("*") if path.is_dir() else [path]
        if any(f.is_file() and f.stat().st_mtime > built for f in files):
            return True
    return False


def build_plugin() -> None:
    npm = shutil.which("npm")
    if npm is None or not (PLUGIN / "src").is_dir():
        raise SystemExit("vault-cortex: the wheel needs the built Obsidian plugin (plugin_bridge/main.js) and "
                         "cannot build it here (it needs Node.js 20 and npm, and plugin_bridge/src): install Node.js, "
                         "or run `cd plugin_bridge && npm ci && npm run build` first")
    if not (PLUGIN / "node_modules").is_dir():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PLUGIN, check=True)
    subprocess.run([npm, "run", "build"], cwd=PLUGIN, check=True)


class BuildPy(build_py):
    """build_py that builds the plugin first (not for an editable install) and checks the wheel holds it."""

    def run(self) -> None:
        editable = getattr(self, "editable_mode", False)
        if not editable and (PLUGIN / "src").is_dir() and stale():
            build_plugin()
        super().run()
        if not editable:
            out = Path(self.build_lib, "vault_cortex", "plugin")
            missing = [name for name in BUILT if not (out / name).is_file()]
            if missing:
                raise SystemExit(f"vault-cortex: the wheel would lack the plugin's {', '.join(missing)}: run "
                                 "`cd plugin_bridge && npm ci && npm run build`, then build again")


setup(cmdclass={"build_py": BuildPy})
