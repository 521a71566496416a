import { beforeEach, describe, expect, it } from "vitest";
import { DRAG_MIME, renderPane } from "../src/render";
import type { PaneHandlers } from "../src/render";
import { MODES, rankHits } from "../src/viewModel";
import type { PaneItem, PaneState } from "../src/viewModel";
import { RELATED } from "./helpers";

const NOTE = "short_term/2026-11-28 dashboard froze.md";
const READY: PaneState = { kind: "ready", path: NOTE, mode: "balanced", list: rankHits(RELATED.hits), count: RELATED.hits.length, tookMs: 12.3 };

function setup(state: PaneState, withSettings = true) {
  const calls: string[] = [];
  const opened: Array<[PaneItem, boolean]> = [];
  const inserted: PaneItem[] = [];
  const handlers: PaneHandlers = {
    open: (item, newTab) => opened.push([item, newTab]),
    insert: (item) => inserted.push(item),
    setMode: (mode) => calls.push(`mode ${mode}`),
    refresh: () => calls.push("refresh"),
    ...(withSettings ? { openSettings: () => calls.push("settings") } : {}),
  };
  const root = document.createElement("div");
  document.body.appendChild(root);
  renderPane(root, state, { modes: MODES, mode: "balanced" }, handlers);
  return { root, calls, opened, inserted };
}

const texts = (root: HTMLElement, selector: string) => [...root.querySelectorAll(selector)].map((e) => e.textContent ?? "");

