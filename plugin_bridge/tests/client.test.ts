import { afterEach, describe, expect, it } from "vitest";
import { CortexApiError, CortexClient, baseUrl, kindOf, obsidianTransport, queryString } from "../src/client";
import type { ClientConfig, Transport } from "../src/client";
import { ROUTES } from "../src/api";
import { RELATED, STATUS, TEST_TOKEN, errorBody, json, proofReply, scripted, silentLog } from "./helpers";

const TOKEN = TEST_TOKEN;
const config = (over: Partial<ClientConfig> = {}) => () => ({ serverUrl: "http://127.0.0.1:8765", token: TOKEN, ...over });
const client = (transport: Transport, over: Partial<ClientConfig> = {}, timeoutMs = 0) =>
  new CortexClient(config(over), transport, silentLog, timeoutMs);

async function failure(promise: Promise<unknown>): Promise<CortexApiError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(CortexApiError);
    return err as CortexApiError;
  }
  throw new Error("expected the call to fail");
}

describe("the server's proof before the token leaves", () => {
  it("sends a listener that cannot prove it holds the token nothing but the challenge", async () => {
    const impostor = scripted((req) =>
      req.url.includes("/v1/proof?") ? json(200, { peer: "127.0.0.1:52114", proof: "0".repeat(64) }) : json(200, RELATED), null);
    const err = await failure(client(impostor).related("short_term/secret plans.md"));
    expect(err.kind).toBe("unauthorised");
    expect(err.error).toBe("NotProven");
    expect(err.message).toContain("did not prove it holds this vault's token");
    expect(impostor.requests).toHaveLength(1); // the challenge, and nothing after it
    const [challenge] = impostor.requests;
    expect(challenge?.method).toBe("GET");
    expect(challenge?.url).toMatch(/^http:\/\/127\.0\.0\.1:8765\/v1\/proof\?nonce=[0-9a-f]{64}$/);
    expect(challenge?.headers).not.toHaveProperty("Authorization");
    expect(JSON.stringify(impostor.requests)).not.toContain(TOKEN);
    expect(JSON.stringify(impostor.requests)).not.toContain("secret plans");
  });

  it("refuses a proof made with another token, a reply that is no proof, and a server without the route", async () => {
    const otherVault = scripted((req) => (req.url.includes("/v1/proof?") ? proofReply(req.url, "another-vaults-token") : json(200, STATUS)), null);
    expect((await failure(client(otherVault).status())).kind).toBe("unauthorised");
    const noProof = scripted((req) => (req.url.includes("/v1/proof?") ? json(200, { ok: true }) : json(200, STATUS)), null);
    expect((await failure(client(noProof).status())).kind).toBe("bad-response");
    const older = scripted((req) => (req.url.includes("/v1/proof?") ? errorBody(404, "NotFound", "Not Found") : json(200, STATUS)), null);
    expect((await failure(client(older).status())).kind).toBe("no-route");
    for (const t of [otherVault, noProof, older]) {
      expect(t.requests).toHaveLength(1);
      expect(t.requests[0]?.headers).not.toHaveProperty("Authorization");
    }
  });

  it("asks a fresh proof before every request that carries the token, and none without a token", async () => {
    const t = scripted(() => json(200, STATUS));
    const c = client(t);
    await c.status();
    await c.status();
    expect(t.requests.map((r) => r.headers["Authorization"])).toEqual([`Bearer ${TOKEN}`, `Bearer ${TOKEN}`]);
    const nonces = t.proofs.map((r) => new URL(r.url).searchParams.get("nonce"));
    expect(nonces).toHaveLength(2);
    expect(new Set(nonces).size).toBe(2);
    for (const r of t.proofs) expect(r.headers).not.toHaveProperty("Authorization");
    const anonymous = scripted(() => json(200, { ok: true, version: "0.1.0" }));
    await client(anonymous, { token: "" }).health();
    expect(anonymous.proofs).toHaveLength(0);
  });
});

