// Shared test helpers: a scripted transport that records requests, and the recorded fixtures.
import { createHmac } from "node:crypto";
import type { Recall, Status } from "../src/api";
import type { HttpRequest, HttpResponse, Transport } from "../src/client";
import related from "./fixtures/related.json";
import status from "./fixtures/status.json";

/** /v1/related for `short_term/2026-11-28 dashboard froze.md` in the starter vault, as the server answered. */
export const RELATED: Recall = related as Recall;
/** /v1/status of the synced starter vault (the vault path replaced). */
export const STATUS: Status = status as Status;

export const json = (status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  text: JSON.stringify(body),
});

export const errorBody = (status: number, error: string, detail: string): HttpResponse => json(status, { error, detail, status });

/** The token most tests configure; a scripted transport proves it holds it unless told otherwise. */
export const TEST_TOKEN = "tok-1234567890abcdef";
export const TEST_PEER = "127.0.0.1:52114";

/** The real server's answer to `GET /v1/proof?nonce=…` for `token` (server/proof.py), computed with Node's crypto. */
export function proofReply(url: string, token: string, peer = TEST_PEER): HttpResponse {
  const nonce = new URL(url).searchParams.get("nonce") ?? "";
  const proof = createHmac("sha256", token).update(`vault-cortex-proof\n${nonce}\n${peer}`).digest("hex");
  return json(200, { peer, proof });
}

export interface ScriptedTransport extends Transport {
  /** Every request but the proofs answered for `token`. */
  requests: HttpRequest[];
  /** The `GET /v1/proof` requests the transport answered as the server holding `token` would. */
  proofs: HttpRequest[];
}

/**
 * A transport answering each request with `reply(request)` (which may throw, as a refused connection does); it
 * answers `/v1/proof` itself as the vault's server holding `token` (null: `reply` answers those too).
 */
export function scripted(reply: (request: HttpRequest) => HttpResponse | Promise<HttpResponse>,
  token: string | null = TEST_TOKEN): ScriptedTransport {
  const requests: HttpRequest[] = [];
  const proofs: HttpRequest[] = [];
  const transport = (async (request: HttpRequest) => {
    if (token !== null && new URL(request.url).pathname.endsWith("/v1/proof")) {
      proofs.push(request);
      return proofReply(request.url, token);
    }
    requests.push(request);
    return reply(request);
  }) as ScriptedTransport;
  transport.requests = requests;
  transport.proofs = proofs;
  return transport;
}

export const silentLog = { debug: () => {}, warn: () => {} };

export function capturingLog(): { lines: string[]; debug(m: string): void; warn(m: string): void } {
  const lines: string[] = [];
  return { lines, debug: (m) => lines.push(`debug ${m}`), warn: (m) => lines.push(`warn ${m}`) };
}
