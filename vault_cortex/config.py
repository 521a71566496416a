"""Settings: read once from the vault's `.cortex/config.toml`, then `VAULT_CORTEX_*` variables.

Core code never reads the environment or the disk; it receives a `Settings` value. This module imports only the
standard library, msgspec, `errors` and `limits`: the hook command loads it, and nothing else of the library, to find
the server (tests/e2e/test_hooks.py).
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from vault_cortex.errors import ConfigError
from vault_cortex.limits import MAX_BUDGET_TOKENS, MAX_K, MAX_QUERY_CHARS, MIN_BUDGET_TOKENS, MIN_K

log = logging.getLogger(__name__)

CONFIG_PATH = ".cortex/config.toml"
SIGNALS = ("relevance", "region", "importance", "coactivation", "graph", "recency", "resonance")


DEFAULT_MODES: dict[str, dict[str, float]] = {
    "balanced": {"relevance": 0.55, "region": 0.05, "importance": 0.1, "coactivation": 0.05, "graph": 0.15,
                 "recency": 0.1, "resonance": 0.0},
    "focus": {"relevance": 0.85, "region": 0.0, "importance": 0.05, "coactivation": 0.0, "graph": 0.05,
              "recency": 0.05, "resonance": 0.0},
    "explore": {"relevance": 0.35, "region": 0.05, "importance": 0.05, "coactivation": 0.15, "graph": 0.35,
                "recency": 0.05, "resonance": 0.0},
    "identity": {"relevance": 0.35, "region": 0.2, "importance": 0.1, "coactivation": 0.0, "graph": 0.1,
                 "recency": 0.0, "resonance": 0.25},
    "recent": {"relevance": 0.4, "region": 0.0, "importance": 0.05, "coactivation": 0.05, "graph": 0.05,
               "recency": 0.45, "resonance": 0.0},
}


class Region(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One region (cortex) of the vault: its ranking weight, decay and resonance setting."""

    weight: float = 0.5
    half_life_days: float = 90.0  # 0 = never decays (identity regions)
    identity: bool = False
    resonance: str = "cold"  # "warm" or "cold"
    cap: int = 6  # at most this many items of the region per 1,000 tokens of a packed context