describe("requests", () => {
  it("asks for related notes with the path and mode in the query and the bearer token", async () => {
    const t = scripted(() => json(200, RELATED));
    const recall = await client(t).related("short_term/2026-11-28 dashboard froze.md", { mode: "explore", k: 8 });
    expect(recall.hits).toHaveLength(RELATED.hits.length);
    const [req] = t.requests;
    expect(req?.method).toBe("GET");
    expect(req?.url).toBe("http://127.0.0.1:8765/v1/related?path=short_term%2F2026-11-28%20dashboard%20froze.md&mode=explore&k=8");
    expect(req?.headers["Authorization"]).toBe(`Bearer ${TOKEN}`);
    expect(req?.body).toBeUndefined();
  });

  it("leaves out unset query parameters", async () => {
    const t = scripted(() => json(200, RELATED));
    await client(t).related("a.md", {});
    expect(t.requests[0]?.url).toBe("http://127.0.0.1:8765/v1/related?path=a.md");
  });

  it("asks for captured sessions only when told to", async () => {
    const t = scripted(() => json(200, RELATED));
    await client(t).related("a.md", { captures: "include" });
    await client(t).recall("why did the dashboard freeze", { gate: true });
    await client(t).recall("why did the dashboard freeze", { gate: true, captures: "include" });
    expect(t.requests[0]?.url).toBe("http://127.0.0.1:8765/v1/related?path=a.md&captures=include");
    expect(JSON.parse(t.requests[1]?.body ?? "{}")).not.toHaveProperty("captures"); // an older server refuses it
    expect(JSON.parse(t.requests[2]?.body ?? "{}")).toMatchObject({ captures: "include" });
  });

  it("posts JSON bodies for context and remember", async () => {
    const t = scripted((req) =>
      req.url.endsWith("/v1/context")
        ? json(200, { context: { items: [], groups: [], tokens: 0, budget_tokens: 500, dropped: 0, markdown: "" }, markdown: "# ctx", matching_questions: [], mode: "balanced", nudge: "", open_questions: 0, project: null, task: null, took_ms: 1 })
        : json(201, { path: "short_term/x.md", content: "x", etag: "e1" }),
    );
    const c = client(t);
    const ctx = await c.context({ active_note: "a.md", budget_tokens: 500, mode: "focus" });
    expect(ctx.markdown).toBe("# ctx");
    const doc = await c.remember({ text: "hello" });
    expect(doc.path).toBe("short_term/x.md");
    expect(t.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      "POST http://127.0.0.1:8765/v1/context",
      "POST http://127.0.0.1:8765/v1/notes",
    ]);
    expect(JSON.parse(t.requests[0]?.body ?? "")).toEqual({ active_note: "a.md", budget_tokens: 500, mode: "focus" });
    expect(t.requests[0]?.headers["Content-Type"]).toBe("application/json");
    expect(JSON.parse(t.requests[1]?.body ?? "")).toEqual({ text: "hello" });
  });

  it("sends no Authorization header without a token", async () => {
    const t = scripted(() => json(200, { ok: true, version: "0.1.0" }));
    await client(t, { token: "  " }).health();
    expect(t.requests[0]?.headers).not.toHaveProperty("Authorization");
  });

  it("trims a trailing slash from the server URL", async () => {
    const t = scripted(() => json(200, STATUS));
    await client(t, { serverUrl: "http://localhost:9000///" }).status();
    expect(t.requests[0]?.url).toBe("http://localhost:9000/v1/status");
  });

  it("previews the sleep plan with a GET of /v1/sleep/plan (the route that writes nothing)", async () => {
    const t = scripted(() => json(200, { operations: [] }));
    expect(await client(t).sleepPlan()).toEqual({ operations: [] });
    expect(t.requests[0]?.url).toBe("http://127.0.0.1:8765/v1/sleep/plan?mode=full");
    expect(t.requests[0]?.method).toBe("GET");
    expect(ROUTES["GET /v1/sleep/plan"].method).toBe("GET");
    expect(ROUTES["POST /v1/sleep/plan"].method).toBe("POST"); // saving a plan is a POST the plugin never sends
  });
});

