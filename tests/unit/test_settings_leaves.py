"""The user settings stay few and each is one a person can reason about (issue 44): fitted numbers live in the
ranking model (recall/model.py), not in `.cortex/config.toml`; a key older versions read is warned about by name
and ignored, never a refusal to open the vault.

The counting rule: a leaf is one key a user's config.toml (or a `VAULT_CORTEX_*` variable) can set, walking the
`Settings` struct: a scalar, or a list or table that is one value (`index.exclude`, `hooks.transcript_dirs`,
`sleep.keywords`, `relations`) counts 1. The per-mode weight tables (`[modes.<name>]`) and the per-region
definitions (`[regions.<name>]`) are not counted: they are the user's own data (named modes and regions), not knobs.
Before issue 44 this rule counted 60 leaves, 84 with each of the push gate's 25 fitted weights (`[push.weights]`)
counted as its own, as the issue did; now 35. The budget is 40, with the `[capture]` section's five.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest

from vault_cortex.config import REMOVED, Settings, parse_settings

LEAF_BUDGET = 40
USER_DATA = {"modes", "regions.defs"}  # named modes and regions: the user's own tables, not counted


def leaves(struct: type[msgspec.Struct], prefix: str = "") -> list[str]:
    """The dotted names of the settable leaves of a settings struct, by the rule above."""
    out = []
    for field in msgspec.structs.fields(struct):
        name = f"{prefix}{field.name}"
        if name in USER_DATA:
            continue
        kind = field.type
        if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
            out += leaves(kind, f"{name}.")
        else:
            out.append(name)
    return out


def test_the_user_settings_are_at_most_forty_leaves() -> None:
    found = leaves(Settings)
    assert len(found) <= LEAF_BUDGET, f"{len(found)} leaves: {found}"
    assert not any(name.startswith("push.weights") or name == "push.intercept" for name in found), (
        "the gate's fitted numbers are the ranking model's")


def test_a_removed_key_is_one_warning_naming_it_and_the_vault_still_opens(caplog: pytest.LogCaptureFixture) -> None:
    raw: dict[str, Any] = {"recall": {"k": 7, "echo": 0.2, "across_sessions": True},
                           "push": {"threshold": 0.3, "intercept": -5.9, "weights": {"cosine": 2.6}},
                           "curiosity": {"match_threshold": 0.4}}
    with caplog.at_level(logging.WARNING, logger="vault_cortex.config"):
        settings = parse_settings(raw, env={"VAULT_CORTEX_RECALL_COMPANY": "0.1"})
    assert settings.recall.k == 7 and settings.push.threshold == 0.3, "the settings it still reads are read"
    lines = [r.getMessage() for r in caplog.records]
    for key in ("recall.echo", "recall.across_sessions", "push.intercept", "push.weights", "curiosity.match_threshold",
                "recall.company"):
        said = [line for line in lines if line.startswith(f"ignoring {key} ")]
        assert len(said) == 1 and "\n" not in said[0], (key, lines)
    assert "held-out conversations did not confirm it" in next(x for x in lines if "recall.echo" in x)
    assert "ranking model" in next(x for x in lines if "push.weights" in x)


def test_every_removed_key_is_no_longer_a_setting() -> None:
    names = set(leaves(Settings))
    assert not {f"{section}.{key}" for section, key in REMOVED} & names
