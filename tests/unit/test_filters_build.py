"""`Filters.build`: the one constructor HTTP, MCP and the CLI use; it checks the raw inputs before any search."""

from __future__ import annotations

import argparse

import pytest

from vault_cortex.cli.notes import filter_args, filters_from
from vault_cortex.errors import InvalidRequest
from vault_cortex.recall.filters import Filters


def test_build_keeps_every_value() -> None:
    raw = {"tags": ["#Hardware/ESP32"], "regions": ["scientific"], "project": "Kite", "created_after": "7d",
           "created_before": "2026-11-30", "modified_after": "2026-11-01T10:00Z", "path_prefix": "projects/"}
    assert Filters.build(**raw) == Filters(**raw)  # type: ignore[arg-type]
    assert Filters.build() == Filters() and not Filters.build(created_after="").active()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"created_after": "yesterday"}, r"created_after must be an ISO date .* not 'yesterday'"),
        ({"created_before": "30/11/2026"}, r"created_before must be an ISO date"),
        ({"modified_after": "7 days"}, r"modified_after must be an ISO date"),
        ({"tags": ["two words"]}, r"not a tag: 'two words'"),
        ({"tags": ["#"]}, r"not a tag"),
    ],
)
def test_build_refuses_bad_input_naming_it(raw: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        Filters.build(**raw)  # type: ignore[arg-type]


def test_the_cli_builds_its_filters_with_it() -> None:
    parser = argparse.ArgumentParser()
    filter_args(parser)
    assert filters_from(parser.parse_args(["--tag", "rare", "--created-after", "14d"])) == Filters(
        tags=["rare"], created_after="14d")
    with pytest.raises(InvalidRequest, match="created_after"):
        filters_from(parser.parse_args(["--created-after", "last week"]))