describe("failures", () => {
  const cases: Array<[number, string, string]> = [
    [401, "Unauthorized", "unauthorised"],
    [403, "Forbidden", "unauthorised"],
    [503, "IndexUnavailable", "unavailable"],
    [404, "NoteNotFound", "not-found"],
    [404, "NotFound", "no-route"],
    [405, "MethodNotAllowed", "no-route"],
    [400, "ValidationError", "invalid"],
    [409, "WriteConflict", "conflict"],
    [500, "InternalServerError", "server"],
  ];
  it.each(cases)("maps %i %s to %s, keeping the server's detail", async (status, error, kind) => {
    const t = scripted(() => errorBody(status, error, `detail of ${error}`));
    const err = await failure(client(t).related("a.md"));
    expect(err.kind).toBe(kind);
    expect(err.status).toBe(status);
    expect(err.error).toBe(error);
    expect(err.detail).toBe(`detail of ${error}`);
    expect(err.message).toContain(`GET /v1/related: detail of ${error} (${status})`);
  });

  it("calls a refused connection unreachable and names the URL", async () => {
    const t = scripted(() => {
      throw new Error("net::ERR_CONNECTION_REFUSED");
    });
    const err = await failure(client(t).related("a.md"));
    expect(err.kind).toBe("unreachable");
    expect(err.status).toBeNull();
    expect(err.message).toContain("http://127.0.0.1:8765");
    expect(err.message).toContain("ERR_CONNECTION_REFUSED");
  });

  it("gives up after the timeout", async () => {
    const t = scripted(() => new Promise(() => {}));
    const err = await failure(client(t, {}, 20).status());
    expect(err.kind).toBe("unreachable");
    expect(err.message).toContain("no answer within");
  });

  it("refuses a reply that is not JSON", async () => {
    const t = scripted(() => ({ status: 200, headers: {}, text: "<html>hello</html>" }));
    expect((await failure(client(t).status())).kind).toBe("bad-response");
  });

  it("refuses a reply that lacks the schema's required fields", async () => {
    const t = scripted(() => json(200, { query: "a.md", mode: "balanced", took_ms: 1 }));
    const err = await failure(client(t).related("a.md"));
    expect(err.kind).toBe("bad-response");
    expect(err.message).toContain("lacks hits");
  });

  it("reads an error without the JSON shape by its status", async () => {
    const t = scripted(() => ({ status: 502, headers: {}, text: "Bad Gateway" }));
    const err = await failure(client(t).status());
    expect(err.kind).toBe("server");
    expect(err.detail).toBe("Bad Gateway");
  });

  it("sends nothing when the server URL is not http(s)", async () => {
    const t = scripted(() => json(200, STATUS));
    expect((await failure(client(t, { serverUrl: "127.0.0.1:8765" }).status())).kind).toBe("config");
    expect((await failure(client(t, { serverUrl: "not a url" }).status())).kind).toBe("config");
    expect(t.requests).toHaveLength(0);
  });
});

describe("helpers", () => {
  it("kindOf treats a 404 without an error name as a missing route", () => {
    expect(kindOf(404, null)).toBe("no-route");
    expect(kindOf(418, null)).toBe("server");
  });

  it("queryString repeats list values and encodes spaces as %20", () => {
    expect(queryString({ regions: ["soul", "long_term"], q: "a b", none: null })).toBe("?regions=soul&regions=long_term&q=a%20b");
    expect(queryString({})).toBe("");
  });

  it("baseUrl keeps https and a path prefix", () => {
    expect(baseUrl(" https://host.example/cortex/ ")).toBe("https://host.example/cortex");
  });
});

describe("obsidianTransport", () => {
  afterEach(() => {
    delete (globalThis as { __obsidianRequest?: unknown }).__obsidianRequest;
  });

  it("calls requestUrl with throw: false so that error statuses come back as replies", async () => {
    const seen: unknown[] = [];
    (globalThis as { __obsidianRequest?: unknown }).__obsidianRequest = async (param: unknown) => {
      seen.push(param);
      return { status: 401, headers: {}, text: '{"error":"Unauthorized","detail":"no","status":401}' };
    };
    const res = await obsidianTransport({ url: "http://x/v1/status", method: "POST", headers: { A: "b" }, body: "{}" });
    expect(res.status).toBe(401);
    expect(seen).toEqual([{ url: "http://x/v1/status", method: "POST", headers: { A: "b" }, body: "{}", contentType: "application/json", throw: false }]);
  });
});
