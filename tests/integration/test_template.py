"""The starter vault: `init_vault` copies `vault_template/` and the result is a complete, consistent vault."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import msgspec
import pytest
import yaml

from vault_cortex.config import SIGNALS, load_settings
from vault_cortex.errors import VaultExists
from vault_cortex.files.vault import init_vault, template_dir
from vault_cortex.files.walk import walk

CORTICES = ["soul", "personality", "artistic", "linguistic", "scientific", "long_term", "short_term"]
OTHER_FOLDERS = ["habits", "resonance", "curiosities", "dreams", "archive", "raw", "_templates"]
DOT_FOLDERS = [".cortex", ".cortex/activity", ".obsidian"]
FILES = [
    "HANDOFF.md",
    ".gitignore",
    ".gitattributes",
    ".cortex/config.toml",
    ".cortex/activity/.gitkeep",
    ".obsidian/app.json",
    ".obsidian/templates.json",
    ".obsidian/core-plugins.json",
    ".obsidian/graph.json",
    "_templates/memory.md",
    "_templates/habit.md",
    "_templates/curiosity.md",
    "_templates/resonance.md",
]
TEMPLATE_FIELDS = {
    "memory": {"cortex", "importance", "created", "tags", "project", "aliases", "relations"},
    "habit": {"triggers", "tool_patterns", "weight", "baseline"},
    "resonance": {"category", "weight", "baseline", "aliases"},
    "curiosity": {"status", "answered_by", "created"},
}
RESONANCE_CATEGORIES = {"identity", "relationship", "aesthetic", "theme", "concept", "emotional"}
DANGLING_ON_PURPOSE = {"grafana vs a hand-rolled dashboard"}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("init") / "v"
    init_vault(dest)
    return dest


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _split(text: str) -> tuple[dict, str]:
    """YAML frontmatter (as a dict) and body of a note."""
    assert text.startswith("---\n"), "note has no frontmatter"
    end = text.index("\n---\n", 4)
    meta = yaml.safe_load(text[4:end]) or {}
    assert isinstance(meta, dict)
    return meta, text[end + 5 :]


def _notes(root: Path, folder: str) -> list[Path]:
    return sorted((root / folder).glob("*.md"))


def _example_notes(root: Path) -> list[Path]:
    """Every example note (not templates), HANDOFF.md included."""
    return sorted(p for p in root.rglob("*.md") if not p.relative_to(root).parts[0].startswith(("_", ".")))


# --- init --------------------------------------------------------------------------------------------


def test_init_creates_every_folder_and_file(vault: Path) -> None:
    for folder in CORTICES + OTHER_FOLDERS + DOT_FOLDERS:
        assert (vault / folder).is_dir(), folder
    for name in FILES:
        assert (vault / name).is_file(), name
    for folder in CORTICES + OTHER_FOLDERS:  # folders without notes keep a .gitkeep so git keeps them
        assert any((vault / folder).iterdir()), f"{folder}/ is empty and would vanish from git"


def test_init_copies_the_template_without_package_files(vault: Path) -> None:
    src = template_dir()
    expected = {f for f in _files(src) if f != "__init__.py" and "__pycache__" not in f}
    assert _files(vault) == expected
    assert not (vault / "__init__.py").exists()
    for rel in expected:
        assert (vault / rel).read_bytes() == (src / rel).read_bytes(), rel


def test_init_into_an_existing_empty_folder(tmp_path: Path) -> None:
    dest = tmp_path / "empty"
    dest.mkdir()
    init_vault(dest)
    assert (dest / ".cortex" / "config.toml").is_file()


def test_init_refuses_a_non_empty_folder_and_leaves_it_untouched(tmp_path: Path) -> None:
    dest = tmp_path / "notes"
    dest.mkdir()
    (dest / "mine.md").write_text("my own note\n", encoding="utf-8")
    with pytest.raises(VaultExists, match="never overwrites"):
        init_vault(dest)
    assert _files(dest) == {"mine.md"}
    assert (dest / "mine.md").read_text(encoding="utf-8") == "my own note\n"


def test_init_refuses_an_existing_vault(tmp_path: Path) -> None:
    dest = tmp_path / "v"
    init_vault(dest)
    (dest / "short_term" / "new.md").write_text("kept\n", encoding="utf-8")
    before = _files(dest)
    with pytest.raises(VaultExists, match="a vault"):
        init_vault(dest)
    assert _files(dest) == before


def test_init_refuses_a_file(tmp_path: Path) -> None:
    dest = tmp_path / "file.txt"
    dest.write_text("x", encoding="utf-8")
    with pytest.raises(VaultExists):
        init_vault(dest)
    assert dest.read_text(encoding="utf-8") == "x"


# --- config ------------------------------------------------------------------------------------------


def test_copied_config_parses_and_every_region_has_a_table(vault: Path) -> None:
    settings = load_settings(vault, env={})
    raw = tomllib.loads((vault / ".cortex/config.toml").read_text(encoding="utf-8"))
    assert settings.regions.order == CORTICES
    assert settings.regions.default in settings.regions.order
    for name in settings.regions.order:
        assert isinstance(raw["regions"].get(name), dict), f"no [regions.{name}] table"
        assert name in settings.regions.defs
    assert set(settings.regions.defs) == set(settings.regions.order)
    assert settings.region("soul").identity and settings.region("personality").identity
    assert settings.region("soul").half_life_days == 0


def test_config_modes_and_feature_sections(vault: Path) -> None:
    settings = load_settings(vault, env={})
    assert set(settings.modes) == {"balanced", "focus", "explore", "identity", "recent"}
    for name, weights in settings.modes.items():
        assert set(weights) == set(SIGNALS), name
        assert sum(weights.values()) == pytest.approx(1.0), name
    assert settings.modes["balanced"] == {
        "relevance": 0.55, "region": 0.05, "importance": 0.1, "coactivation": 0.05,
        "graph": 0.15, "recency": 0.1, "resonance": 0.0,
    }
    modes = settings.modes
    assert max(modes["focus"], key=modes["focus"].__getitem__) == "relevance"
    assert modes["explore"]["graph"] == max(m["graph"] for m in modes.values())
    assert modes["identity"]["resonance"] == max(m["resonance"] for m in modes.values())
    assert modes["identity"]["region"] == max(m["region"] for m in modes.values())
    assert max(modes["recent"], key=modes["recent"].__getitem__) == "recency"

    extra = msgspec.to_builtins(settings)
    assert extra["server"] == {"host": "127.0.0.1", "port": 8765}
    sleep = dict(extra["sleep"])
    keywords = sleep.pop("keywords")
    assert sleep == {
        "merge_threshold": 0.8, "promote_above": 0.7, "prune_below": 0.3, "nightly": False, "nightly_at": "03:30",
    }
    assert set(keywords) <= set(CORTICES) and keywords
    assert all(isinstance(w, list) and w and all(isinstance(x, str) for x in w) for w in keywords.values())
    assert extra["habits"] == {"max": 12, "token_cap": 300, "half_life_days": 30}
    assert extra["resonance"] == {"half_life_days": 30, "report_days": 30}
    assert "curiosity" not in extra
    assert extra["hooks"] == {"prompt_budget_tokens": 400, "session_budget_tokens": 1500, "second_look": True,
                              "transcript_dirs": ["~/.claude/projects", "~/.codex/sessions", "~/.gemini/tmp"]}


# --- git and Obsidian files --------------------------------------------------------------------------


def _lines(path: Path) -> set[str]:
    return {
        line.strip() for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }


def test_gitignore_and_gitattributes(vault: Path) -> None:
    assert _lines(vault / ".gitignore") == {
        ".cortex/index/", ".cortex/token", ".cortex/hooks/", ".obsidian/plugins/vault-cortex/data.json",
        ".obsidian/workspace*.json", ".trash/",
        ".cortex/sleep/*", "!.cortex/sleep/state.json",
    }
    assert _lines(vault / ".gitattributes") == {".cortex/activity/*.jsonl merge=union"}


def test_obsidian_settings(vault: Path) -> None:
    obsidian = vault / ".obsidian"
    app = json.loads((obsidian / "app.json").read_text(encoding="utf-8"))
    assert app["newFileLocation"] == "folder"
    assert app["newFileFolderPath"] == "short_term"
    templates = json.loads((obsidian / "templates.json").read_text(encoding="utf-8"))
    assert templates["folder"] == "_templates" and (vault / templates["folder"]).is_dir()
    plugins = json.loads((obsidian / "core-plugins.json").read_text(encoding="utf-8"))
    assert plugins["templates"] is True and plugins["graph"] is True
    graph = json.loads((obsidian / "graph.json").read_text(encoding="utf-8"))
    groups = graph["colorGroups"]
    assert [g["query"] for g in groups] == [f"path:{name}/" for name in CORTICES]
    colours = [g["color"]["rgb"] for g in groups]
    assert len(set(colours)) == len(CORTICES) and all(isinstance(c, int) and 0 <= c <= 0xFFFFFF for c in colours)
    for name in ("types.json",):
        json.loads((obsidian / name).read_text(encoding="utf-8"))  # valid JSON


# --- Obsidian templates ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(TEMPLATE_FIELDS))
def test_templates_have_variables_and_fields(vault: Path, kind: str) -> None:
    text = (vault / "_templates" / f"{kind}.md").read_text(encoding="utf-8")
    for var in ("{{title}}", "{{date}}", "{{time}}"):
        assert var in text, f"{kind} template lacks {var}"
    meta, _ = _split(text)  # the template itself must be valid YAML, so Obsidian shows its properties
    assert TEMPLATE_FIELDS[kind] <= set(meta), kind
    filled = text.replace("{{title}}", "A note").replace("{{date}}", "2026-11-30").replace("{{time}}", "09:15")
    meta, _ = _split(filled)
    if "created" in meta:
        assert meta["created"] == "2026-11-30T09:15"
    if kind == "curiosity":
        assert meta["status"] == "open"
    if kind == "resonance":
        assert meta["category"] in RESONANCE_CATEGORIES
    if kind == "memory":
        assert meta["cortex"] is None, "an empty cortex lets the note's folder decide its region"
        assert isinstance(meta["relations"], dict)


def test_templates_are_not_indexed(vault: Path) -> None:
    paths = {f.path for f in walk(vault, load_settings(vault, env={}).index).notes}
    assert not any(p.startswith("_templates/") for p in paths)
    assert "HANDOFF.md" in paths
    assert {p.relative_to(vault).as_posix() for p in _example_notes(vault)} <= paths


# --- example notes -----------------------------------------------------------------------------------


def test_example_notes_parse_and_have_a_sensible_length(vault: Path) -> None:
    notes = _example_notes(vault)
    for path in notes:
        meta, body = _split(path.read_text(encoding="utf-8"))
        words = len(body.split())
        assert 80 <= words <= 300, f"{path.name}: {words} words"
        if "importance" in meta:
            assert 0 <= meta["importance"] <= 1, path.name
        if "cortex" in meta:
            assert meta["cortex"] == path.parent.name, path.name
        for key in ("created",):
            if key in meta:
                assert isinstance(meta[key], str), f"{path.name}: {key} should stay a string"
    memories = [p for c in CORTICES for p in _notes(vault, c)]
    assert len(memories) >= 12
    for cortex in CORTICES:
        assert _notes(vault, cortex), f"no example note in {cortex}/"


def test_example_notes_show_the_obsidian_features(vault: Path) -> None:
    metas = {}
    texts = {}
    for path in _example_notes(vault):
        text = path.read_text(encoding="utf-8")
        texts[path.relative_to(vault).as_posix()] = text
        metas[path.relative_to(vault).as_posix()] = _split(text)[0]
    pinned = [p for p, m in metas.items() if m.get("pinned") is True]
    assert pinned and all(p.startswith("soul/") for p in pinned)
    relation_types = {t for m in metas.values() for t in (m.get("relations") or {})}
    assert {"supports", "contradicts", "leads_to", "derived_from"} <= relation_types
    assert any(re.search(r"^depends_on:: \[\[[^\]]+\]\]", t, re.M) for t in texts.values())
    alias_kinds = {type(m["aliases"]) for m in metas.values() if "aliases" in m}
    assert {str, list} <= alias_kinds, "aliases in both string and list form"
    assert any(re.search(r"(?<!\S)#hardware/esp32\b", t) for t in texts.values()), "nested inline tag"
    assert all(isinstance(m.get("tags", []), list) for m in metas.values())
    projects = [m.get("project") for m in metas.values()]
    assert projects.count("greenhouse-sensor") >= 5
    assert any(re.search(r"\[\[[^\]#|]+#\^[A-Za-z0-9-]+\]\]", t) for t in texts.values()), "block link"
    assert any(re.search(r"\[\[[^\]#|]+#[^\^\]][^\]]*\]\]", t) for t in texts.values()), "heading link"


def test_habit_resonance_and_curiosity_notes(vault: Path) -> None:
    habits = {p.stem: _split(p.read_text(encoding="utf-8"))[0] for p in _notes(vault, "habits")}
    assert len(habits) >= 2
    for name, meta in habits.items():
        assert isinstance(meta["triggers"], list) and meta["triggers"], name
        assert isinstance(meta["tool_patterns"], list) and meta["tool_patterns"], name
        assert 0 <= meta["baseline"] <= 1 and 0 <= meta["weight"] <= 1, name
    first = habits["Write the test first"]
    assert {"bug", "fix", "regression"} <= set(first["triggers"])
    assert {"Bash(pytest*)", "Edit"} <= set(first["tool_patterns"])
    assert "Check the sha256 of downloads" in habits

    resonance = {p.stem: _split(p.read_text(encoding="utf-8"))[0] for p in _notes(vault, "resonance")}
    assert len(resonance) >= 2
    assert resonance["Craftsmanship"]["category"] == "aesthetic"
    assert resonance["Curiosity"]["category"] == "identity"
    for name, meta in resonance.items():
        assert meta["category"] in RESONANCE_CATEGORIES, name
        assert 0 <= meta["baseline"] <= 1 and 0 <= meta["weight"] <= 1, name

    curiosities = [_split(p.read_text(encoding="utf-8"))[0] for p in _notes(vault, "curiosities")]
    assert len(curiosities) >= 2
    assert all(m["status"] == "open" and "answered_by" in m and "created" in m for m in curiosities)


_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.M)
_BLOCK_ID = re.compile(r"\s\^([A-Za-z0-9-]+)\s*$", re.M)


def test_example_links_resolve_except_the_one_dangling_on_purpose(vault: Path) -> None:
    """Every wikilink (body and frontmatter) in the examples reaches a note, heading or block that exists."""
    files = {p.relative_to(vault).as_posix()[:-3].lower(): p for p in vault.rglob("*.md")}
    by_name = {p.stem.lower(): p for p in files.values()}
    dangling = set()
    for path in _example_notes(vault):
        text = _CODE.sub("", path.read_text(encoding="utf-8"))
        for link in _WIKILINK.findall(text):
            target, _, sub = link.split("|", 1)[0].partition("#")
            key = target.strip().lower()
            dest = (files.get(key) or by_name.get(key)) if key else path
            if dest is None:
                dangling.add(key)
                continue
            dest_text = dest.read_text(encoding="utf-8")
            if sub.startswith("^"):
                assert sub[1:] in _BLOCK_ID.findall(dest_text), f"{path.name}: no block {sub} in {dest.name}"
            elif sub:
                headings = [h.lower() for h in _HEADING.findall(_CODE.sub("", dest_text))]
                assert sub.lower() in headings, f"{path.name}: no heading {sub!r} in {dest.name}"
    assert dangling == DANGLING_ON_PURPOSE
