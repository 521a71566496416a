import { describe, expect, it } from "vitest";
import type { Hit, Recall, Status } from "../src/api";
import { CortexApiError } from "../src/errors";
import {
  MAX_DRAFT_CHARS,
  PaneModel,
  formatScore,
  groupHits,
  lastHeading,
  modeChoices,
  openTarget,
  paragraphAt,
  plainSnippet,
  regionLabel,
  regionOrderFromStatus,
  retryDelay,
  signalBreakdown,
  whyLine,
  wikilink,
} from "../src/viewModel";
import type { PaneClient, PaneState } from "../src/viewModel";
import { RELATED, STATUS } from "./helpers";

const ORDER = ["soul", "personality", "artistic", "linguistic", "scientific", "long_term", "short_term"];
const NOTE = "short_term/2026-11-28 dashboard froze.md";

function hit(over: Partial<Hit>): Hit {
  return {
    path: "long_term/A.md", title: "A", region: "long_term", score: 0.5, reason: "", dense: 0, lexical: 0,
    heading: "A", snippet: "", line: 1, signals: {}, ...over,
  };
}

describe("grouping", () => {
  it("groups by region in the server's order, keeping the ranking inside each group", () => {
    const groups = groupHits(RELATED.hits, ORDER);
    const present = ORDER.filter((r) => RELATED.hits.some((h) => h.region === r));
    expect(groups.map((g) => g.region)).toEqual(present);
    const shortTerm = groups.find((g) => g.region === "short_term");
    expect(shortTerm?.items.map((i) => i.title)).toEqual(RELATED.hits.filter((h) => h.region === "short_term").map((h) => h.title));
    expect(groups.flatMap((g) => g.items)).toHaveLength(RELATED.hits.length); // nothing dropped
  });

  it("falls back to the order of first appearance without a region order", () => {
    const groups = groupHits(RELATED.hits, []);
    const firstSeen = [...new Set(RELATED.hits.map((h) => h.region))];
    expect(groups.map((g) => g.region)).toEqual(firstSeen);
  });

  it("puts regions the order does not know after the known ones", () => {
    const hits = [hit({ region: "dreams", path: "dreams/x.md" }), hit({ region: "soul", path: "soul/y.md" })];
    expect(groupHits(hits, ORDER).map((g) => g.region)).toEqual(["soul", "dreams"]);
  });

  it("labels regions readably", () => {
    expect(regionLabel("long_term")).toBe("Long term");
    expect(regionLabel("soul")).toBe("Soul");
    expect(regionLabel("")).toBe("(no region)");
  });
});

describe("formatting", () => {
  it("words the server's reason for a note instead of a query", () => {
    const first = RELATED.hits[0] as Hit;
    expect(first.reason).toContain("matches the query");
    expect(whyLine(first)).toBe(first.reason.replace("matches the query", "matches this note"));
  });

  it("explains a weak match by its strongest signals", () => {
    expect(whyLine(hit({ reason: "weak match", signals: { relevance: 0.04, graph: 0.2, recency: 0.9 } }))).toBe("weak match (recency 0.90, graph 0.20)");
    expect(whyLine(hit({ reason: "", signals: {} }))).toBe("weak match");
  });

  it("lists non-zero signals in the server's order", () => {
    expect(signalBreakdown({ recency: 1, relevance: 0.3855, coactivation: 0, region: 0.7, custom: 0.5 })).toBe(
      "relevance 0.39 · region 0.70 · recency 1.00 · custom 0.50",
    );
    expect(signalBreakdown({ coactivation: 0.2 })).toBe("co-activation 0.20");
  });

  it("reads snippets as plain text", () => {
    expect(plainSnippet("…kept. The details are in [[SQLite WAL mode#Checkpoints]]. - **Dashboard**: a `read` page")).toBe(
      "…kept. The details are in SQLite WAL mode#Checkpoints. - Dashboard: a read page",
    );
    expect(plainSnippet("``` Close the read ``` see [[a/b|B]] and ![[img.png]] and [site](https://x.y) ==hi==")).toBe(
      "Close the read see B and img.png and site hi",
    );
    expect(plainSnippet("snake_case and 2 * 3 * 4 stay")).toBe("snake_case and 2 * 3 * 4 stay");
  });

  it("formats scores with two decimals", () => {
    expect(formatScore(0.5445)).toBe("0.54");
    expect(formatScore(Number.NaN)).toBe("–");
  });

  it("links by the full path without .md", () => {
    expect(wikilink("long_term/greenhouse-sensor architecture.md")).toBe("[[long_term/greenhouse-sensor architecture]]");
  });

  it("opens at the chunk's heading, or its line when the chunk has no heading of its own", () => {
    expect(openTarget(hit({ path: "long_term/g.md", title: "g", heading: "g > Parts", line: 18 }))).toEqual({ linktext: "long_term/g#Parts", line: null });
    expect(openTarget(hit({ path: "p/How.md", title: "How I get unstuck", heading: "How I get unstuck", line: 12 }))).toEqual({ linktext: "p/How", line: 11 });
    expect(openTarget(hit({ path: "x.md", title: "x", heading: "", line: 0 }))).toEqual({ linktext: "x", line: null });
    expect(openTarget(hit({ path: "x.md", title: "x", heading: "x > A #b [c]", line: 3 })).linktext).toBe("x#A b c");
  });

  it("keeps a single heading that differs from the title", () => {
    expect(lastHeading({ title: "HANDOFF", heading: "Handoff" })).toBe("");
    expect(lastHeading({ title: "HANDOFF", heading: "Handoff > Decided today" })).toBe("Decided today");
    expect(lastHeading({ title: "Note", heading: "Setup" })).toBe("Setup");
  });
});

