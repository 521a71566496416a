"""The sleep routes on an adopted vault: a plan whose edges go to `.cortex/relations.jsonl` is applied over HTTP,
by id or sent whole, and an edge operation that names anything but the sidecar and a note is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from vault_cortex.cortex import Cortex
from vault_cortex.files.adopt import adopt_vault
from vault_cortex.files.relations import RELATIONS_PATH, parse

SAMPLE = Path(__file__).parent.parent / "fixtures" / "vaults" / "obsidian_sample"
NEW = "Notes/Nodes POST readings over HTTP.md"
NOTES = {
    "Notes/Nodes send readings over MQTT.md": "---\ncreated: 2026-10-02T10:00\n---\n# Nodes send readings over "
    "MQTT\n\nDecision: the greenhouse sensor nodes send their temperature and humidity readings over MQTT to the "
    "collector on the Pi, every five minutes.\n",
    NEW: "---\ncreated: 2026-11-20T10:00\n---\n# Nodes POST readings over HTTP\n\nDecision: the greenhouse sensor "
    "nodes no longer send their temperature and humidity readings over MQTT to the collector on the Pi; they POST "
    "them over HTTP, every five minutes.\n",
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("adopted") / "obsidian_sample"
    shutil.copytree(SAMPLE, root, symlinks=True)
    for path, text in NOTES.items():
        (root / path).write_text(text, encoding="utf-8")
    adopt_vault(root)
    config = root / ".cortex" / "config.toml"  # a bar low enough that similarity proposes the pair
    config.write_text(config.read_text(encoding="utf-8").replace("merge_threshold = 0.92", "merge_threshold = 0.8"),
                      encoding="utf-8")
    return root


def test_an_adopted_vaults_plan_is_applied_over_http_writing_its_edges_to_the_sidecar(
        client: TestClient[Litestar], cx: Cortex) -> None:
    plan = client.post("/v1/sleep/plan", json={"mode": "full"}).json()["plan"]
    edge = next(op for op in plan["ops"] if op["action"] == "add_edge" and op["src"] == NEW)
    assert edge["path"] == RELATIONS_PATH and edge["key"] == "supersedes"
    outside = {**plan, "ops": [{**op, "src": "../outside.md"} if op is edge else op for op in plan["ops"]]}
    on_note = {**plan, "ops": [{**op, "path": NEW, "hashes": {NEW: None}} if op is edge else op
                               for op in plan["ops"]]}
    for body, error in (({"plan": outside}, "UnsafePath"), ({"plan": on_note}, "InvalidRequest")):
        response = client.post("/v1/sleep/apply", json=body)
        assert response.status_code == 400 and response.json()["error"] == error, response.text
    response = client.post("/v1/sleep/apply", json={"plan_id": plan["id"]})
    assert response.status_code == 200, response.text
    assert edge["step"] in response.json()["applied"]
    assert (NEW, "supersedes", "Nodes send readings over MQTT") in parse((cx.root / RELATIONS_PATH).read_bytes())