def _default_regions() -> dict[str, Region]:
    return {
        "soul": Region(weight=1.0, half_life_days=0, identity=True, resonance="warm", cap=3),
        "personality": Region(weight=0.9, half_life_days=0, identity=True, resonance="warm", cap=3),
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
    exclude: list[str] = msgspec.field(
        default_factory=lambda: ["node_modules/**", "**/node_modules/**", "_templates/**"])
    include_archive: bool = False  # show archived notes in recall (they are always indexed)
    max_file_mb: float = 8.0  # larger notes are skipped with a reason
    chunk_tokens: int = 256  # the model's window; chunks are split to fit it
    max_chunks_per_note: int = 1000  # a longer note is indexed up to here; `doctor` lists it


class EmbeddingSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    model_dir: str = ""  # empty = the bundled int8 all-MiniLM-L6-v2
    threads: int = 2


class RecallSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    k: int = 10
    # the conversation cues (session, person, when, dated, answer; recall/model.py holds how far each raises):
    # "auto" = on where some note carries a `session` or `speaker` property, as imported conversations do
    conversation: Literal["auto"] | bool = "auto"
    budget_tokens: int = 1000
    max_k: int = 100
    max_query_chars: int = 2000


class PushSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The push gate's threshold and size; its model (a logistic regression, its floor and second look) is the
    ranking model's (recall/model.py)."""

    threshold: float = 0.28  # push only when the best candidate's probability reaches this
    most: int = 3  # memories in one push at most, the likeliest first (one when only one is likely)


NonNegative = Annotated[float, msgspec.Meta(ge=0)]
Count = Annotated[int, msgspec.Meta(ge=0)]


class ServerSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    host: Annotated[str, msgspec.Meta(min_length=1)] = "127.0.0.1"  # keep a loopback address: the API serves your notes
    port: Annotated[int, msgspec.Meta(ge=1, le=65535)] = 8765


def _keywords() -> dict[str, list[str]]:
    return {
        "soul": ["value", "believe", "principle", "promise", "matters to me"],
        "personality": ["I tend to", "mood", "energy", "motivation", "habitually"],
        "artistic": ["sketch", "drawing", "design", "colour", "color", "music"],
        "linguistic": ["writing", "phrase", "wording", "grammar", "style", "translation"],
        "scientific": ["measured", "experiment", "benchmark", "datasheet", "sqlite", "voltage"],
        "long_term": ["decided", "decision", "architecture", "lesson", "always", "never"],
    }


class SleepSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Consolidation: merge, promote and prune thresholds, the nightly run and the promotion keywords."""

    merge_threshold: float = 0.8
    promote_above: float = 0.7
    prune_below: float = 0.3
    nightly: bool = False
    nightly_at: str = "03:30"
    keywords: dict[str, list[str]] = msgspec.field(default_factory=_keywords)


class HabitsSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    max: Count = 12  # habits returned for one context
    token_cap: Count = 300  # tokens for all returned habits together
    half_life_days: NonNegative = 30.0


class ResonanceSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    half_life_days: NonNegative = 30.0
    report_days: Annotated[int, msgspec.Meta(ge=1, le=36500)] = 30


class HooksSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    prompt_budget_tokens: Count = 400
    second_look: bool = True  # the Stop hook may send the agent back to check memories that bear on its answer
    session_budget_tokens: Annotated[int, msgspec.Meta(ge=MIN_BUDGET_TOKENS, le=MAX_BUDGET_TOKENS)] = 1500
    # the only folders whose transcripts a hook reads (`~` is the home of the process reading them)
    transcript_dirs: list[str] = msgspec.field(default_factory=lambda: ["~/.claude/projects", "~/.codex/sessions",
                                                                            "~/.gemini/tmp"])


class CaptureSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the SessionEnd and PreCompact hooks keep of a Claude Code session, and where they write it."""

    enabled: bool = True  # false: the hooks write nothing and do not read the transcript
    prompts: bool = True  # the user's prompts
    answers: bool = True  # the assistant's answers
    tools: bool = True  # one line per tool call (its output is never kept)
    folder: str = "raw"  # vault-relative; may be git-ignored

    @property
    def on(self) -> bool:
        """Whether a capture writes anything: enabled, and keeping something."""
        return self.enabled and (self.prompts or self.answers or self.tools)

    @property
    def path(self) -> str:
        """The folder as a vault path (`raw/` → `raw`); ConfigError when it is not one."""
        return capture_folder(self.folder)


def capture_folder(folder: str) -> str:
    """`[capture] folder` as a vault path: relative, without `..`, outside dot-folders (`.cortex/` holds
    vault-cortex's own files; a dot-folder is never indexed); ConfigError else."""
    import ntpath
    import posixpath

    where = f"capture.folder {folder!r}"
    if folder.startswith("~") or posixpath.isabs(folder) or ntpath.isabs(folder) or ntpath.splitdrive(folder)[0]:
        raise ConfigError(f"{where} must be a folder inside the vault, relative to it (e.g. \"raw\"), not an absolute "
                          "path")
    parts = [p for p in folder.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts:
        raise ConfigError(f"{where} must name a folder inside the vault (e.g. \"raw\")")
    if ".." in parts:
        raise ConfigError(f"{where} must stay inside the vault: no \"..\"")
    if parts[0] == ".cortex":
        raise ConfigError(f"{where} is inside .cortex/, which holds vault-cortex's own files, not notes")
    if any(p.startswith(".") for p in parts):
        raise ConfigError(f"{where} is a hidden folder, which is never indexed: name one without a leading dot")
    return "/".join(parts)


class ActivitySettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    log_hook_queries: bool = False  # keep a hook's query text (redacted) in the activity log, not only its fingerprint


class Settings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    regions: Regions = msgspec.field(default_factory=Regions)
    index: IndexSettings = msgspec.field(default_factory=IndexSettings)
    embedding: EmbeddingSettings = msgspec.field(default_factory=EmbeddingSettings)
    recall: RecallSettings = msgspec.field(default_factory=RecallSettings)
    push: PushSettings = msgspec.field(default_factory=PushSettings)
    modes: dict[str, dict[str, float]] = msgspec.field(
        default_factory=lambda: {k: dict(v) for k, v in DEFAULT_MODES.items()})
    relations: list[str] = msgspec.field(default_factory=list)  # extra relation types beyond the built-ins
    server: ServerSettings = msgspec.field(default_factory=ServerSettings)
    sleep: SleepSettings = msgspec.field(default_factory=SleepSettings)
    habits: HabitsSettings = msgspec.field(default_factory=HabitsSettings)
    resonance: ResonanceSettings = msgspec.field(default_factory=ResonanceSettings)
    hooks: HooksSettings = msgspec.field(default_factory=HooksSettings)
    activity: ActivitySettings = msgspec.field(default_factory=ActivitySettings)
    capture: CaptureSettings = msgspec.field(default_factory=CaptureSettings)

    def region(self, name: str) -> Region:
        """The settings of a region; unknown names get the defaults of a plain region."""
        return self.regions.defs.get(name, Region())


# Environment variables that override a setting: VAULT_CORTEX_<SECTION>_<KEY>, e.g. VAULT_CORTEX_EMBEDDING_THREADS.
_ENV_PREFIX = "VAULT_CORTEX_"
_ENV_SECTIONS = ("index", "embedding", "recall", "push", "server", "hooks", "sleep", "habits", "resonance", "curiosity",
                 "activity", "capture")
_FITTED = "now part of the ranking model shipped with vault-cortex (recall/model.py), not a setting"
_UNCONFIRMED = "that mechanism was removed: held-out conversations did not confirm it"
_FIXED = "now a fixed constant, not a setting"
# Keys older versions read, each with why it is gone: a config.toml or variable still setting one is warned about
# (one line naming it) and otherwise ignored, so an older vault still opens.
REMOVED: dict[tuple[str, str], str] = {
    **{("recall", k): _FITTED for k in ("company", "session", "person", "when", "dated", "answer", "dense_weight",
                                        "lexical_weight")},
    ("recall", "echo"): _UNCONFIRMED, ("recall", "across_sessions"): _UNCONFIRMED,
    **{("push", k): _FITTED for k in ("intercept", "weights", "floor", "second_look")},
    **{(section, k): _FIXED for section, k in (
        ("recall", "candidates"), ("recall", "lexical_budget"), ("push", "candidates"), ("embedding", "batch_size"),
        ("server", "debounce_ms"), ("sleep", "co_retrieved_min"), ("sleep", "related_threshold"),
        ("sleep", "prune_min_connections"), ("habits", "semantic_threshold"), ("habits", "reinforce_step"),
        ("resonance", "touch_step"), ("curiosity", "match_threshold"))},
}
# read by the adapters (INDEX_DIR: where the index lives, index/location.py)
_ENV_IGNORED = ("TOKEN", "VAULT", "INDEX_DIR")
_ENV_LISTS = ("hooks_transcript_dirs",)  # folders, separated as in PATH (os.pathsep)

def _table(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} in {CONFIG_PATH} must be a table, not {type(raw).__name__}")
    return dict(raw)


def parse_settings(raw: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Settings:
    """Settings from a parsed config.toml mapping and environment overrides; raises ConfigError."""
    data: dict[str, Any] = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in raw.items()}
    for key, value in (env or {}).items():
        if not key.startswith(_ENV_PREFIX) or key[len(_ENV_PREFIX):] in _ENV_IGNORED:
            continue
        section, _, name = key[len(_ENV_PREFIX):].lower().partition("_")
        if section not in _ENV_SECTIONS or not name:
            continue  # not a setting (e.g. VAULT_CORTEX_LOG for the adapters)
        # a string, converted to the field's type below; a list's items are split at os.pathsep
        listed = f"{section}_{name}" in _ENV_LISTS
        data.setdefault(section, {})[name] = [v for v in value.split(os.pathsep) if v] if listed else value
    _drop_removed(data)
    data["regions"] = _regions(_table(data.get("regions"), "[regions]"))
    data["modes"] = _modes(_table(data.get("modes"), "[modes]"))
    try:
        settings = msgspec.convert(data, Settings, strict=False)
    except msgspec.ValidationError as exc:
        from_env = env and any(k.startswith(_ENV_PREFIX) for k in env)
        source = "the environment or " + CONFIG_PATH if from_env else CONFIG_PATH
        raise ConfigError(f"invalid setting in {source}: {exc}") from exc
    _check(settings)
    return settings


def _drop_removed(data: dict[str, Any]) -> None:
    """Take out the keys older versions read (`REMOVED`), each with a one-line warning naming it."""
    for (section, key), why in REMOVED.items():
        table = data.get(section)
        if isinstance(table, dict) and key in table:
            del table[key]
            log.warning("ignoring %s.%s (in %s or VAULT_CORTEX_%s_%s): %s", section, key, CONFIG_PATH,
                        section.upper(), key.upper(), why)
    if data.get("curiosity") == {}:  # the section's one key is gone; the empty table an older config has is fine
        del data["curiosity"]


def _regions(table: dict[str, Any]) -> dict[str, Any]:
    """User region tables merged field by field over the built-in ones."""
    defaults = _default_regions()
    tables = {k: _table(v, f"[regions.{k}]") for k, v in table.items() if isinstance(v, Mapping)}
    top = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
    order = top.get("order", Regions().order)
    if not isinstance(order, list) or not all(isinstance(x, str) for x in order):
        raise ConfigError("regions.order must be a list of region names")
    if len(set(order)) != len(order):
        raise ConfigError("regions.order names a region twice")
    stray = sorted(set(tables) - set(order))
    if stray:
        raise ConfigError(f"[regions.{stray[0]}] is not in regions.order; add it there to use it")
    defs = {}
    for name in order:
        base = msgspec.to_builtins(defaults.get(name, Region()))
        defs[name] = {**base, **tables.get(name, {})}
    return {**top, "defs": defs}


def _modes(table: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Built-in modes, replaced or added to by the user's [modes.<name>] tables."""
    modes = {k: dict(v) for k, v in DEFAULT_MODES.items()}
    for name, weights in table.items():
        weights = _table(weights, f"[modes.{name}]")
        unknown = sorted(set(weights) - set(SIGNALS))
        if unknown:
            raise ConfigError(f"modes.{name} names unknown signals {unknown}; known: {', '.join(SIGNALS)}")
        for signal, w in weights.items():
            if isinstance(w, bool) or not isinstance(w, int | float) or not 0 <= w <= 1:
                raise ConfigError(f"modes.{name}.{signal} must be a number between 0 and 1, not {w!r}")
        if not any(weights.values()):
            raise ConfigError(f"modes.{name} gives every signal weight 0")
        modes[name] = {s: float(weights.get(s, 0.0)) for s in SIGNALS}
    return modes


def _check(settings: Settings) -> None:
    order = settings.regions.order
    if not order:
        raise ConfigError("regions.order is empty")
    if settings.regions.default not in order:
        raise ConfigError(f"regions.default {settings.regions.default!r} is not in regions.order")
    for name, region in settings.regions.defs.items():
        if region.resonance not in ("warm", "cold"):
            raise ConfigError(f"regions.{name}.resonance must be 'warm' or 'cold', not {region.resonance!r}")
        if region.half_life_days < 0:
            raise ConfigError(f"regions.{name}.half_life_days must be >= 0")
        if not 0 <= region.weight <= 1:
            raise ConfigError(f"regions.{name}.weight must be between 0 and 1")
        if region.cap < 1:
            raise ConfigError(f"regions.{name}.cap must be at least 1")
    emb, rec, idx = settings.embedding, settings.recall, settings.index
    if emb.threads < 1:
        raise ConfigError("embedding.threads must be at least 1")
    if not 16 <= idx.chunk_tokens <= 512:
        raise ConfigError("index.chunk_tokens must be between 16 and 512")
    if idx.max_file_mb <= 0:
        raise ConfigError("index.max_file_mb must be positive")
    if idx.max_chunks_per_note < 1:
        raise ConfigError("index.max_chunks_per_note must be at least 1")
    if not MIN_K <= rec.max_k <= MAX_K:
        raise ConfigError(f"recall.max_k must be between {MIN_K} and {MAX_K}")
    if not MIN_K <= rec.k <= rec.max_k:
        raise ConfigError(f"recall.k must be between {MIN_K} and recall.max_k ({rec.max_k})")
    push = settings.push
    if not 0 <= push.threshold <= 1:
        raise ConfigError("push.threshold must be between 0 and 1")
    if push.most < 1:
        raise ConfigError("push.most must be at least 1")
    if not MIN_BUDGET_TOKENS <= rec.budget_tokens <= MAX_BUDGET_TOKENS:
        raise ConfigError(f"recall.budget_tokens must be between {MIN_BUDGET_TOKENS} and {MAX_BUDGET_TOKENS}")
    if not 1 <= rec.max_query_chars <= MAX_QUERY_CHARS:
        raise ConfigError(f"recall.max_query_chars must be between 1 and {MAX_QUERY_CHARS}")
    capture_folder(settings.capture.folder)


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
