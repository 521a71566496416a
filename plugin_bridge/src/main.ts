import { Plugin } from "obsidian";
import { openPane, registerCommands } from "./commands";
import { CortexHost } from "./host";
import { CortexSettingTab } from "./settings";
import { CortexView, VIEW_TYPE_CORTEX } from "./view";

export default class VaultCortexPlugin extends Plugin {
  override async onload(): Promise<void> {
    const host = await CortexHost.load(this);
    this.registerView(VIEW_TYPE_CORTEX, (leaf) => new CortexView(leaf, host));
    registerCommands(this, host);
    this.addSettingTab(new CortexSettingTab(this.app, this, host));
    this.addRibbonIcon("brain-circuit", "Open related memories", () => void openPane(this.app, true));
    this.app.workspace.onLayoutReady(() => void openPane(this.app, false));
  }

  override onunload(): void {
    // Views, events, commands and timers were all registered through register*, so Obsidian releases them;
    // the pane's leaf is left in place, as Obsidian's plugin guidelines ask.
  }
}
