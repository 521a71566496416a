"""The starter config.toml documents every setting, and `parse_settings` reads, overrides and rejects values."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import msgspec
import pytest

from vault_cortex.config import (
    SIGNALS,
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
    load_settings,
    parse_settings,
)
from vault_cortex.errors import ConfigError

CONFIG = Path(__file__).resolve().parents[2] / "vault_template" / ".cortex" / "config.toml"
_KEY = re.compile(r'^\s*([A-Za-z0-9_-]+|"[^"]*")\s*=')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'')
SECTIONS: tuple[tuple[type[msgspec.Struct], str], ...] = (
    (IndexSettings, "index"), (EmbeddingSettings, "embedding"), (RecallSettings, "recall"),
    (ServerSettings, "server"), (SleepSettings, "sleep"), (HabitsSettings, "habits"),
    (ResonanceSettings, "resonance"), (HooksSettings, "hooks"), (PushSettings, "push"),
)


class KeyLine(msgspec.Struct, frozen=True):
    table: str  # dotted table name, '' for the root
    key: str
    line: int
    comment: str  # the comment lines directly above plus any trailing comment, joined by spaces


def _fields(struct: type[msgspec.Struct]) -> set[str]:
    return {f.name for f in msgspec.structs.fields(struct)}


def _key_lines(text: str) -> list[KeyLine]:
    """Every `key = value` line with its table and its documenting comment (multi-line arrays handled)."""
    out: list[KeyLine] = []
    table = ""
    above: list[str] = []
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if depth:  # inside a multi-line array
            depth += _brackets(line)
            continue
        if stripped.startswith("#"):
            above.append(stripped.lstrip("#").strip())
            continue
        if stripped.startswith("["):
            table = stripped.strip("[]").strip()
            above = []
            continue
        match = _KEY.match(line)
        if match:
            hash_at = _blank_strings(line).find("#")
            trailing = line[hash_at + 1 :].strip() if hash_at >= 0 else ""
            out.append(KeyLine(table, match.group(1).strip('"'), number, " ".join([*above, trailing]).strip()))
            depth = _brackets(line)
        above = []
    return out


def _blank_strings(line: str) -> str:
    """The line with string contents blanked (same length), so '#' and brackets in strings are ignored."""
    return _STRING.sub(lambda m: m.group()[0] + " " * (len(m.group()) - 2) + m.group()[-1], line)


def _brackets(line: str) -> int:
    code = _blank_strings(line).split("#", 1)[0]
    return code.count("[") - code.count("]")


def _literal(value: Any) -> str:
    """How a default is written in a comment: TOML literal syntax."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


