// The pane's DOM, on a plain HTMLElement (no Obsidian helpers), so a browser test can mount it as it is.
import { indexingLine, regionLabel } from "./viewModel";
import type { PaneItem, PaneList, PaneState } from "./viewModel";

export interface PaneHandlers {
  /** Open the note (in a new tab when `newTab`). */
  open(item: PaneItem, newTab: boolean): void;
  /** Insert the item's `[[link]]` at the cursor of the note being written. */
  insert(item: PaneItem): void;
  setMode(mode: string): void;
  refresh(): void;
  /** Open the plugin's settings (for the token); absent where there are none (the harness). */
  openSettings?(): void;
}

export interface RenderOptions {
  modes: readonly string[];
  mode: string;
}

export const ROOT_CLASS = "vault-cortex-pane";
export const DRAG_MIME = "text/plain";

type Attrs = Record<string, string>;

function el<K extends keyof HTMLElementTagNameMap>(
  parent: HTMLElement,
  tag: K,
  cls?: string,
  text?: string,
  attrs?: Attrs,
): HTMLElementTagNameMap[K] {
  const node = parent.ownerDocument.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, value);
  parent.appendChild(node);
  return node;
}

function button(parent: HTMLElement, cls: string, text: string, label: string, onClick: (evt: MouseEvent) => void): HTMLButtonElement {
  const b = el(parent, "button", cls, text, { type: "button", "aria-label": label, title: label });
  b.addEventListener("click", (evt) => {
    evt.preventDefault();
    evt.stopPropagation();
    onClick(evt);
  });
  return b;
}

/** Replace `root`'s content with the pane for `state`. */
export function renderPane(root: HTMLElement, state: PaneState, options: RenderOptions, handlers: PaneHandlers): void {
  const opened = openedSignals(root);
  root.replaceChildren();
  root.classList.add(ROOT_CLASS);
  root.dataset["state"] = state.kind;
  renderHeader(root, state, options, handlers);
  const body = el(root, "div", "vc-body");
  switch (state.kind) {
    case "no-note":
      message(body, "idle", "No note open", "Open a note to see the memories related to it.");
      break;
    case "loading":
      el(body, "div", "vc-loading", "Looking for related memories…", { role: "status" });
      if (state.previous) renderList(body, state.previous, handlers, true);
      break;
    case "ready":
      if (state.indexing) el(body, "div", "vc-indexing", indexingLine(state.indexing), { role: "status" });
      el(body, "div", "vc-summary", summary(state.count, state.mode, state.tookMs) + (state.fromDraft ? " · from the paragraph you are writing" : ""));
      renderList(body, state.list, handlers, false);
      break;
    case "empty":
      if (state.indexing) el(body, "div", "vc-indexing", indexingLine(state.indexing), { role: "status" });
      if (state.fromDraft) message(body, "empty", "Nothing close", "No memory is close enough to the paragraph you are writing to show unasked. The pane looks again as you write.");
      else message(body, "empty", "Nothing related", "No memory in the vault came close to this note. Write a little more, or try the explore mode.");
      break;
    case "building": {
      const box = message(body, "building", "Index building", "The server is still indexing the vault (503); the pane asks again in a few seconds.");
      detail(box, state.detail);
      break;
    }
    case "not-indexed": {
      const box = message(body, "not-indexed", "Note not in the index", "The server has not indexed this note.");
      detail(box, state.detail);
      retry(box, handlers);
      break;
    }
    case "unreachable": {
      const box = message(body, "unreachable", "Server not running", `No vault-cortex server answered at ${state.url}.`);
      const hint = el(box, "p", "vc-hint", "Start it with ");
      el(hint, "code", "", "vault-cortex serve --vault <your vault>");
      hint.append(", or check the server URL in the plugin settings.");
      retry(box, handlers);
      break;
    }
    case "unauthorised": {
      const box = message(body, "unauthorised", "Unauthorised (401)", "The server refused the token.");
      const hint = el(box, "p", "vc-hint", "Paste the token from ");
      el(hint, "code", "", "<vault>/.cortex/token");
      hint.append(" into the plugin settings.");
      const actions = el(box, "div", "vc-actions");
      if (handlers.openSettings) button(actions, "vc-button mod-cta", "Open settings", "Open the plugin settings", () => handlers.openSettings?.());
      button(actions, "vc-button", "Retry", "Ask the server again", () => handlers.refresh());
      break;
    }
    case "error": {
      const box = message(body, "error", "Something went wrong", "");
      detail(box, state.message);
      retry(box, handlers);
      break;
    }
  }
  el(root, "div", "vc-footer", "Ranked by a selection score: a hint of relevance, not a promise that nothing else matters.");
  for (const box of root.querySelectorAll<HTMLDetailsElement>("details.vc-why-box")) {
    if (opened.has(box.closest<HTMLElement>(".vc-item")?.dataset["path"] ?? "")) box.open = true;
  }
}

