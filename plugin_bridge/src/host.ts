// What the plugin's parts share: the settings, the client and a way to hear about settings changes.
import type { Plugin } from "obsidian";
import { CortexClient } from "./client";
import { normaliseSettings } from "./settings";
import type { CortexSettings, SettingsHost } from "./settings";

export class CortexHost implements SettingsHost {
  readonly client: CortexClient;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly plugin: Plugin,
    public settings: CortexSettings,
  ) {
    this.client = new CortexClient(() => ({ serverUrl: this.settings.serverUrl, token: this.settings.token }));
  }

  get pluginId(): string {
    return this.plugin.manifest.id;
  }

  static async load(plugin: Plugin): Promise<CortexHost> {
    return new CortexHost(plugin, normaliseSettings(await plugin.loadData()));
  }

  async saveSettings(): Promise<void> {
    await this.plugin.saveData(this.settings);
    for (const listener of this.listeners) listener();
  }

  /** Call `listener` after each settings save; returns the function that stops it (hand it to `register`). */
  onSettingsChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