describe("what the server reports", () => {
  it("reads a region order from status.regions or status.index.regions", () => {
    const { regions: _, ...older } = STATUS; // a server from before /v1/status reported its regions
    expect(regionOrderFromStatus(STATUS)).toEqual(STATUS.regions);
    expect(regionOrderFromStatus({ ...STATUS, regions: ORDER })).toEqual(ORDER);
    expect(regionOrderFromStatus({ ...older, index: { ...STATUS.index, regions: ["a", "b"] } })).toEqual(["a", "b"]);
    expect(regionOrderFromStatus(older)).toBeNull();
    expect(regionOrderFromStatus({ regions: [1, 2] })).toBeNull();
    expect(regionOrderFromStatus(null)).toBeNull();
  });

  it("offers the built-in modes, the server's extra ones and the current one", () => {
    expect(modeChoices(null, "balanced")).toEqual(["balanced", "focus", "explore", "identity", "recent"]);
    expect(modeChoices({ modes: ["balanced", "writing"] }, "mine")).toEqual(["balanced", "focus", "explore", "identity", "recent", "writing", "mine"]);
  });
});

// -- the state machine ---------------------------------------------------------------------------------------

interface FakeOptions {
  related?: (path: string, mode: string) => Promise<Recall>;
  recall?: (query: string, gate: boolean) => Promise<Recall>;
  status?: () => Promise<Status>;
}

function fake(options: FakeOptions = {}, captures?: () => boolean) {
  const calls: string[] = [];
  const asked: Array<string | undefined> = [];
  const client: PaneClient = {
    related: async (path, o) => {
      asked.push(o.captures);
      calls.push(`related ${path} ${o.mode ?? ""}`);
      return options.related ? options.related(path, o.mode ?? "") : { ...RELATED, mode: o.mode ?? "balanced" };
    },
    recall: async (query, o) => {
      asked.push(o.captures);
      calls.push(`recall ${query} gate=${String(o.gate)}`);
      return options.recall ? options.recall(query, o.gate ?? false) : { ...RELATED, query, mode: o.mode ?? "balanced" };
    },
    status: async () => {
      calls.push("status");
      return options.status ? options.status() : STATUS;
    },
  };
  const states: PaneState[] = [];
  const model = new PaneModel({ client, serverUrl: () => "http://127.0.0.1:8765", onChange: (s) => states.push(s), ...(captures ? { captures } : {}) });
  return { model, calls, states, asked, kinds: () => states.map((s) => s.kind) };
}

const apiError = (kind: CortexApiError["kind"], status: number | null, error: string | null = null, detail = "") =>
  new CortexApiError(kind, `GET /v1/related: ${detail} (${status})`, status, error, detail);

