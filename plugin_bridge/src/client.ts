// The HTTP client of the vault-cortex API, on Obsidian's `requestUrl` (the transport is injectable for tests).
import { requestUrl } from "obsidian";
import { REQUIRED_FIELDS, ROUTES } from "./api";
import type { Context, ContextBody, Health, NoteDoc, Recall, RememberBody, RouteId, Routes, Status } from "./api";
import { CortexApiError, redact, kindOf } from "./errors";
import { hex, hmacSha256 } from "./hmac";
import type { ErrorKind } from "./errors";

export { CortexApiError, REDACTED, kindOf, redact } from "./errors";
export type { ErrorKind } from "./errors";

/** One HTTP request as the client hands it to a transport. */
export interface HttpRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/** What a transport returns for any HTTP status; it throws only when no answer came (refused, DNS, TLS…). */
export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
}

export type Transport = (request: HttpRequest) => Promise<HttpResponse>;

export interface Logger {
  debug(message: string): void;
  warn(message: string): void;
}

/** Where the server is and the bearer token it wants (read at each call, so settings changes apply at once). */
export interface ClientConfig {
  serverUrl: string;
  token: string;
}

/** The transport used inside Obsidian: `requestUrl`, which is not subject to CORS and never throws on a status. */
export const obsidianTransport: Transport = async (request) => {
  const response = await requestUrl({
    url: request.url,
    method: request.method,
    headers: request.headers,
    ...(request.body === undefined ? {} : { body: request.body, contentType: "application/json" }),
    throw: false,
  });
  return { status: response.status, headers: response.headers, text: response.text };
};

export const consoleLogger: Logger = {
  debug: (message) => console.debug(`[vault-cortex] ${message}`),
  warn: (message) => console.warn(`[vault-cortex] ${message}`),
};

const DEFAULT_TIMEOUT_MS = 15_000;

/** Whether captured sessions (`layer: raw`) come back: the server leaves them out unless asked. */
export type Captures = "exclude" | "include" | "only";

type Query = Record<string, string | number | boolean | readonly string[] | null | undefined>;

interface CallOptions {
  query?: Query;
  path?: Record<string, string>;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A route's parameters and body, typed by the schema (`never` where the route takes none). */
interface RouteOptions<R extends RouteId> {
  query?: Routes[R]["query"];
  path?: Routes[R]["path"];
  body?: Routes[R]["body"];
}

/** The base URL without a trailing slash, or a `config` error when it is not an http(s) URL. */
export function baseUrl(serverUrl: string): string {
  const trimmed = serverUrl.trim().replace(/\/+$/, "");
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    throw new CortexApiError("config", `the server URL ${JSON.stringify(trimmed)} is not a URL (e.g. http://127.0.0.1:8765)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new CortexApiError("config", `the server URL must start with http:// or https://, not ${parsed.protocol}`);
  }
  return trimmed;
}

export function queryString(query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === null || value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) params.append(name, String(v));
    else params.append(name, String(value));
  }
  const text = params.toString().replace(/\+/g, "%20");
  return text ? `?${text}` : "";
}

/** What the server signs to prove it holds the token (server/proof.py): HMAC-SHA256(token, label + nonce + peer). */
export const PROOF_LABEL = "vault-cortex-proof\n";

/** A fresh random challenge: 32 bytes as 64 hex digits. */
export function newNonce(): string {
  return hex(crypto.getRandomValues(new Uint8Array(32)));
}

/** HMAC-SHA256(token, "vault-cortex-proof\n" + nonce + "\n" + peer) in hex, as the server computes it. */
export function proofOf(token: string, nonce: string, peer: string): string {
  const encoder = new TextEncoder();
  return hex(hmacSha256(encoder.encode(token), encoder.encode(`${PROOF_LABEL}${nonce}\n${peer}`)));
}

