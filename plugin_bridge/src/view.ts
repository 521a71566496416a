// The Cortex pane: an ItemView that follows the active note and shows its related memories.
import { ItemView, MarkdownView, Notice, TFile, debounce } from "obsidian";
import type { Debouncer, Editor, MarkdownFileInfo, ViewStateResult, WorkspaceLeaf } from "obsidian";
import type { CortexHost } from "./host";
import { renderPane } from "./render";
import type { PaneHandlers } from "./render";
import { PaneModel, TYPING_DELAY_MS, linkPath, modeChoices, paragraphAt, retryDelay } from "./viewModel";
import type { PaneItem, PaneState } from "./viewModel";

export const VIEW_TYPE_CORTEX = "vault-cortex-related";

/**
 * Private members use names Obsidian's own View does not (it has internal `open`/`close`), so that nothing
 * here shadows the app's lifecycle methods.
 */
export class CortexView extends ItemView {
  private model: PaneModel;
  private refreshSoon: Debouncer<[], void>;
  private retryTimer: number | null = null;
  /** Asks about the paragraph being written once typing pauses; a newer keystroke resets it. */
  private readonly typingSoon: Debouncer<[string], void> = debounce((text: string) => void this.model.typing(text), TYPING_DELAY_MS, true);

  constructor(
    leaf: WorkspaceLeaf,
    private readonly host: CortexHost,
  ) {
    super(leaf);
    this.model = this.newModel(host.settings.defaultMode);
    this.refreshSoon = this.newDebouncer();
  }

  override getViewType(): string {
    return VIEW_TYPE_CORTEX;
  }

  override getDisplayText(): string {
    return "Cortex";
  }

  override getIcon(): string {
    return "brain-circuit";
  }

  override getState(): Record<string, unknown> {
    return { ...super.getState(), mode: this.model.mode };
  }

  override async setState(state: unknown, result: ViewStateResult): Promise<void> {
    const mode = typeof state === "object" && state !== null ? (state as Record<string, unknown>)["mode"] : undefined;
    if (typeof mode === "string" && mode && mode !== this.model.mode) void this.model.setMode(mode);
    await super.setState(state, result);
  }

  protected override async onOpen(): Promise<void> {
    const { workspace, vault } = this.app;
    this.registerEvent(workspace.on("file-open", (file) => this.followFile(file)));
    this.registerEvent(
      vault.on("modify", (file) => {
        if (file.path === this.model.path) this.refreshSoon();
      }),
    );
    this.registerEvent(workspace.on("editor-change", (editor, info) => this.followTyping(editor, info)));
    this.registerEvent(
      vault.on("rename", (file, oldPath) => {
        if (oldPath === this.model.path) void this.model.show(file.path);
      }),
    );
    this.registerEvent(
      vault.on("delete", (file) => {
        if (file.path === this.model.path) void this.model.show(null);
      }),
    );
    this.register(
      this.host.onSettingsChange(() => {
        this.refreshSoon.cancel();
        this.refreshSoon = this.newDebouncer();
        this.refreshSoon();
      }),
    );
    this.register(() => this.refreshSoon.cancel());
    this.register(() => this.typingSoon.cancel());
    this.register(() => this.clearRetry());
    this.register(() => this.model.dispose());
    this.drawState(this.model.state);
    this.followFile(workspace.getActiveFile());
  }

  protected override async onClose(): Promise<void> {
    this.contentEl.replaceChildren();
  }

  /** Ask again now (the refresh command). */
  refreshRelated(): void {
    void this.model.refresh();
  }

  /** While the followed note is edited: the paragraph around the cursor, once typing pauses. */
  private followTyping(editor: Editor, info: MarkdownView | MarkdownFileInfo): void {
    if (info.file?.path !== this.model.path || this.model.path === null) return;
    const lines = Array.from({ length: editor.lineCount() }, (_, i) => editor.getLine(i));
    this.typingSoon(paragraphAt(lines, editor.getCursor().line));
  }

  private followFile(file: TFile | null): void {
    if (file === null) return; // the pane keeps showing the last note while e.g. the graph view is active
    const path = file.extension === "md" ? file.path : null;
    if (path !== this.model.path || this.model.state.kind !== "ready") void this.model.show(path);
  }

  private newModel(mode: string): PaneModel {
    return new PaneModel({
      client: this.host.client,
      serverUrl: () => this.host.settings.serverUrl,
      mode,
      link: (path) => this.linkTo(path),
      captures: () => this.host.settings.showCaptures,
      onChange: (state) => this.drawState(state),
    });
  }

  private newDebouncer(): Debouncer<[], void> {
    return debounce(() => void this.model.refresh(), this.host.settings.refreshDelayMs, true);
  }

  private drawState(state: PaneState): void {
    this.clearRetry();
    const delay = retryDelay(state);
    if (delay !== null) {
      this.retryTimer = window.setTimeout(() => {
        this.retryTimer = null;
        void this.model.refresh();
      }, delay);
    }
    renderPane(this.contentEl, state, { modes: modeChoices(this.model.lastStatus, this.model.mode), mode: this.model.mode }, this.paneHandlers);
  }

  private clearRetry(): void {
    if (this.retryTimer !== null) window.clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private readonly paneHandlers: PaneHandlers = {
    open: (item, newTab) => void this.openItem(item, newTab),
    insert: (item) => this.insertLink(item),
    setMode: (mode) => {
      void this.model.setMode(mode);
      this.app.workspace.requestSaveLayout();
    },
    refresh: () => void this.model.refresh(),
    openSettings: () => this.openSettings(),
  };

  private async openItem(item: PaneItem, newTab: boolean): Promise<void> {
    const source = this.model.path ?? "";
    const eState = item.open.line === null ? undefined : { eState: { line: item.open.line } };
    await this.app.workspace.openLinkText(item.open.linktext, source, newTab ? "tab" : false, eState);
  }

  /** The editor of the note the pane follows (the pane itself is the active view while its button is clicked). */
  private targetEditor(): MarkdownView | null {
    const active = this.app.workspace.getActiveViewOfType(MarkdownView);
    if (active) return active;
    const leaves = this.app.workspace.getLeavesOfType("markdown").map((leaf) => leaf.view);
    const views = leaves.filter((v): v is MarkdownView => v instanceof MarkdownView);
    return views.find((v) => v.file?.path === this.model.path) ?? views[0] ?? null;
  }

  private insertLink(item: PaneItem): void {
    const view = this.targetEditor();
    if (view === null) {
      new Notice("vault-cortex: open a note to insert the link into.");
      return;
    }
    view.editor.replaceSelection(item.link);
    view.editor.focus();
  }

  /** `[[link]]` in Obsidian's shortest unambiguous form, relative to the note being written. */
  private linkTo(path: string): string {
    const file = this.app.vault.getAbstractFileByPath(path);
    if (!(file instanceof TFile)) return `[[${linkPath(path)}]]`;
    return `[[${this.app.metadataCache.fileToLinktext(file, this.model.path ?? "", true)}]]`;
  }

  private openSettings(): void {
    // `app.setting` is not in the public API; fall back to a hint when it is missing.
    const setting = (this.app as unknown as { setting?: { open(): void; openTabById(id: string): void } }).setting;
    if (setting) {
      setting.open();
      setting.openTabById(this.host.pluginId);
    }
  }
}
