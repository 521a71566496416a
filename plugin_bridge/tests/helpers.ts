// Shared test helpers: a scripted transport that records requests, and the recorded fixtures.
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

export interface ScriptedTransport extends Transport {
  requests: HttpRequest[];
}

/** A transport answering each request with `reply(request)` (which may throw, as a refused connection does). */
export function scripted(reply: (request: HttpRequest) => HttpResponse | Promise<HttpResponse>): ScriptedTransport {
  const requests: HttpRequest[] = [];
  const transport = (async (request: HttpRequest) => {
    requests.push(request);
    return reply(request);
  }) as ScriptedTransport;
  transport.requests = requests;
  return transport;
}

export const silentLog = { debug: () => {}, warn: () => {} };

export function capturingLog(): { lines: string[]; debug(m: string): void; warn(m: string): void } {
  const lines: string[] = [];
  return { lines, debug: (m) => lines.push(`debug ${m}`), warn: (m) => lines.push(`warn ${m}`) };
}
