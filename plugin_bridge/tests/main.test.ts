// The plugin as Obsidian loads it (with the mocked module): what onload registers, and each command.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type * as Obsidian from "obsidian";
import { App, Editor, Modal, Notice, Plugin } from "./__mocks__/obsidian";
import type { Command, RequestUrlParam } from "./__mocks__/obsidian";
import VaultCortexPlugin from "../src/main";
import { SLEEP_UNAVAILABLE } from "../src/present";
import { DEFAULT_SETTINGS } from "../src/settings";
import { VIEW_TYPE_CORTEX } from "../src/view";
import manifest from "../manifest.json";
import { RELATED, STATUS, errorBody, json, proofReply } from "./helpers";

const NOTE = "short_term/2026-11-28 dashboard froze.md";
type Reply = { status: number; headers: Record<string, string>; text: string };

let requests: RequestUrlParam[] = [];
let reply: (param: RequestUrlParam) => Reply;
const clipboard: string[] = [];

beforeEach(() => {
  requests = [];
  Notice.shown.length = 0;
  Modal.opened.length = 0;
  clipboard.length = 0;
  reply = (param) => {
    const url = param.url;
    if (url.includes("/v1/status")) return json(200, STATUS);
    if (url.includes("/v1/related")) return json(200, RELATED);
    if (url.includes("/v1/context")) {
      return json(200, { context: { items: [{}, {}, {}], groups: [], tokens: 640, budget_tokens: 1500, dropped: 0, markdown: "" }, markdown: "## Context\n- [[a]]", matching_questions: [], mode: "balanced", nudge: "", open_questions: 0, project: null, task: null, took_ms: 3 });
    }
    if (url.includes("/v1/notes")) return json(201, { path: "short_term/the WAL grew.md", content: "…", etag: "abc" });
    return errorBody(404, "NotFound", `Not Found`);
  };
  (globalThis as { __obsidianRequest?: unknown }).__obsidianRequest = async (param: RequestUrlParam) => {
    if (param.url.includes("/v1/proof?")) return proofReply(param.url, "tok-for-main-tests"); // the vault's server
    requests.push(param);
    return reply(param);
  };
  Object.defineProperty(navigator, "clipboard", { configurable: true, value: { writeText: async (t: string) => void clipboard.push(t) } });
});

afterEach(() => {
  delete (globalThis as { __obsidianRequest?: unknown }).__obsidianRequest;
});

async function load() {
  const app = new App();
  app.vault.files.add(NOTE);
  app.workspace.openFile(NOTE);
  const PluginClass = VaultCortexPlugin as unknown as new (app: App, m: typeof manifest) => Plugin & VaultCortexPlugin;
  const plugin = new PluginClass(app, manifest);
  plugin.data = { ...DEFAULT_SETTINGS, token: "tok-for-main-tests" };
  await plugin.onload(); // what Obsidian's plugin.load() runs
  await new Promise((r) => setTimeout(r, 10)); // onLayoutReady, then the pane's first request
  const command = (id: string): Command => {
    const c = plugin.commands.find((x) => x.id === id);
    if (!c) throw new Error(`no command ${id}`);
    return c;
  };
  const settle = () => new Promise((r) => setTimeout(r, 10));
  return { app, plugin, command, settle };
}