describe("PaneModel", () => {
  it("starts with no note and shows a note's related memories grouped", async () => {
    const f = fake({ status: async () => ({ ...STATUS, regions: ORDER }) as Status });
    expect(f.model.state.kind).toBe("no-note");
    const state = await f.model.show(NOTE);
    expect(f.kinds()).toEqual(["loading", "ready"]);
    if (state.kind !== "ready") throw new Error(state.kind);
    expect(state.count).toBe(RELATED.hits.length);
    expect(state.orderFromServer).toBe(true);
    expect(state.groups[0]?.region).toBe("soul");
  });

  it("groups by first appearance when the status has no region order", async () => {
    const { regions: _, ...older } = STATUS; // a server from before /v1/status reported its regions
    const f = fake({ status: async () => older as Status });
    const state = await f.model.show(NOTE);
    if (state.kind !== "ready") throw new Error(state.kind);
    expect(state.orderFromServer).toBe(false);
    expect(state.groups[0]?.region).toBe(RELATED.hits[0]?.region);
  });

  it("reads the status once, then only related on each refresh", async () => {
    const f = fake();
    await f.model.show(NOTE);
    await f.model.refresh();
    await f.model.setMode("explore");
    expect(f.calls.filter((c) => c === "status")).toHaveLength(1);
    expect(f.calls.filter((c) => c.startsWith("related"))).toEqual([`related ${NOTE} balanced`, `related ${NOTE} balanced`, `related ${NOTE} explore`]);
    expect(f.model.state.kind === "ready" && f.model.state.mode).toBe("explore");
  });

  it("keeps the previous groups while the next answer loads", async () => {
    const f = fake();
    await f.model.show(NOTE);
    const loading = f.model.refresh();
    expect(f.model.state.kind).toBe("loading");
    expect(f.model.state.kind === "loading" && f.model.state.previous?.length).toBeGreaterThan(0);
    await loading;
  });

  it("asks for captured sessions only while the setting is on", async () => {
    const off = fake();
    await off.model.show(NOTE);
    await off.model.typing("The dashboard froze again while the weekly report ran, like last time.");
    expect(off.asked).toEqual([undefined, undefined]); // the server leaves captures out unless asked
    let on = true;
    const f = fake({}, () => on);
    await f.model.show(NOTE);
    await f.model.typing("The dashboard froze again while the weekly report ran, like last time.");
    on = false;
    await f.model.show("long_term/other.md");
    expect(f.asked).toEqual(["include", "include", undefined]);
  });

  it("says when nothing is related", async () => {
    const f = fake({ related: async () => ({ ...RELATED, hits: [] }) });
    expect((await f.model.show(NOTE)).kind).toBe("empty");
  });

  it("shows nothing to do without a markdown note", async () => {
    const f = fake();
    expect((await f.model.show(null)).kind).toBe("no-note");
    expect(f.calls).toEqual([]);
  });

  it("drops an answer that arrives after a newer request", async () => {
    let release: (r: Recall) => void = () => {};
    const slow = new Promise<Recall>((resolve) => (release = resolve));
    const f = fake({ related: (path) => (path === "slow.md" ? slow : Promise.resolve(RELATED)) });
    const first = f.model.show("slow.md");
    await f.model.show(NOTE);
    release({ ...RELATED, hits: [] });
    await first;
    expect(f.model.state.kind).toBe("ready");
    expect(f.model.state.kind === "ready" && f.model.state.path).toBe(NOTE);
  });

  it("delivers nothing after dispose", async () => {
    const f = fake();
    const pending = f.model.show(NOTE);
    f.model.dispose();
    await pending;
    expect(f.kinds()).toEqual(["loading"]);
  });

  const errorCases: Array<[string, CortexApiError, string]> = [
    ["a refused connection", apiError("unreachable", null), "unreachable"],
    ["a 401", apiError("unauthorised", 401, "Unauthorized", "missing or wrong bearer token"), "unauthorised"],
    ["a 503", apiError("unavailable", 503, "IndexUnavailable", "the index is being rebuilt"), "building"],
    ["a missing route", apiError("no-route", 404, "NotFound"), "error"],
    ["a 500", apiError("server", 500, "InternalServerError"), "error"],
  ];
  it.each(errorCases)("moves to a clear state on %s", async (_name, err, kind) => {
    const f = fake({ related: async () => Promise.reject(err), status: async () => Promise.reject(err) });
    const state = await f.model.show(NOTE);
    expect(state.kind).toBe(kind);
    if (state.kind === "unreachable") expect(state.url).toBe("http://127.0.0.1:8765");
    if (state.kind === "building") expect(state.detail).toBe("the index is being rebuilt");
  });

  it("passes on that the server is still indexing, and asks again until it is done", async () => {
    const partial = { ...RELATED, indexing: { done: 120, total: 480 } };
    const f = fake({ related: async () => partial });
    const state = await f.model.show(NOTE);
    expect(state.kind).toBe("ready");
    if (state.kind === "ready") expect(state.indexing).toEqual({ done: 120, total: 480 });
    expect(retryDelay(state)).toBeGreaterThan(0);
    const done = fake({ related: async () => ({ ...RELATED, indexing: null }) });
    expect(retryDelay(await done.model.show(NOTE))).toBeNull();
  });

  it("treats a note the index has not reached yet as building while the watcher syncs", async () => {
    const notFound = apiError("not-found", 404, "NoteNotFound", "no indexed note");
    const pending = { ...STATUS, watch: { ...(STATUS.watch as NonNullable<Status["watch"]>), pending: true } };
    const f = fake({ related: async () => Promise.reject(notFound), status: async () => pending });
    const state = await f.model.show(NOTE);
    expect(state.kind).toBe("building");
    expect(retryDelay(state)).toBeGreaterThan(0);
  });

  it("says why the index skipped a note", async () => {
    const notFound = apiError("not-found", 404, "NoteNotFound", "no indexed note");
    const skipped = { ...STATUS, skipped: [{ path: NOTE, reason: "malformed YAML frontmatter" }] };
    const f = fake({ related: async () => Promise.reject(notFound), status: async () => skipped });
    const state = await f.model.show(NOTE);
    expect(state).toMatchObject({ kind: "not-indexed", detail: "the index skipped it: malformed YAML frontmatter" });
    expect(retryDelay(state)).toBeNull();
  });

  it("asks for the region order again after the server was unreachable", async () => {
    let up = false;
    const down = apiError("unreachable", null);
    const f = fake({
      related: async () => (up ? RELATED : Promise.reject(down)),
      status: async () => (up ? ({ ...STATUS, regions: ORDER } as Status) : Promise.reject(down)),
    });
    expect((await f.model.show(NOTE)).kind).toBe("unreachable");
    up = true;
    const state = await f.model.refresh();
    expect(state.kind === "ready" && state.orderFromServer).toBe(true);
  });

  it("reports a non-API error as it is", async () => {
    const f = fake({ related: async () => Promise.reject(new TypeError("boom")) });
    expect(await f.model.show(NOTE)).toEqual({ kind: "error", message: "boom" });
  });
});

