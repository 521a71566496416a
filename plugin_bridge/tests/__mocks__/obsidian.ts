// A small stand-in for the `obsidian` module (the dataview `__mocks__/obsidian.ts` pattern): just enough of
// the API the plugin touches, with real behaviour where tests rely on it (events, components, debounce,
// leaves). Vitest aliases `obsidian` to this file; the browser harness bundles it in place of `obsidian` too,
// where `requestUrl` goes through the harness server as Obsidian's own goes around CORS.

type Callback = (...data: unknown[]) => unknown;

export interface EventRef {
  e: Events;
  name: string;
  fn: Callback;
}

export class Events {
  private handlers = new Map<string, Callback[]>();

  on(name: string, callback: Callback): EventRef {
    const list = this.handlers.get(name) ?? [];
    list.push(callback);
    this.handlers.set(name, list);
    return { e: this, name, fn: callback };
  }

  off(name: string, callback: Callback): void {
    this.handlers.set(name, (this.handlers.get(name) ?? []).filter((f) => f !== callback));
  }

  offref(ref: EventRef): void {
    this.off(ref.name, ref.fn);
  }

  trigger(name: string, ...data: unknown[]): void {
    for (const fn of [...(this.handlers.get(name) ?? [])]) fn(...data);
  }

  /** For tests: how many handlers are registered for an event. */
  count(name: string): number {
    return (this.handlers.get(name) ?? []).length;
  }
}

export class Component {
  private cleanups: Array<() => unknown> = [];
  private children: Component[] = [];
  loaded = false;

  load(): void {
    this.loaded = true;
    this.onload();
  }

  onload(): void {}

  unload(): void {
    for (const child of this.children.splice(0)) child.unload();
    for (const fn of this.cleanups.splice(0).reverse()) fn();
    this.loaded = false;
    this.onunload();
  }

  onunload(): void {}

  addChild<T extends Component>(child: T): T {
    this.children.push(child);
    if (this.loaded) child.load();
    return child;
  }

  register(cb: () => unknown): void {
    this.cleanups.push(cb);
  }

  registerEvent(ref: EventRef): void {
    this.register(() => ref.e.offref(ref));
  }

  registerDomEvent(el: HTMLElement | Window | Document, type: string, cb: EventListener): void {
    el.addEventListener(type, cb);
    this.register(() => el.removeEventListener(type, cb));
  }

  registerInterval(id: number): number {
    this.register(() => clearInterval(id));
    return id;
  }
}

export class TAbstractFile {
  constructor(public path: string) {}

  get name(): string {
    return this.path.split("/").pop() ?? this.path;
  }
}

export class TFile extends TAbstractFile {
  get extension(): string {
    const dot = this.name.lastIndexOf(".");
    return dot < 0 ? "" : this.name.slice(dot + 1);
  }

  get basename(): string {
    const dot = this.name.lastIndexOf(".");
    return dot < 0 ? this.name : this.name.slice(0, dot);
  }
}

export interface Debouncer<T extends unknown[], V> {
  (...args: [...T]): Debouncer<T, V>;
  cancel(): Debouncer<T, V>;
  run(): V | void;
}

export function debounce<T extends unknown[], V>(cb: (...args: [...T]) => V, timeout = 0, resetTimer = false): Debouncer<T, V> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let pending: T | null = null;
  const fire = (): V | void => {
    timer = null;
    if (pending === null) return;
    const args = pending;
    pending = null;
    return cb(...args);
  };
  const d = ((...args: T) => {
    pending = args;
    if (timer !== null && resetTimer) {
      clearTimeout(timer);
      timer = null;
    }
    if (timer === null) timer = setTimeout(fire, timeout);
    return d;
  }) as Debouncer<T, V>;
  d.cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    pending = null;
    return d;
  };
  d.run = () => {
    if (timer !== null) clearTimeout(timer);
    return fire();
  };
  return d;
}

// -- requestUrl -------------------------------------------------------------------------------------------

export interface RequestUrlParam {
  url: string;
  method?: string;
  contentType?: string;
  body?: string | ArrayBuffer;
  headers?: Record<string, string>;
  throw?: boolean;
}

