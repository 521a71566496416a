// Errors of the client, kept free of Obsidian imports so that the pane logic and the harness can use them.

/**
 * What went wrong, as the pane and the commands need to tell it:
 * `unreachable` no server answered; `unauthorised` 401/403; `unavailable` 503 (index or model not ready);
 * `not-found` the server has no such note; `no-route` the server has no such route (older server);
 * `invalid` 400/413/422; `conflict` 409; `server` other errors; `bad-response` a reply that is not the
 * documented JSON; `config` the settings cannot make a request (bad URL).
 */
export type ErrorKind =
  | "config"
  | "unreachable"
  | "unauthorised"
  | "unavailable"
  | "not-found"
  | "no-route"
  | "invalid"
  | "conflict"
  | "server"
  | "bad-response";

export class CortexApiError extends Error {
  override readonly name = "CortexApiError";

  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** The HTTP status, or null when no answer came. */
    readonly status: number | null = null,
    /** The server's error name (`NoteNotFound`, `IndexUnavailable`, …) from its JSON error body. */
    readonly error: string | null = null,
    /** The server's readable detail (token removed). */
    readonly detail: string = "",
  ) {
    super(message);
  }
}

export const REDACTED = "[token]";
/** `text` with every occurrence of each secret replaced, so that no message or log line carries the token. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** The kind of a failed reply, from its status and the server's error name. */
export function kindOf(status: number, error: string | null): ErrorKind {
  if (status === 401 || status === 403) return "unauthorised";
  if (status === 503) return "unavailable";
  if (status === 404) return error === null || error === "NotFound" ? "no-route" : "not-found";
  if (status === 405) return "no-route";
  if (status === 409) return "conflict";
  if (status === 400 || status === 413 || status === 422) return "invalid";
  return "server";
}

