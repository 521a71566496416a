"""The Obsidian plugin's wire types follow the server: its saved OpenAPI schema must be the app's schema."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

PLUGIN = Path(__file__).resolve().parents[2] / "plugin_bridge"
FIX = ("the HTTP API changed: run `npm run gen:api` in plugin_bridge/ (it rewrites openapi.json and src/api.ts), "
       "then `npm test` there")


def _dump_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dump_openapi", PLUGIN / "scripts" / "dump_openapi.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plugin_openapi_json_matches_the_app() -> None:
    saved = json.loads((PLUGIN / "openapi.json").read_text(encoding="utf-8"))
    live = json.loads(_dump_script().openapi_json())
    assert live == saved, FIX


def test_plugin_routes_exist() -> None:
    """The routes the plugin calls (its client names them; /v1/sleep/plan is optional and handled as absent)."""
    paths = json.loads((PLUGIN / "openapi.json").read_text(encoding="utf-8"))["paths"]
    assert {"/v1/related", "/v1/status", "/v1/context", "/v1/notes", "/v1/health"} <= set(paths)
    assert "get" in paths["/v1/related"] and "post" in paths["/v1/context"] and "post" in paths["/v1/notes"]
