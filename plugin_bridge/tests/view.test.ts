// The pane inside (the mock of) Obsidian: which events it follows, how it debounces, what it cleans up.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type * as Obsidian from "obsidian";
import { App, MarkdownView, Notice, Plugin, WorkspaceLeaf } from "./__mocks__/obsidian";
import type { RequestUrlParam } from "./__mocks__/obsidian";
import { CortexHost } from "../src/host";
import { DEFAULT_SETTINGS } from "../src/settings";
import { CortexView, VIEW_TYPE_CORTEX } from "../src/view";
import { BUILDING_RETRY_MS, TYPING_DELAY_MS } from "../src/viewModel";
import { RELATED, STATUS, errorBody, json, proofReply } from "./helpers";

const NOTE = "short_term/2026-11-28 dashboard froze.md";
const OTHER = "long_term/Prefer boring technology.md";
const DELAY = 1000;

type Reply = { status: number; headers: Record<string, string>; text: string };

let requests: string[] = [];
let reply: (param: RequestUrlParam) => Reply = () => json(200, RELATED);

beforeEach(() => {
  requests = [];
  reply = (param) => (param.url.includes("/v1/status") ? json(200, STATUS) : json(200, RELATED));
  (globalThis as { __obsidianRequest?: unknown }).__obsidianRequest = async (param: RequestUrlParam) => {
    if (param.url.includes("/v1/proof?")) return proofReply(param.url, "t0k3n-for-tests"); // the vault's server
    requests.push(decodeURIComponent(param.url.replace("http://127.0.0.1:8765", "")));
    return reply(param);
  };
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
  delete (globalThis as { __obsidianRequest?: unknown }).__obsidianRequest;
});

const related = () => requests.filter((r) => r.startsWith("/v1/related"));

async function openView(activePath: string | null = NOTE) {
  const app = new App();
  app.vault.files.add(NOTE).add(OTHER);
  app.workspace.activeFile = null;
  if (activePath) app.workspace.openFile(activePath);
  const plugin = new Plugin(app, { id: "vault-cortex", name: "Vault Cortex", version: "0.1.0" });
  plugin.data = { ...DEFAULT_SETTINGS, token: "t0k3n-for-tests", refreshDelayMs: DELAY };
  const host = await CortexHost.load(plugin as unknown as Obsidian.Plugin);
  plugin.registerView(VIEW_TYPE_CORTEX, (leaf) => new CortexView(leaf as unknown as Obsidian.WorkspaceLeaf, host) as unknown as MarkdownView);
  const leaf = new WorkspaceLeaf(app);
  await leaf.setViewState({ type: VIEW_TYPE_CORTEX });
  const view = leaf.view as unknown as CortexView;
  const shimView = leaf.view as unknown as MarkdownView;
  await vi.advanceTimersByTimeAsync(0);
  const root = () => view.contentEl;
  return { app, plugin, host, leaf, view, shimView, root };
}

describe("CortexView while the note is written", () => {
  it("asks about the paragraph at the cursor once typing pauses, through the gate, and says nothing close", async () => {
    const { app, root } = await openView();
    reply = (param) => (param.url.includes("/v1/status") ? json(200, STATUS) : param.url.includes("/v1/recall") ? json(200, { ...RELATED, hits: [] }) : json(200, RELATED));
    const posts: string[] = [];
    const base = (globalThis as { __obsidianRequest?: (p: RequestUrlParam) => Promise<Reply> }).__obsidianRequest!;
    (globalThis as { __obsidianRequest?: unknown }).__obsidianRequest = async (param: RequestUrlParam) => {
      if (param.method === "POST") posts.push(String(param.body));
      return base(param);
    };
    for (const text of ["The dash", "The dashboard froze", "The dashboard froze while the collector wrote"]) {
      app.workspace.type(NOTE, `# Notes\n\n${text}`);
      await vi.advanceTimersByTimeAsync(TYPING_DELAY_MS / 2);
    }
    expect(posts).toEqual([]); // still typing
    await vi.advanceTimersByTimeAsync(TYPING_DELAY_MS);
    expect(posts.map((b) => JSON.parse(b) as Record<string, unknown>)).toEqual([
      { query: "The dashboard froze while the collector wrote", mode: "balanced", k: null, gate: true },
    ]);
    expect(root().dataset["state"]).toBe("empty");
    expect(root().querySelector(".vc-message-title")?.textContent).toBe("Nothing close");
    app.workspace.type(OTHER, "Typing in another note that the pane does not follow");
    await vi.advanceTimersByTimeAsync(TYPING_DELAY_MS * 2);
    expect(posts).toHaveLength(1);
  });
});