/** The cards whose numbers are shown, by path, so that a redraw (a save, a refresh) keeps them shown. */
function openedSignals(root: HTMLElement): Set<string> {
  const boxes = root.querySelectorAll<HTMLDetailsElement>("details.vc-why-box[open]");
  return new Set([...boxes].map((box) => box.closest<HTMLElement>(".vc-item")?.dataset["path"] ?? ""));
}

function summary(count: number, mode: string, tookMs: number): string {
  return `Top ${count} by selection score · ${mode} · ${Math.round(tookMs)} ms`;
}

function renderHeader(root: HTMLElement, state: PaneState, options: RenderOptions, handlers: PaneHandlers): void {
  const header = el(root, "div", "vc-header");
  el(header, "div", "vc-heading", "Related memories");
  const controls = el(header, "div", "vc-controls");
  const select = el(controls, "select", "dropdown vc-mode", undefined, { "aria-label": "Recall mode", title: "Recall mode" });
  for (const mode of options.modes) {
    const opt = el(select, "option", "", mode, { value: mode });
    if (mode === options.mode) opt.selected = true;
  }
  select.value = options.mode;
  select.addEventListener("change", () => handlers.setMode(select.value));
  button(controls, "vc-button vc-refresh", "↻", "Refresh", () => handlers.refresh());
  if (state.kind === "loading") root.dataset["busy"] = "true";
  else delete root.dataset["busy"];
}

function message(body: HTMLElement, kind: string, title: string, text: string): HTMLElement {
  const box = el(body, "div", `vc-message vc-message-${kind}`, undefined, { role: "status" });
  el(box, "div", "vc-message-title", title);
  if (text) el(box, "p", "vc-message-text", text);
  return box;
}

function detail(box: HTMLElement, text: string): void {
  if (text) el(box, "p", "vc-detail", text);
}

function retry(box: HTMLElement, handlers: PaneHandlers): void {
  const actions = el(box, "div", "vc-actions");
  button(actions, "vc-button", "Retry", "Ask the server again", () => handlers.refresh());
}

function renderList(body: HTMLElement, list: PaneList, handlers: PaneHandlers, stale: boolean): void {
  if (list.region !== null) el(body, "div", "vc-region-note", `All from ${regionLabel(list.region)}`, { "data-region": list.region });
  const items = el(body, "div", stale ? "vc-list is-stale" : "vc-list", undefined, { role: "list" });
  for (const item of list.items) renderItem(items, item, handlers, list.region === null);
}

function renderItem(parent: HTMLElement, item: PaneItem, handlers: PaneHandlers, tagged: boolean): void {
  const row = el(parent, "div", "vc-item", undefined, {
    role: "listitem",
    draggable: "true",
    "data-path": item.path,
    "data-region": item.region,
    title: `${item.path}\nDrag into a note to link it; Ctrl/Cmd-click opens in a new tab.`,
  });
  row.addEventListener("dragstart", (evt) => {
    evt.dataTransfer?.setData(DRAG_MIME, item.link);
    if (evt.dataTransfer) evt.dataTransfer.effectAllowed = "copyLink";
  });
  row.addEventListener("click", (evt) => handlers.open(item, evt.ctrlKey || evt.metaKey));

  const top = el(row, "div", "vc-item-top");
  const link = el(top, "a", "vc-title", item.title, { href: "#", "data-href": item.open.linktext });
  link.addEventListener("click", (evt) => {
    evt.preventDefault();
    evt.stopPropagation();
    handlers.open(item, evt.ctrlKey || evt.metaKey);
  });
  if (tagged) el(top, "span", "vc-region", regionLabel(item.region), { title: "Region" });
  el(top, "span", "vc-score", item.scoreText, { title: "Selection score (0–1)" });
  button(top, "vc-button vc-insert", "[[ ]]", `Insert ${item.link} at the cursor`, () => handlers.insert(item));

  if (item.heading) el(row, "div", "vc-section", `§ ${item.heading}`);
  if (item.snippet) el(row, "div", "vc-snippet", item.snippet);
  renderWhy(row, item);
}

/** The why in words; with numbers behind it, the words are a disclosure that shows them (closed at first). */
function renderWhy(row: HTMLElement, item: PaneItem): void {
  if (!item.signals) {
    why(el(row, "div", "vc-why"), item.why);
    return;
  }
  const box = el(row, "details", "vc-why-box");
  // a click here shows or hides the numbers; it does not open the note
  box.addEventListener("click", (evt) => evt.stopPropagation());
  why(el(box, "summary", "vc-why", undefined, { title: "Show the signals behind this" }), item.why);
  el(box, "div", "vc-signals", item.signals);
}

function why(parent: HTMLElement, words: string): void {
  el(parent, "span", "vc-why-label", "why ");
  parent.append(words);
}