@pytest.fixture(scope="module")
def text() -> str:
    return CONFIG.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def raw(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


# --- the template documents itself -------------------------------------------------------------------


def test_every_key_has_a_comment(text: str) -> None:
    keys = _key_lines(text)
    assert len(keys) > 80
    missing = [f"line {k.line}: {k.table}.{k.key}" for k in keys if not k.comment]
    assert not missing, "keys without a comment directly above or trailing: " + ", ".join(missing)


def test_every_comment_states_the_default_it_is_set_to(text: str, raw: dict[str, Any]) -> None:
    """A comment says 'default X' and the key is set to X, so the template doubles as the reference."""
    for k in _key_lines(text):
        where = f"line {k.line} ({k.table}.{k.key})"
        assert "default" in k.comment.lower(), f"{where}: the comment does not give the default"
        value: Any = raw
        for part in [*filter(None, k.table.split(".")), k.key]:
            value = value[part]
        after = re.split(r"default", k.comment, maxsplit=1, flags=re.I)[1].lstrip(" :=")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = re.match(r"-?\d+(?:\.\d+)?", after)
            assert number and float(number.group()) == value, f"{where}: comment says {after!r}, value {value}"
        else:
            assert after.startswith(_literal(value)), f"{where}: comment says {after!r}, value {_literal(value)}"


def test_every_settings_field_appears_in_the_template(text: str, raw: dict[str, Any]) -> None:
    # Settings: `regions.defs` is spelt as [regions.<name>] tables.
    for name in _fields(Settings):
        assert name in raw, f"Settings.{name} missing from config.toml"
        assert re.search(rf"^\[?{name}\b", text, re.M), name
    assert "defs" not in raw["regions"]
    assert _fields(Regions) - {"defs"} <= set(raw["regions"])
    for struct, section in SECTIONS:
        assert set(raw[section]) == _fields(struct), f"[{section}] must list exactly the fields of {struct.__name__}"
    for region in raw["regions"]["order"]:
        table = raw["regions"][region]
        assert set(table) == _fields(Region), f"[regions.{region}] must give every Region field"


def test_template_values_are_the_built_in_defaults(raw: dict[str, Any]) -> None:
    parsed = parse_settings(raw, env={})
    defaults = Settings()
    assert parsed.regions == defaults.regions
    assert parsed.index == defaults.index
    assert parsed.embedding == defaults.embedding
    assert parsed.recall == defaults.recall
    assert parsed.push == defaults.push
    assert parsed.relations == defaults.relations
    for _, section in SECTIONS:
        assert getattr(parsed, section) == getattr(defaults, section), section


def test_template_modes_and_feature_sections(raw: dict[str, Any]) -> None:
    parsed = parse_settings(raw, env={})
    assert set(parsed.modes) == {"balanced", "focus", "explore", "identity", "recent"}
    assert all(set(w) == set(SIGNALS) for w in parsed.modes.values())
    assert parsed.server.port == 8765 and parsed.hooks.prompt_budget_tokens == 400


def test_template_shows_how_to_add_a_mode(text: str) -> None:
    example = re.search(r"^#\s*\[modes\.(\w+)\]\s*$((?:\n#\s*\w+\s*=\s*[\d.]+\s*$)+)", text, re.M)
    assert example, "a commented example of a user-defined [modes.<name>] table"
    weights = dict(re.findall(r"(\w+)\s*=\s*([\d.]+)", example.group(2)))
    assert weights and set(weights) <= set(SIGNALS)


# --- parse_settings ----------------------------------------------------------------------------------


def test_defaults() -> None:
    settings = parse_settings({}, env={})
    assert settings == Settings()
    assert settings.regions.order == [
        "soul", "personality", "artistic", "linguistic", "scientific", "long_term", "short_term",
    ]
    assert settings.regions.default == "short_term"
    assert settings.region("soul").identity and settings.region("soul").half_life_days == 0
    assert settings.region("short_term").half_life_days == 14
    assert settings.region("no-such-region") == Region()
    assert settings.embedding.threads == 2 and settings.recall.conversation == "auto"
    assert settings.index.chunk_tokens == 256 and settings.recall.k == 10
    assert settings.relations == []


def test_env_overrides_file_and_default() -> None:
    env = {"VAULT_CORTEX_EMBEDDING_THREADS": "1"}
    assert parse_settings({}, env=env).embedding.threads == 1
    raw = {"embedding": {"threads": 4, "model_dir": "/opt/m"}, "recall": {"echo": 0.1}}
    settings = parse_settings(raw, env=env)
    assert settings.embedding.threads == 1 and settings.embedding.model_dir == "/opt/m"
    assert raw == {"embedding": {"threads": 4, "model_dir": "/opt/m"}, "recall": {"echo": 0.1}}, (
        "the caller's mapping is not modified")


def test_env_values_are_typed() -> None:
    env = {
        "VAULT_CORTEX_INDEX_INCLUDE_ARCHIVE": "true",
        "VAULT_CORTEX_INDEX_MAX_FILE_MB": "2.5",
        "VAULT_CORTEX_RECALL_BUDGET_TOKENS": "600",
        "VAULT_CORTEX_EMBEDDING_MODEL_DIR": "/opt/models/e5-small",
    }
    settings = parse_settings({}, env=env)
    assert settings.index.include_archive is True
    assert settings.index.max_file_mb == 2.5
    assert settings.recall.budget_tokens == 600
    assert settings.embedding.model_dir == "/opt/models/e5-small"


def test_env_ignores_the_token_and_other_variables() -> None:
    env = {"VAULT_CORTEX_TOKEN": "secret", "PATH": "/usr/bin", "VAULT_CORTEX_LOG": "debug",
           "VAULT_CORTEX_INDEX_DIR": "/tmp/elsewhere"}
    assert parse_settings({}, env=env) == Settings()


def test_a_partial_region_table_keeps_the_other_defaults() -> None:
    settings = parse_settings({"regions": {"soul": {"weight": 0.8}}}, env={})
    assert settings.region("soul").weight == 0.8
    assert settings.region("soul").identity and settings.region("soul").half_life_days == 0
    assert settings.region("short_term") == Settings().region("short_term")


def test_bad_env_value_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"embedding\.threads"):
        parse_settings({}, env={"VAULT_CORTEX_EMBEDDING_THREADS": "two"})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"embedding": {"threads": "two"}}, r"Expected `int`.*embedding\.threads"),
        ({"index": {"chunk_tokens": 1024}}, r"index\.chunk_tokens must be between 16 and 512"),
        ({"index": {"exlude": ["x/**"]}}, r"exlude"),
        ({"regions": {"default": "inbox"}}, r"regions\.default 'inbox' is not in regions\.order"),
        ({"regions": {"soul": {"resonance": "hot"}}}, r"regions\.soul\.resonance must be 'warm' or 'cold'"),
        ({"regions": {"soul": {"half_life_days": -1}}}, r"regions\.soul\.half_life_days must be >= 0"),
        ({"regions": {"soul": {"wieght": 1.0}}}, r"wieght"),
        ({"recall": {"k": "many"}}, r"recall\.k"),
        ({"modes": {"balanced": {"relevance": "high"}}}, r"modes\.balanced\.relevance"),
        ({"modes": {"balanced": {"relevance": 1.5}}}, r"modes\.balanced\.relevance must be a number between"),
        ({"regions": {"order": ["a", "a"]}}, r"regions\.order names a region twice"),
        ({"regions": {"inbox": {"weight": 0.5}}}, r"\[regions\.inbox\] is not in regions\.order"),
        ({"regions": 3}, r"\[regions\] in .* must be a table"),
        ({"recall": {"k": 500}}, r"recall\.k must be between 1 and recall\.max_k"),
    ],
)
def test_bad_values_raise_a_clear_config_error(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_settings(raw, env={})


@pytest.mark.parametrize(
    ("raw", "section", "key"),
    [
        ({"server": {"prot": 9000}}, "server", "prot"),
        ({"hooks": {"prompt_budget": 300}}, "hooks", "prompt_budget"),
        ({"sleep": {"merge_treshold": 0.9}}, "sleep", "merge_treshold"),
        ({"habits": {"maximum": 3}}, "habits", "maximum"),
        ({"resonance": {"touchstep": 0.2}}, "resonance", "touchstep"),
        ({"recall": {"conversations": True}}, "recall", "conversations"),
        ({"index": {"exlude": ["x/**"]}}, "index", "exlude"),
    ],
)
def test_a_typo_in_any_section_is_refused_naming_the_section_and_key(
        raw: dict[str, Any], section: str, key: str) -> None:
    with pytest.raises(ConfigError, match=rf"unknown field `{key}`.*\$\.{section}\b"):
        parse_settings(raw, env={})


def test_a_misspelt_section_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"unknown field `hoks`"):
        parse_settings({"hoks": {"prompt_budget_tokens": 300}}, env={})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"server": {"port": "eighty"}}, r"Expected `int`.*\$\.server\.port"),
        ({"server": {"port": 70000}}, r"<= 65535.*\$\.server\.port"),
        ({"server": {"host": ""}}, r"\$\.server\.host"),
        ({"hooks": {"prompt_budget_tokens": "lots"}}, r"Expected `int`.*\$\.hooks\.prompt_budget_tokens"),
        ({"hooks": {"prompt_budget_tokens": -1}}, r">= 0.*\$\.hooks\.prompt_budget_tokens"),
        ({"hooks": {"session_budget_tokens": 10}}, r">= 50.*\$\.hooks\.session_budget_tokens"),
        ({"recall": {"budget_tokens": 10}}, r"recall\.budget_tokens must be between 50 and 100000"),
        ({"recall": {"max_k": 5000}}, r"recall\.max_k must be between 1 and 1000"),
        ({"recall": {"max_query_chars": 20000}}, r"recall\.max_query_chars must be between 1 and 10000"),
        ({"sleep": {"nightly": "sometimes"}}, r"Expected `bool`.*\$\.sleep\.nightly"),
        ({"sleep": {"keywords": {"soul": "value"}}}, r"Expected `array`.*\$\.sleep\.keywords"),
        ({"habits": {"half_life_days": -0.1}}, r">= 0.*\$\.habits\.half_life_days"),
        ({"recall": {"conversation": "sometimes"}}, r"\$\.recall\.conversation"),
        ({"habits": {"max": "a dozen"}}, r"Expected `int`.*\$\.habits\.max"),
        ({"resonance": {"report_days": 0}}, r">= 1.*\$\.resonance\.report_days"),
        ({"curiosity": {"threshold": 0.5}}, r"unknown field `curiosity`"),
        ({"server": 3}, r"Expected `object`.*\$\.server"),
    ],
)
def test_feature_sections_are_typed(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_settings(raw, env={})


def test_feature_sections_read_typed_values_from_the_environment() -> None:
    env = {"VAULT_CORTEX_SERVER_PORT": "9001", "VAULT_CORTEX_HOOKS_PROMPT_BUDGET_TOKENS": "250",
           "VAULT_CORTEX_SLEEP_NIGHTLY": "true", "VAULT_CORTEX_HABITS_HALF_LIFE_DAYS": "21"}
    settings = parse_settings({}, env=env)
    assert settings.server.port == 9001 and settings.hooks.prompt_budget_tokens == 250
    assert settings.sleep.nightly is True and settings.habits.half_life_days == 21
    for value, expected in (("auto", "auto"), ("true", True), ("false", False)):
        conversation = parse_settings({}, env={"VAULT_CORTEX_RECALL_CONVERSATION": value}).recall.conversation
        assert conversation == expected, value
    with pytest.raises(ConfigError, match=r"the environment.*\$\.server\.port"):
        parse_settings({}, env={"VAULT_CORTEX_SERVER_PORT": "http"})


def test_unknown_signal_in_a_mode() -> None:
    raw = {"modes": {"writing": {"relevance": 0.5, "novelty": 0.5}}}
    with pytest.raises(ConfigError, match=r"modes\.writing names unknown signals \['novelty'\]") as info:
        parse_settings(raw, env={})
    assert "relevance" in str(info.value), "the message lists the known signals"


def test_user_mode_and_feature_sections() -> None:
    raw = {
        "modes": {"writing": {"relevance": 0.5, "resonance": 0.5}},
        "sleep": {"merge_threshold": 0.9},
        "server": {"port": 9000},
    }
    settings = parse_settings(raw, env={})
    assert settings.modes["writing"] == {
        "relevance": 0.5, "region": 0.0, "importance": 0.0, "coactivation": 0.0, "graph": 0.0,
        "recency": 0.0, "resonance": 0.5,
    }
    assert set(settings.modes) == {"balanced", "focus", "explore", "identity", "recent", "writing"}
    assert settings.sleep.merge_threshold == 0.9 and settings.server.port == 9000
    assert settings.sleep.prune_below == 0.3 and settings.server.host == "127.0.0.1"


def test_a_custom_taxonomy() -> None:
    raw = {
        "regions": {
            "order": ["identity", "language", "episodic"],
            "default": "episodic",
            "identity": {"weight": 1.0, "identity": True, "resonance": "warm"},
            "episodic": {"half_life_days": 30},
        }
    }
    settings = parse_settings(raw, env={})
    assert settings.regions.order == ["identity", "language", "episodic"]
    assert settings.region("identity").identity is True
    assert settings.region("episodic").half_life_days == 30
    assert settings.region("language") == Region()


def test_load_settings_reads_the_file(tmp_path: Path) -> None:
    assert load_settings(tmp_path, env={}) == Settings()  # no config.toml: defaults
    (tmp_path / ".cortex").mkdir()
    (tmp_path / ".cortex" / "config.toml").write_text("[recall]\nk = 7\n", encoding="utf-8")
    assert load_settings(tmp_path, env={}).recall.k == 7
    assert load_settings(tmp_path, env={"VAULT_CORTEX_RECALL_K": "3"}).recall.k == 3


def test_load_settings_rejects_malformed_toml(tmp_path: Path) -> None:
    (tmp_path / ".cortex").mkdir()
    (tmp_path / ".cortex" / "config.toml").write_text("[recall\nk = 7\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"cannot parse .*config\.toml"):
        load_settings(tmp_path, env={})