/** Equal strings, compared in time that does not depend on where they differ. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

type Fail = (kind: ErrorKind, message: string, status?: number | null, error?: string | null, detail?: string) => never;

/** The vault-cortex HTTP API, typed by the generated `api.ts`; every failure is a `CortexApiError`. */
export class CortexClient {
  constructor(
    private readonly config: () => ClientConfig,
    private readonly transport: Transport = obsidianTransport,
    private readonly log: Logger = consoleLogger,
    private readonly timeoutMs: number = DEFAULT_TIMEOUT_MS,
  ) {}

  health(): Promise<Health> {
    return this.call("GET /v1/health", {});
  }

  status(): Promise<Status> {
    return this.call("GET /v1/status", {});
  }

  /** Memories related to a note (by its indexed content), best first; captured sessions only when `captures` asks. */
  related(path: string, options: { mode?: string | null; k?: number | null; captures?: Captures } = {}): Promise<Recall> {
    return this.call("GET /v1/related", { query: { path, mode: options.mode, k: options.k, captures: options.captures } });
  }

  /**
   * Memories for a text through the push gate (`gate: true`): only those close enough to show unasked, each
   * with `push_probability`; none when nothing is. POST, so a long paragraph never makes a long URL.
   */
  recall(query: string, options: { mode?: string | null; k?: number | null; gate?: boolean; captures?: Captures } = {}): Promise<Recall> {
    // `captures` only when asked: a server older than the field refuses a body that names it
    const captures = options.captures === undefined ? {} : { captures: options.captures };
    return this.call("POST /v1/recall", { body: { query, mode: options.mode ?? null, k: options.k ?? null, gate: options.gate ?? false, ...captures } });
  }

  /** A token-budgeted context block; its `markdown` is what an agent or a paste should receive. */
  context(body: ContextBody): Promise<Context> {
    return this.call("POST /v1/context", { body });
  }

  /** Save a new memory note (the server picks its path from the title and region). */
  remember(body: RememberBody): Promise<NoteDoc> {
    return this.call("POST /v1/notes", { body });
  }

  /**
   * A preview of the consolidation plan: `GET /v1/sleep/plan` writes nothing on the server (not even the plan;
   * `POST /v1/sleep/plan` is what saves one to apply by id, which the plugin never does). The reply stays
   * untyped so older servers' shapes still render; a server without the route answers 404 (`no-route`).
   */
  async sleepPlan(mode: string = "full"): Promise<unknown> {
    return this.request("GET", "/v1/sleep/plan", { query: { mode } }, null);
  }

  private async call<R extends RouteId>(route: R, options: RouteOptions<R>): Promise<Routes[R]["response"]> {
    const spec = ROUTES[route];
    const value = await this.request(spec.method, spec.path, options, spec.response);
    return value as Routes[R]["response"];
  }

  private async request(method: string, template: string, options: CallOptions, component: string | null): Promise<unknown> {
    const { serverUrl, token } = this.config();
    const secrets = [token.trim()];
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(options.path?.[name] ?? ""));
    const what = `${method} ${path}`;
    const fail: Fail = (kind, message, status = null, error = null, detail = "") => {
      const err = new CortexApiError(kind, redact(message, secrets), status, error, redact(detail, secrets));
      this.log.warn(err.message);
      throw err;
    };

    let url: string;
    try {
      url = baseUrl(serverUrl) + path + queryString(options.query);
    } catch (err) {
      return fail("config", err instanceof Error ? err.message : String(err));
    }
    const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
    if (token.trim()) {
      await this.proven(baseUrl(serverUrl), token.trim(), what, fail);
      headers["Authorization"] = `Bearer ${token.trim()}`;
    }
    const request: HttpRequest = { url, method, headers };
    if (options.body !== undefined) {
      request.body = JSON.stringify(options.body);
      headers["Content-Type"] = "application/json";
    }