describe("the plugin", () => {
  it("registers the pane, the commands, the settings tab and a ribbon icon, and opens the pane", async () => {
    const { app, plugin } = await load();
    expect(app.viewRegistry.has(VIEW_TYPE_CORTEX)).toBe(true);
    expect(plugin.commands.map((c) => c.id)).toEqual([
      "open-pane", "refresh-pane", "copy-context", "remember-selection", "show-sleep-plan", "show-server-status",
    ]);
    expect(plugin.settingTabs).toHaveLength(1);
    expect(plugin.ribbon).toHaveLength(1);
    const leaves = app.workspace.getLeavesOfType(VIEW_TYPE_CORTEX);
    expect(leaves).toHaveLength(1);
    const el = (leaves[0]?.view as unknown as { contentEl: HTMLElement }).contentEl;
    expect(el.dataset["state"]).toBe("ready");
  });

  it("does not open a second pane", async () => {
    const { app, command } = await load();
    command("open-pane").callback?.();
    command("open-pane").callback?.();
    await new Promise((r) => setTimeout(r, 10));
    expect(app.workspace.getLeavesOfType(VIEW_TYPE_CORTEX)).toHaveLength(1);
  });

  it("lets go of the view type and its events on unload", async () => {
    const { app, plugin } = await load();
    plugin.unload();
    expect(app.viewRegistry.has(VIEW_TYPE_CORTEX)).toBe(false);
    await new Promise((r) => setTimeout(r, 10));
    expect(app.workspace.count("file-open")).toBe(0);
  });

  it("copies the context the server formats for the current note", async () => {
    const { app, command, settle } = await load();
    expect(command("copy-context").checkCallback?.(true)).toBe(true);
    command("copy-context").checkCallback?.(false);
    await settle();
    const post = requests.find((r) => r.url.endsWith("/v1/context"));
    expect(JSON.parse(String(post?.body))).toEqual({ active_note: NOTE, budget_tokens: 1500, mode: "balanced" });
    expect(clipboard).toEqual(["## Context\n- [[a]]"]);
    expect(Notice.shown.at(-1)).toBe("Copied context: 3 notes, 640 of 1500 tokens (balanced).");
    app.workspace.openFile("image.png");
    expect(command("copy-context").checkCallback?.(true)).toBe(false);
  });

  it("remembers a selection as a new note derived from the current one", async () => {
    const { app, command, settle } = await load();
    const editor = new Editor();
    const ctx = { file: app.workspace.getActiveFile() };
    const run = command("remember-selection").editorCheckCallback as unknown as (c: boolean, e: Editor, x: typeof ctx) => boolean;
    expect(run(true, editor, ctx)).toBe(false); // nothing selected
    editor.selection = "The WAL grew to 412 MB because a read stayed open.";
    expect(run(true, editor, ctx)).toBe(true);
    run(false, editor, ctx);
    await settle();
    const post = requests.find((r) => r.method === "POST" && r.url.endsWith("/v1/notes"));
    expect(JSON.parse(String(post?.body))).toEqual({
      text: "The WAL grew to 412 MB because a read stayed open.",
      relations: { derived_from: ["[[short_term/2026-11-28 dashboard froze]]"] },
    });
    expect(Notice.shown.at(-1)).toBe("Remembered as short_term/the WAL grew.md");
  });

  it("says clearly that a server without the sleep route cannot plan", async () => {
    const { command, settle } = await load();
    command("show-sleep-plan").callback?.();
    await settle();
    expect(requests.at(-1)?.url).toBe("http://127.0.0.1:8765/v1/sleep/plan?mode=full");
    expect(Modal.opened.at(-1)?.contentEl.textContent).toBe(SLEEP_UNAVAILABLE);
  });

  it("shows a sleep plan the server returns", async () => {
    const { command, settle } = await load();
    reply = () => json(200, { operations: [{ op: "promote", path: "short_term/a.md", reason: "importance 0.8" }] });
    command("show-sleep-plan").callback?.();
    await settle();
    expect(Modal.opened.at(-1)?.contentEl.textContent).toContain("- **promote** short_term/a.md — importance 0.8");
  });

  it("shows the server status in a modal", async () => {
    const { command, settle } = await load();
    command("show-server-status").callback?.();
    await settle();
    const modal = Modal.opened.at(-1);
    expect(modal?.titleEl.textContent).toBe("vault-cortex server status");
    expect(modal?.contentEl.querySelector("table")?.textContent).toContain("Notes23");
  });

  it("tells the user when a command finds no server", async () => {
    const { command, settle } = await load();
    (globalThis as { __obsidianRequest?: unknown }).__obsidianRequest = async () => {
      throw new Error("net::ERR_CONNECTION_REFUSED");
    };
    command("copy-context").checkCallback?.(false);
    command("show-server-status").callback?.();
    await settle();
    expect(Notice.shown.at(-1)).toContain("no server at http://127.0.0.1:8765");
    expect(Modal.opened.at(-1)?.contentEl.textContent).toContain("Start it with `vault-cortex serve");
  });
});

// Type-only check that main.ts's class is an Obsidian Plugin.
const _isPlugin: typeof Obsidian.Plugin = VaultCortexPlugin;
void _isPlugin;
void vi;
