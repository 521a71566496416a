"""The API bearer token: `$VAULT_CORTEX_TOKEN` or the vault's `.cortex/token` (a read-only vault's beside its index);
stdlib only, for the hooks."""

from __future__ import annotations

import hmac
import logging
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from server.serve_lock import index_dirs

log = logging.getLogger(__name__)

TOKEN_FILE = ".cortex/token"
TOKEN_ENV = "VAULT_CORTEX_TOKEN"


def load_or_create_token(root: Path, env: Mapping[str, str], *, path: Path | None = None) -> str:
    """The API token: `$VAULT_CORTEX_TOKEN`, else `.cortex/token` (or `path`: a read-only vault's is kept beside
    its index), created (mode 0600) on first use."""
    if env.get(TOKEN_ENV, "").strip():
        return env[TOKEN_ENV].strip()
    path = path or root / TOKEN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            log.warning("%s is readable by other users (mode %o); run: chmod 600 %s", path, mode, path)
        token = path.read_text(encoding="utf-8").strip()
        if not token:
            raise OSError(f"{path} is empty: delete it and restart to create a new token") from None
        return token
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    log.info("created the API token in %s", path)
    return token


def read_token(root: Path, env: Mapping[str, str], index_dir: Path | None = None) -> str | None:
    """The token a client should send, without creating one (None if there is none yet): `$VAULT_CORTEX_TOKEN`,
    else `.cortex/token`, else a read-only vault's, beside its index (`index_dir`, else the user cache's)."""
    if env.get(TOKEN_ENV, "").strip():
        return env[TOKEN_ENV].strip()
    for path in [root / TOKEN_FILE, *(folder / "token" for folder in index_dirs(root, index_dir, env))]:
        try:
            token = path.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if token:
            return token
    return None


def token_matches(header: str | None, token: str) -> bool:
    """Constant-time check of an `Authorization: Bearer <token>` header."""
    scheme, _, given = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())
