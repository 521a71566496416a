#!/usr/bin/env bash
# CI for the Obsidian plugin (plugin_bridge/): build, unit and schema-drift tests, then the real-browser test.
# Run after the Python venv exists (<repo>/.venv, or set VAULT_CORTEX_PYTHON): the drift test dumps the
# server's OpenAPI schema with it and the browser test serves a vault with it. Any failure fails the script.
set -euo pipefail
cd "$(dirname "$0")"

CHROMIUM_PATH="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM_PATH" ]; then
  echo "plugin_bridge/ci.sh: installing Debian's chromium for the browser test" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium
fi
export CHROMIUM_PATH

npm ci --no-audit --no-fund
npm run build
npm test
npm run test:browser
