// The token must never reach a log line, an error message or a notice, whatever goes wrong.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CortexApiError, CortexClient, REDACTED, consoleLogger, redact } from "../src/client";
import type { HttpRequest, HttpResponse } from "../src/client";
import { errorNotice } from "../src/present";
import { capturingLog, errorBody, json, scripted, RELATED } from "./helpers";

const TOKEN = "s3cret-Token_9f8e7d6c5b4a3210";

describe("the token stays out of logs and errors", () => {
  const consoleLines: string[] = [];
  beforeEach(() => {
    consoleLines.length = 0;
    for (const level of ["log", "debug", "info", "warn", "error"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        consoleLines.push(args.map(String).join(" "));
      });
    }
  });
  afterEach(() => vi.restoreAllMocks());

  // Every way a call can go, several of which echo the token back.
  const replies: Array<[string, (req: HttpRequest) => HttpResponse]> = [
    ["success", () => json(200, RELATED)],
    ["401 echoing the header", (req) => errorBody(401, "Unauthorized", `bad header ${req.headers["Authorization"] ?? ""}`)],
    ["500 echoing the token", () => errorBody(500, "InternalServerError", `token was ${TOKEN}`)],
    ["non-JSON error page echoing the token", () => ({ status: 502, headers: {}, text: `<pre>Authorization: Bearer ${TOKEN}</pre>` })],
    ["transport error mentioning the token", (req) => {
      throw new Error(`connect failed for ${JSON.stringify(req.headers)}`);
    }],
    ["bad JSON", () => ({ status: 200, headers: {}, text: `{"token": "${TOKEN}"` })],
  ];

  it.each(replies)("%s", async (_name, reply) => {
    const log = capturingLog();
    const transport = scripted(reply, TOKEN);
    const clients = [
      new CortexClient(() => ({ serverUrl: "http://127.0.0.1:8765", token: TOKEN }), transport, log),
      new CortexClient(() => ({ serverUrl: "http://127.0.0.1:8765", token: TOKEN }), transport, consoleLogger),
      // a token pasted with spaces around it is sent trimmed, and redacted trimmed
      new CortexClient(() => ({ serverUrl: "http://127.0.0.1:8765", token: ` ${TOKEN}\n` }), transport, consoleLogger),
    ];
    const texts: string[] = [];
    for (const c of clients) {
      for (const call of [() => c.related("a.md"), () => c.status(), () => c.remember({ text: "x" }), () => c.sleepPlan()]) {
        try {
          await call();
        } catch (err) {
          expect(err).toBeInstanceOf(CortexApiError);
          const e = err as CortexApiError;
          texts.push(e.message, e.detail, String(e.stack ?? ""), errorNotice(e, "http://127.0.0.1:8765"));
        }
      }
    }
    expect(transport.requests[0]?.headers["Authorization"]).toBe(`Bearer ${TOKEN}`); // it is sent…
    for (const text of [...texts, ...log.lines, ...consoleLines]) expect(text).not.toContain(TOKEN); // …and never shown
    expect(log.lines.length).toBeGreaterThan(0);
  });

  it("a token in the server URL is redacted too", async () => {
    const transport = scripted(() => {
      throw new Error("refused");
    }, TOKEN);
    const c = new CortexClient(() => ({ serverUrl: `http://127.0.0.1:1/${TOKEN}`, token: TOKEN }), transport, consoleLogger);
    await expect(c.status()).rejects.toThrow(REDACTED);
    for (const line of consoleLines) expect(line).not.toContain(TOKEN);
  });

  it("redact replaces every occurrence and ignores too-short secrets", () => {
    expect(redact(`a ${TOKEN} b ${TOKEN}`, [TOKEN])).toBe(`a ${REDACTED} b ${REDACTED}`);
    expect(redact("abc", ["", "ab"])).toBe("abc");
  });
});