describe("renderPane", () => {
  beforeEach(() => document.body.replaceChildren());

  it("lists the cards best first, each with its title, region, score, snippet and why in words", () => {
    const { root } = setup(READY);
    expect(root.dataset["state"]).toBe("ready");
    const scores = texts(root, ".vc-item .vc-score");
    expect(scores).toEqual(["0.54", "0.53", "0.51", "0.48", "0.48", "0.47", "0.46", "0.46"]);
    expect(root.querySelectorAll(".vc-group")).toHaveLength(0);
    const first = root.querySelector<HTMLElement>(".vc-item");
    expect(first?.dataset["path"]).toBe("long_term/greenhouse-sensor architecture.md");
    expect(first?.querySelector(".vc-title")?.textContent).toBe("greenhouse-sensor architecture");
    expect(first?.querySelector(".vc-region")?.textContent).toBe("Long term");
    expect(first?.querySelector(".vc-section")?.textContent).toBe("§ Parts");
    expect(first?.querySelector(".vc-snippet")?.textContent).toContain("Dashboard");
    expect(first?.querySelector(".vc-why")?.textContent).toBe("why matches this note by meaning; linked to the top results; recent");
    expect(texts(root, ".vc-region")).toEqual(["Long term", "Personality", "Short term", "Linguistic", "Short term", "Soul", "Artistic", "Soul"]);
    expect(root.querySelector(".vc-region-note")).toBeNull();
    expect(texts(root, ".vc-summary")[0]).toBe(`Top ${RELATED.hits.length} by selection score · balanced · 12 ms`);
    expect(texts(root, ".vc-footer")[0]).toContain("not a promise");
  });

  it("keeps the signal numbers behind the why, closed until asked, and open across a redraw", () => {
    const { root, opened } = setup(READY);
    const boxes = [...root.querySelectorAll<HTMLDetailsElement>("details.vc-why-box")];
    expect(boxes).toHaveLength(RELATED.hits.length);
    expect(boxes.every((b) => !b.open)).toBe(true);
    for (const why of texts(root, ".vc-why")) expect(why).not.toMatch(/\d\.\d\d/); // words only
    const first = boxes[0] as HTMLDetailsElement;
    expect(first.querySelector("summary")?.classList.contains("vc-why")).toBe(true);
    expect(first.querySelector(".vc-signals")?.textContent).toBe("relevance 0.39 · region 0.70 · importance 0.85 · graph 0.75 · recency 1.00");
    first.querySelector("summary")?.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    expect(opened).toHaveLength(0); // the why shows numbers; it does not open the note
    first.open = true;
    renderPane(root, READY, { modes: MODES, mode: "balanced" }, { open() {}, insert() {}, setMode() {}, refresh() {} });
    const again = [...root.querySelectorAll<HTMLDetailsElement>("details.vc-why-box")];
    expect(again.map((b) => b.open)).toEqual([true, ...Array<boolean>(RELATED.hits.length - 1).fill(false)]);
  });

  it("names the region once, and on no card, when every card shares it", () => {
    const hits = RELATED.hits.filter((h) => h.region === "short_term");
    const { root } = setup({ ...READY, list: rankHits(hits), count: hits.length });
    expect(texts(root, ".vc-region-note")).toEqual(["All from Short term"]);
    expect(root.querySelectorAll(".vc-region")).toHaveLength(0);
    expect(root.querySelectorAll(".vc-item")).toHaveLength(2);
  });

  it("says the server is still indexing above what it found so far", () => {
    const { root } = setup({ ...READY, indexing: { done: 120, total: 480 } });
    expect(texts(root, ".vc-indexing")).toEqual(["Still indexing (120 of 480 chunks, 25%): showing what is indexed so far."]);
    expect(root.querySelectorAll(".vc-item")).toHaveLength(RELATED.hits.length);
    const empty = setup({ kind: "empty", path: NOTE, mode: "balanced", indexing: { done: 0, total: 10 } }).root;
    expect(texts(empty, ".vc-indexing")[0]).toContain("0 of 10 chunks");
    expect(setup(READY).root.querySelectorAll(".vc-indexing")).toHaveLength(0);
  });

  it("says which phase indexing is in: notes written by words, then vectors filling in", () => {
    const words = setup({ ...READY, indexing: { done: 300, total: 1200, phase: "words" } }).root;
    expect(texts(words, ".vc-indexing")).toEqual(["Still indexing (300 of 1200 notes, 25%): showing what is indexed so far."]);
    const vectors = setup({ ...READY, indexing: { done: 500, total: 1000, phase: "vectors" } }).root;
    expect(texts(vectors, ".vc-indexing")).toEqual(["Every note is searchable by words; matching by meaning fills in (500 of 1000 chunks, 50%)."]);
  });

  it("opens an item on click, in a new tab with Ctrl or Cmd", () => {
    const { root, opened } = setup(READY);
    const title = root.querySelector<HTMLElement>(".vc-title");
    title?.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    title?.dispatchEvent(new MouseEvent("click", { bubbles: true, ctrlKey: true }));
    root.querySelectorAll<HTMLElement>(".vc-snippet")[0]?.dispatchEvent(new MouseEvent("click", { bubbles: true, metaKey: true }));
    expect(opened.map(([item, tab]) => [item.open.linktext, tab])).toEqual([
      ["long_term/greenhouse-sensor architecture#Parts", false],
      ["long_term/greenhouse-sensor architecture#Parts", true],
      ["long_term/greenhouse-sensor architecture#Parts", true],
    ]);
  });

  it("inserts a link with the button, without opening the note", () => {
    const { root, opened, inserted } = setup(READY);
    root.querySelector<HTMLElement>('.vc-item[data-path="HANDOFF.md"] .vc-insert')?.click();
    expect(inserted.map((i) => i.link)).toEqual(["[[HANDOFF]]"]);
    expect(opened).toHaveLength(0);
  });

  it("puts the [[link]] on the drag as text/plain", () => {
    const { root } = setup(READY);
    const item = root.querySelector<HTMLElement>('.vc-item[data-path="long_term/greenhouse-sensor architecture.md"]');
    expect(item?.getAttribute("draggable")).toBe("true");
    const store = new Map<string, string>();
    const evt = new Event("dragstart", { bubbles: true }) as DragEvent;
    Object.defineProperty(evt, "dataTransfer", { value: { setData: (t: string, v: string) => store.set(t, v), effectAllowed: "" } });
    item?.dispatchEvent(evt);
    expect(store.get(DRAG_MIME)).toBe("[[long_term/greenhouse-sensor architecture]]");
  });

  it("offers the modes and reports a change", () => {
    const { root, calls } = setup(READY);
    const select = root.querySelector<HTMLSelectElement>("select.vc-mode");
    expect([...(select?.options ?? [])].map((o) => o.value)).toEqual([...MODES]);
    expect(select?.value).toBe("balanced");
    if (select) select.value = "explore";
    select?.dispatchEvent(new Event("change"));
    root.querySelector<HTMLElement>(".vc-refresh")?.click();
    expect(calls).toEqual(["mode explore", "refresh"]);
  });

  const states: Array<[PaneState, string, string]> = [
    [{ kind: "no-note" }, "No note open", ""],
    [{ kind: "empty", path: NOTE, mode: "focus" }, "Nothing related", ""],
    [{ kind: "building", path: NOTE, detail: "the index is being rebuilt" }, "Index building", "the index is being rebuilt"],
    [{ kind: "not-indexed", path: NOTE, detail: "the index skipped it: binary" }, "Note not in the index", "the index skipped it: binary"],
    [{ kind: "unreachable", url: "http://127.0.0.1:8765", detail: "refused" }, "Server not running", "http://127.0.0.1:8765"],
    [{ kind: "unauthorised", detail: "missing or wrong bearer token" }, "Unauthorised (401)", ".cortex/token"],
    [{ kind: "error", message: "GET /v1/related: boom (500)" }, "Something went wrong", "boom"],
  ];
  it.each(states)("shows a clear message for %o", (state, title, mention) => {
    const { root } = setup(state);
    expect(root.dataset["state"]).toBe(state.kind);
    expect(texts(root, ".vc-message-title")).toEqual([title]);
    expect(root.textContent).toContain(mention);
    expect(root.querySelectorAll(".vc-item")).toHaveLength(0);
  });

  it("offers retry and settings when the token is refused, and no settings button without a handler", () => {
    const a = setup({ kind: "unauthorised", detail: "" });
    for (const b of a.root.querySelectorAll<HTMLElement>(".vc-actions button")) b.click();
    expect(a.calls).toEqual(["settings", "refresh"]);
    const b = setup({ kind: "unauthorised", detail: "" }, false);
    expect(texts(b.root, ".vc-actions button")).toEqual(["Retry"]);
  });

  it("keeps the previous results, dimmed, while loading", () => {
    const { root } = setup({ kind: "loading", path: NOTE, mode: "balanced", previous: rankHits(RELATED.hits) });
    expect(root.dataset["busy"]).toBe("true");
    expect(root.querySelector(".vc-list.is-stale")).not.toBeNull();
    expect(root.querySelector(".vc-loading")?.textContent).toContain("Looking");
  });

  it("replaces its content on each render", () => {
    const { root } = setup(READY);
    renderPane(root, { kind: "no-note" }, { modes: MODES, mode: "balanced" }, { open() {}, insert() {}, setMode() {}, refresh() {} });
    expect(root.querySelectorAll(".vc-header")).toHaveLength(1);
    expect(root.querySelectorAll(".vc-item")).toHaveLength(0);
    expect(root.dataset["busy"]).toBeUndefined();
  });
});