describe("CortexView", () => {
  it("shows the active note's related memories when it opens", async () => {
    const { root, view } = await openView();
    expect(view.getViewType()).toBe("vault-cortex-related");
    expect(view.getDisplayText()).toBe("Cortex");
    expect(related()).toEqual([`/v1/related?path=${NOTE}&mode=balanced`]);
    expect(root().dataset["state"]).toBe("ready");
    expect(root().querySelectorAll(".vc-item")).toHaveLength(RELATED.hits.length);
  });

  it("follows file-open to other markdown notes, and shows no note for other files", async () => {
    const { app, root } = await openView();
    app.workspace.openFile(OTHER);
    await vi.advanceTimersByTimeAsync(0);
    expect(related().at(-1)).toBe(`/v1/related?path=${OTHER}&mode=balanced`);
    app.workspace.openFile("attachments/photo.png");
    await vi.advanceTimersByTimeAsync(0);
    expect(root().dataset["state"]).toBe("no-note");
    const before = related().length;
    app.workspace.openFile(null); // e.g. the graph view: keep what is shown
    await vi.advanceTimersByTimeAsync(0);
    expect(related()).toHaveLength(before);
  });

  it("refreshes once, after the delay, when the note is saved repeatedly while being written", async () => {
    const { app } = await openView();
    expect(related()).toHaveLength(1);
    const file = app.vault.getAbstractFileByPath(NOTE);
    for (let i = 0; i < 5; i++) {
      app.vault.trigger("modify", file);
      await vi.advanceTimersByTimeAsync(DELAY / 2);
    }
    expect(related()).toHaveLength(1); // still typing: every save pushed the refresh back
    await vi.advanceTimersByTimeAsync(DELAY);
    expect(related()).toHaveLength(2);
  });

  it("ignores saves of other notes", async () => {
    const { app } = await openView();
    app.vault.trigger("modify", app.vault.getAbstractFileByPath(OTHER));
    await vi.advanceTimersByTimeAsync(DELAY * 3);
    expect(related()).toHaveLength(1);
  });

  it("follows a rename of the note it shows", async () => {
    const { app } = await openView();
    app.vault.trigger("rename", app.vault.getAbstractFileByPath(OTHER), NOTE);
    await vi.advanceTimersByTimeAsync(0);
    expect(related().at(-1)).toBe(`/v1/related?path=${OTHER}&mode=balanced`);
  });

  it("shows that no note is open, and clears when the note it shows is deleted", async () => {
    const empty = await openView(null);
    expect(empty.root().dataset["state"]).toBe("no-note");
    expect(related()).toEqual([]);
    const { app, root } = await openView();
    app.vault.trigger("delete", app.vault.getAbstractFileByPath(NOTE));
    await vi.advanceTimersByTimeAsync(0);
    expect(root().dataset["state"]).toBe("no-note");
  });

  it("asks again after a settings change", async () => {
    const { host } = await openView();
    await host.saveSettings();
    await host.saveSettings();
    await vi.advanceTimersByTimeAsync(DELAY + 10);
    expect(related()).toHaveLength(2);
  });

  it("retries by itself while the index builds, and stops when it is ready", async () => {
    let building = true;
    reply = (param) =>
      param.url.includes("/v1/status") ? json(200, STATUS) : building ? errorBody(503, "IndexUnavailable", "rebuilding") : json(200, RELATED);
    const { root } = await openView();
    expect(root().dataset["state"]).toBe("building");
    building = false;
    await vi.advanceTimersByTimeAsync(BUILDING_RETRY_MS + 10);
    expect(root().dataset["state"]).toBe("ready");
    await vi.advanceTimersByTimeAsync(BUILDING_RETRY_MS * 3);
    expect(related()).toHaveLength(2);
  });

  it("shows the unauthorised state on a 401", async () => {
    reply = () => errorBody(401, "Unauthorized", "missing or wrong bearer token");
    const { root } = await openView();
    expect(root().dataset["state"]).toBe("unauthorised");
  });

  it("opens a clicked item at its heading, or its line, in a new tab with Ctrl", async () => {
    const { app, root } = await openView();
    root().querySelector<HTMLElement>('.vc-item[data-path="long_term/greenhouse-sensor architecture.md"] .vc-title')?.click();
    const item = root().querySelector<HTMLElement>('.vc-item[data-path="personality/How I get unstuck.md"] .vc-title');
    item?.dispatchEvent(new MouseEvent("click", { bubbles: true, ctrlKey: true }));
    await vi.advanceTimersByTimeAsync(0);
    expect(app.workspace.opened).toEqual([
      { linktext: "long_term/greenhouse-sensor architecture#Parts", sourcePath: NOTE, newLeaf: false, state: undefined },
      { linktext: "personality/How I get unstuck", sourcePath: NOTE, newLeaf: "tab", state: { eState: { line: 11 } } },
    ]);
  });

  it("inserts the link into the editor of the note it follows", async () => {
    const { app, root } = await openView();
    const editorLeaf = new WorkspaceLeaf(app);
    app.viewRegistry.set("markdown", (leaf) => new MarkdownView(leaf));
    await editorLeaf.setViewState({ type: "markdown" });
    const md = editorLeaf.view as MarkdownView;
    md.file = app.vault.getAbstractFileByPath(NOTE) as MarkdownView["file"];
    root().querySelector<HTMLElement>('.vc-item[data-path="HANDOFF.md"] .vc-insert')?.click();
    expect(md.editor.inserted).toEqual(["[[HANDOFF]]"]);
  });

  it("says so when there is no editor to insert into", async () => {
    const { root } = await openView();
    Notice.shown.length = 0;
    root().querySelector<HTMLElement>('.vc-item[data-path="HANDOFF.md"] .vc-insert')?.click();
    expect(Notice.shown).toEqual(["vault-cortex: open a note to insert the link into."]);
  });

  it("keeps the mode in its view state", async () => {
    const { view, app, root } = await openView();
    const select = root().querySelector<HTMLSelectElement>("select.vc-mode") as HTMLSelectElement;
    select.value = "explore";
    select.dispatchEvent(new Event("change"));
    await vi.advanceTimersByTimeAsync(0);
    expect(view.getState()).toMatchObject({ mode: "explore" });
    expect(app.workspace.layoutSaves).toBe(1);
    expect(related().at(-1)).toBe(`/v1/related?path=${NOTE}&mode=explore`);
    await view.setState({ mode: "recent" }, { history: false } as Obsidian.ViewStateResult);
    await vi.advanceTimersByTimeAsync(0);
    expect(related().at(-1)).toBe(`/v1/related?path=${NOTE}&mode=recent`);
  });

  it("lets go of every event, timer and pending refresh when it closes", async () => {
    const { app, view, shimView } = await openView();
    expect(app.workspace.count("file-open")).toBe(1);
    expect(app.vault.count("modify")).toBe(1);
    expect(app.vault.count("rename")).toBe(1);
    expect(app.vault.count("delete")).toBe(1);
    app.vault.trigger("modify", app.vault.getAbstractFileByPath(NOTE));
    await shimView.close();
    expect(app.workspace.count("file-open")).toBe(0);
    expect(app.vault.count("modify")).toBe(0);
    expect(app.vault.count("rename")).toBe(0);
    expect(app.vault.count("delete")).toBe(0);
    await vi.advanceTimersByTimeAsync(DELAY * 3);
    expect(related()).toHaveLength(1);
    expect(view.contentEl.childElementCount).toBe(0);
  });
});
