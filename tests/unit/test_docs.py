"""The README documents every CLI command and every setting (docs are tested like code)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import msgspec

from vault_cortex.config import (
    CuriositySettings,
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

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    from server.cli import build_parser  # the one entry point: the library's commands and the server's

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def test_every_cli_command_is_in_the_readme() -> None:
    missing = [c for c in _commands() if not re.search(rf"`vault-cortex {re.escape(c)}\b", README)]
    assert not missing, f"commands missing from README.md's command reference: {missing}"


def test_every_setting_is_in_the_readme() -> None:
    fields = [f"index.{f}" for f in IndexSettings.__struct_fields__]
    fields += [f"embedding.{f}" for f in EmbeddingSettings.__struct_fields__]
    fields += [f"recall.{f}" for f in RecallSettings.__struct_fields__]
    fields += [f"regions.<name>.{f}" for f in Region.__struct_fields__]
    fields += [f"regions.{f}" for f in Regions.__struct_fields__ if f != "defs"]
    fields += [f"push.{f}" for f in PushSettings.__struct_fields__ if f != "weights"] + ["push.weights.<feature>"]
    fields += ["modes.<name>.<signal>", "relations"]
    for struct in (ServerSettings, HooksSettings, HabitsSettings, ResonanceSettings, CuriositySettings):
        section = struct.__name__.removesuffix("Settings").lower()
        fields += [f"{section}.{f}" for f in struct.__struct_fields__]
    fields += [f"sleep.{f}" for f in SleepSettings.__struct_fields__ if f != "keywords"] + ["sleep.keywords.<region>"]
    missing = [f for f in fields if f"`{f}`" not in README and not re.search(rf"`{re.escape(f)}` / ", README)
               and not re.search(rf"/ `{re.escape(f)}`", README)]
    assert not missing, f"settings missing from README.md's configuration table: {missing}"
    assert set(Settings.__struct_fields__) == {"regions", "index", "embedding", "recall", "push", "modes",
                                               "relations", "server", "sleep", "habits", "resonance", "curiosity",
                                               "hooks"}, "a new settings section needs a README row"
    assert msgspec.to_builtins(Settings())  # the defaults serialise
