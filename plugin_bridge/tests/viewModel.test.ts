import { describe, expect, it } from "vitest";
import type { Hit, Recall, Status } from "../src/api";
import { CortexApiError } from "../src/errors";
import {
  MAX_DRAFT_CHARS,
  PaneModel,
  formatScore,
  lastHeading,
  modeChoices,
  openTarget,
  paragraphAt,
  plainSnippet,
  rankHits,
  reasonWords,
  regionLabel,
  retryDelay,
  signalBreakdown,
  signalLine,
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

describe("ranking", () => {
  it("lists the cards best first whatever their region, a 0.50 card above a 0.43 one, nothing dropped", () => {
    const hits = [
      hit({ path: "soul/a.md", region: "soul", score: 0.43 }),
      hit({ path: "long_term/b.md", region: "long_term", score: 0.5 }),
      hit({ path: "soul/c.md", region: "soul", score: 0.47 }),
      hit({ path: "short_term/d.md", region: "short_term", score: 0.47 }),
    ];
    const list = rankHits(hits);
    expect(list.items.map((i) => [i.path, i.scoreText])).toEqual([
      ["long_term/b.md", "0.50"],
      ["soul/c.md", "0.47"], // equal scores keep the server's order
      ["short_term/d.md", "0.47"],
      ["soul/a.md", "0.43"],
    ]);
    expect(list.region).toBeNull(); // several regions: each card says its own
  });

  it("keeps the recorded answer's cards, best first", () => {
    const list = rankHits(RELATED.hits);
    const scores = list.items.map((i) => i.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(list.items.map((i) => i.path).sort()).toEqual(RELATED.hits.map((h) => h.path).sort());
  });

  it("names the one region when every card shares it (an adopted vault, all short term)", () => {
    const hits = [hit({ path: "short_term/a.md", region: "short_term", score: 0.3 }), hit({ path: "short_term/b.md", region: "short_term", score: 0.6 })];
    const list = rankHits(hits);
    expect(list.region).toBe("short_term");
    expect(list.items.map((i) => i.path)).toEqual(["short_term/b.md", "short_term/a.md"]);
    expect(rankHits([hit({ score: Number.NaN, path: "x.md" }), hit({ score: 0.1, path: "y.md" })]).items.map((i) => i.path)).toEqual(["y.md", "x.md"]);
    expect(rankHits([])).toEqual({ items: [], region: null });
  });

  it("labels regions readably", () => {
    expect(regionLabel("long_term")).toBe("Long term");
    expect(regionLabel("soul")).toBe("Soul");
    expect(regionLabel("")).toBe("(no region)");
  });
});

describe("formatting", () => {
  it("says why in words, for a note instead of a query, and keeps the numbers for the signal line", () => {
    const first = RELATED.hits[0] as Hit;
    expect(first.reason).toBe("matches the query by meaning (0.39); linked to the top results (0.75); recent (1.00)");
    expect(whyLine(first)).toBe("matches this note by meaning; linked to the top results; recent");
    expect(signalLine(first)).toBe("relevance 0.39 · region 0.70 · importance 0.85 · graph 0.75 · recency 1.00");
  });

  it("drops every value in parentheses and nothing else", () => {
    expect(reasonWords("lifted by its neighbour [[B]] (0.61); a raw capture, ranked ×0.85 until sleep consolidates it")).toBe(
      "lifted by its neighbour [[B]]; a raw capture, ranked ×0.85 until sleep consolidates it",
    );
    expect(reasonWords("matches the query by words (1); recent (.5)")).toBe("matches the query by words; recent");
    expect(reasonWords("by or about Ana (her notes), whom the query names")).toBe("by or about Ana (her notes), whom the query names");
  });

  it("says weak match when the server gave no reason", () => {
    expect(whyLine(hit({ reason: "weak match", signals: { relevance: 0.04, graph: 0.2, recency: 0.9 } }))).toBe("weak match");
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
  it("starts with no note and shows a note's related memories best first, whatever the configured region order", async () => {
    const f = fake({ status: async () => ({ ...STATUS, regions: ORDER }) as Status });
    expect(f.model.state.kind).toBe("no-note");
    const state = await f.model.show(NOTE);
    expect(f.kinds()).toEqual(["loading", "ready"]);
    if (state.kind !== "ready") throw new Error(state.kind);
    expect(state.count).toBe(RELATED.hits.length);
    expect(state.list.items[0]?.path).toBe("long_term/greenhouse-sensor architecture.md"); // 0.54, not the soul notes (0.47)
    expect(state.list.region).toBeNull();
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

  it("keeps the previous list while the next answer loads", async () => {
    const f = fake();
    await f.model.show(NOTE);
    const loading = f.model.refresh();
    expect(f.model.state.kind).toBe("loading");
    expect(f.model.state.kind === "loading" && f.model.state.previous?.items.length).toBeGreaterThan(0);
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

  it("reads the status again after the server was unreachable", async () => {
    let up = false;
    const down = apiError("unreachable", null);
    const f = fake({
      related: async () => (up ? RELATED : Promise.reject(down)),
      status: async () => (up ? ({ ...STATUS, regions: ORDER } as Status) : Promise.reject(down)),
    });
    expect((await f.model.show(NOTE)).kind).toBe("unreachable");
    up = true;
    const state = await f.model.refresh();
    expect(state.kind).toBe("ready");
    expect(f.model.lastStatus?.regions).toEqual(ORDER);
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
    const gated = { reason: "matches the query by words (0.80)", signals: { relevance: 0.8 }, push_probability: 0.42 };
    expect(whyLine(gated)).toBe("matches your paragraph by words");
    expect(signalLine(gated)).toBe("chance 0.42 · relevance 0.80");
  });
});
