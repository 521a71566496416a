// The Python that runs vault-cortex: $VAULT_CORTEX_PYTHON, else the repo's .venv, else python3 on PATH.
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const PLUGIN_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO_ROOT = resolve(PLUGIN_DIR, "..");

export function resolvePython(env = process.env) {
  const given = env.VAULT_CORTEX_PYTHON?.trim();
  if (given) return resolve(REPO_ROOT, given);
  const venv = resolve(REPO_ROOT, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}
