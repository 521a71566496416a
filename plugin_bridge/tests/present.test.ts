import { describe, expect, it } from "vitest";
import type { Context, Status } from "../src/api";
import { CortexApiError } from "../src/errors";
import { SLEEP_UNAVAILABLE, contextNotice, errorNotice, planMarkdown, rememberBody, statusRows } from "../src/present";
import { STATUS } from "./helpers";

describe("notices", () => {
  it("tells each failure in words the user can act on", () => {
    const url = "http://127.0.0.1:8765";
    expect(errorNotice(new CortexApiError("unreachable", "x"), url)).toContain("no server at http://127.0.0.1:8765");
    expect(errorNotice(new CortexApiError("unauthorised", "x", 401), url)).toContain(".cortex/token");
    expect(errorNotice(new CortexApiError("unavailable", "x", 503), url)).toContain("still building");
    expect(errorNotice(new CortexApiError("invalid", "POST /v1/notes: bad (400)", 400), url)).toBe("vault-cortex: POST /v1/notes: bad (400)");
    expect(errorNotice(new Error("plain"), url)).toBe("vault-cortex: plain");
  });

  it("sums up copied context", () => {
    const ctx = { mode: "focus", context: { items: [{}, {}], tokens: 812, budget_tokens: 1500 } } as unknown as Context;
    expect(contextNotice(ctx)).toBe("Copied context: 2 notes, 812 of 1500 tokens (focus).");
  });
});

describe("remember", () => {
  it("sends the trimmed selection with its source note as derived_from", () => {
    expect(rememberBody("  the WAL grew  \n", "short_term/2026-11-28 dashboard froze")).toEqual({
      text: "the WAL grew",
      relations: { derived_from: ["[[short_term/2026-11-28 dashboard froze]]"] },
    });
    expect(rememberBody("x", null)).toEqual({ text: "x" });
  });
});

describe("status", () => {
  it("lists the index counts first, then the watcher", () => {
    const rows = statusRows(STATUS);
    expect(rows.slice(0, 3)).toEqual([["Vault", "/home/me/vault"], ["Notes", "23"], ["Chunks", "77"]]);
    expect(rows.find(([k]) => k === "Model")?.[1]).toBe("all-MiniLM-L6-v2-int8");
    expect(rows.find(([k]) => k === "Watcher")?.[1]).toBe("up to date");
  });

  it("shows how far a running sync is", () => {
    const rows = statusRows({ ...STATUS, index: { ...STATUS.index, indexing: { done: 40, total: 160 } } });
    expect(rows.find(([k]) => k === "Indexing")?.[1]).toBe("40 of 160 chunks");
    expect(statusRows({ ...STATUS, index: { ...STATUS.index, indexing: null } }).find(([k]) => k === "Indexing")?.[1]).toBe("—");
  });

  it("shows a pending watcher's lag and a missing watcher", () => {
    const watch = { ...(STATUS.watch as NonNullable<Status["watch"]>), pending: true, lag_ms: 812.4, last_error: "OSError: disk full" };
    const rows = statusRows({ ...STATUS, watch });
    expect(rows).toContainEqual(["Watcher", "syncing changes"]);
    expect(rows).toContainEqual(["Index lag", "812 ms"]);
    expect(rows).toContainEqual(["Last sync error", "OSError: disk full"]);
    expect(statusRows({ ...STATUS, watch: null })).toContainEqual(["Watcher", "off"]);
  });
});

describe("sleep plan", () => {
  it("shows the plan's own markdown when it has one", () => {
    expect(planMarkdown({ markdown: "# Plan\n- merge a and b" })).toBe("# Plan\n- merge a and b");
  });

  it("lists operations with their reasons", () => {
    expect(planMarkdown({ operations: [{ op: "promote", path: "short_term/a.md", reason: "importance 0.82 > 0.7" }, { kind: "prune", paths: ["x.md"] }] })).toBe(
      '- **promote** short_term/a.md — importance 0.82 > 0.7\n- **prune** ["x.md"]',
    );
    expect(planMarkdown({ operations: [] })).toContain("Nothing to do");
  });

  it("falls back to the JSON itself", () => {
    expect(planMarkdown([1, 2])).toBe("```json\n[\n  1,\n  2\n]\n```");
  });

  it("says plainly when the server has no sleep route", () => {
    expect(SLEEP_UNAVAILABLE).toContain("not available on this server");
  });
});