// -- following the paragraph being written ------------------------------------------------------------------

describe("the paragraph being written", () => {
  const lines = ["---", "cortex: short_term", "---", "# Notes", "", "The dashboard froze again while the", "collector wrote; WAL checkpoint?", "", "Next."];

  it("is the run of non-blank lines around the cursor", () => {
    expect(paragraphAt(lines, 5)).toBe("The dashboard froze again while the\ncollector wrote; WAL checkpoint?");
    expect(paragraphAt(lines, 6)).toBe(paragraphAt(lines, 5));
    expect(paragraphAt(lines, 4)).toBe("");
    expect(paragraphAt(lines, 8)).toBe("Next.");
    expect(paragraphAt(lines, 99)).toBe("");
    const long = Array.from({ length: 400 }, (_, i) => `line ${i} of a long paragraph`);
    const around = paragraphAt(long, 200);
    expect(around.length).toBeLessThanOrEqual(MAX_DRAFT_CHARS);
    expect(around).toContain("line 200 of");
  });

  it("asks through the push gate, leaves out the note itself, and keeps following the draft on save", async () => {
    const self = { ...RELATED.hits[0]!, path: NOTE };
    const f = fake({ recall: async (query) => ({ ...RELATED, query, hits: [self, ...RELATED.hits] }) });
    await f.model.show(NOTE);
    const draft = "The dashboard froze again while the collector wrote to the database";
    const state = await f.model.typing(draft);
    expect(f.calls).toContain(`recall ${draft} gate=true`);
    if (state.kind !== "ready") throw new Error(state.kind);
    expect(state.fromDraft).toBe(true);
    expect(state.count).toBe(RELATED.hits.length); // the note itself left out
    await f.model.typing(draft); // the same text again: no new request
    await f.model.typing("too short");
    expect(f.calls.filter((c) => c.startsWith("recall"))).toHaveLength(1);
    await f.model.refresh(); // a save: still the paragraph
    expect(f.calls.filter((c) => c.startsWith("recall"))).toHaveLength(2);
    await f.model.show("long_term/other.md"); // another note: back to related
    expect(f.calls.at(-1)).toBe("related long_term/other.md balanced");
  });

  it("shows nothing close rather than weak matches, and drops the answer to an older paragraph", async () => {
    let release: () => void = () => {};
    const slow = new Promise<void>((r) => (release = r));
    const f = fake({
      recall: async (query) => {
        if (query.startsWith("first")) await slow;
        return { ...RELATED, query, hits: query.startsWith("first") ? RELATED.hits : [] };
      },
    });
    await f.model.show(NOTE);
    const first = f.model.typing("first paragraph about the dashboard and WAL");
    const second = await f.model.typing("second paragraph about nothing in this vault");
    expect(second.kind === "empty" && second.fromDraft).toBe(true);
    release();
    await first;
    expect(f.model.state.kind).toBe("empty"); // the older answer arrived last and was dropped
    expect(whyLine({ reason: "matches the query by words (0.80)", signals: {}, push_probability: 0.42 })).toBe(
      "chance 0.42 it bears on what you are writing; matches this note by words (0.80)",
    );
  });
});
