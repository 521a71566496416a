"""The docs document every CLI command and every setting, and their links lead somewhere (docs tested like code)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import msgspec

from vault_cortex.config import (
    ActivitySettings,
    CaptureSettings,
    EmbeddingSettings,
    HabitsSettings,
    HooksSettings,
    IndexSettings,
    PushSettings,
    RecallSettings,
    Region,
    Regions,
    ResonanceSettings,
    ServerSettings,
    Settings,
    SleepSettings,
)

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
CLI = (DOCS / "cli.md").read_text(encoding="utf-8")
CONFIG = (DOCS / "configuration.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    from server.cli import build_parser  # the one entry point: the library's commands and the server's

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def test_every_cli_command_is_in_the_command_reference() -> None:
    missing = [c for c in _commands() if not re.search(rf"`vault-cortex {re.escape(c)}\b", CLI)]
    assert not missing, f"commands missing from docs/cli.md's command reference: {missing}"


def test_every_setting_is_in_the_configuration_page() -> None:
    fields = [f"index.{f}" for f in IndexSettings.__struct_fields__]
    fields += [f"embedding.{f}" for f in EmbeddingSettings.__struct_fields__]
    fields += [f"recall.{f}" for f in RecallSettings.__struct_fields__]
    fields += [f"regions.<name>.{f}" for f in Region.__struct_fields__]
    fields += [f"regions.{f}" for f in Regions.__struct_fields__ if f != "defs"]
    fields += [f"push.{f}" for f in PushSettings.__struct_fields__]
    fields += ["modes.<name>.<signal>", "relations"]
    for struct in (ServerSettings, HooksSettings, HabitsSettings, ResonanceSettings, ActivitySettings,
                   CaptureSettings):
        section = struct.__name__.removesuffix("Settings").lower()
        fields += [f"{section}.{f}" for f in struct.__struct_fields__]
    fields += [f"sleep.{f}" for f in SleepSettings.__struct_fields__ if f != "keywords"] + ["sleep.keywords.<region>"]
    missing = [f for f in fields if f"`{f}`" not in CONFIG and not re.search(rf"`{re.escape(f)}` / ", CONFIG)
               and not re.search(rf"/ `{re.escape(f)}`", CONFIG)]
    assert not missing, f"settings missing from docs/configuration.md's table: {missing}"
    assert set(Settings.__struct_fields__) == {"regions", "index", "embedding", "recall", "push", "modes",
                                               "relations", "server", "sleep", "habits", "resonance", "hooks",
                                               "activity", "capture"}, (
        "a new settings section needs a row in docs/configuration.md")
    assert msgspec.to_builtins(Settings())  # the defaults serialise


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def test_every_link_in_the_docs_leads_to_a_file_and_heading_that_exist() -> None:
    broken = []
    for page in _pages():
        text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):  # https:, obsidian:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, f"links that lead nowhere: {broken}"


def test_the_readme_is_short_and_leads_to_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 120, "README.md is the front door: reference material goes to docs/"
    unlisted = [p.name for p in sorted(DOCS.glob("*.md")) if f"](docs/{p.name})" not in readme]
    assert not unlisted, f"docs pages missing from README.md's 'Where to go next': {unlisted}"


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = ci.split("# The README's test command (keep the two in step):\n", 1)[1].splitlines()[0]
    assert f"```sh\n{command}\n```" in readme


def test_every_test_the_docs_name_exists() -> None:
    """A promise names the test that checks it (`tests/x.py::test_y`, or `::test_y` after the file was named): a
    test renamed without its doc leaves the promise unchecked."""
    sources = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py")}
    every = "\n".join(sources.values())
    missing = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        for path in set(re.findall(r"tests/[\w/]+\.py", text)):
            if path not in sources:
                missing.append(f"{page.relative_to(ROOT)}: {path}")
        for path, name in re.findall(r"(tests/[\w/]+\.py)?::(test_\w+)", text):
            if not re.search(rf"def {name}\(", sources.get(path, every)):
                missing.append(f"{page.relative_to(ROOT)}: {path}::{name}")
    assert not missing, f"tests the docs name that do not exist: {sorted(set(missing))}"