export interface RequestUrlResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  json: unknown;
  arrayBuffer: ArrayBuffer;
}

/** Where the shim's requestUrl sends requests: a test may set `globalThis.__obsidianRequest`. */
type RequestHook = (param: RequestUrlParam) => Promise<{ status: number; headers: Record<string, string>; text: string }>;

const viaHarness: RequestHook = async (param) => {
  const reply = await fetch("/__request", { method: "POST", body: JSON.stringify(param) });
  const data = (await reply.json()) as { status?: number; headers?: Record<string, string>; text?: string; error?: string };
  if (data.error !== undefined) throw new Error(data.error); // like Obsidian's net::ERR_CONNECTION_REFUSED
  return { status: data.status ?? 0, headers: data.headers ?? {}, text: data.text ?? "" };
};

export async function requestUrl(request: RequestUrlParam | string): Promise<RequestUrlResponse> {
  const param = typeof request === "string" ? { url: request } : request;
  const hook = (globalThis as { __obsidianRequest?: RequestHook }).__obsidianRequest ?? viaHarness;
  const res = await hook(param);
  if (res.status >= 400 && param.throw !== false) throw new Error(`Request failed, status ${res.status}`);
  return {
    ...res,
    get json(): unknown {
      return JSON.parse(res.text);
    },
    arrayBuffer: new ArrayBuffer(0),
  };
}

// -- DOM helpers Obsidian adds to HTMLElement (used by modals and the settings tab) ---------------------------

interface DomInfo {
  cls?: string;
  text?: string;
  attr?: Record<string, string>;
}

declare global {
  interface HTMLElement {
    empty(): void;
    setText(text: string): void;
    addClass(...cls: string[]): void;
    createEl<K extends keyof HTMLElementTagNameMap>(tag: K, info?: DomInfo | string): HTMLElementTagNameMap[K];
    createDiv(info?: DomInfo | string): HTMLDivElement;
  }
}

if (typeof HTMLElement !== "undefined" && !("createEl" in HTMLElement.prototype)) {
  const proto = HTMLElement.prototype as HTMLElement;
  proto.empty = function (this: HTMLElement) {
    this.replaceChildren();
  };
  proto.setText = function (this: HTMLElement, text: string) {
    this.textContent = text;
  };
  proto.addClass = function (this: HTMLElement, ...cls: string[]) {
    this.classList.add(...cls);
  };
  proto.createEl = function <K extends keyof HTMLElementTagNameMap>(this: HTMLElement, tag: K, info?: DomInfo | string) {
    const el = this.ownerDocument.createElement(tag);
    const o = typeof info === "string" ? { cls: info } : info ?? {};
    if (o.cls) el.className = o.cls;
    if (o.text !== undefined) el.textContent = o.text;
    for (const [k, v] of Object.entries(o.attr ?? {})) el.setAttribute(k, v);
    this.appendChild(el);
    return el;
  };
  proto.createDiv = function (this: HTMLElement, info?: DomInfo | string) {
    return this.createEl("div", info);
  };
}

// -- App, workspace, leaves and views -----------------------------------------------------------------------

export interface OpenViewState {
  state?: Record<string, unknown>;
  eState?: Record<string, unknown>;
  active?: boolean;
}

export interface ViewStateResult {
  history: boolean;
}

export type ViewCreator = (leaf: WorkspaceLeaf) => View;

export abstract class View extends Component {
  app: App;
  containerEl: HTMLElement;

  constructor(public leaf: WorkspaceLeaf) {
    super();
    this.app = leaf.app;
    this.containerEl = document.createElement("div");
    this.containerEl.className = "workspace-leaf-content";
  }

  abstract getViewType(): string;

  getDisplayText(): string {
    return "";
  }

  getIcon(): string {
    return "";
  }

  getState(): Record<string, unknown> {
    return {};
  }

  async setState(_state: unknown, _result: ViewStateResult): Promise<void> {}

  protected async onOpen(): Promise<void> {}

  protected async onClose(): Promise<void> {}

  /** The shim's stand-ins for Obsidian opening and closing a view. */
  async open(): Promise<void> {
    this.load();
    await this.onOpen();
  }

