// Modals that load something from the server and show it: the status and the sleep plan.
import { App, Component, MarkdownRenderer, Modal } from "obsidian";
import type { CortexClient } from "./client";
import { CortexApiError } from "./errors";
import { SLEEP_UNAVAILABLE, errorNotice, planMarkdown, statusRows } from "./present";

/** A modal that shows "Loading…", then what `show` draws, or the error. */
class LoadingModal<T> extends Modal {
  private readonly component = new Component();
  private closed = false;

  constructor(
    app: App,
    private readonly title: string,
    private readonly load: () => Promise<T>,
    private readonly show: (el: HTMLElement, value: T, component: Component) => Promise<void> | void,
    private readonly failure: (err: unknown) => string,
  ) {
    super(app);
  }

  override onOpen(): void {
    this.component.load();
    this.setTitle(this.title);
    this.contentEl.addClass("vault-cortex-modal");
    this.contentEl.setText("Loading…");
    this.load().then(
      async (value) => {
        if (this.closed) return;
        this.contentEl.empty();
        await this.show(this.contentEl, value, this.component);
      },
      (err: unknown) => {
        if (this.closed) return;
        this.contentEl.empty();
        this.contentEl.createEl("p", { cls: "vault-cortex-modal-error", text: this.failure(err) });
      },
    );
  }

  override onClose(): void {
    this.closed = true;
    this.component.unload();
    this.contentEl.empty();
  }
}

export function openStatusModal(app: App, client: CortexClient, serverUrl: string): void {
  new LoadingModal(
    app,
    "vault-cortex server status",
    () => client.status(),
    (el, status) => {
      const table = el.createEl("table", { cls: "vault-cortex-status" });
      for (const [label, value] of statusRows(status)) {
        const row = table.createEl("tr");
        row.createEl("th", { text: label });
        row.createEl("td", { text: value });
      }
      if (status.skipped.length > 0) {
        el.createEl("h4", { text: `Files the index skipped (${status.skipped.length})` });
        const list = el.createEl("ul");
        for (const s of status.skipped) list.createEl("li", { text: `${s.path}: ${s.reason}` });
      }
    },
    (err) => errorNotice(err, serverUrl),
  ).open();
}

export function openSleepPlanModal(app: App, client: CortexClient, serverUrl: string, mode = "full"): void {
  new LoadingModal(
    app,
    "Sleep plan (dry run)",
    () => client.sleepPlan(mode),
    async (el, plan, component) => {
      el.createEl("p", { cls: "vault-cortex-muted", text: "Nothing has changed yet: this is what consolidation would do, and why." });
      await MarkdownRenderer.render(app, planMarkdown(plan), el.createDiv(), "", component);
    },
    (err) => (err instanceof CortexApiError && err.kind === "no-route" ? SLEEP_UNAVAILABLE : errorNotice(err, serverUrl)),
  ).open();
}
