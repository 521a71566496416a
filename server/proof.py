"""The server's proof that it serves this vault, asked before the bearer token leaves (standard library only: the
hook command uses it on every prompt).

A client opens a connection and sends `GET /v1/proof?nonce=<64 hex digits, fresh>` without the token. The server
answers `{"peer": "<the client's address and port as it sees this TCP connection>", "proof":
HMAC-SHA256(token, "vault-cortex-proof\\n" + nonce + "\\n" + peer)}`. The hook computes the same HMAC with its own
end of the connection (its address and source port) and sends `Authorization: Bearer <token>` and its payload on
that same connection only when they match:

- a listener without the token cannot compute it (HMAC-SHA256 under a 256-bit secret);
- an old answer is worthless: the nonce is 32 random bytes chosen anew for each connection;
- a listener that relays the challenge to the real server asks it from its own socket, so the server's proof
  names the listener's port, not the hook's (another user cannot bind the hook's port, which its connection
  holds); `X-Forwarded-For` and `Forwarded` are refused on this route, so the relay cannot claim the hook's port.

The token itself never crosses before the proof, and the proof is over the very connection the token then uses.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import secrets
import urllib.parse

LABEL = b"vault-cortex-proof\n"  # no other use of the token can be made to sign this
NONCE_BYTES = 32
NONCE_PATTERN = "^[0-9a-f]{32,128}$"  # 16 to 64 bytes in lower-case hex (the hook sends 32)
FORWARDING_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip")
MAX_REPLY_BYTES = 4096


class NotProven(Exception):
    """The listener answered but did not prove it holds the vault's token on this connection: it gets nothing."""


def peer_name(host: str, port: int) -> str:
    """One spelling of a TCP endpoint for both sides: `127.0.0.1:52114`, `[::1]:52114` (an IPv4-mapped IPv6
    address as its IPv4 address, as a dual-stack server sees an IPv4 client)."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return f"{host}:{port}"
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"


def proof(token: str, nonce: str, peer: str) -> str:
    """HMAC-SHA256 of the label, the client's nonce and the client's endpoint, keyed by the token (hex)."""
    message = LABEL + nonce.encode("ascii") + b"\n" + peer.encode("utf-8")
    return hmac.new(token.encode("utf-8"), message, hashlib.sha256).hexdigest()


def proven_connection(base: str, token: str, timeout: float) -> http.client.HTTPConnection:
    """A connection to the server at `base` that proved, on this very connection, that it holds `token`.

    Raises OSError when nothing answers (as a probe would), NotProven when something answered without the proof.
    """
    parts = urllib.parse.urlsplit(base)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        conn.connect()
        sock = conn.sock
        here = peer_name(*sock.getsockname()[:2])
        nonce = secrets.token_hex(NONCE_BYTES)
        conn.request("GET", f"{parts.path.rstrip('/')}/v1/proof?nonce={nonce}", headers={"Accept": "application/json"})
        with conn.getresponse() as resp:
            status, raw = resp.status, resp.read(MAX_REPLY_BYTES)
        if status != 200:
            raise NotProven(f"it answered /v1/proof with HTTP {status}")
        try:
            reply = json.loads(raw)
            given, seen = str(reply["proof"]), str(reply.get("peer", ""))
        except (ValueError, TypeError, KeyError) as exc:
            raise NotProven("its /v1/proof reply is not a proof") from exc
        if not hmac.compare_digest(given.encode(), proof(token, nonce, here).encode()):
            if seen != here and hmac.compare_digest(given.encode(), proof(token, nonce, seen).encode()):
                raise NotProven(f"the server holding the token saw this connection come from {seen}, not {here}: "
                                "a relay (or a proxy) stands between")
            raise NotProven("its proof does not match this vault's token")
        if conn.sock is not sock:  # the server closed the connection: a new one would be unproven
            raise NotProven("it closed the connection after the proof")
        return conn
    except BaseException:
        conn.close()
        raise
