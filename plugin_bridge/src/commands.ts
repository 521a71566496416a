// The plugin's commands: open the pane, copy context, remember a selection, preview sleep, server status.
import { Notice, TFile } from "obsidian";
import type { App, Plugin, WorkspaceLeaf } from "obsidian";
import type { CortexHost } from "./host";
import { openSleepPlanModal, openStatusModal } from "./modals";
import { contextNotice, errorNotice, rememberBody } from "./present";
import { CortexView, VIEW_TYPE_CORTEX } from "./view";

/** The Cortex pane's leaf, created in the right sidebar when there is none; revealed when `reveal`. */
export async function openPane(app: App, reveal: boolean): Promise<WorkspaceLeaf | null> {
  const { workspace } = app;
  let leaf = workspace.getLeavesOfType(VIEW_TYPE_CORTEX)[0] ?? null;
  if (leaf === null) {
    leaf = workspace.getRightLeaf(false);
    if (leaf === null) return null;
    await leaf.setViewState({ type: VIEW_TYPE_CORTEX, active: false });
  }
  if (reveal) await workspace.revealLeaf(leaf);
  return leaf;
}

function markdownFile(app: App): TFile | null {
  const file = app.workspace.getActiveFile();
  return file !== null && file.extension === "md" ? file : null;
}

export function registerCommands(plugin: Plugin, host: CortexHost): void {
  const { app } = plugin;
  const fail = (err: unknown) => new Notice(errorNotice(err, host.settings.serverUrl), 8000);

  plugin.addCommand({
    id: "open-pane",
    name: "Open the related memories pane",
    callback: () => void openPane(app, true),
  });

  plugin.addCommand({
    id: "refresh-pane",
    name: "Refresh related memories",
    callback: () => {
      for (const leaf of app.workspace.getLeavesOfType(VIEW_TYPE_CORTEX)) {
        if (leaf.view instanceof CortexView) leaf.view.refreshRelated();
      }
    },
  });

  plugin.addCommand({
    id: "copy-context",
    name: "Copy context for the current note",
    checkCallback: (checking) => {
      const file = markdownFile(app);
      if (file === null) return false;
      if (!checking) {
        const { budgetTokens, defaultMode } = host.settings;
        host.client
          .context({ active_note: file.path, budget_tokens: budgetTokens, mode: defaultMode })
          .then(async (ctx) => {
            await navigator.clipboard.writeText(ctx.markdown);
            new Notice(contextNotice(ctx));
          })
          .catch(fail);
      }
      return true;
    },
  });

  plugin.addCommand({
    id: "remember-selection",
    name: "Remember the selection as a short-term memory",
    editorCheckCallback: (checking, editor, ctx) => {
      const selection = editor.getSelection();
      if (!selection.trim()) return false;
      if (!checking) {
        const source = ctx.file;
        const linktext = source ? app.metadataCache.fileToLinktext(source, "", true) : null;
        host.client
          .remember(rememberBody(selection, linktext))
          .then((doc) => new Notice(`Remembered as ${doc.path}`))
          .catch(fail);
      }
      return true;
    },
  });

  plugin.addCommand({
    id: "show-sleep-plan",
    name: "Show the sleep plan (dry run)",
    callback: () => openSleepPlanModal(app, host.client, host.settings.serverUrl),
  });

  plugin.addCommand({
    id: "show-server-status",
    name: "Show the server status",
    callback: () => openStatusModal(app, host.client, host.settings.serverUrl),
  });
}