  async close(): Promise<void> {
    await this.onClose();
    this.unload();
  }
}

export abstract class ItemView extends View {
  contentEl: HTMLElement;

  constructor(leaf: WorkspaceLeaf) {
    super(leaf);
    this.contentEl = document.createElement("div");
    this.contentEl.className = "view-content";
    this.containerEl.appendChild(this.contentEl);
  }
}

export interface EditorPosition {
  line: number;
  ch: number;
}

export interface MarkdownFileInfo {
  file: TFile | null;
}

export class Editor {
  inserted: string[] = [];
  selection = "";
  lines: string[] = [""];
  cursor: EditorPosition = { line: 0, ch: 0 };

  getValue(): string {
    return this.lines.join("\n");
  }

  /** Replace the text and put the cursor at its end, as typing it would. */
  setValue(text: string): void {
    this.lines = text.split("\n");
    const last = this.lines.length - 1;
    this.cursor = { line: last, ch: (this.lines[last] ?? "").length };
  }

  lineCount(): number {
    return this.lines.length;
  }

  getLine(line: number): string {
    return this.lines[line] ?? "";
  }

  getCursor(): EditorPosition {
    return { ...this.cursor };
  }

  getSelection(): string {
    return this.selection;
  }

  replaceSelection(text: string): void {
    this.inserted.push(text);
    this.selection = "";
  }

  focus(): void {}
}

export class MarkdownView extends ItemView {
  editor = new Editor();
  file: TFile | null = null;

  getViewType(): string {
    return "markdown";
  }
}

export class WorkspaceLeaf {
  view: View | null = null;

  constructor(public app: App) {}

  async setViewState(state: { type: string; active?: boolean; state?: Record<string, unknown> }): Promise<void> {
    const creator = this.app.viewRegistry.get(state.type);
    if (!creator) throw new Error(`no view registered for ${state.type}`);
    if (this.view) await this.view.close();
    const view = creator(this);
    this.view = view;
    this.app.workspace.attach(this);
    await view.open();
    if (state.state) await view.setState(state.state, { history: false });
  }

  async detach(): Promise<void> {
    if (this.view) await this.view.close();
    this.app.workspace.leaves = this.app.workspace.leaves.filter((l) => l !== this);
  }
}

export interface OpenedLink {
  linktext: string;
  sourcePath: string;
  newLeaf: unknown;
  state: OpenViewState | undefined;
}

export class Workspace extends Events {
  leaves: WorkspaceLeaf[] = [];
  activeFile: TFile | null = null;
  opened: OpenedLink[] = [];
  layoutSaves = 0;
  /** Where new side leaves' containers go (the harness page sets it). */
  sidebarEl: HTMLElement | null = null;

  constructor(private readonly app: App) {
    super();
  }

  attach(leaf: WorkspaceLeaf): void {
    if (!this.leaves.includes(leaf)) this.leaves.push(leaf);
    if (leaf.view && this.sidebarEl) this.sidebarEl.appendChild(leaf.view.containerEl);
  }

  onLayoutReady(callback: () => unknown): void {
    setTimeout(callback, 0);
  }

  getActiveFile(): TFile | null {
    return this.activeFile;
  }

  getActiveViewOfType<T>(_type: abstract new (...args: never[]) => T): T | null {
    return null;
  }

  getLeavesOfType(type: string): WorkspaceLeaf[] {
    return this.leaves.filter((l) => l.view?.getViewType() === type);
  }

  getRightLeaf(_split: boolean): WorkspaceLeaf {
    return new WorkspaceLeaf(this.app);
  }

  async revealLeaf(_leaf: WorkspaceLeaf): Promise<void> {}

  requestSaveLayout(): void {
    this.layoutSaves++;
  }

  async openLinkText(linktext: string, sourcePath: string, newLeaf?: unknown, state?: OpenViewState): Promise<void> {
    this.opened.push({ linktext, sourcePath, newLeaf, state });
  }

  /** The shim's stand-in for the user typing into a note: the editor holds `text`, the cursor at its end. */
  type(path: string, text: string): Editor {
    const view = new MarkdownView(new WorkspaceLeaf(this.app));
    view.file = new TFile(path);
    view.editor.setValue(text);
    this.trigger("editor-change", view.editor, view);
    return view.editor;
  }

