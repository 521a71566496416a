"""Write the server's OpenAPI schema as JSON (sorted keys, stable), for the plugin's generated wire types.

Builds the app with `server.app.create_app` on a throw-away vault, so no server needs to run:

    python plugin_bridge/scripts/dump_openapi.py plugin_bridge/openapi.json   # or no argument: stdout
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # a checkout without `pip install -e .` still finds server/ and vault_cortex/


def openapi_json() -> str:
    """The schema of a freshly built app, as the text `openapi.json` holds."""
    from server.app import create_app
    from vault_cortex.cortex import Cortex
    from vault_cortex.files.vault import init_vault

    with tempfile.TemporaryDirectory(prefix="vault-cortex-schema-") as tmp:
        root = Path(tmp) / "vault"
        init_vault(root)
        with Cortex.open(root) as cx:
            schema = create_app(cx, token="schema-dump").openapi_schema.to_schema()
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = openapi_json()
    if len(argv) > 1:
        Path(argv[1]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
