"""Settings: read once from the vault's `.cortex/config.toml`, then `VAULT_CORTEX_*` variables.

Core code never reads the environment or the disk; it receives a `Settings` value.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from vault_cortex.errors import ConfigError

CONFIG_PATH = ".cortex/config.toml"
SIGNALS = ("relevance", "region", "importance", "coactivation", "graph", "recency", "resonance")


class Region(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One region (cortex) of the vault: its ranking weight, decay and resonance setting."""

    weight: float = 0.5
    half_life_days: float = 0.0  # 0 = never decays (identity regions)
    identity: bool = False
    resonance: str = "cold"  # "warm" or "cold"
    cap: int = 6  # at most this many items of the region in one packed context


def _default_regions() -> dict[str, Region]:
    return {
        "soul": Region(weight=1.0, identity=True, resonance="warm", cap=3),
        "personality": Region(weight=0.9, identity=True, resonance="warm", cap=3),
        "artistic": Region(weight=0.6, half_life_days=180, resonance="warm"),
        "linguistic": Region(weight=0.6, half_life_days=180),
        "scientific": Region(weight=0.7, half_life_days=180),
        "long_term": Region(weight=0.7, half_life_days=365),
        "short_term": Region(weight=0.4, half_life_days=14),
    }


class Regions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    order: list[str] = msgspec.field(
        default_factory=lambda: [
            "soul", "personality", "artistic", "linguistic", "scientific", "long_term", "short_term",
        ]
    )
    default: str = "short_term"
    defs: dict[str, Region] = msgspec.field(default_factory=_default_regions)


class IndexSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    exclude: list[str] = msgspec.field(default_factory=lambda: ["node_modules/**", "_templates/**"])
    include_archive: bool = False
    max_file_mb: float = 8.0  # larger notes are skipped with a reason
    chunk_tokens: int = 256  # the model's window; chunks are split to fit it


class EmbeddingSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    model_dir: str = ""  # empty = the bundled int8 all-MiniLM-L6-v2
    threads: int = 2
    batch_size: int = 8


class RecallSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    k: int = 10
    candidates: int = 60  # dense top-N and lexical top-N chunks gathered before fusion
    dense_weight: float = 0.5
    lexical_weight: float = 0.5
    budget_tokens: int = 1000
    max_k: int = 100
    max_query_chars: int = 2000


class Settings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    regions: Regions = msgspec.field(default_factory=Regions)
    index: IndexSettings = msgspec.field(default_factory=IndexSettings)
    embedding: EmbeddingSettings = msgspec.field(default_factory=EmbeddingSettings)
    recall: RecallSettings = msgspec.field(default_factory=RecallSettings)
    modes: dict[str, dict[str, float]] = msgspec.field(default_factory=dict)
    relations: list[str] = msgspec.field(default_factory=list)  # extra relation types beyond the built-ins
    extra: dict[str, Any] = msgspec.field(default_factory=dict)  # sections later features own

    def region(self, name: str) -> Region:
        """The settings of a region; unknown names get the defaults of a plain region."""
        return self.regions.defs.get(name, Region())


# Environment variables that override a setting: VAULT_CORTEX_<SECTION>_<KEY>.
_ENV_PREFIX = "VAULT_CORTEX_"


def parse_settings(raw: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Settings:
    """Settings from a parsed config.toml mapping and environment overrides; raises ConfigError."""
    data: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    regions = dict(data.pop("regions", {}) or {})
    region_defs = {k: v for k, v in regions.items() if isinstance(v, dict)}
    region_top = {k: v for k, v in regions.items() if not isinstance(v, dict)}
    if region_defs:
        region_top["defs"] = region_defs
    if region_top:
        data["regions"] = region_top
    known = {f for f in Settings.__struct_fields__}
    extra = {k: data.pop(k) for k in list(data) if k not in known}
    data.setdefault("extra", {}).update(extra)
    for key, value in (env or {}).items():
        if not key.startswith(_ENV_PREFIX) or key == _ENV_PREFIX + "TOKEN":
            continue
        section, _, name = key[len(_ENV_PREFIX):].lower().partition("_")
        if section in ("index", "embedding", "recall") and name:
            data.setdefault(section, {})[name] = _env_value(value)
    try:
        settings = msgspec.convert(data, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid {CONFIG_PATH}: {exc}") from exc
    _check(settings)
    return settings


def _env_value(value: str) -> Any:
    try:
        return tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return value


def _check(settings: Settings) -> None:
    order = settings.regions.order
    if settings.regions.default not in order:
        raise ConfigError(f"regions.default {settings.regions.default!r} is not in regions.order")
    for name, region in settings.regions.defs.items():
        if region.resonance not in ("warm", "cold"):
            raise ConfigError(f"regions.{name}.resonance must be 'warm' or 'cold', not {region.resonance!r}")
        if region.half_life_days < 0:
            raise ConfigError(f"regions.{name}.half_life_days must be >= 0")
    for mode, weights in settings.modes.items():
        unknown = set(weights) - set(SIGNALS)
        if unknown:
            raise ConfigError(f"modes.{mode} names unknown signals {sorted(unknown)}; known: {list(SIGNALS)}")
    if not 1 <= settings.embedding.batch_size <= 64:
        raise ConfigError("embedding.batch_size must be between 1 and 64")
    if not 16 <= settings.index.chunk_tokens <= 512:
        raise ConfigError("index.chunk_tokens must be between 16 and 512")


def load_settings(vault: Path, env: Mapping[str, str] | None = None) -> Settings:
    """Read `.cortex/config.toml` (missing = defaults) and the process environment."""
    path = vault / CONFIG_PATH
    raw: dict[str, Any] = {}
    if path.exists():
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot parse {path}: {exc}") from exc
    return parse_settings(raw, os.environ if env is None else env)