  /** The shim's stand-in for the user opening a note. */
  openFile(path: string | null): void {
    this.activeFile = path === null ? null : new TFile(path);
    this.trigger("file-open", this.activeFile);
  }
}

export class Vault extends Events {
  files = new Set<string>();

  getAbstractFileByPath(path: string): TAbstractFile | null {
    return this.files.has(path) ? new TFile(path) : null;
  }

  getName(): string {
    return "vault";
  }
}

export class MetadataCache extends Events {
  fileToLinktext(file: TFile, _sourcePath: string, omitMdExtension = true): string {
    return omitMdExtension ? file.path.replace(/\.md$/, "") : file.path;
  }
}

export class App {
  viewRegistry = new Map<string, ViewCreator>();
  workspace: Workspace;
  vault = new Vault();
  metadataCache = new MetadataCache();

  constructor() {
    this.workspace = new Workspace(this);
  }
}

export interface PluginManifest {
  id: string;
  name: string;
  version: string;
  minAppVersion?: string;
  description?: string;
  author?: string;
  isDesktopOnly?: boolean;
}

export interface Command {
  id: string;
  name: string;
  callback?: () => unknown;
  checkCallback?: (checking: boolean) => boolean | void;
  editorCheckCallback?: (checking: boolean, editor: Editor, ctx: MarkdownView) => boolean | void;
  editorCallback?: (editor: Editor, ctx: MarkdownView) => unknown;
}

export class Plugin extends Component {
  commands: Command[] = [];
  settingTabs: PluginSettingTab[] = [];
  ribbon: HTMLElement[] = [];
  /** What loadData() returns (tests put settings here). */
  data: unknown = null;

  constructor(public app: App, public manifest: PluginManifest) {
    super();
  }

  async loadData(): Promise<unknown> {
    return this.data;
  }

  async saveData(data: unknown): Promise<void> {
    this.data = JSON.parse(JSON.stringify(data));
  }

  registerView(type: string, creator: ViewCreator): void {
    this.app.viewRegistry.set(type, creator);
    this.register(() => {
      this.app.viewRegistry.delete(type);
      for (const leaf of this.app.workspace.getLeavesOfType(type)) void leaf.view?.close();
    });
  }

  addCommand(command: Command): Command {
    this.commands.push(command);
    return command;
  }

  addSettingTab(tab: PluginSettingTab): void {
    this.settingTabs.push(tab);
  }

  addRibbonIcon(icon: string, title: string, callback: (evt: MouseEvent) => unknown): HTMLElement {
    const el = document.createElement("div");
    el.setAttribute("aria-label", title);
    el.dataset["icon"] = icon;
    el.addEventListener("click", (evt) => callback(evt));
    this.ribbon.push(el);
    return el;
  }
}

export class Modal {
  containerEl: HTMLElement;
  modalEl: HTMLElement;
  titleEl: HTMLElement;
  contentEl: HTMLElement;
  static opened: Modal[] = [];

  constructor(public app: App) {
    this.containerEl = document.createElement("div");
    this.modalEl = this.containerEl.createDiv("modal");
    this.titleEl = this.modalEl.createDiv("modal-title");
    this.contentEl = this.modalEl.createDiv("modal-content");
  }

  open(): void {
    Modal.opened.push(this);
    void this.onOpen();
  }

  close(): void {
    this.onClose();
  }

  onOpen(): Promise<void> | void {}

  onClose(): void {}

  setTitle(title: string): this {
    this.titleEl.textContent = title;
    return this;
  }
}

export class Notice {
  static shown: string[] = [];

  constructor(public message: string | DocumentFragment, _duration?: number) {
    Notice.shown.push(typeof message === "string" ? message : message.textContent ?? "");
  }

  hide(): void {}
}

export abstract class PluginSettingTab {
  containerEl: HTMLElement;

  constructor(public app: App, public plugin: Plugin) {
    this.containerEl = document.createElement("div");
  }

  abstract display(): void;

  hide(): void {}
}