    const started = Date.now();
    let response: HttpResponse;
    try {
      response = await this.withTimeout(this.transport(request));
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return fail("unreachable", `${what}: no answer from the vault-cortex server at ${baseUrlOrRaw(serverUrl)} (${why})`);
    }
    this.log.debug(redact(`${what} → ${response.status} in ${Date.now() - started} ms`, secrets));

    let body: unknown = undefined;
    let parsed = false;
    if (response.text.trim()) {
      try {
        body = JSON.parse(response.text);
        parsed = true;
      } catch {
        parsed = false;
      }
    }
    if (response.status >= 400) {
      const error = parsed && isObject(body) && typeof body["error"] === "string" ? body["error"] : null;
      const detail = parsed && isObject(body) && typeof body["detail"] === "string"
        ? body["detail"]
        : response.text.trim().slice(0, 200);
      const kind = kindOf(response.status, error);
      return fail(kind, `${what}: ${detail || `HTTP ${response.status}`} (${response.status})`, response.status, error, detail);
    }
    if (!parsed) {
      return fail("bad-response", `${what}: the reply is not JSON (status ${response.status}); is ${baseUrlOrRaw(serverUrl)} a vault-cortex server?`, response.status);
    }
    if (component !== null) {
      const missing = (REQUIRED_FIELDS[component] ?? []).filter((f) => !isObject(body) || !(f in body));
      if (missing.length > 0) {
        return fail("bad-response", `${what}: the reply lacks ${missing.join(", ")} (the plugin and the server disagree on the ${component} shape)`, response.status);
      }
    }
    return body;
  }

  /**
   * Before the token leaves, the server proves it holds it: `GET /v1/proof?nonce=<fresh>` without the token, and
   * its HMAC of the nonce under the token checked here. A program that is not this vault's server (one that took
   * the port while `serve` was down) cannot answer, so it never receives the token or the request. Asked before
   * every request that carries the token: `requestUrl` gives no hold on the connection, so a server proven once
   * says nothing about the next request. See docs/plugin.md for what this does not cover (a relay).
   */
  private async proven(base: string, token: string, what: string, fail: Fail): Promise<void> {
    const nonce = newNonce();
    const refused = (why: string, kind: ErrorKind = "unauthorised", status: number | null = null): never =>
      fail(kind, `${what}: the server at ${base} did not prove it holds this vault's token (${why}); the token was not sent`, status, "NotProven", why);
    let response: HttpResponse;
    try {
      response = await this.withTimeout(this.transport({ url: `${base}/v1/proof?nonce=${nonce}`, method: "GET", headers: { Accept: "application/json" } }));
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return fail("unreachable", `${what}: no answer from the vault-cortex server at ${base} (${why})`);
    }
    if (response.status === 404 || response.status === 405) {
      return refused("it has no /v1/proof: a vault-cortex older than this plugin, or another program", "no-route", response.status);
    }
    if (response.status !== 200) return refused(`it answered /v1/proof with HTTP ${response.status}`, "unauthorised", response.status);
    let reply: unknown;
    try {
      reply = JSON.parse(response.text);
    } catch {
      reply = null;
    }
    if (!isObject(reply) || typeof reply["proof"] !== "string" || typeof reply["peer"] !== "string") {
      return refused("its reply is not a proof", "bad-response", response.status);
    }
    if (!sameText(reply["proof"], proofOf(token, nonce, reply["peer"]))) {
      return refused("its proof does not match the token in the settings: a wrong token, or a program that is not the vault's server");
    }
  }

  private withTimeout<T>(promise: Promise<T>): Promise<T> {
    if (this.timeoutMs <= 0) return promise;
    return new Promise<T>((resolve, reject) => {
      const timer = window.setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs / 1000} s`)), this.timeoutMs);
      promise.then(
        (value) => {
          window.clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          window.clearTimeout(timer);
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      );
    });
  }
}

function baseUrlOrRaw(serverUrl: string): string {
  return serverUrl.trim().replace(/\/+$/, "");
}