class ValueComponent<T> {
  protected handler: ((value: T) => unknown) | null = null;

  onChange(cb: (value: T) => unknown): this {
    this.handler = cb;
    return this;
  }
}

export class TextComponent extends ValueComponent<string> {
  inputEl: HTMLInputElement;

  constructor(parent: HTMLElement) {
    super();
    this.inputEl = parent.createEl("input");
    this.inputEl.type = "text";
    this.inputEl.addEventListener("input", () => void this.handler?.(this.inputEl.value));
  }

  setPlaceholder(text: string): this {
    this.inputEl.placeholder = text;
    return this;
  }

  setValue(value: string): this {
    this.inputEl.value = value;
    return this;
  }

  getValue(): string {
    return this.inputEl.value;
  }
}

/** Obsidian's toggle: a `div.checkbox-container` that flips (and reports) its value on click. */
export class ToggleComponent extends ValueComponent<boolean> {
  toggleEl: HTMLElement;
  private on = false;

  constructor(parent: HTMLElement) {
    super();
    this.toggleEl = parent.createDiv("checkbox-container");
    this.toggleEl.addEventListener("click", () => {
      this.setValue(!this.on);
      void this.handler?.(this.on);
    });
  }

  setValue(on: boolean): this {
    this.on = on;
    this.toggleEl.classList.toggle("is-enabled", on);
    return this;
  }

  getValue(): boolean {
    return this.on;
  }
}

export class DropdownComponent extends ValueComponent<string> {
  selectEl: HTMLSelectElement;

  constructor(parent: HTMLElement) {
    super();
    this.selectEl = parent.createEl("select");
    this.selectEl.addEventListener("change", () => void this.handler?.(this.selectEl.value));
  }

  addOption(value: string, display: string): this {
    const opt = this.selectEl.createEl("option", { text: display });
    opt.value = value;
    return this;
  }

  setValue(value: string): this {
    this.selectEl.value = value;
    return this;
  }
}

export class ButtonComponent {
  buttonEl: HTMLButtonElement;

  constructor(parent: HTMLElement) {
    this.buttonEl = parent.createEl("button");
  }

  setButtonText(text: string): this {
    this.buttonEl.textContent = text;
    return this;
  }

  setCta(): this {
    return this;
  }

  onClick(cb: (evt: MouseEvent) => unknown): this {
    this.buttonEl.addEventListener("click", (evt) => void cb(evt));
    return this;
  }
}

export class Setting {
  settingEl: HTMLElement;
  nameEl: HTMLElement;
  descEl: HTMLElement;
  controlEl: HTMLElement;

  constructor(containerEl: HTMLElement) {
    this.settingEl = containerEl.createDiv("setting-item");
    this.nameEl = this.settingEl.createDiv("setting-item-name");
    this.descEl = this.settingEl.createDiv("setting-item-description");
    this.controlEl = this.settingEl.createDiv("setting-item-control");
  }

  setName(name: string): this {
    this.nameEl.textContent = name;
    return this;
  }

  setDesc(desc: string): this {
    this.descEl.textContent = desc;
    return this;
  }

  addText(cb: (text: TextComponent) => unknown): this {
    cb(new TextComponent(this.controlEl));
    return this;
  }

  addDropdown(cb: (dropdown: DropdownComponent) => unknown): this {
    cb(new DropdownComponent(this.controlEl));
    return this;
  }

  addToggle(cb: (toggle: ToggleComponent) => unknown): this {
    cb(new ToggleComponent(this.controlEl));
    return this;
  }

  addButton(cb: (button: ButtonComponent) => unknown): this {
    cb(new ButtonComponent(this.controlEl));
    return this;
  }
}

export const MarkdownRenderer = {
  async render(_app: App, markdown: string, el: HTMLElement, _sourcePath: string, _component: Component): Promise<void> {
    el.createEl("pre", { text: markdown });
  },
};

export function setIcon(parent: HTMLElement, icon: string): void {
  parent.dataset["icon"] = icon;
}

export function normalizePath(path: string): string {
  return path.replace(/\\/g, "/").replace(/\/+/g, "/").replace(/^\/|\/$/g, "");
}
